//! Starting an execution for real: the store row, the engine, the local task bindings and the
//! clock, on a single-threaded runtime. The CLI's `run` is a thin layer over [`run_execution`].

use crate::asl::StateMachine;
use crate::clock::{system_now, Millis, Timekeeping};
use crate::engine::children::{ChildSetup, KnownMachine, KnownMachines, LocalChildren};
use crate::engine::context::ExecutionInfo;
use crate::engine::execution::{Engine, Outcome};
use crate::engine::history::History;
use crate::engine::map_journal::MapRunJournal;
use crate::engine::store_sink::StoreSink;
use crate::engine::EngineOptions;
use crate::store::{NewExecution, Store, StoreError};
use crate::tasks::callback::{HandlerSet, NoticeFn, TokenBroker};
use crate::tasks::managed::{HeartbeatMode, ManagedBindings, ManagedOptions};
use crate::tasks::LocalTasks;
use serde_json::Value;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

/// Everything needed to start one execution.
pub struct RunRequest {
    /// The definition as written (stored with the execution).
    pub definition: String,
    /// The compiled machine.
    pub machine: Arc<StateMachine>,
    /// The execution's input.
    pub input: Value,
    /// Names and ARNs.
    pub info: ExecutionInfo,
    /// `--clock`, `--clock-start` and `--time-scale`.
    pub time: Timekeeping,
    /// `--task` bindings.
    pub tasks: LocalTasks,
    /// The same bindings as written (`STATE=COMMAND`), stored so `resume` binds them again.
    pub task_bindings: Vec<String>,
    /// `--worker` bindings: managed handlers of callback states.
    pub workers: ManagedBindings,
    /// The same bindings as written, stored so `resume` binds them again.
    pub worker_bindings: Vec<String>,
    /// Engine options (history cap).
    pub options: EngineOptions,
    /// Where to report task tokens issued, workers' stderr and exits (`run` prints to stderr).
    pub notice: NoticeFn,
    /// The state machines `states:startExecution*` tasks may start (`--machine`, `--machines`).
    pub machines: KnownMachines,
}

/// Why an execution could not run to its end.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// An execution with this ARN exists already (AWS: ExecutionAlreadyExists).
    #[error("ExecutionAlreadyExists: an execution named '{0}' already exists for this state machine; choose another --name")]
    AlreadyExists(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The history could not be committed.
    #[error("the execution's history could not be written: {0}")]
    History(String),
    /// Ctrl-C: the executions stay RUNNING, with everything committed so far.
    #[error("interrupted")]
    Interrupted(Vec<String>),
    /// Another runner holds the execution's lease.
    #[error("execution {execution_arn} is driven by {owner} (lease until {until}); resume takes only executions whose runner is gone")]
    Leased {
        /// The execution.
        execution_arn: String,
        /// Who holds it.
        owner: String,
        /// Its lease expiry (ISO 8601).
        until: String,
    },
    /// The execution cannot be resumed (not running, unknown, or its definition no longer
    /// compiles).
    #[error("{0}")]
    CannotResume(String),
    /// No execution has this ARN or name (AWS: ExecutionDoesNotExist).
    #[error("Execution Does Not Exist: '{execution}' (in the database {database})")]
    ExecutionDoesNotExist {
        /// The ARN or name asked for.
        execution: String,
        /// The database looked in.
        database: String,
    },
    /// The runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(#[from] std::io::Error),
}

/// The characters AWS forbids in state machine and execution names.
const FORBIDDEN_NAME_CHARS: &str = "<>{}[]?*\"#%\\^|~`$&,;:/";

/// Checks a state machine or execution name as AWS does: 1 to 80 characters, no whitespace,
/// no control characters, none of `< > { } [ ] ? * " # % \ ^ | ~ ` $ & , ; : /`.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let len = name.chars().count();
    if len == 0 || len > 80 {
        return Err(format!("{what} '{name}' must be 1 to 80 characters long"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || FORBIDDEN_NAME_CHARS.contains(*c))
    {
        return Err(format!(
            "{what} '{name}' contains the character {c:?}, which AWS does not allow in names"
        ));
    }
    Ok(())
}

/// How long a lease lasts unless `SFN_LOCAL_LEASE_MS` says otherwise (tests shorten it).
pub const LEASE_MS: i64 = 10_000;

/// The lease period in force.
pub fn lease_ms() -> i64 {
    std::env::var("SFN_LOCAL_LEASE_MS")
        .ok()
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|ms| *ms >= 30)
        .unwrap_or(LEASE_MS)
}

pub use crate::engine::owners::new_owner;

/// How many takeovers in a row may find an execution where the takeover before left it, its
/// runner having died, before it is failed instead of resumed: the process died twice while
/// running it without committing a single event (a stack overflow, an abort, a task that
/// kills its runner), and a third resume would only die again.
pub const QUARANTINE_AFTER_STALLS: i64 = 2;

/// The cause of a quarantined execution's `States.Runtime` failure.
pub const QUARANTINE_CAUSE: &str = "sfn-local stopped twice while running this execution, \
     without recording any progress in between; it was failed instead of resumed a third time";

/// What taking over a running execution came to.
#[derive(Debug)]
pub enum TakenOver {
    /// Taken: drive it.
    Drive,
    /// Another live runner holds it, or it is no longer running.
    Held,
    /// Taken, and failed at once with `States.Runtime` ([`QUARANTINE_CAUSE`]) instead of being
    /// resumed into a crash loop; how it ended.
    Quarantined(Outcome),
}

