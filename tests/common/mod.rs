//! Helpers shared by the integration tests: the conformance corpus beside the repository, the
//! real binary, temporary databases.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `../shared/conformance/cases`, beside the repository. Missing in CI is a failure (the corpus
/// is how we prove conformance); missing on a developer's machine skips with a note.
pub fn conformance_cases() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/cases");
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "the conformance corpus is missing at {}: CI must run with ../shared beside the repository",
            dir.display()
        );
    }
    eprintln!(
        "note: {} is missing; conformance test skipped",
        dir.display()
    );
    None
}

/// Every `*.json` file in a folder, sorted by name.
pub fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// Reads and parses a JSON file.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The `sfn-local` binary built for this test run.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sfn-local"))
}

/// The case's definition as text, with the corpus's placeholders for AWS resources (an activity
/// created by the test, for instance) replaced by ARNs of the right shape, as the test did on AWS.
pub fn definition_text(case: &serde_json::Value) -> Option<String> {
    if let Some(raw) = case.get("definition_raw").and_then(|v| v.as_str()) {
        return Some(raw.to_owned());
    }
    let def = case.get("definition")?;
    let text = serde_json::to_string_pretty(def).ok()?;
    Some(text.replace(
        "\"activity_arn\"",
        "\"arn:aws:states:us-east-1:111111111111:activity:activity_arn\"",
    ))
}

/// What a finished process left behind.
pub struct Output {
    /// Exit status code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Output {
    /// Standard output parsed as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// A temporary folder with its own database, for running the binary.
pub struct Sandbox {
    /// The folder (removed when dropped).
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    /// A new sandbox.
    pub fn new() -> Self {
        Sandbox {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// The sandbox's database.
    pub fn db(&self) -> PathBuf {
        self.dir.path().join("sfn-local.db")
    }

    /// Writes a file into the sandbox and returns its path.
    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, contents).expect("write file");
        p
    }

    /// Runs `sfn-local ARGS` with this sandbox's database (SFN_LOCAL_DB) from the repository root.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with_stdin(args, "")
    }

    /// Like [`Sandbox::run`], feeding `stdin`.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Output {
        self.run_full(args, stdin, &[])
    }

    /// Like [`Sandbox::run`], with more environment variables.
    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.run_full(args, "", env)
    }

    fn run_full(&self, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
        use std::io::Write;
        let mut child = std::process::Command::new(bin())
            .args(args)
            // Later settings of a key win: a test's own SFN_MOCK_CONFIG survives this.
            .env_remove("SFN_MOCK_CONFIG")
            .envs(env.iter().copied())
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("SFN_LOCAL_DB", self.db())
            .env_remove("AWS_REGION")
            .env_remove("AWS_DEFAULT_REGION")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn sfn-local");
        if let Some(mut s) = child.stdin.take() {
            let _ = s.write_all(stdin.as_bytes());
        }
        let out = child.wait_with_output().expect("wait for sfn-local");
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}
pub mod conformance;
