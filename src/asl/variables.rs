//! Static checks on variables, run once the whole machine is parsed (a scope's assignments are
//! only all known then):
//!
//! - an inner scope (a Parallel branch, a Map item processor) may read the variables of the
//!   scopes around it but may not assign one of their names (AWS rejects this at create time);
//! - a JSONata expression should only read variables that its scope or an outer one assigns
//!   somewhere: a WARNING otherwise, since AWS accepts such a definition (the recordings show
//!   `{% $doesNotExist %}` failing at run time, not at create time). Names bound inside the expression (`$x := ...`, function parameters), built-in
//!   and AWS functions, and names in call position (an unknown function fails at run time, as on
//!   AWS) are not variables. A distributed Map's processor sees no outer variable.

use crate::asl::diagnostic::{Diagnostics, JsonPointer};
use crate::asl::jsonata::{Expression, JsonataTemplate, STATES_VARIABLE};
use crate::asl::model::*;
use std::collections::BTreeMap;

/// Reports variable problems in `machine`.
pub fn check(machine: &StateMachine, diags: &mut Diagnostics) {
    check_scope(&machine.root, &BTreeMap::new(), diags);
}

/// The names a state assigns (its own Assign, its Choice rules', its catchers'), each with
/// where.
fn assigned_by(state: &State) -> Vec<(String, JsonPointer)> {
    let mut out = Vec::new();
    let mut add = |assign: Option<&Assign>, at: JsonPointer| {
        for name in assign_names(assign) {
            let at = at.key(&name);
            out.push((name, at));
        }
    };
    add(state.assign.as_ref(), state.pointer.key("Assign"));
    if let StateKind::Choice(c) = &state.kind {
        for (i, b) in c.choices.iter().enumerate() {
            add(
                b.assign.as_ref(),
                state.pointer.key("Choices").index(i).key("Assign"),
            );
        }
    }
    for (i, c) in state.catchers().iter().enumerate() {
        add(
            c.assign.as_ref(),
            state.pointer.key("Catch").index(i).key("Assign"),
        );
    }
    out
}

/// The names the states of a scope assign, each with where it is first assigned; `except`
/// leaves one state out.
fn assigned_in(scope: &Scope, except: Option<&str>) -> BTreeMap<String, JsonPointer> {
    let mut out = BTreeMap::new();
    for state in scope
        .states
        .iter()
        .filter(|s| Some(s.name.as_str()) != except)
    {
        for (name, at) in assigned_by(state) {
            out.entry(name).or_insert(at);
        }
    }
    out
}

