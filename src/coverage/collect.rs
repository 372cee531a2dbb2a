//! Reads histories and counts what they took: states entered, transitions, Catch and Retry
//! entries, timeouts, and how states ended. Each history is read as one
//! [`Tree`](crate::engine::visits::Tree) of state visits, the reading every report shares.
//!
//! History does not say which Choice rule matched, which Catch or Retry entry acted, or whether
//! a `States.Timeout` came from `TimeoutSeconds` or `HeartbeatSeconds`; they are worked out:
//!
//! - a Choice rule is known by the state entered next; when several rules (or the Default)
//!   go to that state, the rules are evaluated again on the recorded input (JSONPath rules that
//!   read only `$`; a rule that needs variables or `$$`, or a JSONata one, leaves the
//!   transition *unattributed*, counted apart, never guessed);
//! - the Retry entry that acted is the first whose `ErrorEquals` matches the failure that came
//!   before the new attempt (AWS's rule), and likewise the Catch entry, checked against the
//!   state entered next (for a Parallel or Map, the failure is the one that came up from its
//!   branch or iteration);
//! - a timeout that came before the attempt's `TimeoutSeconds` (scaled by the execution's
//!   `--time-scale`) was the heartbeat's.

use super::model::{Coverable, ItemKind};
use crate::asl::eval::{Env, NoVariables};
use crate::asl::model::{Condition, OptionalPath, StateKind};
use crate::asl::StatesError;
pub use crate::engine::visits::EventView;
use crate::engine::visits::{Attempt, Ending, Tree, Visit, VisitId};
use serde_json::Value;
use std::collections::HashMap;

/// How visits of one state ended when nothing caught them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Endings {
    /// Failed (an error no Catch took).
    pub failed: u64,
    /// `TimeoutSeconds` ran out.
    pub timed_out: u64,
    /// `HeartbeatSeconds` ran out.
    pub heartbeat_timed_out: u64,
}

/// What the histories read so far took.
#[derive(Debug, Clone, Default)]
pub struct Hits {
    /// Per item of the [`Coverable`], how many times it was taken.
    pub items: Vec<u64>,
    /// By state name: where an error that ended an execution happened (the state that
    /// recorded it, inside any Parallel or Map it came up through).
    pub endings: HashMap<String, Endings>,
    /// By Choice state name: transitions whose rule could not be told (see the module docs).
    pub unattributed: HashMap<String, u64>,
    /// How many executions were read.
    pub executions: u64,
}

/// A failure as Retry and Catch see it.
#[derive(Debug, Clone)]
struct Failure {
    error: String,
    heartbeat: bool,
}

/// Counts what histories took in one machine.
#[derive(Debug)]
pub struct Collector<'c> {
    coverable: &'c Coverable,
    /// What was taken so far.
    pub hits: Hits,
}

impl<'c> Collector<'c> {
    /// A collector with nothing counted.
    pub fn new(coverable: &'c Coverable) -> Self {
        Collector {
            coverable,
            hits: Hits {
                items: vec![0; coverable.items.len()],
                ..Hits::default()
            },
        }
    }