/// Takes `execution_arn` over for `owner` (see [`TakenOver`]), the failure of a quarantined
/// execution stamped `at` (the time of the clock it would have resumed on).
pub fn take_over(
    store: &Store,
    execution_arn: &str,
    owner: &str,
    at: Millis,
) -> Result<TakenOver, StoreError> {
    let now = system_now();
    match store.acquire_lease(execution_arn, owner, now, now + lease_ms())? {
        None => Ok(TakenOver::Held),
        Some(t) if t.stalled < QUARANTINE_AFTER_STALLS => Ok(TakenOver::Drive),
        Some(_) => {
            let error = crate::asl::error::StatesError::runtime(QUARANTINE_CAUSE);
            let details = crate::engine::history::Details::new().error(&error).build();
            let name = crate::asl::error::names::RUNTIME;
            store.fail_unattended(execution_arn, details, name, QUARANTINE_CAUSE, at)?;
            Ok(TakenOver::Quarantined(Outcome {
                status: crate::engine::Status::Failed,
                output: None,
                output_json: None,
                error: Some(error),
                stop_time: at,
            }))
        }
    }
}

/// How an execution is run, stored with it so `resume` drives it the same way.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunConfig {
    time_scale: f64,
    /// `--clock virtual`: a resume keeps time virtual (absent before it existed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    virtual_clock: bool,
    tasks: Vec<String>,
    max_history_events: i64,
    cwd: Option<String>,
    /// `--worker` bindings (absent in configurations stored before they existed).
    #[serde(default)]
    workers: Vec<String>,
    /// `--heartbeat manual` for them.
    #[serde(default)]
    manual_heartbeat: bool,
    /// `--kill-after` for them, in milliseconds.
    #[serde(default)]
    kill_after_ms: Option<u64>,
    /// The known state machines (name → definition), so a resumed execution can still start
    /// (or find again) its children.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    machines: BTreeMap<String, String>,
    /// The execution whose `states:startExecution*` task started this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent: Option<String>,
    /// `--endpoint` bindings (`SERVICE=URL`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    endpoints: Vec<String>,
    /// Which hosts HTTP Tasks may call (any unless started by `serve`), so a resumed
    /// execution calls no more than it could before.
    #[serde(
        default,
        skip_serializing_if = "crate::tasks::http::HttpAccess::is_any"
    )]
    http_invoke: crate::tasks::http::HttpAccess,
    /// `WAIT_TIME_SCALE` (1 when absent).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    wait_scale: f64,
    /// `serve --compat` (AWS's behaviour when absent).
    #[serde(default, skip_serializing_if = "is_aws")]
    compat: crate::asl::Compat,
    /// `--s3-dir` (absolute, as the command line lowers it): a resumed or redriven
    /// distributed Map reads and writes the same local S3 (absent before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s3_dir: Option<std::path::PathBuf>,
}

fn one() -> f64 {
    1.0
}

fn is_one(scale: &f64) -> bool {
    *scale == 1.0
}

fn is_aws(compat: &crate::asl::Compat) -> bool {
    *compat == crate::asl::Compat::Aws
}

/// Renews the leases of one runner from its own thread, a few times per lease period, until
/// dropped (an engine busy with a long pure computation does not let its lease lapse).
pub struct LeaseKeeper {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LeaseKeeper {
    /// Starts renewing `owner`'s leases for `lease_ms` at a time.
    pub fn start(store: Arc<Store>, owner: String, lease_ms: i64) -> LeaseKeeper {
        LeaseKeeper::start_with(store, owner, lease_ms, || {})
    }

