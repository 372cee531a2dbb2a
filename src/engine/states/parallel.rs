//! Parallel: branches run side by side; the first failure fails the state and aborts the rest.
//!
//! Under `--compat stepfunctions-local` the events are linked and named as AWS's emulator
//! writes them (issue #50, rules 7 and 8): `ParallelStateSucceeded` follows the last event of
//! the last branch by index and `ParallelStateExited` follows it; a branch's failing Task that
//! the Parallel's Catch catches ends the state at once (`ParallelStateFailed`, then a
//! `TaskStateExited` named after the Parallel and linked to its entry), the other branches
//! running on to their end instead of being aborted.

use crate::asl::model::Parallel;
use crate::asl::Compat;
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
                Ok(step) => return Ok(step),
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
    ) -> Result<Step, (Failed, bool)> {
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
        // The last event of each branch, and of the branch that ended last.
        let mut ends = vec![started; total];
        let mut last = started;
        while let Some((i, result)) = running.next().await {
            match result {
                Ok((output, prev)) => {
                    results[i] = output;
                    ends[i] = prev;
                    last = prev;
                }
                Err(failed) if self.caught_as_step_functions_local(p, &failed) => {
                    return self
                        .caught_in_branch(cx, p, raw_input, failed, running)
                        .await
                        .map_err(before);
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
        // branches, event 12 being ParallelStateSucceeded). Step Functions Local points
        // ParallelStateSucceeded at the last event of the last branch by index, whichever
        // ended last, and ParallelStateExited at ParallelStateSucceeded.
        let emulator = self.compat() == Compat::StepFunctionsLocal;
        let succeeded_after = match ends.last() {
            Some(&end) if emulator => end,
            _ => last,
        };
        let succeeded = self
            .push(succeeded_after, EventType::ParallelStateSucceeded, None)
            .map_err(before)?;
        let output = self
            .finish_result(cx, &p.io, raw_input.clone(), Value::Array(results))
            .await
            .map_err(before)?;
        Ok(Step {
            output,
            next: p.transition,
            prev: if emulator { succeeded } else { last },
            no_exit_event: false,
        })
    }

    /// Whether Step Functions Local's own events follow `failed`, a branch's failure: under
    /// `--compat stepfunctions-local`, a Task's catchable failure that no retrier of the
    /// Parallel matches and one of its catchers does (the one shape the emulator's histories
    /// show; any other keeps AWS's events).
    fn caught_as_step_functions_local(&self, p: &Parallel, failed: &Failed) -> bool {
        let matches = |patterns: &[String]| patterns.iter().any(|e| failed.error.matches(e));
        self.compat() == Compat::StepFunctionsLocal
            && !failed.terminal
            && failed.unfinished == Some(EventType::TaskStateAborted)
            && !p.errors.retry.iter().any(|r| matches(&r.error_equals))
            && p.errors.catch.iter().any(|c| matches(&c.error_equals))
    }

    /// Step Functions Local's events for a branch's Task failure its Parallel catches:
    /// `ParallelStateFailed` (no details) after the `TaskFailed`, then a `TaskStateExited`
    /// named after the Parallel, linked to its `ParallelStateEntered`, with the catch's output.
    /// No aborted events: the branches still running go on, their events after the exit; the
    /// catcher's state is entered once they have ended (its entry linked to the exit).
    async fn caught_in_branch<T>(
        &self,
        cx: &StateCx<'_>,
        p: &Parallel,
        raw_input: &Value,
        failed: Failed,
        mut running: Lanes<'_, T>,
    ) -> Result<Step, Failed> {
        let prev = self.push(failed.prev, EventType::ParallelStateFailed, None)?;
        let failed = Failed {
            prev,
            unfinished: None,
            ..failed
        };
        let step = self.catch(cx, &p.errors, raw_input, failed).await?;
        let output = self.payload(&step.output, cx.state, cx.entered_id)?;
        let exited = EventType::TaskStateExited;
        let prev = self.push_exited(cx.state, exited, cx.entered_id, &output, None)?;
        while running.next().await.is_some() {}
        Ok(Step {
            prev,
            no_exit_event: true,
            ..step
        })
    }
}
