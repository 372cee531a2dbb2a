//! Mocked Task results: AWS Step Functions Local's `MockConfigFile` format, read unchanged.
//!
//! ```json
//! { "StateMachines": { "<machine>": { "TestCases": { "<case>": { "<Task state>": "<response>" } } } },
//!   "MockedResponses": { "<response>": {
//!       "0":   { "Return": {"the": "task's raw result"} },
//!       "1-2": { "Throw": { "Error": "Lambda.TimeoutException", "Cause": "timed out" } },
//!       "3":   { "Return": {"late": true}, "Delay": 30 },
//!       "4":   { "NeverAnswers": true } } } }
//! ```
//!
//! Invocation keys count the invocations of one state in one execution from 0, retries and Map
//! iterations included; a key is a number or an inclusive range. Each entry holds exactly one of
//! `Return` (the task's raw result, before ResultSelector/ResultPath/OutputPath), `Throw` (the
//! attempt fails with that `Error` and `Cause`; Retry and Catch apply) or — an sfn-local
//! extension — `NeverAnswers: true` (the worker is dead: the attempt waits until its
//! `TimeoutSeconds` or `HeartbeatSeconds` runs out, or forever). `Delay` (seconds, an
//! sfn-local extension, scaled by `--time-scale`) makes the answer arrive that much later, so a
//! delay at or beyond a deadline times the attempt out exactly as a slow worker would (mocks
//! send no heartbeats).

use crate::asl::error::{names, StatesError};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// What a mocked invocation does.
#[derive(Debug, Clone, PartialEq)]
pub enum MockOutcome {
    /// The task's raw result.
    Return(Value),
    /// The attempt fails with this error.
    Throw(StatesError),
    /// The worker never answers: the attempt's deadlines decide.
    NeverAnswers,
}

/// One mocked invocation: the outcome and how long it takes to arrive.
#[derive(Debug, Clone, PartialEq)]
pub struct MockAnswer {
    /// What happens.
    pub outcome: MockOutcome,
    /// Seconds before the answer arrives (declared; `--time-scale` applies).
    pub delay_seconds: f64,
}

/// A named mocked response: answers per invocation number.
#[derive(Debug, Clone, PartialEq)]
pub struct MockedResponse {
    /// Its name in `MockedResponses` (or a made-up one for inline mocks).
    pub name: String,
    /// Inclusive invocation ranges, sorted, not overlapping.
    ranges: Vec<(u64, u64, MockAnswer)>,
}

impl MockedResponse {
    /// Parses `{"0": {...}, "1-2": {...}}`.
    pub fn from_value(name: &str, v: &Value) -> Result<MockedResponse, String> {
        let obj = v.as_object().ok_or_else(|| {
            format!("mocked response '{name}' must be an object of invocation numbers")
        })?;
        let mut ranges = Vec::new();
        for (key, entry) in obj {
            let (from, to) = parse_key(key)
                .ok_or_else(|| format!("mocked response '{name}': '{key}' is not an invocation number or range like \"0\" or \"1-3\""))?;
            let answer = parse_answer(entry)
                .map_err(|e| format!("mocked response '{name}', invocation \"{key}\": {e}"))?;
            ranges.push((from, to, answer));
        }
        ranges.sort_by_key(|r| r.0);
        for w in ranges.windows(2) {
            if w[1].0 <= w[0].1 {
                return Err(format!(
                    "mocked response '{name}': invocation {} is covered twice",
                    w[1].0
                ));
            }
        }
        if ranges.is_empty() {
            return Err(format!("mocked response '{name}' has no invocations"));
        }
        Ok(MockedResponse {
            name: name.to_owned(),
            ranges,
        })
    }

    /// The answer for the `n`th invocation (from 0).
    pub fn answer(&self, n: u64) -> Option<&MockAnswer> {
        self.ranges
            .iter()
            .find(|(from, to, _)| *from <= n && n <= *to)
            .map(|r| &r.2)
    }

