//! `--task STATE=COMMAND`, `--worker STATE=COMMAND`, `--heartbeat` and `--kill-after`: local
//! programs bound to a machine's Task states, checked before anything runs. As `serve` and the
//! helpers take them, a binding may name its machine (`MACHINE:STATE=COMMAND`, MACHINE its
//! name or its template's logical ID); one naming another machine binds nothing, with a
//! warning.

use super::FlagError;
use crate::asl::model::{State, StateKind};
use crate::asl::resource::ResourceKind;
use crate::asl::StateMachine;
use crate::engine::children::KnownMachines;
use crate::tasks::command::{parse_binding, BindingError, CommandLine};
use crate::tasks::managed::{parse_seconds, HeartbeatMode, ManagedBindings, ManagedOptions};
use clap::Args;
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

/// How `--worker` handlers are supervised (`run`, `serve`, `worker`).
#[derive(Debug, Clone, Copy, Args)]
pub struct SupervisionArgs {
    /// Who beats for `--worker` handlers: `auto` (sfn-local) or `manual` (the handler).
    #[arg(long, value_enum, default_value_t = HeartbeatMode::Auto)]
    pub heartbeat: HeartbeatMode,
    /// Seconds between SIGTERM and SIGKILL for a `--worker` handler whose task is over.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = parse_seconds)]
    pub kill_after: Duration,
}

impl SupervisionArgs {
    /// The supervision options.
    pub fn lower(&self) -> ManagedOptions {
        ManagedOptions {
            heartbeat: self.heartbeat,
            kill_after: self.kill_after,
        }
    }
}

/// The programs `run` binds to Task states.
#[derive(Debug, Clone, Args)]
pub struct BindingArgs {
    /// Run a local program for a Task state: STATE=COMMAND (repeatable).
    #[arg(long = "task", value_name = "STATE=COMMAND")]
    pub tasks: Vec<String>,
    /// Run a managed handler for a `.waitForTaskToken` state: STATE=COMMAND (repeatable). Its
    /// stdout answers the task; heartbeats and cancellation are done for it (see "Workers").
    #[arg(long = "worker", value_name = "STATE=COMMAND")]
    pub workers: Vec<String>,
    /// `--heartbeat` and `--kill-after`.
    #[command(flatten)]
    pub supervision: SupervisionArgs,
}

/// The bindings, lowered and checked against the machine.
#[derive(Debug, Clone)]
pub struct Bindings {
    /// `--task`: state name → command, told the database its workers answer.
    pub commands: HashMap<String, CommandLine>,
    /// `--worker`: state name → managed handler, with the supervision options.
    pub workers: ManagedBindings,
    /// `--task` as written, stored with the execution so `resume` binds them again.
    pub task_bindings: Vec<String>,
    /// `--worker` as written, stored likewise.
    pub worker_bindings: Vec<String>,
}

impl BindingArgs {
    /// Parses and checks every binding against `machine` (called `names`: its name, and its
    /// template's logical ID) and the machines it may start (`children`); `--task` commands
    /// are told the database (`db_path`) their workers answer.
    pub fn lower(
        &self,
        (machine, names): (&StateMachine, &[&str]),
        children: &KnownMachines,
        db_path: &Path,
    ) -> Result<Bindings, FlagError> {
        let is_state = |s: &str| {
            std::iter::once(machine)
                .chain(children.values().map(|k| k.machine.as_ref()))
                .any(|m| m.all_states().iter().any(|st| st.name == s))
        };
        let machines: Vec<&str> = names
            .iter()
            .copied()
            .chain(children.keys().map(String::as_str))
            .collect();
        let tasks = for_this_machine("--task", &self.tasks, &machines, &is_state);
        let workers = for_this_machine("--worker", &self.workers, &machines, &is_state);
        let commands = bind_tasks(machine, children, &tasks, db_path)?;
        let workers_bound = bind_workers(machine, &workers, &tasks, self.supervision.lower())?;
        Ok(Bindings {
            commands,
            workers: workers_bound,
            task_bindings: tasks,
            worker_bindings: workers,
        })
    }
}

/// The bindings that serve this run, as `STATE=COMMAND`: a `MACHINE:` prefix naming one of
/// `machines` is dropped, and a binding naming another machine is left out with a warning
/// that names the ones there are (a shared list of flags may bind several machines).
pub fn for_this_machine(
    flag: &str,
    given: &[String],
    machines: &[&str],
    is_state: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut out = Vec::new();
    for binding in given {
        let Some((target, command)) = binding.split_once('=') else {
            out.push(binding.clone());
            continue;
        };
        match target.split_once(':') {
            // A state whose own name holds ':' is bound as written.
            _ if is_state(target) => out.push(binding.clone()),
            Some((machine, state)) if machines.contains(&machine) => {
                out.push(format!("{state}={command}"))
            }
            Some((machine, _)) if !machine.is_empty() => warnln!(
                "warning: {flag} '{binding}' binds nothing: this run's state machine is {}, not '{machine}'",
                machines.join(" / ")
            ),
            _ => out.push(binding.clone()),
        }
    }
    out
}

