//! `--endpoint SERVICE=URL`: call a service's integrations at a local endpoint instead of AWS.

use super::FlagError;
use crate::tasks::aws::Endpoints;
use clap::Args;

/// The endpoints of the services a machine's Tasks call.
#[derive(Debug, Clone, Default, Args)]
pub struct EndpointArgs {
    /// Call a service's integrations at a local endpoint: SERVICE=URL (repeatable; `all=URL`
    /// for one endpoint serving every service). Also LAMBDA_ENDPOINT, SQS_ENDPOINT, ...
    #[arg(long = "endpoint", value_name = "SERVICE=URL")]
    pub endpoints: Vec<String>,
}

impl EndpointArgs {
    /// The endpoints: Step Functions Local's variables (`LAMBDA_ENDPOINT`, ...), then each
    /// `--endpoint` (a flag wins over a variable).
    pub fn lower(&self) -> Result<Endpoints, FlagError> {
        Endpoints::parse(&self.endpoints, |k| std::env::var(k).ok())
            .map_err(|e| FlagError::Usage(e.to_string()))
    }

    /// Checks the flags alone, without the environment (`resume` stores them as written and
    /// lays them over the endpoints the run had).
    pub fn check(&self) -> Result<Vec<String>, FlagError> {
        Endpoints::parse(&self.endpoints, |_| None).map_err(|e| FlagError::Usage(e.to_string()))?;
        Ok(self.endpoints.clone())
    }
}
