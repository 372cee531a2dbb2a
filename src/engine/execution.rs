//! Drives one execution: the state loop, data flow, Retry and Catch, events out.
//!
//! An execution runs on one thread (a current-thread runtime): states that do no I/O run to
//! completion without yielding, and shared state needs no locks. Concurrency (Parallel
//! branches, Map iterations) comes from polling futures side by side; while two or more run,
//! they take turns after each state's entry, so their events interleave as AWS records them
//! (see `engine::lanes`).
//!
//! Each state type lives in its own file under `states/`, as an `impl Engine` block.

use crate::asl::error::{names, StatesError};
use crate::asl::eval::Env;
use crate::asl::jsonata::JsonataTemplate;
use crate::asl::model::*;
use crate::asl::path::Path;
use crate::asl::template::Template;
use crate::clock::{Clock, Millis};
use crate::engine::context::{enter_state, ExecutionInfo};
use crate::engine::history::{Details, EventId, EventType, History, Payload};
use crate::engine::map_journal::MapRunJournal;
use crate::engine::replay::{Lane, Replay};
use crate::engine::stopping::Stopping;
use crate::engine::variables::Frame;
use crate::store::StopRequest;
use crate::tasks::callback::TokenBroker;
use crate::tasks::TaskRunner;
use futures_util::future::LocalBoxFuture;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// AWS's payload quota: 256 KiB of UTF-8.
pub const MAX_PAYLOAD_BYTES: usize = crate::limits::PAYLOAD_BYTES;

/// How many states an execution runs before it lets the other executions of its thread run
/// ([`Engine::checkpoint`]). A yield costs a few microseconds (the runtime looks at its I/O
/// on the way): every 32 states made a 10,000-event Map's `run` a tenth slower, every 256
/// nothing measurable. A state takes microseconds, and a JSONata expression still evaluating
/// after 10 ms moves to a thread of its own while the execution waits, so the thread is let go
/// within a few milliseconds in all but contrived loops.
const STATES_PER_YIELD: u32 = 256;

/// How an execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Ended successfully.
    Succeeded,
    /// Ended with an error.
    Failed,
    /// Ran past its `TimeoutSeconds`.
    TimedOut,
    /// Was stopped.
    Aborted,
}

impl Status {
    /// AWS's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Succeeded => "SUCCEEDED",
            Status::Failed => "FAILED",
            Status::TimedOut => "TIMED_OUT",
            Status::Aborted => "ABORTED",
        }
    }
}

/// The end of an execution.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// How it ended.
    pub status: Status,
    /// The output, when it succeeded.
    pub output: Option<Value>,
    /// The output as JSON text, serialized once for its event, the stored execution and the
    /// command's answer (a large Map's output cost 4% of the run for each time it was).
    pub output_json: Option<std::sync::Arc<str>>,
    /// The error, when it failed (absent for timeouts, as AWS).
    pub error: Option<StatesError>,
    /// When it ended.
    pub stop_time: Millis,
}

impl Outcome {
    /// The output as JSON text: the text serialized for its event when there is one.
    pub fn output_text(&self) -> Option<std::borrow::Cow<'_, str>> {
        match (&self.output_json, &self.output) {
            (Some(text), _) => Some(std::borrow::Cow::Borrowed(text)),
            (None, output) => output.as_ref().map(|v| v.to_string().into()),
        }
    }
}

/// A failure on its way up: the error and the last event written before it.
#[derive(Debug, Clone)]
pub struct Failed {
    /// The error.
    pub error: StatesError,
    /// The event the next event should point at.
    pub prev: EventId,
    /// Whether Retry and Catch must leave it alone (runtime errors, the history cap,
    /// state-level data limits).
    pub terminal: bool,
    /// The `*StateAborted` event AWS still owes the state that failed, when its Parallel
    /// branch or Map iteration is wound up: a Task whose failure leaves the state is, to AWS,
    /// still running until its container fails, which writes `TaskStateAborted` for it (after
    /// the other branches' aborted events, before `ParallelStateFailed`/`MapStateFailed`).
    /// At the top level nothing is written for it.
    pub unfinished: Option<EventType>,
}

impl Failed {
    /// Writes the `*StateAborted` event the failed state is still owed (see
    /// [`Failed::unfinished`]), when its Parallel branch or Map iteration fails its container.
    pub(crate) fn wind_up(&mut self, engine: &Engine) -> Result<(), Failed> {
        if let Some(event) = self.unfinished.take() {
            engine.push(self.prev, event, None)?;
        }
        Ok(())
    }

    /// The failure of a state's output processing (ResultSelector, ResultPath, OutputPath)
    /// after its work wrote `last`: a runtime error, written as at the state's entry, follows
    /// `last` on AWS. (`EvaluationFailed` events keep their own links.)
    pub(crate) fn after_work(self, cx: &StateCx<'_>, last: EventId) -> Failed {
        match self.prev == cx.entered_id {
            true => Failed { prev: last, ..self },
            false => self,
        }
    }

    /// A failure with its error cut to AWS's lengths (error 256, cause 32,768 characters):
    /// causes often quote inputs and outputs, which may be far longer.
    pub(crate) fn new(error: StatesError, prev: EventId) -> Self {
        let error = crate::limits::bounded_error(error);
        let terminal = !error.is_catchable();
        Failed {
            error,
            prev,
            terminal,
            unfinished: None,
        }
    }
}

/// What a state hands back to the loop when it is done.
pub(crate) struct Step {
    /// The state's output.
    pub output: Value,
    /// Where to go.
    pub next: Transition,
    /// The last event the state wrote.
    pub prev: EventId,
    /// Whether to skip the `*StateExited` event (Fail has none).
    pub no_exit_event: bool,
}

/// Per-state facts the context object shows (`$$.State`, `$$.Task`, `$$.Map`).
#[derive(Debug, Clone)]
pub(crate) struct StateCx<'a> {
    pub state: &'a State,
    pub entered_id: EventId,
    /// What the `*StateEntered` event points at (AWS points `EvaluationFailed` there too).
    pub entered_prev: EventId,
    /// What a Task attempt's first event (`TaskScheduled`, ...) points at: the `*StateEntered`
    /// event for the first attempt, the failure event of the attempt before for a retry.
    pub attempt_prev: EventId,
    pub entered_at: Millis,
    pub retry_count: Option<u64>,
    /// The variables of the scope the state runs in.
    pub frame: &'a Rc<Frame>,
    /// What the state assigns, committed by the state loop when the state is done.
    pub assigned: &'a RefCell<Option<serde_json::Map<String, Value>>>,
}

/// What a JSONata expression of a state may read besides variables: `$states.input`, and
/// `$states.result` or `$states.errorOutput` where AWS provides them.
#[derive(Clone, Copy)]
pub(crate) struct StatesData<'a> {
    pub input: &'a Value,
    pub result: Option<&'a Value>,
    pub error_output: Option<&'a Value>,
}

impl<'a> StatesData<'a> {
    /// Only `$states.input`.
    pub fn input(input: &'a Value) -> Self {
        StatesData {
            input,
            result: None,
            error_output: None,
        }
    }
}

