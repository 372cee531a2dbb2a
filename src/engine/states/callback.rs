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
use crate::engine::states::task::{integration_details, timed_out_details, TaskEvents};
use crate::store::{NewTaskToken, TokenKind};
use crate::tasks::callback::{expiry_error, TaskToken, TokenBroker, TokenEvent};
use crate::tasks::TaskRequest;
use serde_json::{json, Value};
use std::time::Duration;

impl Engine {
    /// One attempt of a Task that waits for a worker's answer.
    pub(crate) async fn token_attempt(
        &self,
        cx: &StateCx<'_>,
        t: &Task,
        raw_input: &Value,
        effective: &Value,
        broker: &TokenBroker,
    ) -> Result<(Value, EventId), Failed> {
        // Resuming an attempt that issued its token before the crash: the same token (workers
        // may hold it; an answer may be waiting in its row).
        let scheduled_key = self.peek_key();
        // A Map child is not replayed, but a run of it before a crash may have issued the token.
        let issued = match self.recorded(&scheduled_key).is_some() || self.map_child {
            true => broker
                .find_issued(&scheduled_key)
                .map_err(|e| Failed::new(e, cx.attempt_prev))?,
            false => None,
        };
        let token = match &issued {
            Some(row) => TaskToken::from_stored(row.token.clone()),
            None => TaskToken::generate().map_err(|e| Failed::new(e, cx.attempt_prev))?,
        };
        let set_token = |context: &mut Value| {
            if let Value::Object(m) = context {
                m.insert("Task".into(), json!({ "Token": token.as_str() }));
            }
        };
        let parameters = self.arguments_with(cx, &t.io, effective, set_token)?;
        self.check_parameters(cx, t, &parameters)?;
        let (timeout, heartbeat) = self.task_clocks(cx, t, effective)?;
        let kind = &t.resource.kind;
        let events = TaskEvents::of(kind);
        // The attempt's failure event (TaskFailed, ActivityFailed, ...) carrying `e`, and `e` as
        // the state's failure after it.
        let attempt_failed = |prev: EventId, e: StatesError| -> Failed {
            let details = Some(integration_details(kind).error(&e).build());
            match self.push(prev, events.failed, details) {
                Ok(prev) => Failed::new(e, prev),
                Err(failed) => failed,
            }
        };
        let is_activity = matches!(kind, ResourceKind::Activity { .. });
        let parameters_text = parameters.to_string();
        let mut scheduled = if is_activity {
            Details::new()
                .str("resource", &t.resource.arn)
                .payload("input", parameters_text.clone())
        } else {
            integration_details(kind)
                .str("region", &self.info.region)
                .str("parameters", parameters_text.clone())
        };
        if let Some(tmo) = timeout {
            scheduled = scheduled.int("timeoutInSeconds", tmo as i64);
        }
        if let Some(hb) = heartbeat {
            scheduled = scheduled.int("heartbeatInSeconds", hb as i64);
        }
        let mut prev = self.push(cx.attempt_prev, events.scheduled, Some(scheduled.build()))?;
        if !is_activity {
            prev = self.push(
                prev,
                events.started,
                Some(integration_details(kind).build()),
            )?;
        }
        // Nobody may see the token before the events that introduce it are committed.
        self.commit_before_effects(cx).await?;
        let started_at = self.clock.now();
        let scaled_ms =
            |secs: u64| self.clock.scale(Duration::from_secs(secs)).as_millis() as Millis;
        let attempt = cx.retry_count.unwrap_or(0);
        let reused = issued.is_some();
        let open = match issued {
            Some(_) => broker.reopen(token.clone()),
            None => broker
                .issue(NewTaskToken {
                    token: token.as_str().to_owned(),
                    // The broker's: a Map child's tokens belong to its parent execution.
                    execution_arn: broker.execution_arn().to_owned(),
                    state_name: cx.state.name.clone(),
                    attempt,
                    kind: if is_activity {
                        TokenKind::Activity
                    } else {
                        TokenKind::Callback
                    },
                    activity_arn: is_activity.then(|| t.resource.arn.clone()),
                    input: parameters_text,
                    created_at: started_at,
                    timeout_seconds: timeout,
                    heartbeat_seconds: heartbeat,
                    heartbeat_ms: heartbeat.map(scaled_ms),
                    timeout_at: timeout.map(|s| started_at + scaled_ms(s)),
                    replay_key: Some(scheduled_key.clone()),
                    virtual_clock: self.clock.virtual_clock().is_some(),
                })
                .map_err(|e| Failed::new(e, prev))?,
        };
        let mut worker = None;
        if is_activity {
            broker.notice(&format!(
                "state '{}' (attempt {}) queued an activity task on {}; a worker takes it with: sfn-local get-activity-task --activity-arn {}",
                cx.state.name,
                attempt + 1,
                t.resource.arn,
                t.resource.arn
            ));
        } else {
            if !reused {
                broker.notice(&format!(
                    "state '{}' (attempt {}) issued task token {}",
                    cx.state.name,
                    attempt + 1,
                    token
                ));
            }
            let mut submitted = json!({});
            // A worker already started for this token (its TaskSubmitted is recorded) keeps it;
            // one that may not have been started before the crash is started (again).
            let already_submitted = self.recorded(&self.peek_key()).is_some();
            if already_submitted {
                broker.notice(&format!(
                    "state '{}' (attempt {}) resumed; waiting for the answer to task token {}",
                    cx.state.name,
                    attempt + 1,
                    token
                ));
            } else if let Some(command) = broker
                .worker_for(&cx.state.name)
                .or_else(|| broker.managed_for(&cx.state.name))
            {
                let request = TaskRequest {
                    state_name: cx.state.name.clone(),
                    resource: t.resource.clone(),
                    input: parameters,
                    execution_arn: self.info.execution_arn.clone(),
                    retry_count: attempt,
                };
                // A `--worker` handler is supervised apart from this attempt (it must be
                // cancelled when the attempt is over); a `--task` worker is watched here.
                let started = match broker.managed_for(&cx.state.name) {
                    Some(_) => broker
                        .start_managed(command, &request, token.as_str())
                        .map(|pid| (Some(pid), None)),
                    None => command
                        .spawn_worker(&request, token.as_str(), broker.notice_fn())
                        .map(|(pid, watch)| (pid, Some(watch))),
                };
                match started {
                    Ok((pid, watch)) => {
                        submitted = json!({ "Worker": command.argv[0], "Pid": pid });
                        worker = watch;
                    }
                    Err(e) => {
                        // The worker never got the token: the submission failed, as an
                        // integration call that cannot be made fails on AWS.
                        return Err(attempt_failed(prev, e));
                    }
                }
            } else if self.tasks.calls_service(&t.resource) {
                // The integration's own call is the submission: the message carrying the
                // token really goes out (sqs:sendMessage.waitForTaskToken, ...).
                let request = TaskRequest {
                    state_name: cx.state.name.clone(),
                    resource: t.resource.clone(),
                    input: parameters,
                    execution_arn: self.info.execution_arn.clone(),
                    retry_count: attempt,
                };
                match self.tasks.run(request).await {
                    Ok(response) => submitted = response,
                    Err(e) => {
                        return Err(attempt_failed(prev, e));
                    }
                }
            } else if let Some(children) = self
                .tasks
                .children()
                .filter(|_| crate::tasks::nested::is_start_execution(kind))
            {
                // The child execution is the worker: it gets the token in its input.
                let request = TaskRequest {
                    state_name: cx.state.name.clone(),
                    resource: t.resource.clone(),
                    input: parameters,
                    execution_arn: self.info.execution_arn.clone(),
                    retry_count: attempt,
                };
                let resumed = self.recorded(&scheduled_key).is_some();
                let started =
                    match crate::tasks::nested::start_request(&request, &scheduled_key, resumed) {
                        Ok(start) => children.start(start).await,
                        Err(e) => Err(e),
                    };
                match started {
                    Ok(started) => submitted = crate::tasks::nested::start_response(&started),
                    Err(e) => {
                        return Err(attempt_failed(prev, e));
                    }
                }
            } else {
                broker.notice(&format!(
                    "no --task worker is bound to state '{}'; answer with: sfn-local send-task-success --task-token {} --task-output JSON",
                    cx.state.name, token
                ));
            }
            prev = self.push(
                prev,
                EventType::TaskSubmitted,
                Some(
                    integration_details(kind)
                        .payload("output", submitted.to_string())
                        .build(),
                ),
            )?;
        }
        let mut started_seen = !is_activity;
        loop {
            let event = open
                .next_event(self.clock.as_ref(), started_seen, &mut worker)
                .await
                .map_err(|e| Failed::new(e, prev))?;
            match event {
                TokenEvent::Started { worker_name } => {
                    started_seen = true;
                    let mut details = Details::new();
                    if let Some(w) = worker_name {
                        details = details.str("workerName", w);
                    }
                    prev = self.push(prev, events.started, Some(details.build()))?;
                }
                TokenEvent::Succeeded(result) => {
                    let prev = self.push(
                        prev,
                        events.succeeded,
                        Some(
                            integration_details(kind)
                                .payload("output", result.to_string())
                                .build(),
                        ),
                    )?;
                    let output = self
                        .finish_result(cx, &t.io, raw_input.clone(), result)
                        .map_err(|f| f.after_work(cx, prev))?;
                    return Ok((output, prev));
                }
                TokenEvent::Failed(e) => {
                    return Err(attempt_failed(prev, e));
                }
                TokenEvent::TimedOut(expiry) => {
                    // History says States.Timeout, with no cause, for both clocks (as AWS);
                    // the error keeps which one ran out for States.HeartbeatTimeout.
                    let e = expiry_error(expiry);
                    let prev = self.push(prev, events.timed_out, Some(timed_out_details(kind)))?;
                    return Err(Failed::new(e, prev));
                }
                TokenEvent::Closed => {
                    // Closed under us: the execution is being stopped, and the stop watcher
                    // ends it (dropping this attempt writes TaskStateAborted).
                    std::future::pending::<()>().await;
                    return Err(Failed::new(
                        StatesError::runtime("the task token was closed"),
                        prev,
                    ));
                }
            }
        }
    }
}