    /// Like [`LeaseKeeper::start`], calling `each_period` after each renewal: a host's one
    /// timer for what it does a few times per lease period (`serve` looks for orphans).
    pub fn start_with(
        store: Arc<Store>,
        owner: String,
        lease_ms: i64,
        mut each_period: impl FnMut() + Send + 'static,
    ) -> LeaseKeeper {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let every = std::time::Duration::from_millis((lease_ms / 3).max(10) as u64);
        let thread = std::thread::Builder::new()
            .name("sfn-local-lease".into())
            .spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(every)
                {
                    let _ = store.renew_leases(&owner, system_now() + lease_ms);
                    each_period();
                }
            })
            .ok();
        LeaseKeeper {
            stop: Some(stop),
            thread,
        }
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The setup of a new execution's `states:startExecution*` children: its known machines,
/// bindings and options, leased to `owner`, without the parent's mocks (a test case mocks the
/// parent's states, not its children's).
fn child_setup(request: &RunRequest, store: &Arc<Store>, owner: &str) -> ChildSetup {
    ChildSetup {
        machines: request.machines.clone(),
        store: Some(store.clone()),
        owner: owner.to_owned(),
        time: request.time.clone(),
        tasks: LocalTasks {
            mocks: Default::default(),
            ..request.tasks.clone()
        },
        task_bindings: request.task_bindings.clone(),
        options: request.options.clone(),
        notice: request.notice.clone(),
        region: request.info.region.clone(),
        account: request.info.account.clone(),
    }
}

/// Creates the execution in the store and runs it to its end in this thread.
pub fn run_execution(store: Arc<Store>, request: RunRequest) -> Result<Outcome, RunError> {
    let owner = new_owner();
    let lease = lease_ms();
    let children = LocalChildren::new(child_setup(&request, &store, &owner));
    let (row, mut request) = execution_row(request, &owner, lease);
    // The row's key refuses a taken name (no read before it: a connection and a query of a
    // short run's time).
    match store.create_execution(row).wait_blocking() {
        Err(StoreError::ExecutionAlreadyExists { .. }) => {
            return Err(RunError::AlreadyExists(request.info.name.clone()))
        }
        created => created?,
    }
    if !request.machines.is_empty() {
        request.tasks.children = children.tasks().children;
    }
    let handlers = HandlerSet::default();
    let time = request.time.clone();
    let engine = engine_for(&store, request, &owner, &handlers);
    let mut outcomes = drive(
        &store,
        vec![engine],
        vec![children],
        (&handlers, &time),
        &owner,
        lease,
    )?;
    outcomes
        .pop()
        .ok_or_else(|| RunError::History("no outcome".into()))
}

/// Creates the execution's row, leased to `owner`, and builds its engine without running it:
/// for a host that drives many executions side by side on its own runtime (`serve`), which
/// then awaits `engine.run()` and `engine.committed()` and keeps the lease alive with a
/// [`LeaseKeeper`]. Refused with [`RunError::AlreadyExists`] if the ARN is taken.
pub async fn start_engine(
    store: &Arc<Store>,
    request: RunRequest,
    owner: &str,
) -> Result<Engine, RunError> {
    // Its `states:startExecution*` children run on the host's runtime beside it.
    let children = (!request.machines.is_empty())
        .then(|| LocalChildren::new(child_setup(&request, store, owner)));
    let (row, mut request) = execution_row(request, owner, lease_ms());
    if let Some(children) = &children {
        request.tasks.children = children.tasks().children;
    }
    match store.create_execution(row).wait().await {
        Ok(()) => Ok(engine_for(store, request, owner, &HandlerSet::default())),
        Err(StoreError::ExecutionAlreadyExists { .. }) => {
            Err(RunError::AlreadyExists(request.info.name.clone()))
        }
        Err(e) => Err(e.into()),
    }
}

/// Takes over one running execution whose runner is gone, for `owner`, and builds its engine
/// continuing from its last committed event (the host runs it, as after [`start_engine`]).
/// `Ok(None)`: another live runner holds it, or it was quarantined (failed, not resumed; see
/// [`take_over`]).
pub fn resume_engine(
    store: &Arc<Store>,
    record: crate::store::ExecutionRecord,
    notice: NoticeFn,
    owner: &str,
    time: &Timekeeping,
) -> Result<Option<Engine>, RunError> {
    let arn = record.execution_arn.clone();
    match take_over(store, &arn, owner, time.now())? {
        TakenOver::Drive => {}
        TakenOver::Held => return Ok(None),
        TakenOver::Quarantined(_) => {
            notice(&quarantined_message(&arn));
            return Ok(None);
        }
    }
    match prepare_resume(
        store,
        record,
        notice,
        owner,
        &ResumeBindings {
            time: Some(time.clone()),
            ..ResumeBindings::default()
        },
        &ResumeTarget::All,
        &HandlerSet::default(),
        &KnownMachines::new(),
    ) {
        Ok((engine, _, _, _)) => Ok(Some(engine)),
        Err(e) => {
            let _ = store.release_lease(&arn, owner);
            Err(e)
        }
    }
}

/// The new execution's row, and what is left of the request to build its engine.
fn execution_row(request: RunRequest, owner: &str, lease: i64) -> (NewExecution, RunRequest) {
    let timeout_at = request
        .machine
        .timeout_seconds
        .map(|t| request.info.start_time + (t as i64) * 1000);
    let config = RunConfig {
        time_scale: request.time.time_scale(),
        virtual_clock: request.time.virtual_clock().is_some(),
        tasks: request.task_bindings.clone(),
        max_history_events: request.options.max_history_events,
        cwd: std::env::current_dir()
            .ok()
            .map(|d| d.display().to_string()),
        workers: request.worker_bindings.clone(),
        manual_heartbeat: request.workers.options.heartbeat == HeartbeatMode::Manual,
        kill_after_ms: Some(request.workers.options.kill_after.as_millis() as u64),
        machines: request
            .machines
            .iter()
            .map(|(n, m)| (n.clone(), m.definition.clone()))
            .collect(),
        parent: None,
        endpoints: request.tasks.endpoints.bindings(),
        http_invoke: request.tasks.http_access.clone(),
        compat: request.options.compat,
        wait_scale: request.options.wait_scale,
        s3_dir: request.tasks.s3_dir.clone(),
    };
    let row = NewExecution {
        execution_arn: request.info.execution_arn.clone(),
        name: request.info.name.clone(),
        state_machine_arn: request.info.state_machine_arn.clone(),
        state_machine_name: request.info.state_machine_name.clone(),
        definition: request.definition.clone(),
        input: request.input.to_string(),
        start_date_ms: request.info.start_time,
        role_arn: Some(request.info.role_arn.clone()),
        timeout_at_ms: timeout_at,
        position: None,
        owner: Some(owner.to_owned()),
        lease_expires_at_ms: Some(system_now() + lease),
        run_config: serde_json::to_string(&config).ok(),
        state_machine_version_arn: request.info.version_arn.clone(),
        state_machine_alias_arn: request.info.alias_arn.clone(),
        events: Vec::new(),
    };
    (row, request)
}

fn engine_for(
    store: &Arc<Store>,
    request: RunRequest,
    owner: &str,
    handlers: &HandlerSet,
) -> Engine {
    build_engine(
        store,
        request.machine,
        request.info,
        request.input,
        &request.time,
        request.tasks,
        (request.workers, handlers),
        request.options,
        request.notice,
        1,
        None,
        owner,
    )
}

#[allow(clippy::too_many_arguments)]
fn build_engine(
    store: &Arc<Store>,
    machine: Arc<StateMachine>,
    info: ExecutionInfo,
    input: Value,
    time: &Timekeeping,
    tasks: LocalTasks,
    (workers, handlers): (ManagedBindings, &HandlerSet),
    options: EngineOptions,
    notice: NoticeFn,
    next_id: i64,
    recorded: Option<Vec<crate::store::EventRecord>>,
    owner: &str,
) -> Engine {
    let mut tasks = tasks;
    tasks.notice = crate::tasks::Notice(Some(notice.clone()));
    let clock = time.clock();
    let sink = StoreSink::new(store.clone(), &info.execution_arn).owned_by(owner);
    let info_arn = info.execution_arn.clone();
    let history = History::new(next_id, Box::new(sink), options.max_history_events)
        .with_compat(options.compat);
    let broker = TokenBroker::new(
        store.clone(),
        &info.execution_arn,
        tasks.commands.clone(),
        notice,
    )
    .with_managed(workers, handlers.clone());
    let journal = MapRunJournal::new(store.clone(), &info.execution_arn);
    let engine = Engine::new(machine, info, input, history, clock, Rc::new(tasks))
        .with_wait_scale(options.wait_scale)
        .with_tokens(Rc::new(broker))
        .with_map_runs(Rc::new(journal));
    match recorded {
        Some(events) => {
            let (store, arn, owner) = (store.clone(), info_arn, owner.to_owned());
            engine.with_replay(events).on_settled(move || {
                // Unrecorded, the next takeover only counts this one as a stall, as before.
                let _ = store.settle_takeover(&arn, &owner);
            })
        }
        None => engine,
    }
}

/// Runs engines side by side to their ends, renewing their leases, on a single-threaded
/// runtime. Ctrl-C stops driving them: everything submitted is committed, the leases are given
/// up, the executions stay RUNNING, and [`RunError::Interrupted`] lists them.
fn drive(
    store: &Arc<Store>,
    engines: Vec<Engine>,
    children: Vec<Rc<LocalChildren>>,
    (handlers, time): (&HandlerSet, &Timekeeping),
    owner: &str,
    lease: i64,
) -> Result<Vec<Outcome>, RunError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let keeper = LeaseKeeper::start(store.clone(), owner.to_owned(), lease);
    let local = tokio::task::LocalSet::new();
    let children = &children;
    let engines_ref = &engines;
    let all = Box::pin(async move {
        // Tracked: a virtual clock jumps only while every execution waits.
        let done = futures_util::future::join_all(engines_ref.iter().map(|engine| {
            time.track(async move {
                let outcome = engine.run().await;
                let committed = engine.committed().await;
                (outcome, committed)
            })
        }))
        .await;
        // Children started by request-response tasks run on after their parents' tasks:
        // the runner waits for them too.
        for c in children {
            c.settle().await;
        }
        done
    });
    let result = local.block_on(&runtime, async {
        // Ctrl-C, or SIGTERM (`kill`, a CI runner cancelling a job): both leave the
        // executions RUNNING and resumable.
        let interrupt = Box::pin(async {
            use tokio::signal::unix::{signal, SignalKind};
            match signal(SignalKind::terminate()) {
                Ok(mut term) => {
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => {}
                        _ = term.recv() => {}
                    }
                }
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        });
        match futures_util::future::select(all, interrupt).await {
            futures_util::future::Either::Left((done, _)) => {
                // The executions ended and closed their tokens: the managed handlers still
                // running are being cancelled; wait for that (at most --kill-after).
                let running: Vec<_> = handlers.borrow_mut().drain(..).collect();
                for handle in running {
                    let _ = handle.await;
                }
                Some(done)
            }
            futures_util::future::Either::Right((_, running)) => {
                // Not dropped: dropping would write aborted events and close task tokens,
                // which a resume needs open. The process is about to end anyway.
                std::mem::forget(running);
                None
            }
        }
    });
    drop(keeper);
    match result {
        Some(done) => {
            let mut outcomes = Vec::with_capacity(done.len());
            for (outcome, committed) in done {
                committed.map_err(RunError::History)?;
                outcomes.push(outcome);
            }
            Ok(outcomes)
        }
        None => {
            let arns: Vec<String> = engines
                .iter()
                .map(|e| e.info.execution_arn.clone())
                .collect();
            let _ = store.flush().wait_blocking();
            for arn in &arns {
                let _ = store.release_lease(arn, owner);
            }
            Err(RunError::Interrupted(arns))
        }
    }
}