/// Options that shape an execution without being part of the definition.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// The history cap (AWS: 25,000; 0 for none).
    pub max_history_events: i64,
    /// Whose behaviour to reproduce where AWS and Step Functions Local differ.
    pub compat: crate::asl::Compat,
    /// Step Functions Local's `WAIT_TIME_SCALE`: multiplies the time Wait states wait, and
    /// nothing else (task timeouts, heartbeats and retry intervals keep their length).
    pub wait_scale: f64,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            max_history_events: crate::engine::history::MAX_HISTORY_EVENTS,
            compat: crate::asl::Compat::Aws,
            wait_scale: 1.0,
        }
    }
}

/// Interprets one execution of a machine.
pub struct Engine {
    pub(crate) machine: Arc<StateMachine>,
    pub(crate) info: ExecutionInfo,
    /// The execution's input, taken by [`Engine::run`] (a large input was copied once more).
    input: Cell<Value>,
    pub(crate) history: RefCell<History>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) tasks: Rc<dyn TaskRunner>,
    /// Task tokens through the store, for callbacks and activities; `None` in memory-only runs
    /// (those Task states then go to `tasks` like any other).
    pub(crate) tokens: Option<Rc<TokenBroker>>,
    /// A distributed Map's finished children, kept for resume; `None` in memory-only runs.
    pub(crate) map_runs: Option<Rc<MapRunJournal>>,
    /// This engine runs a distributed Map's child execution with its parent's token broker:
    /// its tokens are the parent's to close, and a token its lane key finds is reused.
    pub(crate) map_child: bool,
    /// Set when the execution itself ends under running states (its `TimeoutSeconds`, a
    /// stop): AWS then writes only the terminal event, so those states end without their
    /// `*StateAborted` events (unlike a sibling branch's failure, which writes them).
    pub(crate) cut_short: Cell<bool>,
    /// See [`EngineOptions::wait_scale`].
    pub(crate) wait_scale: f64,
    /// A stop that reaches the execution from another thread (see [`super::stopping`]);
    /// shared with a distributed Map's children.
    pub(crate) stopping: Arc<Stopping>,
    /// The states run since the execution last let the other executions of its thread run
    /// (see [`Engine::checkpoint`]).
    states_since_yield: Cell<u32>,
    /// A stop asked for by whoever drives the engine without a store (see
    /// [`Engine::with_stop_signal`]).
    stop_signal: RefCell<Option<LocalBoxFuture<'static, StopRequest>>>,
    /// The context object, reused: `$$.State` and friends are set right before each evaluation,
    /// with no await in between, so concurrent branches never see each other's.
    context: RefCell<Value>,
    /// Set by TestState, which is given the whole context object: states then read it as
    /// given instead of setting `$$.State` on entry.
    fixed_context: Cell<bool>,
    /// The recorded history, when resuming.
    pub(crate) replay: Option<Replay>,
    /// The lane being polled: the top level, or the branch or iteration whose future runs.
    lane: RefCell<Rc<Lane>>,
    /// The timestamp of the last event pushed or replayed: deadlines that follow an event
    /// (retry intervals, task timeouts) count from it, so a resumed execution keeps them.
    pub(crate) last_ts: Cell<Millis>,
    /// The top level's last exit payload and its text, when its last state wrote one: the
    /// execution's output, serialized once for `MapStateExited` (say), `ExecutionSucceeded`
    /// and the caller (a 10,000-item Map's output was serialized and escaped three times).
    root_output: RefCell<Option<(Payload, Arc<str>)>>,
    /// How many sets of two or more lanes (Parallel branches, Map iterations) are running:
    /// while any is, lanes take turns (see `engine::lanes`).
    pub(crate) side_by_side: Cell<u32>,
    /// The lanes that gave the others a turn, woken in this order once no other lane is
    /// ready (see `engine::lanes`).
    pub(crate) turns: RefCell<Vec<std::task::Waker>>,
    /// While a Parallel or Map aborts its other lanes: the event that failed it, which their
    /// aborted events point at.
    pub(crate) abort_link: Cell<Option<EventId>>,
    /// Whether the last event pushed was one a resume found recorded: a lane then goes on
    /// without giving the others a turn (they happened before the new events a lane writes).
    pub(crate) replayed_last: Cell<bool>,
    /// How many lanes run that started no lanes of their own (see `engine::lanes`).
    pub(crate) leaves: Cell<usize>,
    /// How many of those wait durably (see [`Engine::parked`]).
    pub(crate) parked: Cell<usize>,
    /// Called once, the first time every lane waits durably (see [`Engine::on_settled`]).
    pub(crate) settled: RefCell<Option<Box<dyn FnOnce()>>>,
}

impl Engine {
    /// An engine for one execution. `history` must start at event 1 (ExecutionStarted).
    pub fn new(
        machine: Arc<StateMachine>,
        info: ExecutionInfo,
        input: Value,
        history: History,
        clock: Arc<dyn Clock>,
        tasks: Rc<dyn TaskRunner>,
    ) -> Self {
        let context = info.context(&input, "", info.start_time);
        let info_start = info.start_time;
        Engine {
            machine,
            info,
            input: Cell::new(input),
            history: RefCell::new(history),
            clock,
            tasks,
            tokens: None,
            map_runs: None,
            map_child: false,
            cut_short: Cell::new(false),
            wait_scale: 1.0,
            stopping: Default::default(),
            states_since_yield: Cell::new(0),
            stop_signal: RefCell::new(None),
            context: RefCell::new(context),
            fixed_context: Cell::new(false),
            replay: None,
            lane: RefCell::new(Lane::root()),
            last_ts: Cell::new(info_start),
            root_output: RefCell::new(None),
            side_by_side: Cell::new(0),
            turns: RefCell::new(Vec::new()),
            abort_link: Cell::new(None),
            replayed_last: Cell::new(false),
            leaves: Cell::new(1),
            parked: Cell::new(0),
            settled: RefCell::new(None),
        }
    }

    /// Resumes instead of starting: `recorded` is the stored history (ExecutionStarted on); the
    /// engine replays it and writes only what comes after it. The history given to
    /// [`Engine::new`] must then start after the last recorded event.
    pub fn with_replay(mut self, recorded: Vec<crate::store::EventRecord>) -> Self {
        self.replay = Some(Replay::new(recorded));
        self
    }

    /// Calls `settled` once, the first time every lane of the execution waits durably (a Wait,
    /// a retry interval, a task token with no local program running): a resume has then
    /// replayed its history to where the execution stood without the process dying.
    pub fn on_settled(self, settled: impl FnOnce() + 'static) -> Self {
        *self.settled.borrow_mut() = Some(Box::new(settled));
        self
    }

    /// How many recorded events a resume has replayed so far.
    pub fn replayed(&self) -> usize {
        self.replay.as_ref().map_or(0, |r| r.claimed())
    }

    /// Makes every state read `context` as `$$` exactly (TestState's context object).
    pub(crate) fn fix_context(&self, context: Value) {
        *self.context.borrow_mut() = context;
        self.fixed_context.set(true);
    }

    /// Whose behaviour the history reproduces (`serve --compat`).
    pub(crate) fn compat(&self) -> crate::asl::Compat {
        self.history.borrow().compat()
    }

    /// The name of the current lane.
    pub(crate) fn lane_key(&self) -> String {
        self.lane.borrow().key().to_owned()
    }