/// Parses and checks `--task STATE=COMMAND` bindings before anything runs: the state must be a
/// Task state of the machine or of a machine it may start (a typo gets "did you mean"), the
/// program must exist and be executable. Each command is told the database (`SFN_LOCAL_DB`) its
/// workers must answer.
pub fn bind_tasks(
    machine: &StateMachine,
    children: &KnownMachines,
    bindings: &[String],
    db_path: &Path,
) -> Result<HashMap<String, CommandLine>, String> {
    let mut commands = HashMap::new();
    // A binding serves the state of that name in the machine or any machine it may start.
    let states: Vec<&State> = std::iter::once(machine)
        .chain(children.values().map(|k| k.machine.as_ref()))
        .flat_map(|m| m.all_states())
        .collect();
    let tasks = || states.iter().filter(|s| s.type_name() == "Task");
    for binding in bindings {
        let (state, command) = parse_binding(binding).map_err(|e| e.to_string())?;
        if !tasks().any(|s| s.name == state) {
            let hint = crate::suggest::did_you_mean(&state, tasks().map(|s| s.name.as_str()));
            return Err(format!(
                "--task {binding}: the machine has no Task state named '{state}'{hint}"
            ));
        }
        command
            .check_program()
            .map_err(|e| format!("--task {binding}: {e}"))?;
        commands.insert(state, command.with_database(db_path));
    }
    Ok(commands)
}

/// Checks `--worker STATE=COMMAND` bindings against the machine: each names a
/// `.waitForTaskToken` Task that no `--task` binding also names.
pub fn bind_workers(
    machine: &StateMachine,
    bindings: &[String],
    task_bindings: &[String],
    options: ManagedOptions,
) -> Result<ManagedBindings, String> {
    let mut out = ManagedBindings {
        commands: Default::default(),
        options,
    };
    for binding in bindings {
        if !binding.contains('=') {
            return Err(format!("--worker expects STATE=COMMAND, got '{binding}'"));
        }
        let (state, command) = parse_binding(binding).map_err(|e| match e {
            BindingError::BadCommand { why, .. } => format!("--worker '{binding}': {why}"),
            other => other.to_string(),
        })?;
        check_worker_state(machine, binding, &state)?;
        if task_bindings
            .iter()
            .any(|t| t.split_once('=').is_some_and(|(s, _)| s == state))
        {
            return Err(format!(
                "--worker {binding}: '{state}' is also bound with --task; choose one"
            ));
        }
        out.commands.insert(state, command);
    }
    Ok(out)
}

/// A `--worker` binding's state must be a Task that waits for a task token, not an activity.
fn check_worker_state(machine: &StateMachine, binding: &str, state: &str) -> Result<(), String> {
    let task = machine
        .all_states()
        .into_iter()
        .find_map(|s| match &s.kind {
            StateKind::Task(t) if s.name == state => Some(t),
            _ => None,
        });
    let Some(task) = task else {
        return Err(format!(
            "--worker {binding}: the machine has no Task state named '{state}'"
        ));
    };
    match &task.resource.kind {
        ResourceKind::Activity { .. } => Err(format!(
            "--worker {binding}: '{state}' is an activity; serve it with: sfn-local worker --activity-arn {} -- COMMAND",
            task.resource.arn
        )),
        _ if !task.resource.waits_for_token() => Err(format!(
            "--worker {binding}: '{state}' does not wait for a task token (its resource {} has no .waitForTaskToken); bind it with --task",
            task.resource.arn
        )),
        _ => Ok(()),
    }
}

/// Parses `--task`/`--worker` bindings that are checked against a machine later (`resume`
/// binds them to whichever executions it resumes): the program must be there and executable,
/// and is made absolute.
pub fn checked_programs(
    flag: &str,
    given: &[String],
) -> Result<crate::engine::runner::Bindings, FlagError> {
    let mut bindings = crate::engine::runner::Bindings::new();
    for binding in given {
        let (state, command) = parse_binding(binding).map_err(|e| e.to_string())?;
        command
            .check_program()
            .map_err(|e| format!("{flag} {binding}: {e}"))?;
        bindings.insert(state, command.with_absolute_program());
    }
    Ok(bindings)
}
