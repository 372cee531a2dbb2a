//! Parallel: branches run side by side; the first failure fails the state and aborts the rest.

use crate::asl::model::Parallel;
use crate::engine::execution::{Engine, Failed, StateCx, Step};
use crate::engine::history::{EventId, EventType};
use crate::engine::lanes::Lanes;
use crate::engine::replay::Lane;
use crate::engine::retry::Retries;
use crate::engine::variables::Frame;
use serde_json::Value;

impl Engine {
    /// Parallel: InputPath, then attempts under Retry, then Catch. AWS writes
    /// `ParallelStateFailed` only when the failure leaves the state: a retried attempt is
    /// followed directly by the next `ParallelStateStarted`.
    pub(crate) async fn parallel(
        &self,
        cx: &StateCx<'_>,
        p: &Parallel,
        input: Value,
    ) -> Result<Step, Failed> {
        let effective = self.input_path(cx, &p.io, input.clone())?;
        let mut retries = Retries::new(&p.errors.retry);
        // A retry's ParallelStateStarted points at the event that failed the previous attempt.
        let mut prev = cx.entered_id;
        loop {
            match self.parallel_attempt(cx, p, &input, &effective, prev).await {
                Ok((output, prev)) => {
                    return Ok(Step {
                        output,
                        next: p.transition,
                        prev,
                        no_exit_event: false,
                    })
                }
                Err((failed, branches_failed)) => {
                    if let Some(delay) = retries.on_failure(&failed) {
                        prev = failed.prev;
                        self.retry_pause(delay).await;
                        continue;
                    }
                    let failed = if branches_failed && !failed.terminal {
                        let prev = self.push(failed.prev, EventType::ParallelStateFailed, None)?;
                        Failed { prev, ..failed }
                    } else {
                        failed
                    };
                    return self.catch(cx, &p.errors, &input, failed).await;
                }
            }
        }
    }

    async fn parallel_attempt(
        &self,
        cx: &StateCx<'_>,
        p: &Parallel,
        raw_input: &Value,
        effective: &Value,
        prev: EventId,
    ) -> Result<(Value, EventId), (Failed, bool)> {
        let before = |e: Failed| (e, false);
        let branch_input = self.arguments(cx, &p.io, effective).await.map_err(before)?;
        // Each branch is a lane named after this attempt's ParallelStateStarted (see replay).
        let anchor = self.peek_key();
        let started = self
            .push(prev, EventType::ParallelStateStarted, None)
            .map_err(before)?;
        // Every branch starts before any can fail the state (see engine::lanes).
        let total = p.branches.len();
        let mut running = Lanes::new(self, total, total);
        for (i, branch) in p.branches.iter().enumerate() {
            let input = branch_input.clone();
            let frame = Frame::child(cx.frame);
            let lane = Lane::child(&anchor, i);
            running.push(
                i,
                self.in_lane(lane, self.run_scope(branch, input, started, frame)),
            );
        }
        let mut results = vec![Value::Null; total];
        let mut last = started;
        while let Some((i, result)) = running.next().await {
            match result {
                Ok((output, prev)) => {
                    results[i] = output;
                    last = prev;
                }
                Err(mut failed) => {
                    // The other branches are aborted (their *StateAborted events pointing at
                    // the failure); then the failed Task's own TaskStateAborted, as AWS
                    // orders them.
                    running.abort(failed.prev);
                    failed.wind_up(self).map_err(before)?;
                    return Err((failed, true));
                }
            }
        }
        drop(running);
        // AWS points both ParallelStateSucceeded and ParallelStateExited at the last branch
        // event (the recordings keep ParallelStateExited's link: 13 -> 11 for four Pass
        // branches, event 12 being ParallelStateSucceeded).
        self.push(last, EventType::ParallelStateSucceeded, None)
            .map_err(before)?;
        let output = self
            .finish_result(cx, &p.io, raw_input.clone(), Value::Array(results))
            .await
            .map_err(before)?;
        Ok((output, last))
    }
}
