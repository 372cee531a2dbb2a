//! Reads histories and counts what they took: states entered, transitions, Catch and Retry
//! entries, timeouts, and how states ended.
//!
//! Events other than `*StateEntered`/`*StateExited` carry no state name, so each is attributed
//! to the state open in its *lane* (the top level, one Parallel branch, one Map iteration),
//! which the engine writes into every event's replay key, as [`crate::graph::overlay`] does.
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
//!   state entered next;
//! - a timeout that came before the attempt's `TimeoutSeconds` (scaled by the execution's
//!   `--time-scale`) was the heartbeat's.

use super::model::{Coverable, ItemKind};
use crate::asl::eval::{Env, NoVariables};
use crate::asl::model::{Condition, OptionalPath, StateKind};
use crate::asl::StatesError;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;

/// One history event, from the store or from an in-memory run.
#[derive(Debug, Clone, Copy)]
pub struct EventView<'a> {
    /// `type`, e.g. `TaskFailed`.
    pub event_type: &'a str,
    /// `timestamp`, ms since the Unix epoch.
    pub timestamp_ms: i64,
    /// The details object's JSON.
    pub details: Option<&'a str>,
    /// The engine's replay key (`r:4`, `r:3/2:0`), which names the event's lane.
    pub replay_key: Option<&'a str>,
}

impl<'a> From<&'a crate::store::EventRecord> for EventView<'a> {
    fn from(e: &'a crate::store::EventRecord) -> Self {
        EventView {
            event_type: &e.event_type,
            timestamp_ms: e.timestamp_ms,
            details: e.details.as_deref(),
            replay_key: e.replay_key.as_deref(),
        }
    }
}

impl<'a> From<&'a crate::engine::history::HistoryEvent> for EventView<'a> {
    fn from(e: &'a crate::engine::history::HistoryEvent) -> Self {
        EventView {
            event_type: e.event_type.as_str(),
            timestamp_ms: e.timestamp,
            details: e.details.as_deref(),
            replay_key: e.replay_key.as_deref(),
        }
    }
}

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
    /// By state name: visits that ended by an uncaught failure or timeout.
    pub endings: HashMap<String, Endings>,
    /// By Choice state name: transitions whose rule could not be told (see the module docs).
    pub unattributed: HashMap<String, u64>,
    /// How many executions were read.
    pub executions: u64,
}

/// The fields of event details this reader needs; the rest is skipped.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Details {
    name: Option<String>,
    error: Option<String>,
    input: Option<String>,
    timeout_in_seconds: Option<f64>,
    heartbeat_in_seconds: Option<f64>,
}

#[derive(Debug, Clone)]
struct Failure {
    error: String,
    heartbeat: bool,
}

struct Visit {
    state: String,
    /// The recorded input of a Choice state, to evaluate its rules again.
    input: Option<String>,
    attempts: u32,
    attempt_started_ms: i64,
    timeout_s: Option<f64>,
    heartbeat_s: Option<f64>,
    failure: Option<Failure>,
}

/// A state left its lane; the next state entered there says how.
enum Pending {
    Choice {
        state: String,
        input: Option<String>,
    },
    Catch {
        state: String,
        failure: Failure,
    },
}

#[derive(Default)]
struct Lane {
    visit: Option<Visit>,
    pending: Option<Pending>,
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

