//! Task: hand the effective input to the task runner, bound the attempt by `TimeoutSeconds`,
//! retry and catch, and record the events AWS writes for the resource's kind.

use crate::asl::error::{names, StatesError};
use crate::asl::model::{Dynamic, Task};
use crate::asl::resource::ResourceKind;
use crate::clock::Millis;
use crate::engine::execution::{Engine, Failed, StateCx, Step, MAX_PAYLOAD_BYTES};
use crate::engine::history::{Details, EventId, EventType};
use crate::engine::retry::Retries;
use crate::store::{NewTaskToken, TokenKind};
use crate::tasks::callback::{expiry_error, TaskToken, TokenEvent};
use crate::tasks::{JobContext, TaskRequest};
use serde_json::Value;
use std::time::Duration;

/// Whether `kind` is `states:startExecution.sync` (or `.sync:2`), whose attempts get a task
/// token as on AWS. Other `.sync` integrations get none: the corpus records a token only for
/// these.
fn is_sync_start_execution(kind: &ResourceKind) -> bool {
    crate::tasks::nested::is_start_execution(kind)
        && matches!(
            kind,
            ResourceKind::Integration {
                pattern: crate::asl::resource::IntegrationPattern::Sync,
                ..
            }
        )
}

/// The event types and fixed details of one resource kind.
pub(crate) struct TaskEvents {
    pub scheduled: EventType,
    pub started: EventType,
    pub succeeded: EventType,
    pub failed: EventType,
    pub timed_out: EventType,
}

impl TaskEvents {
    pub(crate) fn of(kind: &ResourceKind) -> TaskEvents {
        match kind {
            ResourceKind::Integration { .. } => TaskEvents {
                scheduled: EventType::TaskScheduled,
                started: EventType::TaskStarted,
                succeeded: EventType::TaskSucceeded,
                failed: EventType::TaskFailed,
                timed_out: EventType::TaskTimedOut,
            },
            ResourceKind::Activity { .. } => TaskEvents {
                scheduled: EventType::ActivityScheduled,
                started: EventType::ActivityStarted,
                succeeded: EventType::ActivitySucceeded,
                failed: EventType::ActivityFailed,
                timed_out: EventType::ActivityTimedOut,
            },
            ResourceKind::LambdaFunction => TaskEvents {
                scheduled: EventType::LambdaFunctionScheduled,
                started: EventType::LambdaFunctionStarted,
                succeeded: EventType::LambdaFunctionSucceeded,
                failed: EventType::LambdaFunctionFailed,
                timed_out: EventType::LambdaFunctionTimedOut,
            },
        }
    }
}

/// `resourceType` and `resource` of service-integration events; other kinds have none.
pub(crate) fn integration_details(kind: &ResourceKind) -> Details {
    match kind {
        ResourceKind::Integration {
            service, action, ..
        } => Details::new()
            .str("resourceType", service.as_str())
            .str("resource", action.as_str()),
        _ => Details::new(),
    }
}

/// The details of a `*TimedOut` event: `States.Timeout` and no cause, whichever clock ran
/// out, as AWS records both.
pub(crate) fn timed_out_details(kind: &ResourceKind) -> String {
    integration_details(kind)
        .str("error", names::TIMEOUT)
        .build()
}

impl Engine {
    /// Task: InputPath, then attempts under Retry, then Catch.
    pub(crate) async fn task(
        &self,
        cx: &StateCx<'_>,
        t: &Task,
        input: Value,
    ) -> Result<Step, Failed> {
        let effective = self.input_path(cx, &t.io, input.clone())?;
        let mut retries = Retries::new(&t.errors.retry);
        // A retry's first event points at the failure event of the attempt before it.
        let mut attempt_prev = cx.entered_id;
        loop {
            let attempt = StateCx {
                retry_count: Some(retries.count),
                attempt_prev,
                ..cx.clone()
            };
            match self.task_attempt(&attempt, t, &input, &effective).await {
                Ok((output, prev)) => {
                    return Ok(Step {
                        output,
                        next: t.transition,
                        prev,
                        no_exit_event: false,
                    })
                }
                Err(failed) => match retries.on_failure(&failed) {
                    Some(delay) => {
                        attempt_prev = failed.prev;
                        self.retry_pause(delay).await
                    }
                    None => return self.catch(cx, &t.errors, &input, failed),
                },
            }
        }
    }

