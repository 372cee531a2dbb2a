//! `.sync` jobs of services other than Step Functions, at an endpoint: the job is started (its
//! response, with `SdkHttpMetadata`, is the `TaskSubmitted` output), then its describe call is
//! polled until the job ends, as AWS's integration does. Glue `startJobRun.sync`: `GetJobRun`
//! until `SUCCEEDED` (the task's result is the `JobRun`), or `FAILED`, `ERROR`, `TIMEOUT`,
//! `STOPPED` or `EXPIRED` (`States.TaskFailed`, the `JobRun` as JSON text in the cause).
//! CodeBuild `startBuild.sync`: `BatchGetBuilds` until the build ends, `{"Build": …}` with
//! the members' capital initials, as Step Functions hands CodeBuild's answers over.
//!
//! A resumed `.sync` task whose job was submitted before the crash (its `TaskSubmitted` is
//! recorded) polls that job again, named by the recorded response, instead of starting a
//! second one.

use super::{camel_request, pascal_result, Http};
use crate::asl::error::{names, StatesError};
use serde_json::{json, Value};
use std::time::Duration;

/// How often a running job is described.
const POLL_INTERVAL: Duration = Duration::from_secs(1);

impl Http {
    /// Runs `action.sync`; `submitted` receives the start call's response; `submission` is the
    /// response recorded before a crash, naming the job to find again.
    pub(super) async fn sync_job(
        &self,
        action: &str,
        params: &Value,
        submitted: Option<tokio::sync::oneshot::Sender<Value>>,
        submission: Option<Value>,
    ) -> Result<Value, StatesError> {
        match (self.svc.key, action) {
            ("glue", "startJobRun") => self.glue_job_run(params, submitted, submission).await,
            ("codebuild", "startBuild") => self.codebuild_build(params, submitted, submission).await,
            (service, _) => Err(StatesError::runtime(format!(
                "sfn-local runs the .sync jobs of states:startExecution, glue:startJobRun and codebuild:startBuild, not {service}:{action}.sync yet; bind the state with --task or mock it"
            ))),
        }
    }

    async fn glue_job_run(
        &self,
        params: &Value,
        submitted: Option<tokio::sync::oneshot::Sender<Value>>,
        submission: Option<Value>,
    ) -> Result<Value, StatesError> {
        let recorded = submission
            .as_ref()
            .and_then(|s| s["JobRunId"].as_str())
            .map(str::to_owned);
        let run_id = match recorded {
            Some(id) => id,
            None => {
                let r = self.json_call("StartJobRun", params).await?;
                if r.status >= 300 {
                    return Err(self.v1_error(&r));
                }
                let id = r.json()["JobRunId"]
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        StatesError::runtime("Glue's StartJobRun answered without a JobRunId")
                    })?;
                if let Some(tx) = submitted {
                    let _ = tx.send(r.with_metadata());
                }
                id
            }
        };
        let describe = json!({"JobName": params["JobName"], "RunId": run_id});
        loop {
            let r = self.json_call("GetJobRun", &describe).await?;
            if r.status >= 300 {
                return Err(self.v1_error(&r));
            }
            let run = r.json()["JobRun"].clone();
            match run["JobRunState"].as_str() {
                Some("SUCCEEDED") => return Ok(run),
                Some("FAILED" | "ERROR" | "TIMEOUT" | "STOPPED" | "EXPIRED") => {
                    return Err(StatesError::new(names::TASK_FAILED, run.to_string()))
                }
                _ => tokio::time::sleep(POLL_INTERVAL).await,
            }
        }
    }

    /// CodeBuild `startBuild.sync`: BatchGetBuilds until the build is no longer
    /// `IN_PROGRESS`; a `SUCCEEDED` build is the result as `{"Build": …}` (StartBuild's shape),
    /// any other end `States.TaskFailed` with that as the cause.
    async fn codebuild_build(
        &self,
        params: &Value,
        submitted: Option<tokio::sync::oneshot::Sender<Value>>,
        submission: Option<Value>,
    ) -> Result<Value, StatesError> {
        let recorded = submission
            .as_ref()
            .and_then(|s| s["Build"]["Id"].as_str())
            .map(str::to_owned);
        let id = match recorded {
            Some(id) => id,
            None => {
                let r = self.json_call("StartBuild", &camel_request(params)).await?;
                if r.status >= 300 {
                    return Err(self.v1_error(&r));
                }
                let started = r.with_metadata_on(pascal_result(r.json()));
                let id = started["Build"]["Id"]
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        StatesError::runtime("CodeBuild's StartBuild answered without a build id")
                    })?;
                if let Some(tx) = submitted {
                    let _ = tx.send(started);
                }
                id
            }
        };
        let describe = json!({"ids": [id]});
        loop {
            let r = self.json_call("BatchGetBuilds", &describe).await?;
            if r.status >= 300 {
                return Err(self.v1_error(&r));
            }
            let build = pascal_result(r.json()["builds"][0].clone());
            match build["BuildStatus"].as_str() {
                Some("IN_PROGRESS") | None => tokio::time::sleep(POLL_INTERVAL).await,
                Some("SUCCEEDED") => return Ok(json!({ "Build": build })),
                Some(_) => {
                    return Err(StatesError::new(
                        names::TASK_FAILED,
                        json!({ "Build": build }).to_string(),
                    ))
                }
            }
        }
    }
}