    /// The replay key the next event of the current lane gets.
    pub(crate) fn peek_key(&self) -> crate::store::ReplayKey {
        self.lane.borrow().peek()
    }

    /// The recorded event with `key`, when resuming.
    pub(crate) fn recorded(&self, key: &str) -> Option<&crate::engine::replay::Recorded> {
        self.replay.as_ref().and_then(|r| r.get(key))
    }

    /// Runs `fut` as lane `lane`: every event it pushes is keyed in that lane.
    pub(crate) fn in_lane<'a, T: 'a>(
        &'a self,
        lane: Rc<Lane>,
        fut: LocalBoxFuture<'a, T>,
    ) -> LocalBoxFuture<'a, T> {
        Box::pin(InLane {
            engine: self,
            lane,
            fut: Some(fut),
        })
    }

    /// Lets callbacks (`.waitForTaskToken`) and activities wait for workers through the store,
    /// and lets `stop-execution` stop this execution.
    /// Multiplies the time Wait states wait (see [`EngineOptions::wait_scale`]).
    pub fn with_wait_scale(mut self, scale: f64) -> Self {
        self.wait_scale = scale;
        self
    }

    /// Answers task tokens through the store.
    pub fn with_tokens(mut self, broker: Rc<TokenBroker>) -> Self {
        self.tokens = Some(broker);
        self
    }

    /// Keeps a distributed Map's finished children in the store, so a resume does not run them
    /// again.
    pub fn with_map_runs(mut self, journal: Rc<MapRunJournal>) -> Self {
        self.map_runs = Some(journal);
        self
    }

    /// Makes this engine a distributed Map's child execution sharing its parent's token broker
    /// and Map run journal: its events are keyed under `root_key` (unique per Map run and
    /// item), so a child run again after a crash finds the token its first run issued (and any
    /// answer a worker gave meanwhile), and the finished children of its own distributed Maps.
    pub(crate) fn into_map_child(
        mut self,
        tokens: Option<Rc<TokenBroker>>,
        map_runs: Option<Rc<MapRunJournal>>,
        root_key: String,
        stopping: Arc<Stopping>,
    ) -> Self {
        self.tokens = tokens;
        self.map_runs = map_runs;
        self.map_child = true;
        // The root's stop stops its children's evaluations and events too.
        self.stopping = stopping;
        self.lane = RefCell::new(Lane::named(root_key));
        self
    }

    /// Stops the execution (as `stop-execution` does) when `signal` resolves: for engines
    /// driven without a store, such as tests and the conformance harness.
    pub fn with_stop_signal(self, signal: LocalBoxFuture<'static, StopRequest>) -> Self {
        *self.stop_signal.borrow_mut() = Some(signal);
        self
    }

    /// Resolves when someone asked this execution to stop: through the store (the token
    /// broker) or the stop signal; never without either.
    async fn stop_requested(&self) -> StopRequest {
        let signal = self.stop_signal.borrow_mut().take();
        let signalled = async {
            match signal {
                Some(signal) => signal.await,
                None => std::future::pending().await,
            }
        };
        // A distributed Map's child shares its root's broker, whose stop request is the
        // root's: the root's stop drops the child. Watching it here too raced the root, and a
        // child aborted first failed the Map (FAILED instead of the stop's ABORTED).
        let stored = async {
            match &self.tokens {
                Some(broker) if !self.map_child => {
                    // A stop asked before this run (a resumed execution); later ones come
                    // through the stop hook (see `stop_hook`), which records them here.
                    let (store, arn) = (broker.store(), broker.execution_arn());
                    if let Ok(Some(request)) = store.stop_request(arn) {
                        self.stopping.stop(request);
                    }
                    self.stopping.requested().await
                }
                _ => std::future::pending().await,
            }
        };
        tokio::select! {
            stop = signalled => stop,
            stop = stored => stop,
        }
    }

    /// Lets a stop asked through the store reach this execution from the thread that learns
    /// of it (a Map child shares its root's); held while the execution runs.
    fn stop_hook(&self) -> Option<crate::store::Waiter> {
        let broker = self.tokens.as_ref().filter(|_| !self.map_child)?;
        let (store, arn) = (broker.store(), broker.execution_arn());
        let hook = self.stopping.hook(store, arn);
        // Asked before this run (a resumed execution): the stop future reads it once.
        store.watch_execution_hooked(arn, hook).ok()
    }

    /// Runs the execution to its end and writes every event, ExecutionStarted to the terminal
    /// one. Returns how it ended; the last events are handed to the sink with the outcome, and
    /// [`Engine::committed`] tells when they are committed. An engine runs once: this takes
    /// its input.
    pub async fn run(&self) -> Outcome {
        // A resumed execution whose runner died before its first batch was committed has a
        // row but no events: it starts its history like a new one.
        let input = self.input.take();
        if self.replay.is_none() || self.history.borrow().next_id() == 1 {
            let mut details = Details::new()
                .payload("input", input.to_string())
                .str("roleArn", &self.info.role_arn);
            // As botocore's ExecutionStartedEventDetails has them.
            if let Some(alias) = &self.info.alias_arn {
                details = details.str("stateMachineAliasArn", alias);
            }
            if let Some(version) = &self.info.version_arn {
                details = details.str("stateMachineVersionArn", version);
            }
            self.history.borrow_mut().push_unchecked(
                0,
                self.info.start_time,
                EventType::ExecutionStarted,
                Some(details.build()),
            );
        }
        let body = self.run_scope(&self.machine.root, input, 0, Frame::root());
        // A redriven execution's TimeoutSeconds counts from its redrive.
        let deadline = self.machine.timeout_seconds.map(|t| {
            self.info.redrive_time.unwrap_or(self.info.start_time)
                + self.clock.scale(Duration::from_secs(t)).as_millis() as Millis
        });
        let timer = async {
            match deadline {
                Some(d) => self.clock.sleep_until(d).await,
                None => std::future::pending().await,
            }
            self.cut_short.set(true);
        };
        let stop = async {
            let stop = self.stop_requested().await;
            self.cut_short.set(true);
            stop
        };
        // The body goes first: a deadline that has already passed (a start time in the past, a
        // clock that jumps) still lets the execution write the events it writes without
        // waiting, then aborts whatever waits. The body is dropped here; with `cut_short` set
        // its running states write nothing more: on AWS a timed-out or stopped execution's
        // history ends `…StateEntered`, then the terminal event (recorded for a Wait, both
        // ways), with no `WaitStateAborted`.
        // A stop that came from another thread (see `stopping`) ends the body with a failure
        // no state catches; it is recorded as the stop it is.
        let _stop_hook = self.stop_hook();
        let result = match tokio::select! {
            biased;
            r = body => Ended::Body(r),
            _ = timer => Ended::TimedOut,
            stop = stop => Ended::Stopped(stop),
        } {
            Ended::Body(Err(failed)) if failed.terminal && self.stopping.is_stopped() => {
                self.cut_short.set(true);
                match self.stopping.request() {
                    Some(request) => Ended::Stopped(request),
                    None => Ended::Body(Err(failed)),
                }
            }
            ended => ended,
        };
        let now = self.clock.now();
        let outcome = match result {
            Ended::Body(Ok((output, prev))) => {
                let (details, output_json) = match self.root_output.take() {
                    Some((payload, text)) => (Details::new().payload_of("output", &payload), text),
                    None => {
                        let text: Arc<str> = output.to_string().into();
                        (Details::new().payload_text("output", &text), text)
                    }
                };
                self.history.borrow_mut().push_unchecked(
                    prev,
                    now,
                    EventType::ExecutionSucceeded,
                    Some(details.build()),
                );
                Outcome {
                    status: Status::Succeeded,
                    output: Some(output),
                    output_json: Some(output_json),
                    error: None,
                    stop_time: now,
                }
            }
            Ended::Body(Err(failed)) => {
                self.history.borrow_mut().push_unchecked(
                    failed.prev,
                    now,
                    EventType::ExecutionFailed,
                    Some(Details::new().error(&failed.error).build()),
                );
                Outcome {
                    status: Status::Failed,
                    output: None,
                    output_json: None,
                    error: Some(failed.error),
                    stop_time: now,
                }
            }
            Ended::TimedOut => {
                // AWS points ExecutionTimedOut at nothing and gives it no cause.
                self.history.borrow_mut().push_unchecked(
                    0,
                    now,
                    EventType::ExecutionTimedOut,
                    Some(Details::new().str("error", names::TIMEOUT).build()),
                );
                Outcome {
                    status: Status::TimedOut,
                    output: None,
                    output_json: None,
                    error: Some(StatesError::timeout()),
                    stop_time: now,
                }
            }
            Ended::Stopped(stop) => {
                // AWS records whatever the caller passed, nothing more.
                let mut details = Details::new();
                if let Some(e) = &stop.error {
                    details = details.str("error", e);
                }
                if let Some(c) = &stop.cause {
                    details = details.str("cause", c);
                }
                // Like ExecutionTimedOut, AWS points ExecutionAborted at nothing.
                self.history.borrow_mut().push_unchecked(
                    0,
                    now,
                    EventType::ExecutionAborted,
                    Some(details.build()),
                );
                Outcome {
                    status: Status::Aborted,
                    output: None,
                    output_json: None,
                    error: Some(StatesError {
                        error: stop.error,
                        cause: stop.cause,
                        heartbeat: false,
                    }),
                    stop_time: now,
                }
            }
        };
        let broker = self.tokens.as_ref().filter(|_| !self.map_child);
        if let Some(broker) = broker.filter(|_| self.machine.waits_for_tokens()) {
            // Whatever still waits for an answer is over: late answers get TaskTimedOut. (A
            // Map child leaves its siblings' tokens alone; its own are settled or closed when
            // their attempt is dropped. A machine without token tasks has none to close, and
            // the write cost a one-state run a connection of its own.)
            broker.close_all(now);
        }
        self.history.borrow_mut().finish(&outcome);
        outcome
    }

    /// Commits everything written so far before an effect leaves the process (a worker
    /// started, a token handed out). A refused commit (the store failed, or this runner lost
    /// its lease to another) ends the execution here, before the effect: a fenced runner must
    /// not act for an execution another runner now drives.
    pub(crate) async fn commit_before_effects(&self, cx: &StateCx<'_>) -> Result<(), Failed> {
        let committed = self.history.borrow_mut().flush();
        committed.await.map_err(|e| Failed {
            error: StatesError::runtime(format!("the history could not be committed: {e}")),
            prev: cx.entered_id,
            terminal: true,
            unfinished: None,
        })
    }

    /// Resolves when every event handed to the sink so far is committed, or with the first
    /// write error.
    pub fn committed(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>>>> {
        self.history.borrow_mut().flush()
    }

    /// Writes `event_type`, the event a failure leaves behind, and returns `error` as the
    /// failure after it (or the history's own failure, when the event cannot be written).
    pub(crate) fn failure_event(
        &self,
        prev: EventId,
        event_type: EventType,
        details: Option<String>,
        error: StatesError,
    ) -> Failed {
        match self.push(prev, event_type, details) {
            Ok(prev) => Failed::new(error, prev),
            Err(failed) => failed,
        }
    }

    /// Writes an event; the history cap turns into a terminal failure.
    pub(crate) fn push(
        &self,
        prev: EventId,
        event_type: EventType,
        details: Option<String>,
    ) -> Result<EventId, Failed> {
        self.push_at(prev, event_type, details, None)
    }

    /// [`Engine::push`] at a time read already (`None`: now).
    fn push_at(
        &self,
        prev: EventId,
        event_type: EventType,
        details: Option<String>,
        at: Option<crate::clock::Millis>,
    ) -> Result<EventId, Failed> {
        if self.stopping.is_stopped() {
            return Err(self.stopped_failure(prev));
        }
        let key = self.lane.borrow().take();
        if let Some(replay) = &self.replay {
            match replay.claim(&key, event_type) {
                Ok(Some(recorded)) => {
                    self.last_ts.set(recorded.timestamp);
                    self.replayed_last.set(true);
                    return Ok(recorded.id);
                }
                Ok(None) => {}
                Err(message) => {
                    return Err(Failed {
                        error: StatesError::runtime(message),
                        prev,
                        terminal: true,
                        unfinished: None,
                    })
                }
            }
        }
        let now = at.unwrap_or_else(|| self.clock.now());
        self.last_ts.set(now);
        self.replayed_last.set(false);
        self.history
            .borrow_mut()
            .push_keyed(prev, now, event_type, details, Some(key))
            .map_err(|e| Failed {
                error: e,
                prev,
                terminal: true,
                unfinished: None,
            })
    }

    /// What a step of an execution told to stop fails with: terminal, so nothing catches it,
    /// and [`Engine::run`] records the stop instead (see [`super::stopping`]).
    fn stopped_failure(&self, prev: EventId) -> Failed {
        Failed {
            error: StatesError::runtime("the execution was stopped"),
            prev,
            terminal: true,
            unfinished: None,
        }
    }

    /// Between two states: ends the scope if the execution was told to stop, and lets the
    /// other executions of this thread run every [`STATES_PER_YIELD`] states (a loop of states
    /// that never wait would otherwise hold the thread, and its stop, for good).
    ///
    /// Counted, not timed: a yield lets the execution's own other lanes (Map iterations,
    /// Parallel branches) go first, so where it falls orders their events. Yielding after 5 ms
    /// of wall time put it wherever the machine's speed did, and a 1,250-item Map under
    /// `--clock virtual --seed` wrote its events in another order one run in six.
    ///
    /// Returns whether it yielded (time went on for others).
    async fn checkpoint(&self, prev: EventId) -> Result<bool, Failed> {
        if self.stopping.is_stopped() {
            return Err(self.stopped_failure(prev));
        }
        let states = self.states_since_yield.get() + 1;
        if states < STATES_PER_YIELD {
            self.states_since_yield.set(states);
            return Ok(false);
        }
        crate::clock::yield_now().await;
        self.states_since_yield.set(0);
        Ok(true)
    }

    /// Runs a scope (the top level, a branch, an iteration) from its StartAt to its end.
    pub(crate) fn run_scope<'a>(
        &'a self,
        scope: &'a Scope,
        input: Value,
        prev: EventId,
        frame: Rc<Frame>,
    ) -> LocalBoxFuture<'a, Result<(Value, EventId), Failed>> {
        Box::pin(async move {
            let mut id = scope.start_at;
            let mut input = input;
            let mut prev = prev;
            // A state's output is the next state's input: serialize it once for both events.
            // With it, the time of its exit, which is the next state's entry when nothing ran
            // in between (one look at the clock less per state).
            let mut carried: Option<(Payload, Millis)> = None;
            // A lane started beside others lets them start too before it goes on.
            self.turn().await;
            loop {
                if self.checkpoint(prev).await? {
                    carried = carried.map(|(payload, _)| (payload, self.clock.now()));
                }
                let state = scope.state(id);
                if let Some(skipped) = self.replay_state(scope, state, &input, &frame).await? {
                    let (output, exited, next) = skipped;
                    prev = exited;
                    carried = None;
                    match next {
                        Transition::Next(next) => {
                            id = next;
                            input = output;
                            continue;
                        }
                        Transition::End => return Ok((output, prev)),
                    }
                }
                let (entered, entered_at) =
                    self.enter_state(state, &input, carried.take(), prev)?;
                let assigned = RefCell::new(None);
                let cx = StateCx {
                    state,
                    entered_id: entered,
                    entered_prev: prev,
                    attempt_prev: entered,
                    entered_at,
                    retry_count: None,
                    frame: &frame,
                    assigned: &assigned,
                };
                let guard = AbortGuard::new(self, state, entered);
                // Beside other lanes, a state that does its work at once lets them have a
                // turn after its entry (a Task does after its scheduling event).
                if matches!(
                    state.kind,
                    StateKind::Pass(_)
                        | StateKind::Choice(_)
                        | StateKind::Succeed(_)
                        | StateKind::Fail(_)
                ) {
                    self.turn().await;
                }
                let step = self.run_state(&cx, input).await;
                guard.disarm();
                let step = step.map_err(|failed| match &state.kind {
                    StateKind::Task(_) if !failed.terminal => Failed {
                        unfinished: Some(EventType::TaskStateAborted),
                        ..failed
                    },
                    _ => failed,
                })?;
                let (exited, output_payload_for_next) =
                    self.exit_state(scope, &cx, &step, assigned.take())?;
                prev = exited;
                // A resumed run's exit may be a recorded one, whose time is not now.
                let exit_time = self.replay.is_none().then(|| self.last_ts.get());
                match step.next {
                    Transition::Next(next) => {
                        id = next;
                        carried = output_payload_for_next.zip(exit_time);
                        input = step.output;
                    }
                    Transition::End => return Ok((step.output, prev)),
                }
            }
        })
    }

    /// Writes `state`'s entry event (after `prev`), with its input's payload when the previous
    /// state's exit carried it. Returns the event and its time, the one `$$.State.EnteredTime`
    /// reads.
    fn enter_state(
        &self,
        state: &State,
        input: &Value,
        carried: Option<(Payload, Millis)>,
        prev: EventId,
    ) -> Result<(EventId, Millis), Failed> {
        // Only a resumed run has recorded events to look a key up in.
        let recorded = self
            .replay
            .is_some()
            .then(|| self.recorded(&self.peek_key()));
        let (input_payload, exit_time) = match carried {
            Some((payload, at)) => (payload, Some(at)),
            None => (self.payload(input, state, prev)?, None),
        };
        let entered_at = match recorded.flatten() {
            Some(r) => r.timestamp,
            None => exit_time.unwrap_or_else(|| self.clock.now()),
        };
        let details = Details::new()
            .str("name", &state.name)
            .payload_of("input", &input_payload)
            .build();
        let entered = self.push_at(
            prev,
            EventType::entered(state.type_name()),
            Some(details),
            Some(entered_at),
        )?;
        Ok((entered, entered_at))
    }

    /// After a state's work: commits the variables it assigned and writes its exit event
    /// (unless it has none). Returns the last event and the output's payload, which the next
    /// state's entry carries (the top level's last state keeps it in [`Engine::root_output`]).
    fn exit_state(
        &self,
        scope: &Scope,
        cx: &StateCx<'_>,
        step: &Step,
        assigned: Option<serde_json::Map<String, Value>>,
    ) -> Result<(EventId, Option<Payload>), Failed> {
        let (state, prev) = (cx.state, step.prev);
        // The state's assignments take effect now, for the states after it.
        let assigned = match assigned {
            Some(vars) => Some(
                cx.frame
                    .commit(vars)
                    .map_err(|e| self.prefixed(cx, e))
                    .map_err(|f| Failed { prev, ..f })?,
            ),
            None => None,
        };
        if step.no_exit_event {
            return Ok((prev, None));
        }
        let exited_type = EventType::exited(state.type_name());
        // The top level's last state: its output is the execution's, whose text is kept
        // rather than serialized twice more at the end.
        if matches!(step.next, Transition::End) && std::ptr::eq(scope, &self.machine.root) {
            let (payload, text) = self.payload_with_text(&step.output, state, prev)?;
            let exited = self.push_exited(state, exited_type, prev, &payload, assigned)?;
            self.root_output.replace(Some((payload, Arc::from(text))));
            return Ok((exited, None));
        }
        let payload = self.payload(&step.output, state, prev)?;
        let exited = self.push_exited(state, exited_type, prev, &payload, assigned)?;
        Ok((exited, Some(payload)))
    }

    /// Writes `state`'s exit event (`exited`, after `prev`): its output and the variables it
    /// assigned.
    pub(crate) fn push_exited(
        &self,
        state: &State,
        exited: EventType,
        prev: EventId,
        output: &Payload,
        assigned: Option<serde_json::Map<String, Value>>,
    ) -> Result<EventId, Failed> {
        let mut details = Details::new()
            .str("name", &state.name)
            .payload_of("output", output);
        if let Some(vars) = assigned {
            details = details
                .value("assignedVariables", Value::Object(vars))
                .value(
                    "assignedVariablesDetails",
                    serde_json::json!({"truncated": false}),
                );
        }
        self.push(prev, exited, Some(details.build()))
    }

    /// Serializes a state's input or output, enforcing the payload quota and the depth budget
    /// (a value nested past it fails this execution alone, see [`crate::depth`]).
    pub(crate) fn payload(
        &self,
        v: &Value,
        state: &State,
        prev: EventId,
    ) -> Result<Payload, Failed> {
        let payload =
            Payload::of(v).map_err(|too_deep| too_deep_failure(&state.name, too_deep, prev))?;
        self.within_quota(payload, state, prev)
    }

    /// [`Engine::payload`] of the execution's output, with its text: kept for
    /// `ExecutionSucceeded` and the caller (see [`Engine::root_output`]).
    fn payload_with_text(
        &self,
        v: &Value,
        state: &State,
        prev: EventId,
    ) -> Result<(Payload, String), Failed> {
        let (payload, text) = Payload::with_text(v)
            .map_err(|too_deep| too_deep_failure(&state.name, too_deep, prev))?;
        Ok((self.within_quota(payload, state, prev)?, text))
    }

    /// Fails a state whose input or output is over AWS's payload quota.
    fn within_quota(
        &self,
        payload: Payload,
        state: &State,
        prev: EventId,
    ) -> Result<Payload, Failed> {
        if payload.len > MAX_PAYLOAD_BYTES {
            return Err(Failed {
                error: StatesError::new(
                    names::DATA_LIMIT_EXCEEDED,
                    format!(
                        "The state/task '{}' returned a result with a size exceeding the maximum number of bytes service limit.",
                        state.name
                    ),
                ),
                prev,
                terminal: true,
                unfinished: None,
            });
        }
        Ok(payload)
    }

    async fn run_state(&self, cx: &StateCx<'_>, input: Value) -> Result<Step, Failed> {
        match &cx.state.kind {
            StateKind::Pass(p) => self.pass(cx, p, input).await,
            StateKind::Succeed(s) => self.succeed(cx, s, input).await,
            StateKind::Fail(f) => self.fail(cx, f, input).await,
            StateKind::Choice(c) => self.choice(cx, c, input).await,
            StateKind::Wait(w) => self.wait(cx, w, input).await,
            // Boxed: their futures are the largest, and every scope's future would otherwise
            // carry room for them. That future is copied into its box once per scope (a Map's
            // every iteration: a Task's room was most of the 10,000-item Map's copying), and a
            // waiting Task or Wait would hold room for a Parallel or a Map.
            StateKind::Task(t) => Box::pin(self.task(cx, t, input)).await,
            StateKind::Parallel(p) => Box::pin(self.parallel(cx, p, input)).await,
            StateKind::Map(m) => Box::pin(self.map(cx, m, input)).await,
        }
    }

    /// The context object as this state sees it: `$$.State` entered (unless TestState gave
    /// the whole object), then `extra`. Borrowed: no await may come before it is let go.
    pub(crate) fn entered_context(
        &self,
        cx: &StateCx<'_>,
        extra: impl FnOnce(&mut Value),
    ) -> std::cell::RefMut<'_, Value> {
        let mut context = self.context.borrow_mut();
        if !self.fixed_context.get() {
            enter_state(&mut context, &cx.state.name, cx.entered_at, cx.retry_count);
        }
        extra(&mut context);
        context
    }

    /// Evaluates with `$` = `input` and `$$` set up for this state.
    pub(crate) fn with_env<R>(
        &self,
        cx: &StateCx<'_>,
        input: &Value,
        extra: impl FnOnce(&mut Value),
        f: impl FnOnce(&Env<'_>) -> R,
    ) -> R {
        let variables = cx.frame.read();
        if !cx.state.uses_context {
            // The state never reads `$$`: skip building it.
            let env = Env {
                input,
                context: &Value::Null,
                variables: &variables,
            };
            return f(&env);
        }
        let context = self.entered_context(cx, extra);
        let env = Env {
            input,
            context: &context,
            variables: &variables,
        };
        f(&env)
    }

    /// Evaluates a JSONata field; a failure writes `EvaluationFailed` and becomes a
    /// `States.QueryEvaluationError` with AWS's cause.
    pub(crate) async fn jsonata(
        &self,
        cx: &StateCx<'_>,
        template: &JsonataTemplate,
        field: &str,
        data: StatesData<'_>,
    ) -> Result<Value, Failed> {
        self.evaluate_jsonata(cx, data, |_| {}, template, field, None)
            .await
    }

    /// Writes AWS's `EvaluationFailed` event and returns the `States.QueryEvaluationError`
    /// that follows it.
    pub(crate) fn evaluation_failed(
        &self,
        cx: &StateCx<'_>,
        location: Option<&str>,
        message: &str,
    ) -> Failed {
        let cause = format!(
            "An error occurred while executing the state '{}' (entered at the event id #{}). {message}",
            cx.state.name, cx.entered_id
        );
        let error = StatesError::new(names::QUERY_EVALUATION_ERROR, cause);
        let mut details = Details::new().error(&error);
        if let Some(location) = location {
            details = details.str("location", location);
        }
        let details = details.str("state", &cx.state.name).build();
        self.failure_event(
            cx.entered_prev,
            EventType::EvaluationFailed,
            Some(details),
            error,
        )
    }

    /// Evaluates an `Assign` and records it for the state loop to commit. `value` is what `$`
    /// means in a JSONPath Assign; `data` is `$states` for a JSONata one.
    pub(crate) async fn assign(
        &self,
        cx: &StateCx<'_>,
        assign: Option<&Assign>,
        value: &Value,
        data: StatesData<'_>,
    ) -> Result<(), Failed> {
        let assigned = match assign {
            None => None,
            Some(Assign::JsonPath(t)) => Some(self.template(cx, t, value, "Assign", |_| {})?),
            Some(Assign::Jsonata(t)) => Some(self.jsonata(cx, t, "Assign", data).await?),
        };
        *cx.assigned.borrow_mut() = match assigned {
            Some(Value::Object(vars)) => Some(vars),
            _ => None,
        };
        Ok(())
    }

    /// A JSONata state's output: `Output` evaluated, or `default` without one.
    pub(crate) async fn jsonata_output(
        &self,
        cx: &StateCx<'_>,
        output: Option<&JsonataTemplate>,
        data: StatesData<'_>,
        default: Value,
    ) -> Result<Value, Failed> {
        match output {
            Some(t) => self.jsonata(cx, t, "Output", data).await,
            None => Ok(default),
        }
    }

    /// A count given by a JSONata field (`Seconds`, `TimeoutSeconds`, `MaxConcurrency`...):
    /// it must evaluate to an integer of at least `min`.
    pub(crate) async fn jsonata_count(
        &self,
        cx: &StateCx<'_>,
        template: &JsonataTemplate,
        field: &str,
        input: &Value,
        min: u64,
    ) -> Result<u64, Failed> {
        let v = self.jsonata_number(cx, template, field, input).await?;
        if v.fract() == 0.0 && v >= min as f64 && v <= u64::MAX as f64 {
            return Ok(v as u64);
        }
        let expected = if min > 0 {
            "a positive integer"
        } else {
            "a non-negative integer"
        };
        Err(self.evaluation_failed(
            cx,
            Some(field),
            &format!(
                "The JSONata expression '{}' specified for the field '{field}' must evaluate to {expected}, but was: {}",
                template.as_expression().map_or("", |e| e.text()),
                serde_json::Number::from_f64(v).map_or_else(|| v.to_string(), |n| n.to_string())
            ),
        ))
    }

    /// A number given by a JSONata field.
    pub(crate) async fn jsonata_number(
        &self,
        cx: &StateCx<'_>,
        template: &JsonataTemplate,
        field: &str,
        input: &Value,
    ) -> Result<f64, Failed> {
        let data = StatesData::input(input);
        self.evaluate_jsonata(cx, data, |_| {}, template, field, Some("number"))
            .await
            .map(|v| v.as_f64().unwrap_or(0.0))
    }

    /// What a Task or Parallel state hands on: JSONPath `Parameters` over the effective
    /// input, or JSONata `Arguments`.
    pub(crate) async fn arguments(
        &self,
        cx: &StateCx<'_>,
        io: &DataFlow,
        effective: &Value,
    ) -> Result<Value, Failed> {
        self.arguments_with(cx, io, effective, |_| {}).await
    }

    /// [`Engine::arguments`], with more set in the context object first (`$$.Task.Token`).
    pub(crate) async fn arguments_with(
        &self,
        cx: &StateCx<'_>,
        io: &DataFlow,
        effective: &Value,
        extra: impl Fn(&mut Value),
    ) -> Result<Value, Failed> {
        let arguments = if let Some(args) = &io.arguments {
            let data = StatesData::input(effective);
            self.evaluate_jsonata(cx, data, &extra, args, "Arguments", None)
                .await?
        } else {
            match &io.parameters {
                Some(t) => self.template(cx, t, effective, "Parameters", extra)?,
                None => return Ok(effective.clone()),
            }
        };
        self.within_depth(cx, arguments)
    }

    /// `value` if it nests within the depth budget; else this execution fails with
    /// `States.Runtime` (see [`crate::depth`]).
    pub(crate) fn within_depth(&self, cx: &StateCx<'_>, value: Value) -> Result<Value, Failed> {
        match crate::depth::check(&value) {
            Ok(()) => Ok(value),
            Err(too_deep) => {
                crate::depth::drop_flat(value);
                Err(too_deep_failure(&cx.state.name, too_deep, cx.entered_id))
            }
        }
    }

    /// The standard prefix AWS puts on runtime errors of a state.
    pub(crate) fn state_error(&self, cx: &StateCx<'_>, name: &str, message: &str) -> Failed {
        Failed::new(
            StatesError::new(
                name,
                format!(
                    "An error occurred while executing the state '{}' (entered at the event id #{}). {message}",
                    cx.state.name, cx.entered_id
                ),
            ),
            cx.entered_id,
        )
    }

    /// Selects a path that must match (InputPath, OutputPath, ItemsPath, `*SecondsPath`...):
    /// nothing there is AWS's `States.Runtime` "Invalid path ... No results for path".
    pub(crate) fn required_path(
        &self,
        cx: &StateCx<'_>,
        path: &Path,
        value: &Value,
    ) -> Result<Value, Failed> {
        self.with_env(
            cx,
            value,
            |_| {},
            |env| path.select(env).ok_or_else(|| path.invalid_path_cause(env)),
        )
        .map_err(|cause| self.state_error(cx, names::RUNTIME, &cause))
    }

    /// InputPath.
    pub(crate) fn input_path(
        &self,
        cx: &StateCx<'_>,
        io: &DataFlow,
        input: Value,
    ) -> Result<Value, Failed> {
        self.select_field(cx, &io.input_path, input)
    }

    /// InputPath over a borrowed input: the input itself when InputPath is absent, else what
    /// [`Engine::input_path`] gives, without copying the whole input first.
    pub(crate) fn effective_input<'v>(
        &self,
        cx: &StateCx<'_>,
        io: &DataFlow,
        input: &'v Value,
    ) -> Result<std::borrow::Cow<'v, Value>, Failed> {
        match &io.input_path {
            OptionalPath::Default => Ok(std::borrow::Cow::Borrowed(input)),
            OptionalPath::Null => Ok(std::borrow::Cow::Owned(Value::Object(Default::default()))),
            OptionalPath::Path(p) => self
                .required_path(cx, p, input)
                .map(std::borrow::Cow::Owned),
        }
    }

    /// InputPath or OutputPath: absent keeps the value, `null` gives `{}`, a path must match.
    fn select_field(
        &self,
        cx: &StateCx<'_>,
        field: &OptionalPath,
        value: Value,
    ) -> Result<Value, Failed> {
        match field {
            OptionalPath::Default => Ok(value),
            OptionalPath::Null => Ok(Value::Object(Default::default())),
            OptionalPath::Path(p) => self.required_path(cx, p, &value),
        }
    }

    /// Parameters (or any payload template) over `input`.
    pub(crate) fn template(
        &self,
        cx: &StateCx<'_>,
        template: &Template,
        input: &Value,
        field: &str,
        extra: impl FnOnce(&mut Value),
    ) -> Result<Value, Failed> {
        self.with_env(cx, input, extra, |env| template.evaluate(env, field))
            .map_err(|e| self.prefixed(cx, e))
    }

    /// Adds AWS's "An error occurred while executing the state ..." prefix to runtime errors
    /// that come from evaluation.
    pub(crate) fn prefixed(&self, cx: &StateCx<'_>, e: StatesError) -> Failed {
        if e.name() == names::RUNTIME {
            if let Some(cause) = &e.cause {
                if !cause.starts_with("An error occurred while executing the state") {
                    return self.state_error(cx, names::RUNTIME, cause);
                }
            }
        }
        Failed::new(e, cx.entered_id)
    }

    /// ResultPath: where the result goes in the raw input.
    pub(crate) fn result_path(
        &self,
        cx: &StateCx<'_>,
        io: &DataFlow,
        input: Value,
        result: Value,
    ) -> Result<Value, Failed> {
        match &io.result_path {
            OptionalPath::Default => Ok(result),
            OptionalPath::Null => Ok(input),
            OptionalPath::Path(p) => {
                let mut target = input;
                p.set(&mut target, result)
                    .map_err(|e| Failed::new(e, cx.entered_id))?;
                Ok(target)
            }
        }
    }

    /// OutputPath.
    pub(crate) fn output_path(
        &self,
        cx: &StateCx<'_>,
        io: &DataFlow,
        output: Value,
    ) -> Result<Value, Failed> {
        self.select_field(cx, &io.output_path, output)
    }

    /// ResultSelector, ResultPath and OutputPath: a result becomes the state's output.
    pub(crate) async fn finish_result(
        &self,
        cx: &StateCx<'_>,
        io: &DataFlow,
        input: Value,
        result: Value,
    ) -> Result<Value, Failed> {
        if cx.state.query_language == QueryLanguage::Jsonata {
            // Output and Assign both see `$states.result` and the variables from the state's entry.
            let data = StatesData {
                input: &input,
                result: Some(&result),
                error_output: None,
            };
            let output = self
                .jsonata_output(cx, io.output.as_ref(), data, result.clone())
                .await?;
            self.assign(cx, cx.state.assign.as_ref(), &result, data)
                .await?;
            return Ok(output);
        }
        let result = match &io.result_selector {
            Some(t) => self.template(cx, t, &result, "ResultSelector", |_| {})?,
            None => result,
        };
        self.assign(
            cx,
            cx.state.assign.as_ref(),
            &result,
            StatesData::input(&input),
        )
        .await?;
        let output = self.result_path(cx, io, input, result)?;
        self.output_path(cx, io, output)
    }

    /// Waits out a retry interval (scaled), handing buffered events to the store first.
    pub(crate) async fn retry_pause(&self, delay: Duration) {
        // From the failure's event: a resumed execution does not wait the interval again.
        let deadline = self.last_ts.get() + self.clock.scale(delay).as_millis() as Millis;
        self.history.borrow_mut().submit();
        self.parked(self.clock.sleep_until(deadline)).await;
        // A retry without an interval still lets the lanes beside it have a turn.
        self.turn().await;
    }

    /// After the retriers gave up: the first catcher that matches decides the output (the Error
    /// Output placed at its ResultPath in the raw input) and the next state.
    pub(crate) async fn catch(
        &self,
        cx: &StateCx<'_>,
        errors: &ErrorHandling,
        input: &Value,
        failed: Failed,
    ) -> Result<Step, Failed> {
        if failed.terminal {
            return Err(failed);
        }
        let catcher = errors
            .catch
            .iter()
            .find(|c| c.error_equals.iter().any(|p| failed.error.matches(p)));
        let Some(c) = catcher else { return Err(failed) };
        let error_output = failed.error.to_error_output();
        // The catcher's Assign replaces the state's: whatever the state had assigned goes.
        *cx.assigned.borrow_mut() = None;
        let data = StatesData {
            input,
            result: None,
            error_output: Some(&error_output),
        };
        let at_failure = |f: Failed| Failed {
            prev: if f.prev == cx.entered_id {
                failed.prev
            } else {
                f.prev
            },
            ..f
        };
        self.assign(cx, c.assign.as_ref(), &error_output, data)
            .await
            .map_err(at_failure)?;
        if cx.state.query_language == QueryLanguage::Jsonata {
            let output = self
                .jsonata_output(cx, c.output.as_ref(), data, error_output.clone())
                .await
                .map_err(at_failure)?;
            return Ok(Step {
                output,
                next: Transition::Next(c.next),
                prev: failed.prev,
                no_exit_event: false,
            });
        }
        let output = match &c.result_path {
            OptionalPath::Default => error_output,
            OptionalPath::Null => input.clone(),
            OptionalPath::Path(p) => {
                let mut target = input.clone();
                p.set(&mut target, error_output)
                    .map_err(|e| Failed::new(e, failed.prev))?;
                target
            }
        };
        Ok(Step {
            output,
            next: Transition::Next(c.next),
            prev: failed.prev,
            no_exit_event: false,
        })
    }
}

