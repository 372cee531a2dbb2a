//! Child executions of `states:startExecution*` tasks, run in this process: the machines a
//! runner knows (`--machine NAME=FILE`, `--machines DIR`) started as real executions, with
//! their own rows and histories in the same database (or in memory for `sfn-local test`).
//!
//! Each child runs as its own engine on the runner's local task set, beside its parent, so a
//! request-response child keeps running after its parent's task has moved on; the runner
//! waits for its children before it returns ([`LocalChildren::settle`]). A child's run
//! configuration names its parent, so `resume --all` leaves a child whose parent is running to
//! that parent, which finds it again by name (a `.sync` parent that crashed mid-child does not
//! start a second one).

use crate::asl::error::StatesError;
use crate::asl::StateMachine;
use crate::clock::system_now;
use crate::engine::context::ExecutionInfo;
use crate::engine::execution::Engine;
use crate::engine::history::{History, MemorySink};
use crate::engine::EngineOptions;
use crate::store::{ExecutionRecord, ExecutionStatus, StopRequest, Store};
use crate::tasks::callback::NoticeFn;
use crate::tasks::nested::{
    execution_already_exists, machine_does_not_exist, ChildEnded, ChildExecutions, ChildStarted,
    StartChild,
};
use crate::tasks::{Children, LocalTasks};
use futures_util::future::LocalBoxFuture;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::{Rc, Weak};
use std::sync::Arc;

/// A state machine known by name.
#[derive(Debug, Clone)]
pub struct KnownMachine {
    /// Its definition as written (stored with each execution of it).
    pub definition: String,
    /// Compiled.
    pub machine: Arc<StateMachine>,
    /// Task bindings of its own (`serve --task MACHINE:STATE=COMMAND`): its executions run
    /// with these instead of their parent's. `None`: the parent's.
    pub bindings: Option<MachineBindings>,
}

/// One machine's `--task` bindings: state name → command, and as written (stored for resume).
#[derive(Debug, Clone, Default)]
pub struct MachineBindings {
    /// State name → command.
    pub commands: HashMap<String, crate::tasks::command::CommandLine>,
    /// `STATE=COMMAND`, as written.
    pub written: Vec<String>,
}

/// The machines a runner knows, by name.
pub type KnownMachines = BTreeMap<String, KnownMachine>;

/// Compiles stored definitions (name → text) back into known machines; those that no longer
/// compile are left out.
pub fn compile_known(texts: &BTreeMap<String, String>) -> KnownMachines {
    texts
        .iter()
        .filter_map(|(name, text)| {
            let (machine, _) = crate::asl::compile_text(text, crate::asl::MachineType::Standard);
            machine.map(|m| {
                (
                    name.clone(),
                    KnownMachine {
                        definition: text.clone(),
                        machine: Arc::new(m),
                        bindings: None,
                    },
                )
            })
        })
        .collect()
}

/// How children are run: everything a runner gives its own executions.
#[derive(Clone)]
pub struct ChildSetup {
    /// The known machines.
    pub machines: KnownMachines,
    /// The database, or `None` to run children in memory.
    pub store: Option<Arc<Store>>,
    /// The runner's lease owner (children are driven by the same runner).
    pub owner: String,
    /// `--clock` and `--time-scale`: children share their parent's clock.
    pub time: crate::clock::Timekeeping,
    /// The task bindings children get (commands, S3 folder; no mocks).
    pub tasks: LocalTasks,
    /// The same bindings as written, stored for resume.
    pub task_bindings: Vec<String>,
    /// Engine options.
    pub options: EngineOptions,
    /// Where notices go.
    pub notice: NoticeFn,
    /// Region and account for a `StateMachineArn` given as a bare name.
    pub region: String,
    /// See `region`.
    pub account: String,
}

/// Runs known machines as child executions in this process.
pub struct LocalChildren {
    me: Weak<LocalChildren>,
    setup: ChildSetup,
    /// Children driven here that have not ended: how to stop each.
    running: RefCell<HashMap<String, Option<tokio::sync::oneshot::Sender<StopRequest>>>>,
    /// Children driven here that have ended.
    ended: RefCell<HashMap<String, ChildEnded>>,
    changed: tokio::sync::Notify,
    handles: RefCell<Vec<tokio::task::JoinHandle<()>>>,
}

impl LocalChildren {
    /// A registry for one runner.
    pub fn new(setup: ChildSetup) -> Rc<LocalChildren> {
        Rc::new_cyclic(|me| LocalChildren {
            me: me.clone(),
            setup,
            running: RefCell::new(HashMap::new()),
            ended: RefCell::new(HashMap::new()),
            changed: tokio::sync::Notify::new(),
            handles: RefCell::new(Vec::new()),
        })
    }

    /// The task bindings of an execution run here: the setup's, with this registry for its
    /// own `startExecution` tasks.
    pub fn tasks(&self) -> LocalTasks {
        let mut tasks = self.setup.tasks.clone();
        if let Some(me) = self.me.upgrade() {
            tasks.children = Some(Children(me));
        }
        tasks
    }