/// What `resume` should take.
#[derive(Debug, Clone)]
pub enum ResumeTarget {
    /// One execution, by ARN or name.
    One(String),
    /// Every running execution whose lease has lapsed.
    All,
}

/// One resumed execution and how it ended.
#[derive(Debug)]
pub struct Resumed {
    /// The execution.
    pub execution_arn: String,
    /// How many events were recorded when it resumed.
    pub replayed: usize,
    /// How it ended.
    pub outcome: Outcome,
}

/// Takes over running executions whose runner is gone (lapsed lease) and runs them to their
/// ends in this thread, continuing from their last committed events.
pub fn resume_executions(
    store: Arc<Store>,
    target: ResumeTarget,
    notice: NoticeFn,
) -> Result<Vec<Resumed>, RunError> {
    resume_executions_with(
        store,
        target,
        notice,
        &Bindings::new(),
        KnownMachines::new(),
    )
}

/// `--task` bindings given to `resume`: state name → command (its program path absolute).
pub type Bindings = std::collections::HashMap<String, crate::tasks::command::CommandLine>;

/// Like [`resume_executions`], with `bindings` supplied or replacing the ones `run` stored,
/// for the Task states of that name (a binding naming no Task state of a resumed machine is
/// refused when one execution is resumed), and state machines known besides those stored with
/// each execution (`resume --machine`, `--machines`; these win over stored ones of the same
/// name).
pub fn resume_executions_with(
    store: Arc<Store>,
    target: ResumeTarget,
    notice: NoticeFn,
    bindings: &Bindings,
    machines: KnownMachines,
) -> Result<Vec<Resumed>, RunError> {
    let bound = ResumeBindings {
        tasks: bindings.clone(),
        ..ResumeBindings::default()
    };
    resume_executions_bound(store, target, notice, &bound, machines)
}

/// What `resume` supplies or replaces of the bindings `run` stored with an execution, as
/// `run`'s options spell them.
#[derive(Debug, Clone, Default)]
pub struct ResumeBindings {
    /// `--task`: state name → command (its program path absolute).
    pub tasks: Bindings,
    /// `--worker`: state name → managed handler (its program path absolute).
    pub workers: Bindings,
    /// `--heartbeat` and `--kill-after` for the handlers, when given.
    pub worker_options: Option<ManagedOptions>,
    /// `--endpoint SERVICE=URL`, over the stored ones.
    pub endpoints: Vec<String>,
    /// `--mock-config` and `--test-case`: the mocks of that case for each resumed machine (the
    /// invocations of a mocked state are counted from the resume).
    pub mocks: Option<(crate::tasks::mock::MockConfig, String)>,
    /// `--s3-dir`.
    pub s3_dir: Option<std::path::PathBuf>,
    /// `--clock` and `--time-scale` given to `resume` (or the clock of a resumed parent),
    /// over the stored ones.
    pub time: Option<Timekeeping>,
}