fn assign_names(assign: Option<&Assign>) -> Vec<String> {
    let raw = match assign {
        Some(Assign::JsonPath(t)) => t.raw(),
        Some(Assign::Jsonata(t)) => t.raw(),
        None => return Vec::new(),
    };
    raw.as_object()
        .map(|o| {
            o.keys()
                .map(|k| k.strip_suffix(".$").unwrap_or(k).to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn check_scope(scope: &Scope, outer: &BTreeMap<String, JsonPointer>, diags: &mut Diagnostics) {
    let own = assigned_in(scope, None);
    for (name, at) in &own {
        if let Some(outer_at) = outer.get(name) {
            diags.push(
                crate::asl::diagnostic::Diagnostic::error(
                    crate::asl::diagnostic::Code::SchemaValidationFailed,
                    at,
                    format!(
                        "The variable '{name}' is assigned in an outer scope: a Parallel branch or Map processor may read it, but not assign it"
                    ),
                )
                .with_related(outer_at.clone(), "assigned here"),
            );
        }
    }
    let mut visible = outer.clone();
    for (name, at) in own {
        visible.entry(name).or_insert(at);
    }
    for state in &scope.states {
        for (expression, at) in expressions_of(state) {
            for name in expression.variables() {
                if name == STATES_VARIABLE
                    || visible.contains_key(name)
                    || expression.called_names().contains(name)
                {
                    continue;
                }
                diags.warning(
                    crate::asl::diagnostic::Code::UnassignedVariable,
                    &at,
                    format!(
                        "The JSONata expression '{}' reads the variable '${name}', which no state of this scope or of an outer one assigns: it will evaluate to nothing{}",
                        expression.text(),
                        crate::suggest::closest(name, visible.keys().map(String::as_str))
                            .map(|c| format!(" (did you mean '${c}'?)"))
                            .unwrap_or_default()
                    ),
                );
            }
        }
        if state.inner_scopes().is_empty() {
            continue;
        }
        // What the Parallel or Map assigns itself happens after its inner scopes have ended
        // (AWS accepts a branch assigning a name its Parallel's Catch assigns too).
        let mut around = outer.clone();
        for (name, at) in assigned_in(scope, Some(&state.name)) {
            around.entry(name).or_insert(at);
        }
        match &state.kind {
            StateKind::Parallel(p) => {
                for b in &p.branches {
                    check_scope(b, &around, diags);
                }
            }
            StateKind::Map(m) if m.mode == ProcessorMode::Distributed => {
                // Child executions start with no variables.
                check_scope(&m.processor, &BTreeMap::new(), diags);
            }
            StateKind::Map(m) => check_scope(&m.processor, &around, diags),
            _ => {}
        }
    }
}

/// Every JSONata expression of a state (not of its inner scopes), with its field's pointer.
fn expressions_of<'a>(state: &'a State) -> Vec<(&'a Expression, JsonPointer)> {
    let mut out = Vec::new();
    let at = &state.pointer;
    let mut add = |t: Option<&'a JsonataTemplate>, at: JsonPointer| {
        if let Some(t) = t {
            out.extend(t.expressions().map(|e| (e, at.clone())));
        }
    };
    add(jsonata_assign(state.assign.as_ref()), at.key("Assign"));
    let io = match &state.kind {
        StateKind::Pass(p) => Some(&p.io),
        StateKind::Task(t) => Some(&t.io),
        StateKind::Choice(c) => Some(&c.io),
        StateKind::Wait(w) => Some(&w.io),
        StateKind::Succeed(s) => Some(&s.io),
        StateKind::Parallel(p) => Some(&p.io),
        StateKind::Map(m) => Some(&m.io),
        StateKind::Fail(_) => None,
    };
    if let Some(io) = io {
        add(io.arguments.as_ref(), at.key("Arguments"));
        add(io.output.as_ref(), at.key("Output"));
    }
    match &state.kind {
        StateKind::Task(t) => {
            add(
                dynamic(t.timeout_seconds.as_ref()),
                at.key("TimeoutSeconds"),
            );
            add(
                dynamic(t.heartbeat_seconds.as_ref()),
                at.key("HeartbeatSeconds"),
            );
        }
        StateKind::Choice(c) => {
            for (i, b) in c.choices.iter().enumerate() {
                let rule = at.key("Choices").index(i);
                if let Condition::Jsonata(t) = &b.condition {
                    add(Some(t), rule.key("Condition"));
                }
                add(b.output.as_ref(), rule.key("Output"));
                add(jsonata_assign(b.assign.as_ref()), rule.key("Assign"));
            }
        }
        StateKind::Wait(w) => match &w.wait {
            WaitFor::Seconds(Dynamic::Jsonata(t)) => add(Some(t), at.key("Seconds")),
            WaitFor::Timestamp(Dynamic::Jsonata(t)) => add(Some(t), at.key("Timestamp")),
            _ => {}
        },
        StateKind::Fail(f) => {
            for (text, key) in [(&f.error, "Error"), (&f.cause, "Cause")] {
                if let Some(FailText::Jsonata(t)) = text {
                    add(Some(t), at.key(key));
                }
            }
        }
        StateKind::Map(m) => {
            add(m.items.as_ref(), at.key("Items"));
            if let Some(ItemSelector::Jsonata(t)) = &m.item_selector {
                add(Some(t), at.key("ItemSelector"));
            }
            add(
                dynamic(m.max_concurrency.as_ref()),
                at.key("MaxConcurrency"),
            );
            add(
                dynamic(m.tolerated_failure_count.as_ref()),
                at.key("ToleratedFailureCount"),
            );
            if let Some(Dynamic::Jsonata(t)) = &m.tolerated_failure_percentage {
                add(Some(t), at.key("ToleratedFailurePercentage"));
            }
        }
        _ => {}
    }
    for (i, c) in state.catchers().iter().enumerate() {
        let catcher = at.key("Catch").index(i);
        add(c.output.as_ref(), catcher.key("Output"));
        add(jsonata_assign(c.assign.as_ref()), catcher.key("Assign"));
    }
    out
}

fn jsonata_assign(a: Option<&Assign>) -> Option<&JsonataTemplate> {
    match a {
        Some(Assign::Jsonata(t)) => Some(t),
        _ => None,
    }
}

fn dynamic(d: Option<&Dynamic<u64>>) -> Option<&JsonataTemplate> {
    match d {
        Some(Dynamic::Jsonata(t)) => Some(t),
        _ => None,
    }
}