    /// The known machines' definitions by name, to store with an execution for `resume`.
    pub fn definitions(&self) -> BTreeMap<String, String> {
        self.setup
            .machines
            .iter()
            .map(|(n, m)| (n.clone(), m.definition.clone()))
            .collect()
    }

    /// Resolves when every child started here (and theirs) has ended.
    pub async fn settle(&self) {
        loop {
            let handles: Vec<_> = self.handles.borrow_mut().drain(..).collect();
            if handles.is_empty() {
                return;
            }
            for h in handles {
                let _ = h.await;
            }
        }
    }

    fn ended_from(record: &ExecutionRecord) -> ChildEnded {
        ChildEnded {
            execution_arn: record.execution_arn.clone(),
            state_machine_arn: record.state_machine_arn.clone(),
            name: record.name.clone(),
            status: record.status.as_str().to_owned(),
            input: record.input.clone(),
            output: record.output.clone(),
            error: record.error.clone(),
            cause: record.cause.clone(),
            start_date: record.start_date_ms,
            stop_date: record.stop_date_ms.unwrap_or(record.start_date_ms),
        }
    }

    /// Runs `engine` on the local task set; `done` reads how it ended.
    fn spawn(
        &self,
        arn: String,
        engine: Engine,
        grandchildren: Option<Rc<LocalChildren>>,
        input_text: String,
    ) {
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<StopRequest>();
        let engine = engine.with_stop_signal(Box::pin(async move {
            match stop_rx.await {
                Ok(stop) => stop,
                Err(_) => std::future::pending().await,
            }
        }));
        self.running.borrow_mut().insert(arn.clone(), Some(stop_tx));
        let me = self.me.clone();
        let time = self.setup.time.clone();
        let handle = tokio::task::spawn_local(time.track(async move {
            let outcome = engine.run().await;
            let committed = engine.committed().await;
            if let Some(g) = &grandchildren {
                g.settle().await;
            }
            let Some(me) = me.upgrade() else { return };
            let stored = me
                .setup
                .store
                .as_ref()
                .and_then(|s| s.execution(&arn).ok().flatten())
                .filter(|r| r.status.is_terminal());
            let ended = match stored {
                Some(record) => Self::ended_from(&record),
                None => {
                    if let Err(e) = committed {
                        (me.setup.notice)(&format!(
                            "child execution {arn}: its history could not be written: {e}"
                        ));
                    }
                    ChildEnded {
                        execution_arn: arn.clone(),
                        state_machine_arn: engine.info.state_machine_arn.clone(),
                        name: engine.info.name.clone(),
                        status: outcome.status.as_str().to_owned(),
                        input: input_text,
                        output: outcome.output_text().map(String::from),
                        error: outcome.error.as_ref().and_then(|e| e.error.clone()),
                        cause: outcome.error.as_ref().and_then(|e| e.cause.clone()),
                        start_date: engine.info.start_time,
                        stop_date: outcome.stop_time,
                    }
                }
            };
            me.running.borrow_mut().remove(&arn);
            me.ended.borrow_mut().insert(arn, ended);
            me.changed.notify_waiters();
        }));
        self.handles.borrow_mut().push(handle);
    }

