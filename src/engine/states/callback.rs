//! Task attempts that wait for a worker holding a task token: `.waitForTaskToken` integrations
//! (callbacks) and activities.
//!
//! Each attempt issues a fresh token, puts it in `$$.Task.Token`, writes the scheduling events
//! AWS writes, commits them and the token row, and only then lets a worker see the token (a
//! `--task` command started with `SFN_TASK_TOKEN`, or a `get-activity-task` poller). The attempt
//! then waits for the token's answer or for its deadlines; see [`crate::tasks::callback`].

use crate::asl::error::StatesError;
use crate::asl::model::Task;
use crate::asl::resource::ResourceKind;
use crate::clock::Millis;
use crate::engine::execution::{Engine, Failed, StateCx};
use crate::engine::history::{Details, EventId, EventType};
use crate::engine::states::task::{
    integration_details, set_task_token, timed_out_details, TaskEvents,
};
use crate::store::{NewTaskToken, TokenKind};
use crate::tasks::callback::{expiry_error, OpenToken, TaskToken, TokenBroker, TokenEvent};
use crate::tasks::command::{CommandLine, WorkerWatch};
use serde_json::{json, Value};
use std::time::Duration;

/// One attempt of a Task that waits for a worker holding its token: what its steps share.
struct TokenAttempt<'a> {
    cx: &'a StateCx<'a>,
    t: &'a Task,
    broker: &'a TokenBroker,
    /// The attempt's token: fresh, or the one it issued before a crash.
    token: TaskToken,
    /// Whether the token was issued before a crash (it is reopened, not issued again).
    reused: bool,
    /// The replay key of the attempt's `*Scheduled` event, which the token's row records.
    scheduled_key: String,
    events: TaskEvents,
    /// An activity (a worker polls for it) rather than a `.waitForTaskToken` callback.
    is_activity: bool,
}

impl TokenAttempt<'_> {
    fn kind(&self) -> &ResourceKind {
        &self.t.resource.kind
    }

    /// The attempt's number as people count: 1 for the first.
    fn number(&self) -> u64 {
        self.cx.retry_count.unwrap_or(0) + 1
    }
}

impl Engine {
    /// One attempt of a Task that waits for a worker's answer: the scheduling events, the
    /// token stored, handed to its worker (callbacks), then the token's answer.
    pub(crate) async fn token_attempt(
        &self,
        cx: &StateCx<'_>,
        t: &Task,
        raw_input: &Value,
        effective: &Value,
        broker: &TokenBroker,
    ) -> Result<(Value, EventId), Failed> {
        let scheduled_key = self.peek_key();
        let (token, reused) = self.attempt_token(cx, broker, &scheduled_key)?;
        let parameters = self
            .arguments_with(cx, &t.io, effective, set_task_token(&token))
            .await?;
        self.check_parameters(cx, t, &parameters)?;
        let (timeout, heartbeat) = self.task_clocks(cx, t, effective).await?;
        let a = TokenAttempt {
            cx,
            t,
            broker,
            token,
            reused,
            scheduled_key: scheduled_key.into(),
            events: TaskEvents::of(&t.resource.kind),
            is_activity: matches!(t.resource.kind, ResourceKind::Activity { .. }),
        };
        let scheduled = self.scheduled_details(t, &parameters, timeout, heartbeat);
        let mut prev = self.push(cx.attempt_prev, a.events.scheduled, Some(scheduled.build()))?;
        if !a.is_activity {
            // A callback has started at once; an activity starts when a worker takes it.
            let details = Some(integration_details(a.kind()).build());
            prev = self.push(prev, a.events.started, details)?;
        }
        // Nobody may see the token before the events that introduce it are committed.
        self.commit_before_effects(cx).await?;
        let clocks = (timeout, heartbeat);
        let open = self.open_attempt_token(&a, parameters.to_string(), clocks, prev)?;
        let mut worker = None;
        if a.is_activity {
            self.notice_activity_queued(&a);
        } else {
            (prev, worker) = self.submit_token(&a, parameters, prev).await?;
        }
        self.token_answer(&a, raw_input, &open, &mut worker, prev)
            .await
    }