    /// Reads one execution's history. `time_scale` is asked for the execution's
    /// `--time-scale` only when a timeout must be told from a heartbeat timeout.
    pub fn add<'e>(
        &mut self,
        events: impl IntoIterator<Item = EventView<'e>>,
        time_scale: &mut dyn FnMut() -> f64,
    ) {
        self.hits.executions += 1;
        self.read(events, time_scale);
    }

    /// Reads the history of a distributed Map's child execution of an execution already
    /// added: its states are the Map's processor's, and it counts as no execution of its own.
    pub fn add_map_child<'e>(
        &mut self,
        events: impl IntoIterator<Item = EventView<'e>>,
        time_scale: &mut dyn FnMut() -> f64,
    ) {
        self.read(events, time_scale);
    }

    fn read<'e>(
        &mut self,
        events: impl IntoIterator<Item = EventView<'e>>,
        time_scale: &mut dyn FnMut() -> f64,
    ) {
        let events: Vec<EventView<'e>> = events.into_iter().collect();
        let tree = Tree::build(&events);
        for id in 0..tree.visits.len() {
            self.visit(&tree, &events, id, time_scale);
        }
        self.ending(&tree, time_scale);
    }

    fn hit(&mut self, index: usize) {
        self.hits.items[index] += 1;
    }

    /// One visit: the state, its retries and timeouts, and how it left (Next, End, a Choice
    /// rule, a Catch).
    fn visit(
        &mut self,
        tree: &Tree,
        events: &[EventView<'_>],
        id: VisitId,
        time_scale: &mut dyn FnMut() -> f64,
    ) {
        let visit = &tree.visits[id];
        let Some(items) = self.coverable.states.get(&visit.state) else {
            return;
        };
        self.hit(items.state);
        for (k, attempt) in visit.attempts.iter().enumerate() {
            let Some(failure) = attempt_failure(attempt, time_scale) else {
                continue;
            };
            if attempt.failure.as_deref().is_some_and(is_timeout_event) {
                self.timed_out(&visit.state, failure.heartbeat);
            }
            if k + 1 < visit.attempts.len() {
                self.retried(&visit.state, &failure);
            }
        }
        if visit.ending != Ending::Exited {
            return;
        }
        let next = tree.next(id).map(|v| v.state.as_str());
        if let Some(failure) = visit_failure(visit, time_scale) {
            if let Some(next) = next {
                self.caught(&visit.state, &failure, next);
            }
            return;
        }
        let items = &self.coverable.states[&visit.state];
        if !items.rules.is_empty() || items.default.is_some() {
            if let Some(next) = next {
                self.chose(&visit.state, visit.input(events).as_deref(), next);
            }
        } else if let Some(index) = items.transition {
            self.hit(index);
        }
    }

    /// The execution (or Map child) ended by an error no Catch took: where it happened.
    fn ending(&mut self, tree: &Tree, time_scale: &mut dyn FnMut() -> f64) {
        let Some(&last) = tree.top().last() else {
            return;
        };
        let top = &tree.visits[last];
        if top.failure.is_none() || matches!(top.ending, Ending::Exited | Ending::Fail) {
            return;
        }
        let origin = &tree.visits[tree.origin(last)];
        let Some(failure) = visit_failure(origin, time_scale) else {
            return;
        };
        if origin.ending == Ending::Fail {
            return;
        }
        let endings = self.hits.endings.entry(origin.state.clone()).or_default();
        if failure.heartbeat {
            endings.heartbeat_timed_out += 1;
        } else if failure.error == crate::asl::error::names::TIMEOUT {
            endings.timed_out += 1;
        } else {
            endings.failed += 1;
        }
    }

    fn timed_out(&mut self, state: &str, heartbeat: bool) {
        let Some(items) = self.coverable.states.get(state) else {
            return;
        };
        let index = if heartbeat {
            items.heartbeat
        } else {
            items.timeout
        };
        if let Some(index) = index {
            self.hit(index);
        }
    }

    fn retried(&mut self, state: &str, failure: &Failure) {
        let (Some(items), Some(compiled)) = (
            self.coverable.states.get(state),
            self.coverable.state(state),
        ) else {
            return;
        };
        let errors = match &compiled.kind {
            StateKind::Task(t) => &t.errors,
            StateKind::Parallel(p) => &p.errors,
            StateKind::Map(m) => &m.errors,
            _ => return,
        };
        let error = states_error(failure);
        let fired = errors
            .retry
            .iter()
            .position(|r| r.error_equals.iter().any(|e| error.matches(e)));
        if let Some(index) = fired.and_then(|i| items.retriers.get(i)).copied() {
            self.hit(index);
        }
    }

    fn caught(&mut self, state: &str, failure: &Failure, next: &str) {
        let Some(compiled) = self.coverable.state(state) else {
            return;
        };
        let error = states_error(failure);
        let catchers = compiled.catchers();
        let target = |i: usize| {
            matches!(&self.coverable.items[self.coverable.states[state].catchers[i]].kind,
                ItemKind::Catch(_, to) if to == next)
        };
        let by_error = catchers
            .iter()
            .position(|c| c.error_equals.iter().any(|e| error.matches(e)))
            .filter(|i| target(*i));
        // The error alone can mislead (a heartbeat timeout told by timing): the target decides.
        let index = by_error.or_else(|| (0..catchers.len()).find(|i| target(*i)));
        if let Some(i) = index {
            let item = self.coverable.states[state].catchers[i];
            self.hit(item);
        }
    }

    fn chose(&mut self, state: &str, input: Option<&str>, next: &str) {
        let Some(items) = self.coverable.states.get(state) else {
            return;
        };
        let goes_to = |index: usize| match &self.coverable.items[index].kind {
            ItemKind::Rule(_, to) | ItemKind::Default(to) => to == next,
            _ => false,
        };
        let candidates: Vec<usize> = items
            .rules
            .iter()
            .chain(items.default.iter())
            .copied()
            .filter(|i| goes_to(*i))
            .collect();
        let chosen = match candidates.as_slice() {
            [] => return,
            [only] => Some(*only),
            _ => self.evaluate_again(state, input).filter(|i| goes_to(*i)),
        };
        match chosen {
            Some(index) => self.hit(index),
            None => *self.hits.unattributed.entry(state.to_owned()).or_default() += 1,
        }
    }

    /// The item of the rule (or Default) a Choice state takes for its recorded input, when its
    /// rules can be evaluated without variables or the context object.
    fn evaluate_again(&self, state: &str, input: Option<&str>) -> Option<usize> {
        let compiled = self.coverable.state(state)?;
        let StateKind::Choice(choice) = &compiled.kind else {
            return None;
        };
        if compiled.uses_context {
            return None;
        }
        let input: Value = serde_json::from_str(input?).ok()?;
        let no_context = Value::Null;
        let env = Env {
            input: &input,
            context: &no_context,
            variables: &NoVariables,
        };
        let effective = match &choice.io.input_path {
            OptionalPath::Default => input.clone(),
            OptionalPath::Null => Value::Object(Default::default()),
            OptionalPath::Path(p) => p.select(&env)?,
        };
        let env = env.with_input(&effective);
        let items = &self.coverable.states[state];
        for (i, branch) in choice.choices.iter().enumerate() {
            let Condition::JsonPath(rule) = &branch.condition else {
                return None;
            };
            if rule.evaluate(&env).ok()? {
                return items.rules.get(i).copied();
            }
        }
        items.default
    }
}