/// Like [`resume_executions_with`], with every binding option of `run` (see
/// [`ResumeBindings`]).
pub fn resume_executions_bound(
    store: Arc<Store>,
    target: ResumeTarget,
    notice: NoticeFn,
    bindings: &ResumeBindings,
    machines: KnownMachines,
) -> Result<Vec<Resumed>, RunError> {
    let owner = new_owner();
    // A runner killed a moment ago need not be waited for: its process is gone.
    crate::engine::owners::expire_dead_runners(&store, &owner)?;
    let records = records_to_resume(&store, &target)?;
    let bindings = &ResumeBindings {
        time: resume_time(&store, &records, bindings)?,
        ..bindings.clone()
    };
    let time = bindings.time.clone().unwrap_or_default();
    let handlers = HandlerSet::default();
    let resume = Resume {
        store: &store,
        owner: &owner,
        notice: &notice,
        bindings,
        target: &target,
        handlers: &handlers,
        machines: &machines,
    };
    let (mut engines, mut registries, mut quarantined, mut cwd) = (vec![], vec![], vec![], None);
    for record in records {
        match resume.take(record, time.now())? {
            Taken::Prepared(prepared) => {
                let (engine, dir, recorded, children) = *prepared;
                cwd = cwd.or(dir);
                engines.push((engine, recorded));
                registries.extend(children);
            }
            Taken::Quarantined(failed) => quarantined.push(failed),
            Taken::Held => {}
        }
    }
    // Task commands were bound relative to the directory `run` started in.
    if let Some(dir) = cwd {
        let _ = std::env::set_current_dir(dir);
    }
    let heads: Vec<(String, usize)> = engines
        .iter()
        .map(|(e, n)| (e.info.execution_arn.clone(), *n))
        .collect();
    let engines = engines.into_iter().map(|(e, _)| e).collect();
    let outcomes = drive(
        &store,
        engines,
        registries,
        (&handlers, &time),
        &owner,
        lease_ms(),
    )?;
    let resumed = heads
        .into_iter()
        .zip(outcomes)
        .map(|((execution_arn, replayed), outcome)| Resumed {
            execution_arn,
            replayed,
            outcome,
        });
    Ok(quarantined.into_iter().chain(resumed).collect())
}

/// What every execution one `resume` takes over shares.
struct Resume<'a> {
    store: &'a Arc<Store>,
    owner: &'a str,
    notice: &'a NoticeFn,
    bindings: &'a ResumeBindings,
    target: &'a ResumeTarget,
    handlers: &'a HandlerSet,
    machines: &'a KnownMachines,
}

/// One execution `resume` asked for, after [`Resume::take`].
enum Taken {
    /// Taken over, its engine ready to drive.
    Prepared(Box<Prepared>),
    /// Taken over and failed at once (see [`take_over`]).
    Quarantined(Resumed),
    /// Another live runner holds it (and it was not the one execution asked for).
    Held,
}

impl Resume<'_> {
    /// Takes `record` over and prepares its engine, or quarantines it (its failure stamped
    /// `at`). A failure to prepare gives its lease up.
    fn take(&self, record: crate::store::ExecutionRecord, at: Millis) -> Result<Taken, RunError> {
        let arn = record.execution_arn.clone();
        match take_over(self.store, &arn, self.owner, at)? {
            TakenOver::Drive => {}
            TakenOver::Held => {
                leased_elsewhere(self.store, record, self.target)?;
                return Ok(Taken::Held);
            }
            TakenOver::Quarantined(outcome) => {
                (self.notice)(&quarantined_message(&arn));
                return Ok(Taken::Quarantined(Resumed {
                    execution_arn: arn,
                    replayed: record.last_event_id as usize,
                    outcome,
                }));
            }
        }
        let prepared = prepare_resume(
            self.store,
            record,
            self.notice.clone(),
            self.owner,
            self.bindings,
            self.target,
            self.handlers,
            self.machines,
        );
        if prepared.is_err() {
            let _ = self.store.release_lease(&arn, self.owner);
        }
        prepared.map(|p| Taken::Prepared(Box::new(p)))
    }
}

/// What `resume` is asked to take: the one execution named (which must be running), or every
/// running execution but the children of running parents (their parents find them again).
fn records_to_resume(
    store: &Store,
    target: &ResumeTarget,
) -> Result<Vec<crate::store::ExecutionRecord>, RunError> {
    let arn = match target {
        ResumeTarget::One(arn) => arn,
        ResumeTarget::All => return Ok(roots(store, store.running_executions()?)?),
    };
    match store.execution(arn)? {
        Some(r) if r.status == crate::store::ExecutionStatus::Running => Ok(vec![r]),
        Some(r) => Err(RunError::CannotResume(format!(
            "execution {} is {}, not RUNNING: nothing to resume",
            r.execution_arn, r.status
        ))),
        None => Err(RunError::ExecutionDoesNotExist {
            execution: arn.clone(),
            database: store.path().display().to_string(),
        }),
    }
}

/// The executions of `records` to take over: all but the children whose parent execution is
/// running, which its runner (or whoever resumes it) finds again, so that no child is driven
/// twice.
pub fn roots(
    store: &Store,
    records: Vec<crate::store::ExecutionRecord>,
) -> Result<Vec<crate::store::ExecutionRecord>, StoreError> {
    let mut roots = Vec::with_capacity(records.len());
    for record in records {
        let parent = store
            .run_config(&record.execution_arn)?
            .and_then(|t| serde_json::from_str::<RunConfig>(&t).ok())
            .and_then(|c| c.parent);
        let parent_runs = match parent {
            Some(parent) => store
                .execution(&parent)?
                .is_some_and(|p| p.status == crate::store::ExecutionStatus::Running),
            None => false,
        };
        if !parent_runs {
            roots.push(record);
        }
    }
    Ok(roots)
}