    /// The invocations covered, as the file writes them (`0, 1-2`).
    fn covered(&self) -> String {
        self.ranges
            .iter()
            .map(|(a, b, _)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn parse_key(key: &str) -> Option<(u64, u64)> {
    let key = key.trim();
    let (a, b) = match key.split_once('-') {
        Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
        None => {
            let n = key.parse().ok()?;
            (n, n)
        }
    };
    (a <= b).then_some((a, b))
}

fn parse_answer(v: &Value) -> Result<MockAnswer, String> {
    let obj = v
        .as_object()
        .ok_or("an entry must be an object with \"Return\" or \"Throw\"")?;
    crate::suggest::check_keys(
        obj,
        &["Return", "Throw", "Delay", "NeverAnswers"],
        "the entry",
    )?;
    let never = match obj.get("NeverAnswers") {
        None | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(_) => return Err("\"NeverAnswers\" must be true or false".into()),
    };
    let outcome = match (obj.get("Return"), obj.get("Throw"), never) {
        (Some(r), None, false) => MockOutcome::Return(r.clone()),
        (None, Some(t), false) => {
            let t = t
                .as_object()
                .ok_or("\"Throw\" must be an object with \"Error\" and \"Cause\"")?;
            crate::suggest::check_keys(t, &["Error", "Cause"], "\"Throw\"")?;
            let text = |k: &str| -> Result<Option<String>, String> {
                match t.get(k) {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::String(s)) => Ok(Some(s.clone())),
                    Some(_) => Err(format!("\"Throw\".\"{k}\" must be a string")),
                }
            };
            // SendTaskFailure may leave the error out; so may a mock.
            MockOutcome::Throw(StatesError {
                error: text("Error")?,
                cause: text("Cause")?,
                heartbeat: false,
            })
        }
        (None, None, true) => MockOutcome::NeverAnswers,
        (None, None, false) => {
            return Err("an entry needs \"Return\", \"Throw\" or \"NeverAnswers\"".into())
        }
        _ => {
            return Err(
                "an entry holds exactly one of \"Return\", \"Throw\" and \"NeverAnswers\"".into(),
            )
        }
    };
    let delay_seconds = match obj.get("Delay") {
        None => 0.0,
        Some(d) => match d.as_f64() {
            Some(s) if s.is_finite() && s >= 0.0 => s,
            _ => return Err("\"Delay\" must be a non-negative number of seconds".into()),
        },
    };
    Ok(MockAnswer {
        outcome,
        delay_seconds,
    })
}

/// A parsed MockConfigFile.
#[derive(Debug, Clone, Default)]
pub struct MockConfig {
    /// Machine name → test case name → state name → mocked response name.
    pub machines: BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>,
    /// Mocked responses by name.
    pub responses: BTreeMap<String, Arc<MockedResponse>>,
}

impl MockConfig {
    /// Parses the file's text.
    pub fn parse(text: &str) -> Result<MockConfig, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        MockConfig::from_value(&v)
    }

    /// Parses the file's JSON.
    pub fn from_value(v: &Value) -> Result<MockConfig, String> {
        let empty = Map::new();
        let top = v.as_object().ok_or("a mock config must be a JSON object")?;
        crate::suggest::check_keys(
            top,
            &["StateMachines", "MockedResponses"],
            "the mock config",
        )?;
        let mut config = MockConfig::default();
        let responses = match top.get("MockedResponses") {
            None => &empty,
            Some(r) => r
                .as_object()
                .ok_or("\"MockedResponses\" must be an object")?,
        };
        for (name, r) in responses {
            config
                .responses
                .insert(name.clone(), Arc::new(MockedResponse::from_value(name, r)?));
        }
        let machines = match top.get("StateMachines") {
            None => &empty,
            Some(m) => m.as_object().ok_or("\"StateMachines\" must be an object")?,
        };
        for (machine, m) in machines {
            if let Some(m) = m.as_object() {
                crate::suggest::check_keys(
                    m,
                    &["TestCases"],
                    &format!("state machine '{machine}'"),
                )?;
            }
            let cases = m
                .get("TestCases")
                .and_then(Value::as_object)
                .ok_or_else(|| format!("state machine '{machine}' needs a \"TestCases\" object"))?;
            let mut parsed = BTreeMap::new();
            for (case, states) in cases {
                let states = states.as_object().ok_or_else(|| {
                    format!("test case '{machine}#{case}' must map state names to mocked response names")
                })?;
                let mut map = BTreeMap::new();
                for (state, response) in states {
                    let response = response.as_str().ok_or_else(|| {
                        format!("test case '{machine}#{case}', state '{state}': the value must be the name of a mocked response")
                    })?;
                    if !config.responses.contains_key(response) {
                        let hint = crate::suggest::did_you_mean(
                            response,
                            config.responses.keys().map(String::as_str),
                        );
                        return Err(format!(
                            "test case '{machine}#{case}', state '{state}': no mocked response named '{response}' in \"MockedResponses\"{hint}"
                        ));
                    }
                    map.insert(state.clone(), response.to_owned());
                }
                parsed.insert(case.clone(), map);
            }
            config.machines.insert(machine.clone(), parsed);
        }
        Ok(config)
    }

    /// The mocks of one test case of one state machine.
    pub fn test_case(&self, machine: &str, case: &str) -> Result<Mocks, String> {
        let cases = self.machines.get(machine).ok_or_else(|| {
            format!(
                "the mock config has no state machine named '{machine}'{} (it has: {})",
                crate::suggest::did_you_mean(machine, self.machines.keys().map(String::as_str)),
                list(self.machines.keys())
            )
        })?;
        let states = cases.get(case).ok_or_else(|| {
            format!(
                "state machine '{machine}' has no test case named '{case}' in the mock config{} (it has: {})",
                crate::suggest::did_you_mean(case, cases.keys().map(String::as_str)),
                list(cases.keys())
            )
        })?;
        let mut mocks = Mocks::default();
        for (state, response) in states {
            if let Some(r) = self.responses.get(response) {
                mocks.states.insert(state.clone(), r.clone());
            }
        }
        Ok(mocks)
    }

    /// Mocks given inline: state name → a response name from this config, or a response
    /// object (`{"0": {"Return": ...}}`) written in place.
    pub fn inline(&self, states: &Value) -> Result<Mocks, String> {
        let states = states
            .as_object()
            .ok_or("\"mocks\" must map state names to mocked responses")?;
        let mut mocks = Mocks::default();
        for (state, r) in states {
            let response =
                match r {
                    Value::String(name) => self.responses.get(name).cloned().ok_or_else(|| {
                        format!("state '{state}': no mocked response named '{name}'")
                    })?,
                    other => Arc::new(MockedResponse::from_value(state, other)?),
                };
            mocks.states.insert(state.clone(), response);
        }
        Ok(mocks)
    }
}

/// Splits `NAME#TestCase` (Step Functions Local's way of choosing a test case on the state
/// machine ARN) into the name and the case. A state machine ARN gives its name part.
pub fn split_test_case(text: &str) -> (&str, Option<&str>) {
    let (name, case) = match text.rsplit_once('#') {
        Some((n, c)) if !c.is_empty() => (n, Some(c)),
        _ => (text, None),
    };
    let name = match name.split_once(":stateMachine:") {
        Some((_, n)) if name.starts_with("arn:") => n,
        _ => name,
    };
    (name, case)
}

fn list<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = names.map(String::as_str).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// The mocks of one execution: which states are mocked, and how often each was invoked.
/// Clones share the counters (every attempt and Map iteration of a state counts once).
#[derive(Debug, Clone, Default)]
pub struct Mocks {
    states: HashMap<String, Arc<MockedResponse>>,
    counts: Arc<Mutex<HashMap<String, u64>>>,
}

impl Mocks {
    /// These mocks with `other`'s states added (`other` wins for a state both mock). The
    /// counters start afresh.
    pub fn merged(self, other: Mocks) -> Mocks {
        let mut states = self.states;
        states.extend(other.states);
        Mocks {
            states,
            counts: Arc::default(),
        }
    }