impl Engine {
    /// When resuming: if `state`'s end is recorded in the current lane, takes its recorded
    /// output and assigned variables instead of running it, and says where to go next.
    #[allow(clippy::type_complexity)]
    async fn replay_state(
        &self,
        scope: &Scope,
        state: &State,
        input: &Value,
        frame: &Rc<Frame>,
    ) -> Result<Option<(Value, EventId, Transition)>, Failed> {
        let Some(replay) = &self.replay else {
            return Ok(None);
        };
        let lane = self.lane.borrow().clone();
        let Some(recorded) = replay.recorded_state(
            &lane,
            EventType::entered(state.type_name()),
            EventType::exited(state.type_name()),
        ) else {
            return Ok(None);
        };
        let exited = recorded.exited.id;
        let corrupt = |what: &str| Failed {
            error: StatesError::runtime(format!(
                "cannot resume: the recorded event {exited} has no valid {what}"
            )),
            prev: exited,
            terminal: true,
            unfinished: None,
        };
        self.last_ts.set(recorded.exited.timestamp);
        let details = recorded.exited.details.unwrap_or(Value::Null);
        let output: Value = details["output"]
            .as_str()
            .and_then(|t| serde_json::from_str(t).ok())
            .ok_or_else(|| corrupt("output"))?;
        if let Some(vars) = details["assignedVariables"].as_object() {
            let mut values = serde_json::Map::with_capacity(vars.len());
            for (name, text) in vars {
                let v = text
                    .as_str()
                    .and_then(|t| serde_json::from_str(t).ok())
                    .ok_or_else(|| corrupt("assignedVariables"))?;
                values.insert(name.clone(), v);
            }
            frame.commit(values).map_err(|e| Failed::new(e, exited))?;
        }
        let next = match recorded.next_state.as_deref().and_then(|n| scope.find(n)) {
            Some(next) => Transition::Next(next),
            None => match &state.kind {
                StateKind::Choice(c) => {
                    // Its successor was not committed: decide again, on the same input.
                    let assigned = RefCell::new(None);
                    let cx = StateCx {
                        state,
                        entered_id: recorded.entered.id,
                        entered_prev: recorded.entered.id,
                        attempt_prev: recorded.entered.id,
                        entered_at: recorded.entered.timestamp,
                        retry_count: None,
                        frame,
                        assigned: &assigned,
                    };
                    self.choice(&cx, c, input.clone()).await?.next
                }
                StateKind::Pass(p) => p.transition,
                StateKind::Task(t) => t.transition,
                StateKind::Wait(w) => w.transition,
                StateKind::Parallel(p) => p.transition,
                StateKind::Map(m) => m.transition,
                StateKind::Succeed(_) | StateKind::Fail(_) => Transition::End,
            },
        };
        Ok(Some((output, exited, next)))
    }
}