    /// Opens the attempt's token: reopened when it was issued before a crash, else stored
    /// (and committed) with its clocks, `(timeout, heartbeat)`, as deadlines from now.
    fn open_attempt_token<'b>(
        &self,
        a: &TokenAttempt<'b>,
        input: String,
        (timeout, heartbeat): (Option<u64>, Option<u64>),
        prev: EventId,
    ) -> Result<OpenToken<'b>, Failed> {
        if a.reused {
            return Ok(a.broker.reopen(a.token.clone()));
        }
        let started_at = self.clock.now();
        let scaled_ms =
            |secs: u64| self.clock.scale(Duration::from_secs(secs)).as_millis() as Millis;
        let row = self.token_row(
            a.cx,
            a.broker,
            &a.token,
            input,
            &a.scheduled_key,
            started_at,
        );
        let row = NewTaskToken {
            kind: match a.is_activity {
                true => TokenKind::Activity,
                false => TokenKind::Callback,
            },
            activity_arn: a.is_activity.then(|| a.t.resource.arn.clone()),
            timeout_seconds: timeout,
            heartbeat_seconds: heartbeat,
            heartbeat_ms: heartbeat.map(scaled_ms),
            timeout_at: timeout.map(|s| started_at + scaled_ms(s)),
            ..row
        };
        a.broker.issue(row).map_err(|e| Failed::new(e, prev))
    }

    /// Tells the person running the execution how a worker takes the activity task.
    fn notice_activity_queued(&self, a: &TokenAttempt<'_>) {
        let arn = &a.t.resource.arn;
        a.broker.notice(&format!(
            "state '{}' (attempt {}) queued an activity task on {arn}; a worker takes it with: sfn-local get-activity-task --activity-arn {arn}",
            a.cx.state.name,
            a.number(),
        ));
    }

    /// Hands a callback's token to whoever answers it and records `TaskSubmitted` with what
    /// the hand-over returned; returns that event and the `--task` worker to watch. A
    /// hand-over that fails fails the attempt, as an integration call that cannot be made
    /// fails on AWS.
    async fn submit_token(
        &self,
        a: &TokenAttempt<'_>,
        parameters: Value,
        prev: EventId,
    ) -> Result<(EventId, Option<WorkerWatch>), Failed> {
        let (state, attempt, token) = (&a.cx.state.name, a.number(), &a.token);
        if !a.reused {
            let issued = format!("state '{state}' (attempt {attempt}) issued task token {token}");
            a.broker.notice(&issued);
        }
        // A worker already started for this token (its TaskSubmitted is recorded) keeps it;
        // one that may not have been started before the crash is started (again).
        let (submitted, worker) = if self.recorded(&self.peek_key()).is_some() {
            a.broker.notice(&format!(
                "state '{state}' (attempt {attempt}) resumed; waiting for the answer to task token {token}"
            ));
            (json!({}), None)
        } else {
            match self.hand_over_token(a, parameters).await {
                Ok(handed) => handed,
                Err(e) => return Err(self.attempt_failed(a.kind(), &a.events, prev, e)),
            }
        };
        let details = integration_details(a.kind()).payload("output", submitted.to_string());
        let prev = self.push(prev, EventType::TaskSubmitted, Some(details.build()))?;
        Ok((prev, worker))
    }

    /// Gives the token to what answers it: a `--worker` handler or `--task` command started
    /// with it, the integration's own call, or a child execution; with none of these, a
    /// person answers. Returns the submission's response and the `--task` worker to watch.
    async fn hand_over_token(
        &self,
        a: &TokenAttempt<'_>,
        parameters: Value,
    ) -> Result<(Value, Option<WorkerWatch>), StatesError> {
        let (cx, t, broker) = (a.cx, a.t, a.broker);
        let state = &cx.state.name;
        if let Some(command) = broker
            .worker_for(state)
            .or_else(|| broker.managed_for(state))
        {
            return self.start_token_worker(a, command, parameters);
        }
        if self.tasks.calls_service(&t.resource) {
            // The integration's own call is the submission: the message carrying the token
            // really goes out (sqs:sendMessage.waitForTaskToken, ...).
            let response = self.tasks.run(self.task_request(cx, t, parameters)).await?;
            return Ok((response, None));
        }
        let start_execution = crate::tasks::nested::is_start_execution(a.kind());
        if let Some(children) = self.tasks.children().filter(|_| start_execution) {
            // The child execution is the worker: it gets the token in its input.
            let request = self.task_request(cx, t, parameters);
            let resumed = self.recorded(&a.scheduled_key).is_some();
            let start = crate::tasks::nested::start_request(&request, &a.scheduled_key, resumed)?;
            let started = children.start(start).await?;
            return Ok((crate::tasks::nested::start_response(&started), None));
        }
        broker.notice(&format!(
            "no --task worker is bound to state '{state}'; answer with: sfn-local send-task-success --task-token {} --task-output JSON",
            a.token
        ));
        Ok((json!({}), None))
    }

    /// Starts `command` holding the token: a `--worker` handler is supervised apart from
    /// this attempt (it must be cancelled when the attempt is over); a `--task` worker is
    /// returned, to be watched here. Returns the submission's response too.
    fn start_token_worker(
        &self,
        a: &TokenAttempt<'_>,
        command: &CommandLine,
        parameters: Value,
    ) -> Result<(Value, Option<WorkerWatch>), StatesError> {
        let request = self.task_request(a.cx, a.t, parameters);
        let token = a.token.as_str();
        let (pid, watch) = match a.broker.managed_for(&a.cx.state.name) {
            Some(_) => (
                Some(a.broker.start_managed(command, &request, token)?),
                None,
            ),
            None => {
                let (pid, watch) = command.spawn_worker(&request, token, a.broker.notice_fn())?;
                (pid, Some(watch))
            }
        };
        Ok((json!({ "Worker": command.argv[0], "Pid": pid }), watch))
    }

    /// Waits on the token and records what happens to it: an activity's start (a worker
    /// took it), then the answer or an expiry. `worker` is watched meanwhile.
    async fn token_answer(
        &self,
        a: &TokenAttempt<'_>,
        raw_input: &Value,
        open: &OpenToken<'_>,
        worker: &mut Option<WorkerWatch>,
        mut prev: EventId,
    ) -> Result<(Value, EventId), Failed> {
        let mut started_seen = !a.is_activity;
        loop {
            // A worker program this runner started may yet act: only a bare token is a
            // durable wait.
            let bare = worker.is_none();
            let next = open.next_event(self.clock.as_ref(), started_seen, worker);
            let event = match bare {
                true => self.parked(next).await,
                false => next.await,
            }
            .map_err(|e| Failed::new(e, prev))?;
            match event {
                TokenEvent::Started { worker_name } => {
                    started_seen = true;
                    let mut details = Details::new();
                    if let Some(w) = worker_name {
                        details = details.str("workerName", w);
                    }
                    prev = self.push(prev, a.events.started, Some(details.build()))?;
                }
                TokenEvent::Succeeded(result) => {
                    let details =
                        integration_details(a.kind()).payload("output", result.to_string());
                    let prev = self.push(prev, a.events.succeeded, Some(details.build()))?;
                    return self
                        .attempt_output(a.cx, a.t, raw_input, prev, result)
                        .await;
                }
                TokenEvent::Failed(e) => {
                    return Err(self.attempt_failed(a.kind(), &a.events, prev, e));
                }
                TokenEvent::TimedOut(expiry) => {
                    // History says States.Timeout, with no cause, for both clocks (as AWS);
                    // the error keeps which one ran out for States.HeartbeatTimeout.
                    let (e, details) = (expiry_error(expiry), timed_out_details(a.kind()));
                    return Err(self.failure_event(prev, a.events.timed_out, Some(details), e));
                }
                TokenEvent::Closed => {
                    // Closed under us: the execution is being stopped, and the stop watcher
                    // ends it (dropping this attempt writes TaskStateAborted).
                    std::future::pending::<()>().await;
                    let e = StatesError::runtime("the task token was closed");
                    return Err(Failed::new(e, prev));
                }
            }
        }
    }
}
