//! Task attempts answered by a mock ([`crate::tasks::mock`]): the events AWS writes for the
//! resource's kind and pattern, with the mocked answer in place of the service's.
//!
//! - request/response integrations: `TaskScheduled → TaskStarted → TaskSucceeded|Failed|TimedOut`;
//! - `.sync` and `.waitForTaskToken`: the same with `TaskSubmitted` after `TaskStarted` (a
//!   callback gets a fresh token in `$$.Task.Token`, and the mock answers as a worker would
//!   with `SendTaskSuccess`/`SendTaskFailure`, without waiting);
//! - activities: `ActivityScheduled → ActivityStarted → ActivitySucceeded|Failed|TimedOut`;
//! - legacy Lambda ARNs: the `LambdaFunction*` events.
//!
//! A mock's `Delay` is measured on the execution's clock (scaled by `--time-scale`). Mocks send
//! no heartbeats, so for callbacks and activities the attempt's deadline is the earlier of
//! `HeartbeatSeconds` and `TimeoutSeconds`; an answer due at or after it never arrives and the
//! attempt times out with `States.Timeout`, as with a dead worker. The decision is made on the
//! declared seconds, so it does not depend on the time scale.

use crate::asl::error::StatesError;
use crate::asl::model::Task;
use crate::asl::resource::{IntegrationPattern, ResourceKind};
use crate::clock::Millis;
use crate::engine::execution::{Engine, Failed, StateCx};
use crate::engine::history::{Details, EventId, EventType};
use crate::engine::states::task::{integration_details, timed_out_details, TaskEvents};
use crate::tasks::callback::TaskToken;
use crate::tasks::mock::{MockAnswer, MockOutcome};
use serde_json::{json, Value};
use std::time::Duration;

/// The worker name mocked activities report in `ActivityStarted`.
pub const MOCK_WORKER_NAME: &str = "sfn-local-mock";

/// How an attempt ends, decided up front from the declared seconds.
enum End {
    Answer(MockOutcome, f64),
    TimedOut { after: u64, heartbeat: bool },
    Never,
}

impl Engine {
    /// One attempt of a mocked Task.
    pub(crate) async fn mocked_attempt(
        &self,
        cx: &StateCx<'_>,
        t: &Task,
        raw_input: &Value,
        effective: &Value,
        answer: Result<MockAnswer, StatesError>,
    ) -> Result<(Value, EventId), Failed> {
        let answer = answer.map_err(|e| Failed::new(e, cx.attempt_prev))?;
        let kind = &t.resource.kind;
        let events = TaskEvents::of(kind);
        let waits = t.resource.waits_for_token();
        // AWS gives `.sync` tasks a token in the context object too.
        let has_token = waits || t.resource.pattern() == Some(IntegrationPattern::Sync);
        let parameters = if has_token {
            let token = TaskToken::generate().map_err(|e| Failed::new(e, cx.attempt_prev))?;
            let set_token = |context: &mut Value| {
                if let Value::Object(m) = context {
                    m.insert("Task".into(), json!({ "Token": token.as_str() }));
                }
            };
            self.arguments_with(cx, &t.io, effective, set_token).await?
        } else {
            self.arguments(cx, &t.io, effective).await?
        };
        let (timeout, heartbeat) = self.task_clocks(cx, t, effective).await?;
        let scheduled = self.scheduled_details(t, &parameters, timeout, heartbeat);
        let mut prev = self.push(cx.attempt_prev, events.scheduled, Some(scheduled.build()))?;
        self.turn().await;
        let started = match kind {
            ResourceKind::Integration { .. } => Some(integration_details(kind).build()),
            ResourceKind::Activity { .. } => {
                Some(Details::new().str("workerName", MOCK_WORKER_NAME).build())
            }
            ResourceKind::LambdaFunction => None,
        };
        prev = self.push(prev, events.started, started)?;
        let submits = matches!(
            kind,
            ResourceKind::Integration {
                pattern: IntegrationPattern::Sync | IntegrationPattern::WaitForTaskToken,
                ..
            }
        );
        if submits {
            prev = self.push(
                prev,
                EventType::TaskSubmitted,
                Some(
                    integration_details(kind)
                        .payload("output", "{}".to_owned())
                        .build(),
                ),
            )?;
        }

        // Mocks send no heartbeats: a waiting task's heartbeat clock is a deadline too.
        let deadline = match (timeout, heartbeat.filter(|_| waits)) {
            (Some(t), Some(h)) if h < t => Some((h, true)),
            (Some(t), _) => Some((t, false)),
            (None, Some(h)) => Some((h, true)),
            (None, None) => None,
        };
        let end = match (answer.outcome, deadline) {
            (MockOutcome::NeverAnswers, Some((after, heartbeat))) => {
                End::TimedOut { after, heartbeat }
            }
            (MockOutcome::NeverAnswers, None) => End::Never,
            (_, Some((after, heartbeat))) if answer.delay_seconds >= after as f64 => {
                End::TimedOut { after, heartbeat }
            }
            (outcome, _) => End::Answer(outcome, answer.delay_seconds),
        };
        let wait_secs = match &end {
            End::Answer(_, d) => Some(*d),
            End::TimedOut { after, .. } => Some(*after as f64),
            End::Never => None,
        };
        if wait_secs != Some(0.0) {
            // Whoever watches the history sees the task scheduled while it "runs".
            self.commit_before_effects(cx).await?;
        }
        let started_at = self.clock.now();
        match wait_secs {
            Some(s) if s > 0.0 => {
                let declared = Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX);
                let ms = self
                    .clock
                    .scale(declared)
                    .as_millis()
                    .min(i64::MAX as u128 / 2) as Millis;
                self.clock.sleep_until(started_at.saturating_add(ms)).await;
            }
            Some(_) => {}
            None => std::future::pending::<()>().await,
        }
        match end {
            // An answer is handled exactly as a real task's result or error.
            End::Answer(MockOutcome::Return(result), _) => {
                self.task_result(cx, t, raw_input, prev, &events, Some(Ok(result)))
                    .await
            }
            End::Answer(MockOutcome::Throw(e), _) => {
                self.task_result(cx, t, raw_input, prev, &events, Some(Err(e)))
                    .await
            }
            End::TimedOut { heartbeat, .. } => {
                let e = if heartbeat {
                    StatesError::heartbeat_timeout()
                } else {
                    StatesError::timeout()
                };
                let prev = self.push(prev, events.timed_out, Some(timed_out_details(kind)))?;
                Err(Failed::new(e, prev))
            }
            // Both wait forever above; nothing comes here.
            End::Answer(MockOutcome::NeverAnswers, _) | End::Never => Err(Failed::new(
                StatesError::runtime("a mocked task that never answers ended"),
                prev,
            )),
        }
    }
}