/// Polls a future with the engine's current lane set to `lane`.
struct InLane<'a, T> {
    engine: &'a Engine,
    lane: Rc<Lane>,
    fut: Option<LocalBoxFuture<'a, T>>,
}

impl<T> std::future::Future for InLane<'_, T> {
    type Output = T;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<T> {
        let this = &mut *self;
        let outer = this.engine.lane.replace(this.lane.clone());
        let result = match this.fut.as_mut() {
            Some(fut) => fut.as_mut().poll(cx),
            None => std::task::Poll::Pending,
        };
        this.engine.lane.replace(outer);
        result
    }
}

impl<T> Drop for InLane<'_, T> {
    fn drop(&mut self) {
        // Guards dropped with the future write their aborted events in this lane.
        let outer = self.engine.lane.replace(self.lane.clone());
        drop(self.fut.take());
        self.engine.lane.replace(outer);
    }
}

/// How the body of an execution ended.
enum Ended {
    Body(Result<(Value, EventId), Failed>),
    TimedOut,
    Stopped(crate::store::StopRequest),
}

/// Writes `{Type}StateAborted` if a running state is dropped before it finishes because a
/// sibling branch or iteration failed (not when the execution itself timed out or was
/// stopped: see `Engine::cut_short`).
pub(crate) struct AbortGuard<'a> {
    engine: &'a Engine,
    event: Option<EventType>,
    prev: Cell<EventId>,
    armed: Cell<bool>,
}