/// An execution another live runner holds: refused when it is the one asked for
/// ([`RunError::Leased`]), else skipped.
fn leased_elsewhere(
    store: &Store,
    record: crate::store::ExecutionRecord,
    target: &ResumeTarget,
) -> Result<(), RunError> {
    let ResumeTarget::One(_) = target else {
        return Ok(());
    };
    let fresh = store.execution(&record.execution_arn)?.unwrap_or(record);
    Err(RunError::Leased {
        execution_arn: fresh.execution_arn,
        owner: fresh.owner.unwrap_or_default(),
        until: crate::clock::iso8601(fresh.lease_expires_at_ms.unwrap_or_default()),
    })
}

/// What a runner says of an execution it quarantined.
fn quarantined_message(execution_arn: &str) -> String {
    format!(
        "{execution_arn} failed with {} instead of resumed: {QUARANTINE_CAUSE}",
        crate::asl::error::names::RUNTIME
    )
}

/// The clock resumed executions share: the one `resume` was given, or, when any of them ran
/// on a virtual clock, a virtual clock standing at the latest instant their histories reached
/// (so their deadlines keep their places); `None` lets each keep its stored scale.
fn resume_time(
    store: &Store,
    records: &[crate::store::ExecutionRecord],
    bindings: &ResumeBindings,
) -> Result<Option<Timekeeping>, RunError> {
    if bindings.time.is_some() {
        return Ok(bindings.time.clone());
    }
    let mut latest = None;
    for record in records {
        let virtual_clock =
            stored_config(store, &record.execution_arn)?.is_ok_and(|c| c.virtual_clock);
        if virtual_clock {
            let last = store
                .history(&record.execution_arn, false)?
                .last()
                .map(|e| e.timestamp_ms);
            latest = latest.max(Some(last.unwrap_or(record.start_date_ms)));
        }
    }
    Ok(latest.map(|at| Timekeeping::Virtual(crate::clock::VirtualClock::automatic(at))))
}

/// The clock an execution continues on when nothing is given: a virtual clock standing where
/// its history ended if it ran on one, else `None` (its stored scale).
pub fn stored_time(
    store: &Store,
    record: &crate::store::ExecutionRecord,
) -> Result<Option<Timekeeping>, RunError> {
    resume_time(
        store,
        std::slice::from_ref(record),
        &ResumeBindings::default(),
    )
}

type Prepared = (Engine, Option<String>, usize, Option<Rc<LocalChildren>>);

/// Builds the engine that continues one execution from its stored history, with its stored
/// configuration and what the resume supplies over it.
#[allow(clippy::too_many_arguments)]
fn prepare_resume(
    store: &Arc<Store>,
    record: crate::store::ExecutionRecord,
    notice: NoticeFn,
    owner: &str,
    bindings: &ResumeBindings,
    target: &ResumeTarget,
    handlers: &HandlerSet,
    extra: &KnownMachines,
) -> Result<Prepared, RunError> {
    let arn = record.execution_arn.clone();
    let cannot = |why: String| RunError::CannotResume(format!("cannot resume {arn}: {why}"));
    let input: Value = serde_json::from_str(&record.input)
        .map_err(|e| cannot(format!("its stored input is not JSON: {e}")))?;
    let config = stored_config(store, &arn)?.map_err(&cannot)?;
    let (machine, _) = crate::asl::compile_text_as(
        &record.definition,
        crate::asl::MachineType::Standard,
        config.compat,
    );
    let machine = machine.ok_or_else(|| cannot("its stored definition does not compile".into()))?;
    let bound = resume_tasks(
        store,
        (&machine, &record.state_machine_name),
        &config,
        bindings,
        target,
    )
    .map_err(&cannot)?;
    keep_resume_bindings(
        store,
        &arn,
        &config,
        bindings,
        &bound.task_states,
        &bound.token_states,
    );
    let info = resumed_info(&record).ok_or_else(|| cannot("its ARN is malformed".into()))?;
    let given = (bindings.time.clone(), &info, &notice);
    let (setup, mut tasks) = resumed_setup(store, owner, &config, bound.tasks, given);
    let (time, options) = (setup.time.clone(), setup.options.clone());
    let children = resumed_children(setup, extra, &mut tasks);
    let events = store.history(&arn, false)?;
    let next_id = events.last().map_or(1, |e| e.id + 1);
    let recorded = events.len();
    let engine = build_engine(
        store,
        Arc::new(machine),
        info,
        input,
        &time,
        tasks,
        (bound.workers, handlers),
        options,
        notice,
        next_id,
        Some(events),
        owner,
    );
    Ok((engine, config.cwd, recorded, children))
}

/// How a resumed execution runs (and starts its children): its stored options, on the clock
/// given (else one of its stored scale), with its bound tasks.
fn resumed_setup(
    store: &Arc<Store>,
    owner: &str,
    config: &RunConfig,
    tasks: LocalTasks,
    (time, info, notice): (Option<Timekeeping>, &ExecutionInfo, &NoticeFn),
) -> (ChildSetup, LocalTasks) {
    let setup = ChildSetup {
        machines: crate::engine::children::compile_known(&config.machines),
        store: Some(store.clone()),
        owner: owner.to_owned(),
        time: time.unwrap_or_else(|| Timekeeping::scaled(config.time_scale)),
        tasks: tasks.clone(),
        task_bindings: config.tasks.clone(),
        options: EngineOptions {
            max_history_events: config.max_history_events,
            compat: config.compat,
            wait_scale: config.wait_scale,
        },
        notice: notice.clone(),
        region: info.region.clone(),
        account: info.account.clone(),
    };
    (setup, tasks)
}

