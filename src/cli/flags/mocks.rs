//! `--mock-config FILE` and `--test-case NAME`: mocked Task results from a MockConfigFile (AWS
//! Step Functions Local's format). The test case may also come with the definition
//! (`DEFINITION#CASE`, `ARN#CASE`, `--state-machine-name NAME#CASE`; see [`super::definition`]).

use super::FlagError;
use crate::asl::StateMachine;
use crate::tasks::mock::{MockConfig, Mocks};
use clap::Args;
use std::path::{Path, PathBuf};

/// The mock options of `run`.
#[derive(Debug, Clone, Args)]
pub struct MockArgs {
    /// A MockConfigFile (AWS Step Functions Local's format) holding mocked Task results.
    #[arg(long, value_name = "FILE", env = "SFN_MOCK_CONFIG")]
    pub mock_config: Option<PathBuf>,
    /// The test case of the mock config to run (or `--state-machine-name NAME#CASE`, `--state-machine-arn ARN#CASE`).
    #[arg(long, value_name = "NAME")]
    pub test_case: Option<String>,
}

/// The mock case chosen, lowered: the config file and the case, each maybe absent.
#[derive(Debug, Clone, Default)]
pub struct MockCase {
    /// `--mock-config` (or `SFN_MOCK_CONFIG`).
    pub config: Option<PathBuf>,
    /// `--test-case`, else the case the definition's spelling chose.
    pub case: Option<String>,
}

impl MockArgs {
    /// The mock case: `--test-case` wins over `case_from_definition` (`DEFINITION#CASE`, ...).
    pub fn lower(&self, case_from_definition: Option<String>) -> MockCase {
        MockCase {
            config: self.mock_config.clone(),
            case: self.test_case.clone().or(case_from_definition),
        }
    }
}

impl MockCase {
    /// The mocks of the case for `machine_name`, checked against the machine (every mocked
    /// state must be a Task of it); none when no case is chosen.
    pub fn load(&self, machine_name: &str, machine: &StateMachine) -> Result<Mocks, FlagError> {
        match &self.case {
            Some(case) => load_mocks(self.config.as_deref(), machine_name, case, machine)
                .map_err(FlagError::Usage),
            None => Ok(Mocks::default()),
        }
    }

    /// The states the chosen case mocks in any machine of the config (before the machine's
    /// name is known): their placeholders need no value. None when no case is chosen or the
    /// config cannot be read (loading the mocks says why, later).
    pub fn mocked_states(&self) -> Vec<String> {
        let (Some(case), Some(file)) = (&self.case, &self.config) else {
            return Vec::new();
        };
        let Ok(config) = read_config(file) else {
            return Vec::new();
        };
        let cases = config.machines.values().filter_map(|cases| cases.get(case));
        cases.flat_map(|states| states.keys().cloned()).collect()
    }

    /// The config file when no case is chosen: it mocks nothing (Step Functions Local's rule),
    /// which a command says rather than silently running unmocked.
    pub fn unused_config(&self) -> Option<&Path> {
        match self.case {
            None => self.config.as_deref(),
            Some(_) => None,
        }
    }
}

/// Loads the mocks of test case `case` for `machine_name` from `file`.
fn load_mocks(
    file: Option<&Path>,
    machine_name: &str,
    case: &str,
    machine: &StateMachine,
) -> Result<Mocks, String> {
    let file = file.ok_or_else(|| {
        format!("test case '{case}' needs a mock config: --mock-config FILE or SFN_MOCK_CONFIG")
    })?;
    let config = read_config(file)?;
    let mocks = config.test_case(machine_name, case)?;
    mocks.check_against(machine).map_err(|e| {
        format!(
            "test case '{machine_name}#{case}' in {}: {e}",
            file.display()
        )
    })?;
    Ok(mocks)
}

/// Reads and parses a MockConfigFile, within its size limit.
pub fn read_config(file: &Path) -> Result<MockConfig, String> {
    let text = crate::limits::read_text_capped(file, crate::limits::MOCK_FILE_BYTES)
        .map_err(|e| format!("the mock config: {e}"))?;
    MockConfig::parse(&text).map_err(|e| format!("the mock config {}: {e}", file.display()))
}
