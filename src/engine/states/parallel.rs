//! Parallel: branches run side by side; the first failure fails the state and aborts the rest.

use crate::asl::model::Parallel;
use crate::engine::execution::{Engine, Failed, StateCx, Step};
use crate::engine::history::{EventId, EventType};
use crate::engine::retry::Retries;
use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::Value;

impl Engine {
    /// Parallel: InputPath, then attempts under Retry, then Catch.
    pub(crate) async fn parallel(
        &self,
        cx: &StateCx<'_>,
        p: &Parallel,
        input: Value,
    ) -> Result<Step, Failed> {
        let effective = self.input_path(cx, &p.io, input.clone())?;
        let mut retries = Retries::new(&p.errors.retry);
        loop {
            match self.parallel_attempt(cx, p, &input, &effective).await {
                Ok((output, prev)) => {
                    return Ok(Step {
                        output,
                        next: p.transition,
                        prev,
                        no_exit_event: false,
                    })
                }
                Err(failed) => match retries.on_failure(&failed) {
                    Some(delay) => self.retry_pause(delay).await,
                    None => return self.catch(&p.errors, &input, failed),
                },
            }
        }
    }

    async fn parallel_attempt(
        &self,
        cx: &StateCx<'_>,
        p: &Parallel,
        raw_input: &Value,
        effective: &Value,
    ) -> Result<(Value, EventId), Failed> {
        let branch_input = match &p.io.parameters {
            Some(t) => self.template(cx, t, effective, "Parameters", |_| {})?,
            None => effective.clone(),
        };
        let started = self.push(cx.entered_id, EventType::ParallelStateStarted, None)?;
        let mut running: FuturesUnordered<_> = p
            .branches
            .iter()
            .enumerate()
            .map(|(i, branch)| {
                let input = branch_input.clone();
                async move { (i, self.run_scope(branch, input, started).await) }
            })
            .collect();
        let mut results = vec![Value::Null; p.branches.len()];
        let mut last = started;
        while let Some((i, result)) = running.next().await {
            match result {
                Ok((output, prev)) => {
                    results[i] = output;
                    last = prev;
                }
                Err(failed) => {
                    // Dropping the other branches writes their *StateAborted events.
                    drop(running);
                    if failed.terminal {
                        return Err(failed);
                    }
                    let prev = self.push(failed.prev, EventType::ParallelStateFailed, None)?;
                    return Err(Failed { prev, ..failed });
                }
            }
        }
        let prev = self.push(last, EventType::ParallelStateSucceeded, None)?;
        let output = self.finish_result(cx, &p.io, raw_input.clone(), Value::Array(results))?;
        Ok((output, prev))
    }
}