/// The run configuration stored with an execution (real time and no bindings when none was).
fn stored_config(store: &Store, arn: &str) -> Result<Result<RunConfig, String>, RunError> {
    Ok(match store.run_config(arn)? {
        Some(text) => serde_json::from_str(&text)
            .map_err(|e| format!("its stored run configuration is unreadable: {e}")),
        None => Ok(RunConfig {
            time_scale: 1.0,
            virtual_clock: false,
            tasks: Vec::new(),
            max_history_events: crate::engine::history::MAX_HISTORY_EVENTS,
            cwd: None,
            workers: Vec::new(),
            manual_heartbeat: false,
            kill_after_ms: None,
            machines: BTreeMap::new(),
            parent: None,
            endpoints: Vec::new(),
            compat: crate::asl::Compat::Aws,
            http_invoke: Default::default(),
            wait_scale: 1.0,
            s3_dir: None,
        }),
    })
}

/// A resumed execution's children registry (when it knows machines), wired into its tasks.
fn resumed_children(
    mut setup: ChildSetup,
    extra: &KnownMachines,
    tasks: &mut LocalTasks,
) -> Option<Rc<LocalChildren>> {
    setup
        .machines
        .extend(extra.iter().map(|(n, m)| (n.clone(), m.clone())));
    if setup.machines.is_empty() {
        return None;
    }
    let registry = LocalChildren::new(setup);
    tasks.children = registry.tasks().children;
    Some(registry)
}

/// The execution's names and times, from its row.
fn resumed_info(record: &crate::store::ExecutionRecord) -> Option<ExecutionInfo> {
    // arn:aws:states:REGION:ACCOUNT:execution:MACHINE:NAME
    let parts: Vec<&str> = record.execution_arn.splitn(8, ':').collect();
    let [_, _, _, region, account, ..] = parts.as_slice() else {
        return None;
    };
    Some(
        ExecutionInfo::new(
            region,
            account,
            &record.state_machine_name,
            &record.name,
            record.role_arn.as_deref(),
            record.start_date_ms,
        )
        .redriven(
            u32::try_from(record.redrive_count).unwrap_or(u32::MAX),
            record.redrive_date_ms,
        ),
    )
}

/// A resumed execution's task bindings: the stored ones, with the resume's over them.
struct ResumedTasks {
    tasks: LocalTasks,
    workers: ManagedBindings,
    task_states: Vec<String>,
    token_states: Vec<String>,
}

fn resume_tasks(
    store: &Store,
    (machine, machine_name): (&StateMachine, &str),
    config: &RunConfig,
    bindings: &ResumeBindings,
    target: &ResumeTarget,
) -> Result<ResumedTasks, String> {
    let one = matches!(target, ResumeTarget::One(_));
    let mut tasks = LocalTasks {
        http_access: config.http_invoke.clone(),
        s3_dir: config.s3_dir.clone(),
        ..LocalTasks::default()
    };
    for binding in &config.tasks {
        let (state, command) = crate::tasks::command::parse_binding(binding)
            .map_err(|e| format!("its task binding {binding:?} is invalid: {e}"))?;
        tasks
            .commands
            .insert(state, command.with_database(store.path()));
    }
    let task_states = state_names(machine, |_| true);
    for (state, command) in &bindings.tasks {
        if task_states.contains(state) {
            tasks
                .commands
                .insert(state.clone(), command.clone().with_database(store.path()));
        } else if one {
            return Err(unknown_state("--task", "Task", state, &task_states));
        }
    }
    let token_states = state_names(machine, |t| t.resource.waits_for_token());
    let workers = resume_workers(config, bindings, &token_states, &mut tasks, one)?;
    let endpoints: Vec<String> = config
        .endpoints
        .iter()
        .chain(&bindings.endpoints)
        .cloned()
        .collect();
    tasks.endpoints = crate::tasks::aws::Endpoints::parse(&endpoints, |k| std::env::var(k).ok())
        .map_err(|e| format!("its endpoints are invalid: {e}"))?;
    if let Some((mock_config, case)) = &bindings.mocks {
        tasks.mocks = mock_config
            .test_case(machine_name, case)
            .and_then(|m| m.check_against(machine).map(|()| m))
            .map_err(|e| format!("--test-case {case}: {e}"))?;
    }
    if bindings.s3_dir.is_some() {
        tasks.s3_dir = bindings.s3_dir.clone();
    }
    Ok(ResumedTasks {
        tasks,
        workers,
        task_states,
        token_states,
    })
}
/// The names of the machine's Task states that `pick` chooses.
fn state_names(
    machine: &StateMachine,
    pick: impl Fn(&crate::asl::model::Task) -> bool,
) -> Vec<String> {
    machine
        .all_states()
        .into_iter()
        .filter(|s| matches!(&s.kind, crate::asl::model::StateKind::Task(t) if pick(t)))
        .map(|s| s.name.clone())
        .collect()
}

fn unknown_state(flag: &str, kind: &str, state: &str, names: &[String]) -> String {
    format!(
        "{flag} {state}=...: the machine has no {kind} state named '{state}'{}",
        crate::suggest::did_you_mean(state, names.iter().map(String::as_str))
    )
}