    fn start_now(&self, request: StartChild) -> Result<ChildStarted, StatesError> {
        // arn:aws:states:REGION:ACCOUNT:stateMachine:NAME[:VERSION], or a bare name.
        let arn = &request.state_machine_arn;
        let parts: Vec<&str> = arn.split(':').collect();
        let (region, account, name) = match parts.as_slice() {
            ["arn", _, "states", region, account, "stateMachine", name, ..] => {
                (region.to_string(), account.to_string(), name.to_string())
            }
            _ if !arn.starts_with("arn:") => (
                self.setup.region.clone(),
                self.setup.account.clone(),
                arn.clone(),
            ),
            _ => return Err(machine_does_not_exist(arn)),
        };
        let Some(known) = self.setup.machines.get(&name) else {
            return Err(machine_does_not_exist(arn));
        };
        let info = ExecutionInfo::new(
            &region,
            &account,
            &name,
            &request.name,
            None,
            self.setup.time.now(),
        );
        let execution_arn = info.execution_arn.clone();
        let input_text = request.input.to_string();
        // Started here already (a retry with the same name, or a resumed parent in this run).
        if let Some(ended) = self.ended.borrow().get(&execution_arn) {
            return match request.resumed {
                true => Ok(ChildStarted {
                    execution_arn,
                    start_date: ended.start_date,
                }),
                false => Err(execution_already_exists(&execution_arn)),
            };
        }
        let store = match &self.setup.store {
            Some(store) => store.clone(),
            None => {
                if self.running.borrow().contains_key(&execution_arn) {
                    return match request.resumed {
                        true => Ok(ChildStarted {
                            execution_arn,
                            start_date: info.start_time,
                        }),
                        false => Err(execution_already_exists(&execution_arn)),
                    };
                }
                let sink = MemorySink::default();
                let history =
                    History::new(1, Box::new(sink), self.setup.options.max_history_events)
                        .with_compat(self.setup.options.compat);
                let clock = self.setup.time.clock();
                let start_date = info.start_time;
                let engine = Engine::new(
                    known.machine.clone(),
                    info,
                    request.input,
                    history,
                    clock,
                    Rc::new(self.tasks()),
                );
                self.spawn(execution_arn.clone(), engine, None, input_text);
                return Ok(ChildStarted {
                    execution_arn,
                    start_date,
                });
            }
        };
        let runtime = |e: crate::store::StoreError| StatesError::runtime(e.to_string());
        if let Some(record) = store.execution(&execution_arn).map_err(runtime)? {
            // StartExecution is idempotent for a running execution with the same input; a
            // resumed parent's child is its own whatever its state.
            let same = record.status == ExecutionStatus::Running && record.input == input_text;
            if !(request.resumed || same) {
                return Err(execution_already_exists(&execution_arn));
            }
            if record.status == ExecutionStatus::Running
                && !self.running.borrow().contains_key(&execution_arn)
            {
                self.adopt(&store, record.clone())?;
            }
            return Ok(ChildStarted {
                execution_arn,
                start_date: record.start_date_ms,
            });
        }
        let start_date = info.start_time;
        let mut setup = ChildSetup {
            region: region.clone(),
            account: account.clone(),
            ..self.setup.clone()
        };
        if let Some(own) = &known.bindings {
            setup.tasks.commands = own.commands.clone();
            setup.task_bindings = own.written.clone();
        }
        let grandchildren = LocalChildren::new(setup.clone());
        let tasks = grandchildren.tasks();
        let engine = crate::engine::runner::create_child(
            &store,
            &setup,
            known,
            info,
            request.input,
            tasks,
            &request.parent_execution_arn,
        )
        .map_err(|e| StatesError::runtime(e.to_string()))?;
        self.spawn(
            execution_arn.clone(),
            engine,
            Some(grandchildren),
            input_text,
        );
        Ok(ChildStarted {
            execution_arn,
            start_date,
        })
    }

    /// Drives a child left RUNNING by a runner that died (its parent is being resumed).
    fn adopt(&self, store: &Arc<Store>, record: ExecutionRecord) -> Result<(), StatesError> {
        use crate::engine::runner::{take_over, TakenOver};
        let arn = record.execution_arn.clone();
        let input_text = record.input.clone();
        let taken = take_over(store, &arn, &self.setup.owner, self.setup.time.now())
            .map_err(|e| StatesError::runtime(e.to_string()))?;
        if !matches!(taken, TakenOver::Drive) {
            // Another runner drives it, or it was quarantined (failed): wait() watches the
            // store for its end.
            return Ok(());
        }
        let (engine, grandchildren) = crate::engine::runner::resume_child(
            store,
            record,
            self.setup.notice.clone(),
            &self.setup.owner,
            &self.setup.time,
        )
        .map_err(|e| StatesError::runtime(e.to_string()))?;
        self.spawn(arn, engine, grandchildren, input_text);
        Ok(())
    }
}

impl ChildExecutions for LocalChildren {
    fn start(
        &self,
        request: StartChild,
    ) -> LocalBoxFuture<'static, Result<ChildStarted, StatesError>> {
        let result = self.start_now(request);
        Box::pin(async move { result })
    }

    fn wait(
        &self,
        execution_arn: &str,
    ) -> LocalBoxFuture<'static, Result<ChildEnded, StatesError>> {
        let me = self.me.upgrade();
        let arn = execution_arn.to_owned();
        Box::pin(async move {
            let Some(me) = me else {
                return Err(StatesError::runtime("the runner ended"));
            };
            loop {
                let changed = me.changed.notified();
                if let Some(ended) = me.ended.borrow().get(&arn) {
                    return Ok(ended.clone());
                }
                if me.running.borrow().contains_key(&arn) {
                    changed.await;
                    continue;
                }
                // Driven by another runner: watch the store.
                let Some(store) = &me.setup.store else {
                    return Err(StatesError::runtime(format!(
                        "child execution {arn} is not running here"
                    )));
                };
                match store.execution(&arn) {
                    Ok(Some(r)) if r.status.is_terminal() => return Ok(Self::ended_from(&r)),
                    Ok(Some(_)) => {}
                    Ok(None) => {
                        return Err(StatesError::runtime(format!(
                            "child execution {arn} vanished from the database"
                        )))
                    }
                    Err(e) => return Err(StatesError::runtime(e.to_string())),
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        })
    }

    fn stop(&self, execution_arn: &str) {
        let sender = self
            .running
            .borrow_mut()
            .get_mut(execution_arn)
            .and_then(Option::take);
        match sender {
            Some(tx) => {
                let _ = tx.send(StopRequest {
                    requested_at: self.setup.time.now(),
                    error: None,
                    cause: None,
                });
            }
            None => {
                // Driven by another runner: ask through the store, as stop-execution does.
                if let Some(store) = &self.setup.store {
                    let _ = store.request_stop(execution_arn, None, None, system_now());
                }
            }
        }
    }
}
