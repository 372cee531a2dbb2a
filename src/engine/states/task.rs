//! Task: hand the effective input to the task runner, bound the attempt by `TimeoutSeconds`,
//! retry and catch, and record the events AWS writes for the resource's kind.

use crate::asl::error::{names, StatesError};
use crate::asl::model::{Dynamic, Task};
use crate::asl::resource::ResourceKind;
use crate::asl::QueryLanguage;
use crate::clock::Millis;
use crate::engine::execution::{Engine, Failed, StateCx, Step, MAX_PAYLOAD_BYTES};
use crate::engine::history::{Details, EventId, EventType};
use crate::engine::retry::Retries;
use crate::store::{NewTaskToken, TokenKind};
use crate::tasks::callback::{expiry_error, OpenToken, TaskToken, TokenBroker, TokenEvent};
use crate::tasks::{JobContext, TaskRequest};
use serde_json::{json, Value};
use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::oneshot;

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
                    None => return self.catch(cx, &t.errors, &input, failed).await,
                },
            }
        }
    }

    /// A `TimeoutSeconds`-like number: literal, or read from the effective input by a
    /// `*SecondsPath`, which must name a positive integer.
    pub(crate) async fn resolve_count(
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
                self.jsonata_count(cx, t, field, input, min).await.map(Some)
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
    pub(crate) async fn task_clocks(
        &self,
        cx: &StateCx<'_>,
        t: &Task,
        effective: &Value,
    ) -> Result<(Option<u64>, Option<u64>), Failed> {
        let timeout = self
            .resolve_count(
                cx,
                t.timeout_seconds.as_ref(),
                effective,
                "TimeoutSecondsPath",
                1,
            )
            .await?;
        let heartbeat = self
            .resolve_count(
                cx,
                t.heartbeat_seconds.as_ref(),
                effective,
                "HeartbeatSecondsPath",
                1,
            )
            .await?;
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
    /// result's events, then ResultSelector/ResultPath/OutputPath. A mocked state and a task
    /// that waits for a worker's token have attempts of their own.
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
        if let Some(broker) = self.token_broker_for(cx, t) {
            return self
                .token_attempt(cx, t, raw_input, effective, &broker)
                .await;
        }
        let kind = &t.resource.kind;
        let scheduled_key = self.peek_key();
        let sync_token = self.sync_token(cx, kind, &scheduled_key)?;
        let parameters = self
            .attempt_parameters(
                cx,
                t,
                effective,
                sync_token.as_ref().map(|(token, _)| token),
            )
            .await?;
        self.check_parameters(cx, t, &parameters)?;
        let (timeout, heartbeat) = self.task_clocks(cx, t, effective).await?;
        let events = TaskEvents::of(kind);
        let scheduled = self.scheduled_details(t, &parameters, timeout, heartbeat);
        let prev = self.push(cx.attempt_prev, events.scheduled, Some(scheduled.build()))?;
        self.turn().await;
        let mut begun = self.task_started(kind, &events, prev)?;
        if let Some(result) = begun.recorded_result.take() {
            return self
                .task_result(cx, t, raw_input, begun.prev, &events, result)
                .await;
        }
        // The task's effects leave the process: everything before them must be committed.
        self.commit_before_effects(cx).await?;
        // The token is stored (and committed) before the child that carries it starts.
        let open_token =
            self.open_sync_token(cx, sync_token, &parameters, &scheduled_key, begun.prev)?;
        let request = self.task_request(cx, t, parameters);
        let job_prev = Cell::new(begun.prev);
        let (job, submitted) = begun.job(scheduled_key.into());
        let run = self.run_submitted(kind, self.tasks.run_job(request, job), submitted, &job_prev);
        let run = self.or_token_answer(run, open_token.as_ref(), &job_prev);
        let result = match self.within_timeout(timeout, run).await {
            Some(Err(failed)) => return Err(failed),
            Some(Ok(r)) => Some(r),
            None => None,
        };
        self.task_result(cx, t, raw_input, job_prev.get(), &events, result)
            .await
    }

    /// The attempt's Parameters, with `$$.Task.Token` set to the `.sync` child's token, or to
    /// a fresh one when the runner answers `.waitForTaskToken` attempts itself (a replay).
    async fn attempt_parameters(
        &self,
        cx: &StateCx<'_>,
        t: &Task,
        effective: &Value,
        sync_token: Option<&TaskToken>,
    ) -> Result<Value, Failed> {
        let callback_token = match t.resource.waits_for_token() && self.tasks.answers_callbacks() {
            true => Some(TaskToken::generate().map_err(|e| Failed::new(e, cx.attempt_prev))?),
            false => None,
        };
        match sync_token.or(callback_token.as_ref()) {
            Some(token) => {
                self.arguments_with(cx, &t.io, effective, set_task_token(token))
                    .await
            }
            None => self.arguments(cx, &t.io, effective).await,
        }
    }

    /// The token broker, when this attempt waits for a worker's answer through it
    /// (`.waitForTaskToken`, activities).
    fn token_broker_for(&self, cx: &StateCx<'_>, t: &Task) -> Option<Rc<TokenBroker>> {
        if !t.resource.waits_for_token() {
            return None;
        }
        let broker = self.tokens.clone()?;
        // An activity bound with --task keeps running its command as the worker.
        let bound_activity = matches!(t.resource.kind, ResourceKind::Activity { .. })
            && broker.worker_for(&cx.state.name).is_some();
        (!bound_activity).then_some(broker)
    }

    /// The token of a `.sync` child execution's attempt, and whether it is the one the
    /// attempt issued before a crash. A `.sync` child execution gets a task token too, as on
    /// AWS: `$$.Task.Token` is set, and SendTaskSuccess/Failure with it ends the task (the
    /// child handed the parent's token to a worker).
    fn sync_token(
        &self,
        cx: &StateCx<'_>,
        kind: &ResourceKind,
        scheduled_key: &str,
    ) -> Result<Option<(TaskToken, bool)>, Failed> {
        match &self.tokens {
            Some(broker) if is_sync_start_execution(kind) => {
                self.attempt_token(cx, broker, scheduled_key).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// The attempt's token and whether it is reused: the token the attempt issued before a
    /// crash (workers may hold it; an answer may be waiting in its row), found by the replay
    /// key of its scheduling event, or a fresh one.
    pub(crate) fn attempt_token(
        &self,
        cx: &StateCx<'_>,
        broker: &TokenBroker,
        scheduled_key: &str,
    ) -> Result<(TaskToken, bool), Failed> {
        // A Map child is not replayed, but a run of it before a crash may have issued the token.
        let issued = match self.recorded(scheduled_key).is_some() || self.map_child {
            true => broker
                .find_issued(scheduled_key)
                .map_err(|e| Failed::new(e, cx.attempt_prev))?,
            false => None,
        };
        Ok(match issued {
            Some(row) => (TaskToken::from_stored(row.token), true),
            None => (
                TaskToken::generate().map_err(|e| Failed::new(e, cx.attempt_prev))?,
                false,
            ),
        })
    }

    /// The `*Started` event of a task that runs here, and, when resuming, what its recorded
    /// history says about the run before the crash.
    fn task_started(
        &self,
        kind: &ResourceKind,
        events: &TaskEvents,
        prev: EventId,
    ) -> Result<Begun, Failed> {
        let started_details = started_details(kind);
        let started_key = self.peek_key();
        let mut prev = self.push(prev, events.started, started_details.clone())?;
        // Resuming: the task's end may be recorded (then it is not run again); if it is not,
        // the command was running when the runner died, and it runs again (at least once, as
        // on AWS): a second started event says so.
        let resumed = self.recorded(&started_key).is_some();
        let submission = self.recorded_submission(resumed);
        if submission.is_some() {
            prev = self.push(prev, EventType::TaskSubmitted, None)?;
        }
        let recorded_result = self.recorded_task_result(events);
        // A child execution is found again, not started a second time.
        let reattaches = crate::tasks::nested::is_start_execution(kind);
        if recorded_result.is_none() && resumed && !reattaches {
            prev = self.push(prev, events.started, started_details)?;
        }
        Ok(Begun {
            prev,
            resumed,
            submission,
            recorded_result,
        })
    }

    /// When resuming: the response of a job submitted before the crash (`.sync`), from its
    /// recorded TaskSubmitted. That event is replayed, and the runner finds the job again
    /// instead of submitting a second one.
    fn recorded_submission(&self, resumed: bool) -> Option<Value> {
        resumed
            .then(|| self.recorded(&self.peek_key()))
            .flatten()
            .filter(|r| r.event_type == EventType::TaskSubmitted.as_str())
            .map(|r| {
                r.details
                    .as_ref()
                    .and_then(|d| d["output"].as_str())
                    .and_then(|text| serde_json::from_str(text).ok())
                    .unwrap_or(Value::Null)
            })
    }

    /// Opens a `.sync` child execution's token: reopened when the attempt issued it before a
    /// crash, else stored (and committed) now.
    fn open_sync_token(
        &self,
        cx: &StateCx<'_>,
        sync_token: Option<(TaskToken, bool)>,
        parameters: &Value,
        scheduled_key: &str,
        prev: EventId,
    ) -> Result<Option<OpenToken<'_>>, Failed> {
        let (Some((token, reused)), Some(broker)) = (sync_token, &self.tokens) else {
            return Ok(None);
        };
        if reused {
            return Ok(Some(broker.reopen(token)));
        }
        // The attempt's own clocks bound it; the token only carries answers.
        let input = parameters.to_string();
        let row = self.token_row(cx, broker, &token, input, scheduled_key, self.clock.now());
        broker
            .issue(row)
            .map(Some)
            .map_err(|e| Failed::new(e, prev))
    }

    /// The row of a token an attempt issues at `created_at`: a callback's, without deadlines
    /// (a callback or activity attempt adds its own).
    pub(crate) fn token_row(
        &self,
        cx: &StateCx<'_>,
        broker: &TokenBroker,
        token: &TaskToken,
        input: String,
        scheduled_key: &str,
        created_at: Millis,
    ) -> NewTaskToken {
        NewTaskToken {
            token: token.as_str().to_owned(),
            // The broker's: a Map child's tokens belong to its parent execution.
            execution_arn: broker.execution_arn().to_owned(),
            state_name: cx.state.name.clone(),
            attempt: cx.retry_count.unwrap_or(0),
            kind: TokenKind::Callback,
            activity_arn: None,
            input,
            created_at,
            timeout_seconds: None,
            heartbeat_seconds: None,
            heartbeat_ms: None,
            timeout_at: None,
            replay_key: Some(scheduled_key.to_owned()),
            virtual_clock: self.clock.virtual_clock().is_some(),
        }
    }

    /// What the task runner is asked to do for this attempt.
    pub(crate) fn task_request(&self, cx: &StateCx<'_>, t: &Task, input: Value) -> TaskRequest {
        TaskRequest {
            state_name: cx.state.name.clone(),
            resource: t.resource.clone(),
            input,
            execution_arn: self.info.execution_arn.clone(),
            retry_count: cx.retry_count.unwrap_or(0),
            virtual_time: self.clock.virtual_clock().map(crate::clock::Clock::now),
        }
    }

    /// The job, or the answer to its token when that comes first (a `.sync` child execution
    /// that handed the parent's token to a worker). The child is stopped when the token wins,
    /// and the token is closed when the child wins (a late answer is TaskTimedOut).
    async fn or_token_answer(
        &self,
        run: impl Future<Output = JobResult>,
        open: Option<&OpenToken<'_>>,
        prev: &Cell<EventId>,
    ) -> JobResult {
        let Some(open) = open else {
            return run.await;
        };
        tokio::pin!(run);
        let mut no_worker = None;
        // Whichever ends the task first: the child (DescribeExecution's answer) or an answer
        // to its token.
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
                Err(e) => Err(Failed::new(e, prev.get())),
            },
        }
    }

    /// `run`, bounded by `TimeoutSeconds` counted from the last event written (the task's
    /// start); `None` when the clock ran out first.
    async fn within_timeout<T>(
        &self,
        timeout: Option<u64>,
        run: impl Future<Output = T>,
    ) -> Option<T> {
        // Outside work the attempt starts holds a virtual clock no longer than this in wall
        // time (see `clock::held`).
        let run = crate::clock::within_budget(timeout.map(Duration::from_secs), run);
        let Some(secs) = timeout else {
            return Some(run.await);
        };
        let deadline =
            self.last_ts.get() + self.clock.scale(Duration::from_secs(secs)).as_millis() as Millis;
        tokio::select! {
            r = run => Some(r),
            _ = self.clock.sleep_until(deadline) => None,
        }
    }

    /// Drives a runner's job, recording `TaskSubmitted` with the submission's response when
    /// the runner reports one (`.sync`); `prev` follows the events written.
    async fn run_submitted(
        &self,
        kind: &ResourceKind,
        run: crate::tasks::TaskFuture,
        submitted: oneshot::Receiver<Value>,
        prev: &Cell<EventId>,
    ) -> JobResult {
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

    /// The events and output of a finished attempt (`None`: it timed out).
    pub(crate) async fn task_result(
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
                    return Err(self.attempt_failed(kind, events, prev, e));
                }
                if self.compat() == crate::asl::Compat::StepFunctionsLocal
                    && cx.state.query_language == QueryLanguage::JsonPath
                {
                    return self
                        .step_functions_local_result(cx, t, raw_input, prev, events, result, text)
                        .await;
                }
                let details = integration_details(kind).payload("output", text).build();
                let prev = self.push(prev, events.succeeded, Some(details))?;
                self.attempt_output(cx, t, raw_input, prev, result).await
            }
            // A heartbeat that ran out ends the attempt as the token broker's does (a
            // replay's runner answers callbacks itself and reports a recorded one so).
            Some(Err(e)) if e.heartbeat => {
                let details = Some(timed_out_details(kind));
                Err(self.failure_event(prev, events.timed_out, details, e))
            }
            // A worker, a service or a program may say more than AWS keeps.
            Some(Err(e)) => {
                let e = crate::limits::bounded_error(e);
                Err(self.attempt_failed(kind, events, prev, e))
            }
            None => {
                let details = Some(timed_out_details(kind));
                Err(self.failure_event(prev, events.timed_out, details, StatesError::timeout()))
            }
        }
    }

    /// `--compat stepfunctions-local`: Step Functions Local records a Task's result in its
    /// `*Succeeded` event after `ResultSelector` and `ResultPath` (AWS records the result as the
    /// task returned it). Resuming, the recorded value is that one: only `OutputPath` is left
    /// (Step Functions Local has no variables, so no `Assign` is skipped).
    #[allow(clippy::too_many_arguments)]
    async fn step_functions_local_result(
        &self,
        cx: &StateCx<'_>,
        t: &Task,
        raw_input: &Value,
        prev: EventId,
        events: &TaskEvents,
        result: Value,
        text: String,
    ) -> Result<(Value, EventId), Failed> {
        let selected = match &t.io.result_selector {
            Some(template) => self.template(cx, template, &result, "ResultSelector", |_| {}),
            None => Ok(result.clone()),
        }
        .and_then(|r| self.result_path(cx, &t.io, raw_input.clone(), r));
        // A selection that fails is recorded as AWS records it; the state then fails as usual.
        let recorded = selected.as_ref().map(Value::to_string).unwrap_or(text);
        let details = integration_details(&t.resource.kind)
            .payload("output", recorded)
            .build();
        let key = self.peek_key();
        let prev = self.push(prev, events.succeeded, Some(details))?;
        // Resuming, the recorded event holds the value after ResultSelector and ResultPath
        // (whether the result itself was recorded or a mock answered again).
        let recorded = self
            .replayed_last
            .get()
            .then(|| self.recorded(&key))
            .flatten()
            .and_then(|r| r.details.as_ref()?["output"].as_str().map(str::to_owned))
            .and_then(|text| serde_json::from_str::<Value>(&text).ok());
        if let Some(selected) = recorded {
            let output = self
                .output_path(cx, &t.io, selected)
                .map_err(|f| f.after_work(cx, prev))?;
            return Ok((output, prev));
        }
        self.attempt_output(cx, t, raw_input, prev, result).await
    }

    /// A succeeded attempt's output, once its `*Succeeded` event (`prev`) is written:
    /// ResultSelector, ResultPath and OutputPath over its result.
    pub(crate) async fn attempt_output(
        &self,
        cx: &StateCx<'_>,
        t: &Task,
        raw_input: &Value,
        prev: EventId,
        result: Value,
    ) -> Result<(Value, EventId), Failed> {
        // A runtime error of ResultSelector, ResultPath or OutputPath follows the task's last
        // event: AWS points the failure there, not at TaskStateEntered.
        let output = self
            .finish_result(cx, &t.io, raw_input.clone(), result)
            .await
            .map_err(|f| f.after_work(cx, prev))?;
        Ok((output, prev))
    }

    /// The attempt's failure event (`TaskFailed`, `ActivityFailed`, ...) carrying `e`, and `e`
    /// as the state's failure after it.
    pub(crate) fn attempt_failed(
        &self,
        kind: &ResourceKind,
        events: &TaskEvents,
        prev: EventId,
        e: StatesError,
    ) -> Failed {
        let details = integration_details(kind).error(&e).build();
        self.failure_event(prev, events.failed, Some(details), e)
    }
}