/// The managed handlers of a resumed execution: the stored ones, with the resume's over them
/// (a `--worker` replaces a `--task` of the same state).
fn resume_workers(
    config: &RunConfig,
    bindings: &ResumeBindings,
    token_states: &[String],
    tasks: &mut LocalTasks,
    one: bool,
) -> Result<ManagedBindings, String> {
    let mut workers = ManagedBindings {
        commands: Default::default(),
        options: ManagedOptions {
            heartbeat: if config.manual_heartbeat {
                HeartbeatMode::Manual
            } else {
                HeartbeatMode::Auto
            },
            kill_after: config
                .kill_after_ms
                .map(std::time::Duration::from_millis)
                .unwrap_or(ManagedOptions::default().kill_after),
        },
    };
    for binding in &config.workers {
        let (state, command) = crate::tasks::command::parse_binding(binding)
            .map_err(|e| format!("its worker binding {binding:?} is invalid: {e}"))?;
        workers.commands.insert(state, command);
    }
    for (state, command) in &bindings.workers {
        if token_states.contains(state) {
            tasks.commands.remove(state);
            workers.commands.insert(state.clone(), command.clone());
        } else if one {
            return Err(unknown_state(
                "--worker",
                ".waitForTaskToken Task",
                state,
                token_states,
            ));
        }
    }
    if let Some(options) = bindings.worker_options {
        workers.options = options;
    }
    Ok(workers)
}

/// Stores the bindings a resume supplied with the execution's run configuration, so the next
/// resume (after this runner dies too) keeps them. Best effort: the resume goes on regardless.
fn keep_resume_bindings(
    store: &Store,
    arn: &str,
    config: &RunConfig,
    bindings: &ResumeBindings,
    task_states: &[String],
    token_states: &[String],
) {
    if bindings.tasks.is_empty() && bindings.workers.is_empty() && bindings.endpoints.is_empty() {
        return;
    }
    let line = |state: &str, c: &crate::tasks::command::CommandLine| {
        format!("{state}={}", shell_words::join(&c.argv))
    };
    let rebound = |b: &String| {
        b.split_once('=').is_some_and(|(s, _)| {
            bindings.tasks.contains_key(s) || bindings.workers.contains_key(s)
        })
    };
    let mut kept = config.clone();
    kept.tasks.retain(|b| !rebound(b));
    kept.workers.retain(|b| !rebound(b));
    kept.tasks.extend(
        bindings
            .tasks
            .iter()
            .filter(|(s, _)| task_states.contains(s) && !bindings.workers.contains_key(*s))
            .map(|(s, c)| line(s, c)),
    );
    kept.workers.extend(
        bindings
            .workers
            .iter()
            .filter(|(s, _)| token_states.contains(s))
            .map(|(s, c)| line(s, c)),
    );
    kept.endpoints.extend(bindings.endpoints.iter().cloned());
    if let Ok(text) = serde_json::to_string(&kept) {
        let _ = store.set_run_config(arn, &text);
    }
}

/// Creates a child execution's row (owned by the parent's runner, naming its parent) and its
/// engine, ready to run.
pub(crate) fn create_child(
    store: &Arc<Store>,
    setup: &ChildSetup,
    known: &KnownMachine,
    info: ExecutionInfo,
    input: Value,
    tasks: LocalTasks,
    parent: &str,
) -> Result<Engine, RunError> {
    let config = RunConfig {
        time_scale: setup.time.time_scale(),
        virtual_clock: setup.time.virtual_clock().is_some(),
        tasks: setup.task_bindings.clone(),
        max_history_events: setup.options.max_history_events,
        cwd: std::env::current_dir()
            .ok()
            .map(|d| d.display().to_string()),
        machines: setup
            .machines
            .iter()
            .map(|(n, m)| (n.clone(), m.definition.clone()))
            .collect(),
        parent: Some(parent.to_owned()),
        endpoints: setup.tasks.endpoints.bindings(),
        http_invoke: setup.tasks.http_access.clone(),
        compat: setup.options.compat,
        wait_scale: setup.options.wait_scale,
        workers: Vec::new(),
        manual_heartbeat: false,
        kill_after_ms: None,
        s3_dir: setup.tasks.s3_dir.clone(),
    };
    let timeout_at = known
        .machine
        .timeout_seconds
        .map(|t| info.start_time + (t as i64) * 1000);
    // Blocks this thread for one commit: the child must exist before StartExecution answers.
    store
        .create_execution(NewExecution {
            execution_arn: info.execution_arn.clone(),
            name: info.name.clone(),
            state_machine_arn: info.state_machine_arn.clone(),
            state_machine_name: info.state_machine_name.clone(),
            definition: known.definition.clone(),
            input: input.to_string(),
            start_date_ms: info.start_time,
            role_arn: Some(info.role_arn.clone()),
            timeout_at_ms: timeout_at,
            position: None,
            owner: Some(setup.owner.clone()),
            lease_expires_at_ms: Some(system_now() + lease_ms()),
            run_config: serde_json::to_string(&config).ok(),
            state_machine_version_arn: None,
            state_machine_alias_arn: None,
            events: Vec::new(),
        })
        .wait_blocking()?;
    Ok(build_engine(
        store,
        known.machine.clone(),
        info,
        input,
        &setup.time,
        tasks,
        (ManagedBindings::default(), &HandlerSet::default()),
        setup.options.clone(),
        setup.notice.clone(),
        1,
        None,
        &setup.owner,
    ))
}

/// The engine (and its own children's registry) of a child left RUNNING by a dead runner,
/// for the resumed parent that finds it again; the caller holds its lease.
pub(crate) fn resume_child(
    store: &Arc<Store>,
    record: crate::store::ExecutionRecord,
    notice: NoticeFn,
    owner: &str,
    time: &Timekeeping,
) -> Result<(Engine, Option<Rc<LocalChildren>>), RunError> {
    let (engine, _, _, children) = prepare_resume(
        store,
        record,
        notice,
        owner,
        &ResumeBindings {
            time: Some(time.clone()),
            ..ResumeBindings::default()
        },
        &ResumeTarget::All,
        &HandlerSet::default(),
        &KnownMachines::new(),
    )?;
    Ok((engine, children))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_aws_rules() {
        assert!(check_name("execution name", "run-1_a.b").is_ok());
        assert!(check_name("execution name", "").is_err());
        assert!(check_name("execution name", "has space").is_err());
        assert!(check_name("execution name", "a:b").is_err());
        assert!(check_name("execution name", &"x".repeat(81)).is_err());
    }
}