    /// A `TimeoutSeconds`-like number: literal, or read from the effective input by a
    /// `*SecondsPath`, which must name a positive integer.
    pub(crate) fn resolve_count(
        &self,
        cx: &StateCx<'_>,
        value: Option<&Dynamic<u64>>,
        input: &Value,
        path_field: &str,
        min: u64,
    ) -> Result<Option<u64>, Failed> {
        match value {
            None => Ok(None),
            Some(Dynamic::Jsonata(t)) => {
                let field = path_field.strip_suffix("Path").unwrap_or(path_field);
                self.jsonata_count(cx, t, field, input, min).map(Some)
            }
            Some(Dynamic::Literal(n)) => Ok(Some(*n)),
            Some(Dynamic::Path(p)) => {
                let v = self.required_path(cx, p, input)?;
                // AWS also takes an integer written as a string (a variable assigned "1").
                let n = v
                    .as_u64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()));
                match n {
                    Some(n) if n >= min => Ok(Some(n)),
                    _ => {
                        let shown = match &v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        let what = if min > 0 {
                            "a positive integer"
                        } else {
                            "a valid integer"
                        };
                        Err(self.state_error(
                            cx,
                            names::RUNTIME,
                            &format!(
                                "The {path_field} field refers to value \"{shown}\" which is not {what}: {}",
                                p.text()
                            ),
                        ))
                    }
                }
            }
        }
    }

    /// `TimeoutSeconds` and `HeartbeatSeconds` of one attempt, literal or read from the
    /// effective input; the heartbeat must stay below the timeout at run time too.
    pub(crate) fn task_clocks(
        &self,
        cx: &StateCx<'_>,
        t: &Task,
        effective: &Value,
    ) -> Result<(Option<u64>, Option<u64>), Failed> {
        let timeout = self.resolve_count(
            cx,
            t.timeout_seconds.as_ref(),
            effective,
            "TimeoutSecondsPath",
            1,
        )?;
        let heartbeat = self.resolve_count(
            cx,
            t.heartbeat_seconds.as_ref(),
            effective,
            "HeartbeatSecondsPath",
            1,
        )?;
        if let (Some(tmo), Some(hb)) = (timeout, heartbeat) {
            if hb >= tmo {
                return Err(self.state_error(
                    cx,
                    names::RUNTIME,
                    &format!("HeartbeatSeconds ({hb}) must be smaller than TimeoutSeconds ({tmo})"),
                ));
            }
        }
        Ok((timeout, heartbeat))
    }

    /// What AWS checks in the Parameters before it calls the service: a failure is
    /// `States.Runtime` with AWS's "could not be used to start the Task" cause, before any
    /// scheduling event.
    pub(crate) fn check_parameters(
        &self,
        cx: &StateCx<'_>,
        t: &Task,
        parameters: &Value,
    ) -> Result<(), Failed> {
        crate::asl::resource::check_parameters(&t.resource.kind, parameters).map_err(|why| {
            self.state_error(
                cx,
                crate::asl::error::names::RUNTIME,
                &format!(
                    "The Parameters '{parameters}' could not be used to start the Task: [{why}]"
                ),
            )
        })
    }

    /// One attempt: Parameters, the scheduling events, the runner under the timeout, the
    /// result's events, then ResultSelector/ResultPath/OutputPath.
    async fn task_attempt(
        &self,
        cx: &StateCx<'_>,
        t: &Task,
        raw_input: &Value,
        effective: &Value,
    ) -> Result<(Value, EventId), Failed> {
        if let Some(answer) = self.tasks.mocked(&cx.state.name) {
            return self
                .mocked_attempt(cx, t, raw_input, effective, answer)
                .await;
        }
        if t.resource.waits_for_token() {
            if let Some(broker) = self.tokens.clone() {
                // An activity bound with --task keeps running its command as the worker.
                let bound_activity = matches!(t.resource.kind, ResourceKind::Activity { .. })
                    && broker.worker_for(&cx.state.name).is_some();
                if !bound_activity {
                    return self
                        .token_attempt(cx, t, raw_input, effective, &broker)
                        .await;
                }
            }
        }
        let kind = &t.resource.kind;
        let scheduled_key = self.peek_key();
        // A `.sync` child execution gets a task token too, as on AWS: `$$.Task.Token` is set,
        // and SendTaskSuccess/Failure with it ends the task (the child handed the parent's
        // token to a worker). The same token again when resuming an attempt that issued it.
        let sync_token = match &self.tokens {
            Some(broker) if is_sync_start_execution(kind) => {
                let issued = match self.recorded(&scheduled_key).is_some() || self.map_child {
                    true => broker
                        .find_issued(&scheduled_key)
                        .map_err(|e| Failed::new(e, cx.attempt_prev))?,
                    false => None,
                };
                Some(match issued {
                    Some(row) => (TaskToken::from_stored(row.token), true),
                    None => (
                        TaskToken::generate().map_err(|e| Failed::new(e, cx.attempt_prev))?,
                        false,
                    ),
                })
            }
            _ => None,
        };
        let parameters = match &sync_token {
            Some((token, _)) => self.arguments_with(cx, &t.io, effective, |context| {
                if let Value::Object(m) = context {
                    m.insert(
                        "Task".into(),
                        serde_json::json!({ "Token": token.as_str() }),
                    );
                }
            })?,
            None => self.arguments(cx, &t.io, effective)?,
        };
        self.check_parameters(cx, t, &parameters)?;
        let (timeout, heartbeat) = self.task_clocks(cx, t, effective)?;
        let events = TaskEvents::of(kind);
        let scheduled = self.scheduled_details(t, &parameters, timeout, heartbeat);
        let prev = self.push(cx.attempt_prev, events.scheduled, Some(scheduled.build()))?;
        let started_details = match kind {
            ResourceKind::Integration { .. } => Some(integration_details(kind).build()),
            ResourceKind::Activity { .. } => {
                Some(Details::new().str("workerName", "sfn-local").build())
            }
            ResourceKind::LambdaFunction => None,
        };
        let started_key = self.peek_key();
        let mut prev = self.push(prev, events.started, started_details.clone())?;
        // Resuming: the task's end may be recorded (then it is not run again); if it is not,
        // the command was running when the runner died, and it runs again (at least once, as
        // on AWS): a second started event says so.
        let resumed = self.recorded(&started_key).is_some();
        // A job submitted before the crash (`.sync`): its TaskSubmitted is replayed, and the
        // runner finds the job again instead of submitting a second one.
        let submission = resumed
            .then(|| self.recorded(&self.peek_key()))
            .flatten()
            .filter(|r| r.event_type == EventType::TaskSubmitted.as_str())
            .map(|r| {
                r.details
                    .as_ref()
                    .and_then(|d| d["output"].as_str())
                    .and_then(|text| serde_json::from_str(text).ok())
                    .unwrap_or(Value::Null)
            });
        let submitted_recorded = submission.is_some();
        if submitted_recorded {
            prev = self.push(prev, EventType::TaskSubmitted, None)?;
        }
        let recorded_result = self.recorded_task_result(&events);
        let reattaches = crate::tasks::nested::is_start_execution(kind);
        if recorded_result.is_none() && resumed && !reattaches {
            prev = self.push(prev, events.started, started_details)?;
        }
        if let Some(result) = recorded_result {
            return self.task_result(cx, t, raw_input, prev, &events, result);
        }
        // The task's effects leave the process: everything before them must be committed.
        self.commit_before_effects(cx).await?;
        // The token is stored (and committed) before the child that carries it starts.
        let open_token = match (&sync_token, &self.tokens) {
            (Some((token, true)), Some(broker)) => Some(broker.reopen(token.clone())),
            (Some((token, false)), Some(broker)) => Some(
                broker
                    .issue(NewTaskToken {
                        token: token.as_str().to_owned(),
                        execution_arn: broker.execution_arn().to_owned(),
                        state_name: cx.state.name.clone(),
                        attempt: cx.retry_count.unwrap_or(0),
                        kind: TokenKind::Callback,
                        activity_arn: None,
                        input: parameters.to_string(),
                        created_at: self.clock.now(),
                        // The attempt's own clocks bound it; the token only carries answers.
                        timeout_seconds: None,
                        heartbeat_seconds: None,
                        heartbeat_ms: None,
                        timeout_at: None,
                        replay_key: Some(scheduled_key.clone()),
                        virtual_clock: self.clock.virtual_clock().is_some(),
                    })
                    .map_err(|e| Failed::new(e, prev))?,
            ),
            _ => None,
        };
        let request = TaskRequest {
            state_name: cx.state.name.clone(),
            resource: t.resource.clone(),
            input: parameters,
            execution_arn: self.info.execution_arn.clone(),
            retry_count: cx.retry_count.unwrap_or(0),
        };
        let (submitted_tx, submitted_rx) = tokio::sync::oneshot::channel();
        let job = JobContext {
            task_key: scheduled_key,
            resumed,
            submitted: (!submitted_recorded).then_some(submitted_tx),
            submission,
        };
        let job_prev = std::cell::Cell::new(prev);
        let run = self.run_submitted(
            kind,
            self.tasks.run_job(request, job),
            submitted_rx,
            &job_prev,
        );
        let run = async {
            let Some(open) = &open_token else {
                return run.await;
            };
            tokio::pin!(run);
            // Whichever ends the task first: the child (DescribeExecution's answer) or an
            // answer to its token. The child is stopped when the token wins, and the token is
            // closed when the child wins (a late answer is TaskTimedOut).
            let mut no_worker = None;
            tokio::select! {
                biased;
                r = &mut run => r,
                event = open.next_event(self.clock.as_ref(), true, &mut no_worker) => match event {
                    Ok(TokenEvent::Succeeded(output)) => Ok(Ok(output)),
                    Ok(TokenEvent::Failed(e)) => Ok(Err(e)),
                    Ok(TokenEvent::TimedOut(expiry)) => Ok(Err(expiry_error(expiry))),
                    // Closed under us: the execution is being stopped, and the stop watcher
                    // ends it.
                    Ok(TokenEvent::Closed | TokenEvent::Started { .. }) => {
                        std::future::pending().await
                    }
                    Err(e) => Err(Failed::new(e, job_prev.get())),
                },
            }
        };
        let result = match timeout {
            Some(secs) => {
                let deadline = self.last_ts.get()
                    + self.clock.scale(Duration::from_secs(secs)).as_millis() as Millis;
                tokio::select! {
                    r = run => Some(r),
                    _ = self.clock.sleep_until(deadline) => None,
                }
            }
            None => Some(run.await),
        };
        let result = match result {
            Some(Err(failed)) => return Err(failed),
            Some(Ok(r)) => Some(r),
            None => None,
        };
        self.task_result(cx, t, raw_input, job_prev.get(), &events, result)
    }

    /// Drives a runner's job, recording `TaskSubmitted` with the submission's response when
    /// the runner reports one (`.sync`); `prev` follows the events written.
    async fn run_submitted(
        &self,
        kind: &ResourceKind,
        run: crate::tasks::TaskFuture,
        submitted: tokio::sync::oneshot::Receiver<Value>,
        prev: &std::cell::Cell<EventId>,
    ) -> Result<Result<Value, StatesError>, Failed> {
        let mut run = run;
        let mut submitted = Some(submitted);
        loop {
            let waiting = async {
                match submitted.as_mut() {
                    Some(rx) => rx.await.ok(),
                    None => std::future::pending().await,
                }
            };
            // The submission first: a job that ends at once has still been submitted.
            tokio::select! {
                biased;
                response = waiting => {
                    submitted = None;
                    if let Some(response) = response {
                        let id = self.push(
                            prev.get(),
                            EventType::TaskSubmitted,
                            Some(integration_details(kind).payload("output", response.to_string()).build()),
                        )?;
                        prev.set(id);
                        // The job runs outside: its submission must survive a crash, so that
                        // a resume finds the job again instead of submitting a second one.
                        self.committed().await.map_err(|e| Failed {
                            error: StatesError::runtime(format!(
                                "the history could not be committed: {e}"
                            )),
                            prev: id,
                            terminal: true,
                            unfinished: None,
                        })?;
                    }
                }
                r = &mut run => {
                    if let Some(Ok(response)) = submitted.as_mut().map(|rx| rx.try_recv()) {
                        let id = self.push(
                            prev.get(),
                            EventType::TaskSubmitted,
                            Some(integration_details(kind).payload("output", response.to_string()).build()),
                        )?;
                        prev.set(id);
                    }
                    return Ok(r);
                }
            }
        }
    }

    /// When resuming: the task's end as recorded right after its started event, if it is.
    /// `Some(None)` is a recorded timeout.
    pub(crate) fn recorded_task_result(
        &self,
        events: &TaskEvents,
    ) -> Option<Option<Result<Value, StatesError>>> {
        let recorded = self.recorded(&self.peek_key())?;
        let details = recorded.details.clone().unwrap_or(Value::Null);
        let text = |k: &str| details[k].as_str().map(str::to_owned);
        if recorded.event_type == events.succeeded.as_str() {
            let output = text("output").and_then(|t| serde_json::from_str(&t).ok())?;
            Some(Some(Ok(output)))
        } else if recorded.event_type == events.failed.as_str() {
            Some(Some(Err(StatesError {
                error: text("error"),
                cause: text("cause"),
                heartbeat: false,
            })))
        } else if recorded.event_type == events.timed_out.as_str() {
            Some(None)
        } else {
            None
        }
    }

    /// The events and output of a finished attempt (`None`: it timed out).
    /// The `*Scheduled` event's details for a resource kind: integrations record the
    /// parameters, activities and Lambda functions the input; the clocks only when declared.
    pub(crate) fn scheduled_details(
        &self,
        t: &Task,
        parameters: &Value,
        timeout: Option<u64>,
        heartbeat: Option<u64>,
    ) -> Details {
        let kind = &t.resource.kind;
        let parameters_text = parameters.to_string();
        let mut scheduled = match kind {
            ResourceKind::Integration { .. } => integration_details(kind)
                .str("region", &self.info.region)
                .str("parameters", parameters_text),
            ResourceKind::Activity { .. } | ResourceKind::LambdaFunction => Details::new()
                .str("resource", &t.resource.arn)
                .payload("input", parameters_text),
        };
        if let Some(tmo) = timeout {
            scheduled = scheduled.int("timeoutInSeconds", tmo as i64);
        }
        if let (Some(hb), false) = (heartbeat, matches!(kind, ResourceKind::LambdaFunction)) {
            scheduled = scheduled.int("heartbeatInSeconds", hb as i64);
        }
        scheduled
    }

    pub(crate) fn task_result(
        &self,
        cx: &StateCx<'_>,
        t: &Task,
        raw_input: &Value,
        prev: EventId,
        events: &TaskEvents,
        result: Option<Result<Value, StatesError>>,
    ) -> Result<(Value, EventId), Failed> {
        let kind = &t.resource.kind;
        match result {
            Some(Ok(result)) => {
                let text = result.to_string();
                if text.len() > MAX_PAYLOAD_BYTES {
                    let e = crate::tasks::result_too_large(&t.resource);
                    let prev = self.push(
                        prev,
                        events.failed,
                        Some(integration_details(kind).error(&e).build()),
                    )?;
                    return Err(Failed::new(e, prev));
                }
                let prev = self.push(
                    prev,
                    events.succeeded,
                    Some(integration_details(kind).payload("output", text).build()),
                )?;
                // A runtime error of ResultSelector, ResultPath or OutputPath follows the
                // task's last event: AWS points the failure there, not at TaskStateEntered.
                let output = self
                    .finish_result(cx, &t.io, raw_input.clone(), result)
                    .map_err(|f| f.after_work(cx, prev))?;
                Ok((output, prev))
            }
            Some(Err(e)) => {
                // A worker, a service or a program may say more than AWS keeps.
                let e = crate::limits::bounded_error(e);
                let prev = self.push(
                    prev,
                    events.failed,
                    Some(integration_details(kind).error(&e).build()),
                )?;
                Err(Failed::new(e, prev))
            }
            None => {
                let e = StatesError::timeout();
                let prev = self.push(prev, events.timed_out, Some(timed_out_details(kind)))?;
                Err(Failed::new(e, prev))
            }
        }
    }
}