    /// Reads one execution's history, oldest event first. `time_scale` is asked for the
    /// execution's `--time-scale` only when a timeout must be told from a heartbeat timeout.
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
        let mut lanes: HashMap<&'e str, Lane> = HashMap::new();
        for event in events {
            let lane_name = event
                .replay_key
                .and_then(|k| k.rsplit_once(':'))
                .map_or("r", |(lane, _)| lane);
            let lane = lanes.entry(lane_name).or_default();
            self.event(lane, &event, time_scale);
        }
        for lane in lanes.into_values() {
            if let Some(visit) = lane.visit {
                self.unfinished(visit);
            }
        }
    }

    fn hit(&mut self, index: usize) {
        self.hits.items[index] += 1;
    }

    fn event(
        &mut self,
        lane: &mut Lane,
        event: &EventView<'_>,
        time_scale: &mut dyn FnMut() -> f64,
    ) {
        let ty = event.event_type;
        if ty.starts_with("Execution") || ty.starts_with("MapIteration") {
            return;
        }
        // Only these events' details are read (an Exited event's output can be large).
        let attempt =
            ty.ends_with("Scheduled") || ty == "ParallelStateStarted" || ty == "MapStateStarted";
        let failure = ty.ends_with("Failed") || ty.ends_with("TimedOut");
        let entered = ty.ends_with("StateEntered");
        let details: Details = event
            .details
            .filter(|_| entered || attempt || failure)
            .and_then(|d| serde_json::from_str(d).ok())
            .unwrap_or_default();
        if entered {
            let name = details.name.unwrap_or_default();
            self.entered(lane, name, details.input, ty == "ChoiceStateEntered");
            return;
        }
        if ty.ends_with("StateExited") {
            if let Some(visit) = lane.visit.take() {
                lane.pending = self.exited(visit);
            }
            return;
        }
        if ty.ends_with("StateAborted") {
            lane.visit = None;
            return;
        }
        let Some(visit) = lane.visit.as_mut() else {
            return;
        };
        if attempt {
            visit.attempts += 1;
            visit.attempt_started_ms = event.timestamp_ms;
            visit.timeout_s = details.timeout_in_seconds;
            visit.heartbeat_s = details.heartbeat_in_seconds;
            if let Some(failure) = visit.failure.take() {
                if visit.attempts > 1 {
                    let state = visit.state.clone();
                    self.retried(&state, &failure);
                }
            }
            return;
        }
        if failure {
            let error = details.error.unwrap_or_default();
            let timed_out = ty.ends_with("TimedOut");
            let heartbeat = timed_out && heartbeat_ran_out(visit, event.timestamp_ms, time_scale);
            let state = visit.state.clone();
            visit.failure = Some(Failure { error, heartbeat });
            if timed_out {
                self.timed_out(&state, heartbeat);
            }
        }
    }

    fn entered(&mut self, lane: &mut Lane, name: String, input: Option<String>, choice: bool) {
        // A visit still open when the next state starts left without an Exited event.
        if let Some(open) = lane.visit.take() {
            lane.pending = self.exited(open);
        }
        match lane.pending.take() {
            Some(Pending::Choice { state, input }) => self.chose(&state, input.as_deref(), &name),
            Some(Pending::Catch { state, failure }) => self.caught(&state, &failure, &name),
            None => {}
        }
        let Some(items) = self.coverable.states.get(&name) else {
            return;
        };
        let index = items.state;
        self.hit(index);
        lane.visit = Some(Visit {
            state: name,
            input: if choice { input } else { None },
            attempts: 0,
            attempt_started_ms: 0,
            timeout_s: None,
            heartbeat_s: None,
            failure: None,
        });
    }

    /// A visit ended normally (or through a Catch): counts `Next`/`End`, or leaves the
    /// choice of rule or catcher to the next state entered.
    fn exited(&mut self, visit: Visit) -> Option<Pending> {
        if let Some(failure) = visit.failure {
            return Some(Pending::Catch {
                state: visit.state,
                failure,
            });
        }
        let items = self.coverable.states.get(&visit.state)?;
        if !items.rules.is_empty() || items.default.is_some() {
            return Some(Pending::Choice {
                state: visit.state,
                input: visit.input,
            });
        }
        let transition = items.transition;
        if let Some(index) = transition {
            self.hit(index);
        }
        None
    }

    /// A lane ended with this visit open: an uncaught failure or timeout ended it (or the
    /// execution stopped).
    fn unfinished(&mut self, visit: Visit) {
        let Some(failure) = visit.failure else {
            return;
        };
        let endings = self.hits.endings.entry(visit.state).or_default();
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

/// Whether a timeout of this attempt was its heartbeat's: it declared HeartbeatSeconds, and
/// either no TimeoutSeconds or it came before TimeoutSeconds (scaled) had passed.
fn heartbeat_ran_out(visit: &Visit, at_ms: i64, time_scale: &mut dyn FnMut() -> f64) -> bool {
    if visit.heartbeat_s.is_none() {
        return false;
    }
    let Some(timeout) = visit.timeout_s else {
        return true;
    };
    let elapsed = (at_ms - visit.attempt_started_ms) as f64;
    elapsed < timeout * 1000.0 * time_scale()
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
        let views = events.iter().map(|(key, at, text)| {
            let (ty, details) = text.split_once('\u{1f}').unwrap();
            EventView {
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
