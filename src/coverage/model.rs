//! What can be covered in one state machine: its states, its transitions and its error paths,
//! each with the JSON pointer of the place in the definition that declares it.

use crate::asl::model::{Condition, Scope, State, StateKind, StateMachine, Transition};
use crate::asl::JsonPointer;
use serde_json::Value;
use std::collections::HashMap;

/// The three columns of a coverage report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// A state was entered.
    State,
    /// A transition was taken: `Next`, `End`, a Choice rule or its `Default`.
    Branch,
    /// An error path was taken: a `Catch` entry, a `Retry` entry, a declared timeout.
    ErrorPath,
}

impl Category {
    /// The lower-case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::State => "state",
            Category::Branch => "branch",
            Category::ErrorPath => "errorPath",
        }
    }
}

/// One coverable thing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ItemKind {
    /// The state itself.
    State,
    /// `Next`, to the named state.
    Next(String),
    /// `End: true`.
    End,
    /// The Choice rule at this index, going to the named state.
    Rule(usize, String),
    /// The Choice's `Default`, going to the named state.
    Default(String),
    /// The `Catch` entry at this index, going to the named state.
    Catch(usize, String),
    /// The `Retry` entry at this index.
    Retry(usize),
    /// The Task's `TimeoutSeconds` ran out.
    Timeout,
    /// The Task's `HeartbeatSeconds` ran out.
    HeartbeatTimeout,
}

impl ItemKind {
    /// Which column it counts in.
    pub fn category(&self) -> Category {
        match self {
            ItemKind::State => Category::State,
            ItemKind::Next(_) | ItemKind::End | ItemKind::Rule(..) | ItemKind::Default(_) => {
                Category::Branch
            }
            ItemKind::Catch(..)
            | ItemKind::Retry(_)
            | ItemKind::Timeout
            | ItemKind::HeartbeatTimeout => Category::ErrorPath,
        }
    }

    /// A short name for JSON: `state`, `next`, `end`, `choice`, `default`, `catch`, `retry`,
    /// `timeout`, `heartbeatTimeout`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ItemKind::State => "state",
            ItemKind::Next(_) => "next",
            ItemKind::End => "end",
            ItemKind::Rule(..) => "choice",
            ItemKind::Default(_) => "default",
            ItemKind::Catch(..) => "catch",
            ItemKind::Retry(_) => "retry",
            ItemKind::Timeout => "timeout",
            ItemKind::HeartbeatTimeout => "heartbeatTimeout",
        }
    }
}

/// One coverable thing of one state.
#[derive(Debug, Clone)]
pub struct Item {
    /// The state it belongs to.
    pub state: String,
    /// What it is.
    pub kind: ItemKind,
    /// Where the definition declares it (the state's key, the rule's object, `Catch/0`...).
    pub pointer: JsonPointer,
    /// How a person reads it: `Choice rule 2 ($.total > 100 → Big)`.
    pub description: String,
}

/// The items of one state, by role, as indexes into [`Coverable::items`].
#[derive(Debug, Clone, Default)]
pub struct StateItems {
    /// The state itself.
    pub state: usize,
    /// `Next` or `End`.
    pub transition: Option<usize>,
    /// Choice rules, in order.
    pub rules: Vec<usize>,
    /// The Choice's `Default`.
    pub default: Option<usize>,
    /// Catch entries, in order.
    pub catchers: Vec<usize>,
    /// Retry entries, in order.
    pub retriers: Vec<usize>,
    /// A declared `TimeoutSeconds` (or `TimeoutSecondsPath`).
    pub timeout: Option<usize>,
    /// A declared `HeartbeatSeconds` (or `HeartbeatSecondsPath`).
    pub heartbeat: Option<usize>,
}

impl StateItems {
    /// The state's own transitions and error paths (not the state itself), in report order.
    pub fn own(&self) -> Vec<usize> {
        self.transition
            .iter()
            .chain(&self.rules)
            .chain(&self.default)
            .chain(&self.retriers)
            .chain(&self.catchers)
            .chain(&self.timeout)
            .chain(&self.heartbeat)
            .copied()
            .collect()
    }
}

/// Everything coverable in one machine, in definition order (a state, then its own items,
/// then the states nested in it).
#[derive(Debug, Clone)]
pub struct Coverable {
    /// The compiled machine (Choice rules and error matching read it).
    pub machine: StateMachine,
    /// Every item.
    pub items: Vec<Item>,
    /// By state name (names are unique in the whole machine).
    pub states: HashMap<String, StateItems>,
}

impl Coverable {
    /// The items of a compiled machine; `definition` is its JSON (to tell `TimeoutSeconds`
    /// from `TimeoutSecondsPath`).
    pub fn new(machine: StateMachine, definition: &Value) -> Coverable {
        let mut builder = Builder::default();
        builder.scope(&machine.root, definition);
        Coverable {
            machine,
            items: builder.items,
            states: builder.states,
        }
    }