impl<'a> AbortGuard<'a> {
    pub(crate) fn new(engine: &'a Engine, state: &State, prev: EventId) -> Self {
        AbortGuard {
            engine,
            event: EventType::aborted(state.type_name()),
            prev: Cell::new(prev),
            armed: Cell::new(true),
        }
    }

    /// An abort guard writing a given event with given details.
    pub(crate) fn disarm(&self) {
        self.armed.set(false);
    }
}

impl Drop for AbortGuard<'_> {
    fn drop(&mut self) {
        if self.engine.cut_short.get() {
            return;
        }
        if let (true, Some(event)) = (self.armed.get(), self.event) {
            let prev = self.engine.abort_link.get().unwrap_or(self.prev.get());
            let _ = self.engine.push(prev, event, None);
        }
    }
}

/// The failure of a state whose input, output, parameters or variables nest past the depth
/// budget, after `prev`: `States.Runtime`, terminal as every one, its cause naming sfn-local's
/// limit (AWS documents none).
fn too_deep_failure(state: &str, too_deep: crate::depth::TooDeep, prev: EventId) -> Failed {
    Failed {
        error: StatesError::runtime(format!(
            "An error occurred while executing the state '{state}': {too_deep}"
        )),
        prev,
        terminal: true,
        unfinished: None,
    }
}