/// What a runner's job ends with: its result (an error is the task's), or a failure of the
/// attempt itself (the history could not be written).
type JobResult = Result<Result<Value, StatesError>, Failed>;

/// The `*Started` event's details: the integration for a service, the worker for an activity
/// its `--task` command runs, none for a Lambda function.
fn started_details(kind: &ResourceKind) -> Option<String> {
    match kind {
        ResourceKind::Integration { .. } => Some(integration_details(kind).build()),
        ResourceKind::Activity { .. } => {
            Some(Details::new().str("workerName", "sfn-local").build())
        }
        ResourceKind::LambdaFunction => None,
    }
}

/// Puts `token` in the context object as `$$.Task.Token`.
pub(crate) fn set_task_token(token: &TaskToken) -> impl Fn(&mut Value) + '_ {
    move |context| {
        if let Value::Object(m) = context {
            m.insert("Task".into(), json!({ "Token": token.as_str() }));
        }
    }
}

/// Where an attempt stands once its started event is written, with what a resumed attempt's
/// recorded history says about the run before the crash.
struct Begun {
    /// The last event written.
    prev: EventId,
    /// Whether the started event was recorded: the task was running when the runner died.
    resumed: bool,
    /// The response of a job submitted before the crash (`.sync`), from its `TaskSubmitted`.
    submission: Option<Value>,
    /// The attempt's end, when it is recorded (see [`Engine::recorded_task_result`]).
    recorded_result: Option<Option<Result<Value, StatesError>>>,
}

impl Begun {
    /// The job as the runner sees it, and where the runner reports its submission (it is not
    /// asked for one when the submission before the crash is recorded).
    fn job(self, task_key: String) -> (JobContext, oneshot::Receiver<Value>) {
        let (submitted_tx, submitted_rx) = oneshot::channel();
        let job = JobContext {
            task_key,
            resumed: self.resumed,
            submitted: self.submission.is_none().then_some(submitted_tx),
            submission: self.submission,
        };
        (job, submitted_rx)
    }
}