/// The failure as the engine's error, for `ErrorEquals` matching.
fn states_error(failure: &Failure) -> StatesError {
    StatesError {
        error: Some(failure.error.clone()),
        cause: None,
        heartbeat: failure.heartbeat,
    }
}

/// Whether a failure is a `*TimedOut` event (a declared timeout ran out).
fn is_timeout_event(failure: &crate::engine::visits::Failure) -> bool {
    failure.event_type.ends_with("TimedOut")
}

/// An attempt's failure as Retry and Catch see it.
fn attempt_failure(attempt: &Attempt, time_scale: &mut dyn FnMut() -> f64) -> Option<Failure> {
    let failure = attempt.failure.as_ref()?;
    Some(Failure {
        error: failure.error.clone().unwrap_or_default(),
        heartbeat: is_timeout_event(failure)
            && attempt.heartbeat_ran_out(failure.at_ms, time_scale),
    })
}

/// A visit's failure as Retry and Catch see it: its last attempt's (with its clock), or one
/// recorded outside any attempt (an expression that failed).
fn visit_failure(visit: &Visit, time_scale: &mut dyn FnMut() -> f64) -> Option<Failure> {
    let failure = visit.failure.as_ref()?;
    let attempt = visit
        .attempts
        .last()
        .filter(|a| a.failure.as_ref() == Some(failure));
    match attempt {
        Some(attempt) => attempt_failure(attempt, time_scale),
        None => Some(Failure {
            error: failure.error.clone().unwrap_or_default(),
            heartbeat: false,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coverage::model::ItemKind;

    fn coverable(text: &str) -> Coverable {
        let (machine, diags) = crate::asl::compile_text(text, crate::asl::MachineType::Standard);
        let machine = machine.unwrap_or_else(|| panic!("{diags:?}"));
        Coverable::new(machine, &serde_json::from_str(text).unwrap())
    }

    /// `(type, timestamp, details)` in one lane, keys in order.
    fn history(events: &[(&str, i64, &str)]) -> Vec<(String, i64, String)> {
        events
            .iter()
            .enumerate()
            .map(|(i, (ty, at, d))| (format!("r:{i}"), *at, format!("{ty}\u{1f}{d}")))
            .collect()
    }

    fn add(collector: &mut Collector<'_>, events: &[(String, i64, String)]) {
        // One lane: each event points at the one before it.
        let views = events.iter().zip(1..).map(|((key, at, text), id)| {
            let (ty, details) = text.split_once('\u{1f}').unwrap();
            EventView {
                id,
                previous_event_id: id - 1,
                event_type: ty,
                timestamp_ms: *at,
                details: Some(details),
                replay_key: Some(key),
            }
        });
        collector.add(views, &mut || 1.0);
    }

    fn hits(c: &Collector<'_>, kind: ItemKind) -> u64 {
        let i = c
            .coverable
            .items
            .iter()
            .position(|i| i.kind == kind)
            .unwrap();
        c.hits.items[i]
    }

    #[test]
    fn a_timeout_before_timeout_seconds_is_the_heartbeats() {
        let cov = coverable(
            r#"{"StartAt":"Work","States":{
              "Work":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","TimeoutSeconds":60,
                "HeartbeatSeconds":5,"Retry":[{"ErrorEquals":["States.HeartbeatTimeout"],"MaxAttempts":1}],
                "Catch":[{"ErrorEquals":["States.Timeout"],"Next":"Done"}],"End":true},
              "Done":{"Type":"Succeed"}}}"#,
        );
        let mut c = Collector::new(&cov);
        let scheduled = r#"{"timeoutInSeconds":60,"heartbeatInSeconds":5}"#;
        add(
            &mut c,
            &history(&[
                ("TaskStateEntered", 0, r#"{"name":"Work"}"#),
                ("TaskScheduled", 0, scheduled),
                ("TaskTimedOut", 5_000, r#"{"error":"States.Timeout"}"#),
                ("TaskScheduled", 6_000, scheduled),
                ("TaskTimedOut", 66_000, r#"{"error":"States.Timeout"}"#),
                ("TaskStateExited", 66_000, r#"{"name":"Work"}"#),
                ("SucceedStateEntered", 66_000, r#"{"name":"Done"}"#),
            ]),
        );
        assert_eq!(hits(&c, ItemKind::HeartbeatTimeout), 1);
        assert_eq!(hits(&c, ItemKind::Timeout), 1);
        assert_eq!(hits(&c, ItemKind::Retry(0)), 1);
        assert_eq!(hits(&c, ItemKind::Catch(0, "Done".into())), 1);
        assert_eq!(hits(&c, ItemKind::End), 0);
    }

    #[test]
    fn rules_sharing_a_target_are_told_apart_or_left_unattributed() {
        let jsonpath = coverable(
            r#"{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[
              {"Variable":"$.a","NumericEquals":1,"Next":"T"},
              {"Variable":"$.a","NumericEquals":2,"Next":"T"}],"Default":"T"},
              "T":{"Type":"Succeed"}}}"#,
        );
        let mut c = Collector::new(&jsonpath);
        for input in [
            r#"{"name":"C","input":"{\"a\":2}"}"#,
            r#"{"name":"C","input":"{\"a\":3}"}"#,
        ] {
            add(
                &mut c,
                &history(&[
                    ("ChoiceStateEntered", 0, input),
                    ("ChoiceStateExited", 0, r#"{"name":"C"}"#),
                    ("SucceedStateEntered", 0, r#"{"name":"T"}"#),
                ]),
            );
        }
        assert_eq!(hits(&c, ItemKind::Rule(0, "T".into())), 0);
        assert_eq!(hits(&c, ItemKind::Rule(1, "T".into())), 1);
        assert_eq!(hits(&c, ItemKind::Default("T".into())), 1);
        let jsonata = coverable(
            r#"{"QueryLanguage":"JSONata","StartAt":"C","States":{"C":{"Type":"Choice","Choices":[
              {"Condition":"{% $states.input.a = 1 %}","Next":"T"},
              {"Condition":"{% $states.input.a = 2 %}","Next":"T"}]},
              "T":{"Type":"Succeed"}}}"#,
        );
        let mut c = Collector::new(&jsonata);
        add(
            &mut c,
            &history(&[
                (
                    "ChoiceStateEntered",
                    0,
                    r#"{"name":"C","input":"{\"a\":2}"}"#,
                ),
                ("ChoiceStateExited", 0, r#"{"name":"C"}"#),
                ("SucceedStateEntered", 0, r#"{"name":"T"}"#),
            ]),
        );
        assert_eq!(c.hits.unattributed.get("C"), Some(&1));
        assert_eq!(hits(&c, ItemKind::Rule(1, "T".into())), 0);
    }
}