    /// Whether nothing is mocked.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// The mocked states' names, sorted.
    pub fn states(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.states.keys().map(String::as_str).collect();
        v.sort();
        v
    }

    /// Checks that every mocked state is a Task state of `machine`.
    pub fn check_against(&self, machine: &crate::asl::StateMachine) -> Result<(), String> {
        let states = machine.all_states();
        for name in self.states() {
            match states.iter().find(|s| s.name == name) {
                Some(s) if s.type_name() == "Task" => {}
                Some(s) => {
                    return Err(format!(
                        "the mocks name state '{name}', which is a {} state; only Task states can be mocked",
                        s.type_name()
                    ))
                }
                None => {
                    return Err(format!(
                        "the mocks name state '{name}', which the state machine does not have{}",
                        crate::suggest::did_you_mean(name, states.iter().map(|s| s.name.as_str()))
                    ))
                }
            }
        }
        Ok(())
    }

    /// Whether `state` is mocked.
    pub fn is_mocked(&self, state: &str) -> bool {
        self.states.contains_key(state)
    }

    /// The answer to the next invocation of `state`; `None` when the state is not mocked. Running
    /// out of answers is a `States.Runtime` error naming the state and the count.
    pub fn next(&self, state: &str) -> Option<Result<MockAnswer, StatesError>> {
        let response = self.states.get(state)?;
        let n = {
            let mut counts = match self.counts.lock() {
                Ok(c) => c,
                Err(poisoned) => poisoned.into_inner(),
            };
            let c = counts.entry(state.to_owned()).or_insert(0);
            let n = *c;
            *c += 1;
            n
        };
        Some(match response.answer(n) {
            Some(a) => Ok(a.clone()),
            None => Err(StatesError::new(
                names::RUNTIME,
                format!(
                    "mocked response '{}' for state '{state}' has no answer for invocation {n} (this is invocation number {} of the state, retries included; the response covers invocations {})",
                    response.name,
                    n + 1,
                    response.covered()
                ),
            )),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config() -> MockConfig {
        MockConfig::from_value(&json!({
            "StateMachines": {"M": {"TestCases": {"Happy": {"A": "R"}}}},
            "MockedResponses": {"R": {
                "0": {"Return": {"x": 1}},
                "1-2": {"Throw": {"Error": "E", "Cause": "c"}},
                "3": {"NeverAnswers": true, "Delay": 2}
            }}
        }))
        .unwrap()
    }

    #[test]
    fn invocations_take_their_answers_in_order() {
        let mocks = config().test_case("M", "Happy").unwrap();
        assert!(mocks.next("B").is_none());
        let a = mocks.next("A").unwrap().unwrap();
        assert_eq!(a.outcome, MockOutcome::Return(json!({"x": 1})));
        for _ in 0..2 {
            let a = mocks.next("A").unwrap().unwrap();
            assert!(matches!(a.outcome, MockOutcome::Throw(ref e) if e.name() == "E"));
        }
        let a = mocks.next("A").unwrap().unwrap();
        assert_eq!(a.outcome, MockOutcome::NeverAnswers);
        assert_eq!(a.delay_seconds, 2.0);
        let e = mocks.next("A").unwrap().unwrap_err();
        assert_eq!(e.name(), "States.Runtime");
        let cause = e.cause.unwrap_or_default();
        assert!(
            cause.contains("'A'") && cause.contains("invocation 4"),
            "{cause}"
        );
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let bad = |v: Value| MockConfig::from_value(&v).unwrap_err();
        assert!(bad(json!({"MockedResponses": {"R": {"x": {"Return": 1}}}})).contains("'x'"));
        assert!(bad(
            json!({"MockedResponses": {"R": {"0": {"Return": 1, "Throw": {"Error": "E"}}}}})
        )
        .contains("exactly one"));
        assert!(
            bad(json!({"MockedResponses": {"R": {"0-2": {"Return": 1}, "2": {"Return": 1}}}}))
                .contains("twice")
        );
        assert!(bad(json!({"MockedResponses": {"R": {"0": {"Retrun": 1}}}})).contains("Retrun"));
        assert!(
            bad(json!({"StateMachines": {"M": {"TestCases": {"C": {"A": "Nope"}}}}}))
                .contains("Nope")
        );
        assert!(bad(json!([])).contains("object"));
        let c = config();
        assert!(c.test_case("X", "Happy").unwrap_err().contains("M"));
        assert!(c.test_case("M", "Sad").unwrap_err().contains("Happy"));
    }

    #[test]
    fn test_cases_ride_on_names_and_arns() {
        assert_eq!(split_test_case("M#Happy"), ("M", Some("Happy")));
        assert_eq!(split_test_case("M"), ("M", None));
        assert_eq!(
            split_test_case("arn:aws:states:us-east-1:123456789012:stateMachine:M#Happy"),
            ("M", Some("Happy"))
        );
    }

    #[test]
    fn inline_mocks_name_or_write_responses() {
        let c = config();
        let m = c
            .inline(&json!({"A": "R", "B": {"0": {"Return": 2}}}))
            .unwrap();
        assert!(m.is_mocked("A") && m.is_mocked("B"));
        assert!(c.inline(&json!({"A": "Missing"})).is_err());
    }
}