    /// The compiled state with this name.
    pub fn state(&self, name: &str) -> Option<&State> {
        fn find<'a>(scope: &'a Scope, name: &str) -> Option<&'a State> {
            if let Some(id) = scope.find(name) {
                return Some(scope.state(id));
            }
            scope
                .states
                .iter()
                .flat_map(|s| s.inner_scopes())
                .find_map(|inner| find(inner, name))
        }
        find(&self.machine.root, name)
    }
}

/// Collects the items while walking the machine.
#[derive(Default)]
struct Builder {
    items: Vec<Item>,
    states: HashMap<String, StateItems>,
}

impl Builder {
    /// The items of every state of `scope`, and of the scopes nested in them.
    fn scope(&mut self, scope: &Scope, definition: &Value) {
        for state in &scope.states {
            self.state_items(scope, state, definition);
            for inner in state.inner_scopes() {
                self.scope(inner, definition);
            }
        }
    }

    fn push(&mut self, state: &State, kind: ItemKind, pointer: JsonPointer, text: String) -> usize {
        self.items.push(Item {
            state: state.name.clone(),
            kind,
            pointer,
            description: text,
        });
        self.items.len() - 1
    }

    fn state_items(&mut self, scope: &Scope, state: &State, definition: &Value) {
        let name = |id| scope.state(id).name.clone();
        let at = &state.pointer;
        let mut items = StateItems {
            state: self.push(
                state,
                ItemKind::State,
                at.clone(),
                format!("{} state {}", state.type_name(), state.name),
            ),
            ..StateItems::default()
        };
        let transition = match &state.kind {
            StateKind::Pass(s) => Some(s.transition),
            StateKind::Wait(s) => Some(s.transition),
            StateKind::Task(s) => Some(s.transition),
            StateKind::Parallel(s) => Some(s.transition),
            StateKind::Map(s) => Some(s.transition),
            _ => None,
        };
        items.transition = transition.map(|t| match t {
            Transition::Next(id) => self.push(
                state,
                ItemKind::Next(name(id)),
                at.key("Next"),
                format!("Next of {} (→ {})", state.name, name(id)),
            ),
            Transition::End => self.push(
                state,
                ItemKind::End,
                at.key("End"),
                format!("End of {}", state.name),
            ),
        });
        if let StateKind::Choice(c) = &state.kind {
            for (i, branch) in c.choices.iter().enumerate() {
                let rule = match &branch.condition {
                    Condition::JsonPath(rule) => crate::graph::rule_text(rule.raw()),
                    Condition::Jsonata(t) => t.raw().to_string(),
                };
                let rule = crate::graph::shorten(&rule, 60);
                let target = name(branch.next);
                let text = format!(
                    "Choice rule {} of {} ({rule} → {target})",
                    i + 1,
                    state.name
                );
                let index = self.push(
                    state,
                    ItemKind::Rule(i, target),
                    at.key("Choices").index(i),
                    text,
                );
                items.rules.push(index);
            }
            items.default = c.default.map(|d| {
                let text = format!("Default of {} (→ {})", state.name, name(d));
                self.push(state, ItemKind::Default(name(d)), at.key("Default"), text)
            });
        }
        self.error_items(scope, state, definition, &mut items);
        self.states.insert(state.name.clone(), items);
    }

    fn error_items(
        &mut self,
        scope: &Scope,
        state: &State,
        definition: &Value,
        items: &mut StateItems,
    ) {
        let at = &state.pointer;
        let errors = match &state.kind {
            StateKind::Task(t) => &t.errors,
            StateKind::Parallel(p) => &p.errors,
            StateKind::Map(m) => &m.errors,
            _ => return,
        };
        for (i, retrier) in errors.retry.iter().enumerate() {
            let text = format!(
                "Retry {} of {} ({})",
                i + 1,
                state.name,
                retrier.error_equals.join(", ")
            );
            let index = self.push(state, ItemKind::Retry(i), at.key("Retry").index(i), text);
            items.retriers.push(index);
        }
        for (i, catcher) in errors.catch.iter().enumerate() {
            let target = scope.state(catcher.next).name.clone();
            let text = format!(
                "Catch {} of {} ({} → {target})",
                i + 1,
                state.name,
                catcher.error_equals.join(", ")
            );
            let index = self.push(
                state,
                ItemKind::Catch(i, target),
                at.key("Catch").index(i),
                text,
            );
            items.catchers.push(index);
        }
        let StateKind::Task(_) = &state.kind else {
            return;
        };
        let written = definition.pointer(at.as_str());
        let declared = |field: &str| {
            [field.to_owned(), format!("{field}Path")]
                .into_iter()
                .find(|f| written.and_then(|w| w.get(f)).is_some())
        };
        if let Some(field) = declared("TimeoutSeconds") {
            let text = format!("{field} of {} ran out", state.name);
            items.timeout = Some(self.push(state, ItemKind::Timeout, at.key(&field), text));
        }
        if let Some(field) = declared("HeartbeatSeconds") {
            let text = format!("{field} of {} ran out", state.name);
            items.heartbeat =
                Some(self.push(state, ItemKind::HeartbeatTimeout, at.key(&field), text));
        }
    }
}
