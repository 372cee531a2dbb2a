//! The reports' oracle: proptest generates machines (Parallel and Map nested three deep,
//! Choice, Retry and Catch at every level, mocked Tasks that fail or succeed), runs each on the
//! engine, and checks coverage, "why" and the graph overlay against an independent
//! recomputation from the generated outcomes, with no history involved.
//!
//! The machines run in process (the engine's `run_in_memory`, as `sfn-local test` runs its
//! cases): thousands of executions through the binary would not fit in CI's time. The binary's
//! own plumbing of the same reports is tested in tests/coverage.rs.
//!
//! Outcomes are made deterministic by construction: a Parallel's branches but the last never
//! fail, a Map whose processor can fail gets one item, and a failing Task answers after a
//! (virtual) second while everything else takes no time, so the other branches have ended
//! when a last branch fails its Parallel (branches run side by side, as on AWS), and the
//! branches and iterations that run do not depend on scheduling. A state's name says what it is: `T`
//! Tasks, `P` Parallels, `M` Maps, `C` Choices with `R` (rule) and `A` (Default) targets, `H`
//! Catch handlers, `S` Passes.

mod common;

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use sfn_local::coverage::model::ItemKind;
use sfn_local::coverage::{Collector, Coverable};
use sfn_local::engine::context::ExecutionInfo;
use sfn_local::engine::history::HistoryEvent;
use sfn_local::engine::{run_in_memory, EngineOptions, Status};
use sfn_local::graph::overlay::{Overlay, StateStatus};
use sfn_local::store::EventRecord;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;

/// The two error names Tasks fail with; a Catch or Retry names one, or (2) `States.ALL`.
const ERRORS: [&str; 3] = ["E0", "E1", "States.ALL"];

/// A Retry (error index, MaxAttempts) or Catch (error index) of a state.
#[derive(Debug, Clone)]
struct Handling {
    retry: Option<(usize, u32)>,
    catch: Option<usize>,
}

#[derive(Debug, Clone)]
enum Node {
    Pass,
    /// A Task that fails with `ERRORS[i]` on every attempt, or always succeeds.
    Task(Option<usize>, Handling),
    /// A Choice whose rule matches (`true`) or whose Default is taken.
    Choice(bool),
    Parallel(Vec<Vec<Node>>, Handling),
    /// A Map over this many items.
    Map(Vec<Node>, usize, Handling),
}

fn handling() -> impl Strategy<Value = Handling> {
    let retry = prop::option::of((0..3usize, 1..3u32));
    let catch = prop::option::of(0..3usize);
    (retry, catch).prop_map(|(retry, catch)| Handling { retry, catch })
}

fn node() -> impl Strategy<Value = Node> {
    let leaf = prop_oneof![
        Just(Node::Pass),
        (prop::option::of(0..2usize), handling()).prop_map(|(f, h)| Node::Task(f, h)),
        any::<bool>().prop_map(Node::Choice),
    ];
    // Three levels of Parallel and Map inside one another.
    leaf.prop_recursive(3, 40, 3, |inner| {
        let block = prop::collection::vec(inner, 1..3);
        prop_oneof![
            (prop::collection::vec(block.clone(), 1..3), handling())
                .prop_map(|(b, h)| Node::Parallel(b, h)),
            (block, 1..4usize, handling()).prop_map(|(b, n, h)| Node::Map(b, n, h)),
        ]
    })
}

/// Makes the outcome independent of scheduling (see the module docs).
fn settle(block: &mut [Node], may_fail: bool) {
    for node in block {
        match node {
            Node::Task(fails, _) if !may_fail => *fails = None,
            Node::Parallel(branches, _) => {
                let last = branches.len() - 1;
                for (i, b) in branches.iter_mut().enumerate() {
                    settle(b, may_fail && i == last);
                }
            }
            Node::Map(body, items, _) => {
                settle(body, may_fail);
                if can_fail(body) {
                    *items = 1;
                }
            }
            _ => {}
        }
    }
}

fn can_fail(block: &[Node]) -> bool {
    block.iter().any(|n| match n {
        Node::Task(fails, _) => fails.is_some(),
        Node::Parallel(branches, _) => branches.iter().any(|b| can_fail(b)),
        Node::Map(body, _, _) => can_fail(body),
        _ => false,
    })
}

/// Names the nodes in order and writes the definition and the execution's input.
struct Writer {
    count: usize,
    input: Map<String, Value>,
    mocks: Map<String, Value>,
}

impl Writer {
    fn name(&mut self, prefix: &str) -> String {
        self.count += 1;
        format!("{prefix}{}", self.count)
    }

    /// A block as `{"StartAt", "States"}`, each node's names returned in order.
    fn block(&mut self, block: &[Node], names: &mut Vec<String>) -> Value {
        let mut states = Map::new();
        let own: Vec<String> = block
            .iter()
            .map(|n| {
                let prefix = match n {
                    Node::Pass => "S",
                    Node::Task(..) => "T",
                    Node::Choice(_) => "C",
                    Node::Parallel(..) => "P",
                    Node::Map(..) => "M",
                };
                self.name(prefix)
            })
            .collect();
        names.extend(own.iter().cloned());
        for (i, node) in block.iter().enumerate() {
            let next = own.get(i + 1).cloned();
            self.state(&own[i], node, next, &mut states, names);
        }
        json!({"StartAt": own[0], "States": states})
    }

    fn state(
        &mut self,
        name: &str,
        node: &Node,
        next: Option<String>,
        states: &mut Map<String, Value>,
        names: &mut Vec<String>,
    ) {
        let mut state = match node {
            Node::Pass => json!({"Type": "Pass"}),
            Node::Task(fails, _) => {
                let answer = match fails {
                    Some(e) => {
                        json!({"Throw": {"Error": ERRORS[*e], "Cause": "mocked"}, "Delay": 1})
                    }
                    None => json!({"Return": {"StatusCode": 200, "Payload": {}}}),
                };
                self.mocks
                    .insert(name.to_owned(), json!({"0-9999": answer}));
                json!({"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                       "Parameters": {"FunctionName": "f"}})
            }
            Node::Choice(rule) => {
                let (r, a) = (format!("R{name}"), format!("A{name}"));
                self.input.insert(name.to_owned(), json!(rule));
                let variable = format!("$$.Execution.Input.{name}");
                states.insert(a.clone(), json!({"Type": "Pass", "End": true}));
                let after = transition(next);
                let mut rule_target = json!({"Type": "Pass"});
                merge(&mut rule_target, after);
                states.insert(r.clone(), rule_target);
                let choice = json!({"Type": "Choice", "Default": a,
                    "Choices": [{"Variable": variable, "BooleanEquals": true, "Next": r}]});
                states.insert(name.to_owned(), choice);
                return;
            }
            Node::Parallel(branches, _) => {
                let branches: Vec<Value> = branches.iter().map(|b| self.block(b, names)).collect();
                json!({"Type": "Parallel", "Branches": branches})
            }
            Node::Map(body, items, _) => {
                self.input.insert(name.to_owned(), json!(vec![0; *items]));
                let processor = self.block(body, names);
                json!({"Type": "Map", "ItemsPath": format!("$$.Execution.Input.{name}"),
                       "ItemProcessor": processor})
            }
        };
        merge(&mut state, transition(next));
        if let Node::Task(_, h) | Node::Parallel(_, h) | Node::Map(_, _, h) = node {
            self.handling(name, h, &mut state, states);
        }
        states.insert(name.to_owned(), state);
    }

    fn handling(
        &mut self,
        name: &str,
        h: &Handling,
        state: &mut Value,
        states: &mut Map<String, Value>,
    ) {
        if let Some((e, attempts)) = h.retry {
            state["Retry"] = json!([{"ErrorEquals": [ERRORS[e]], "MaxAttempts": attempts,
                                     "IntervalSeconds": 1}]);
        }
        if let Some(e) = h.catch {
            let handler = format!("H{name}");
            state["Catch"] = json!([{"ErrorEquals": [ERRORS[e]], "Next": handler}]);
            states.insert(handler, json!({"Type": "Pass", "End": true}));
        }
    }
}

fn transition(next: Option<String>) -> Value {
    match next {
        Some(n) => json!({"Next": n}),
        None => json!({"End": true}),
    }
}

fn merge(into: &mut Value, from: Value) {
    if let (Value::Object(a), Value::Object(b)) = (into, from) {
        a.extend(b);
    }
}

/// What the generated outcomes say the reports must show.
#[derive(Debug, Default)]
struct Expected {
    /// Per (state, item kind), how often it was taken.
    hits: HashMap<(String, ItemKind), u64>,
    /// Per state: visits, retries, and how its visits ended.
    visits: BTreeMap<String, (u64, u64, Vec<Ending>)>,
    /// The last failure a Catch took: (where it happened, error, where the Catch went).
    last_caught: Option<(String, String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Ending {
    Succeeded,
    Caught,
    Failed,
}

/// A failure on its way up: the error, and the state where it happened.
#[derive(Debug, Clone)]
struct Failure {
    error: usize,
    origin: String,
}

impl Expected {
    fn hit(&mut self, state: &str, kind: ItemKind) {
        *self.hits.entry((state.to_owned(), kind)).or_default() += 1;
    }

    fn visit(&mut self, state: &str, retries: u64, ending: Ending) {
        let v = self.visits.entry(state.to_owned()).or_default();
        v.0 += 1;
        v.1 += retries;
        v.2.push(ending);
        self.hit(state, ItemKind::State);
    }

    /// Runs a block (with the names the writer gave its nodes, in the same order).
    fn block(
        &mut self,
        block: &[Node],
        names: &mut std::slice::Iter<'_, String>,
    ) -> Result<(), Failure> {
        let own: Vec<String> = names.by_ref().take(block.len()).cloned().collect();
        let mut done = false;
        for (i, node) in block.iter().enumerate() {
            // The names of nested blocks follow in the writer's order, whether they run or not.
            let inner: Vec<String> = names.by_ref().take(nested_count(node)).cloned().collect();
            if done {
                continue;
            }
            let transition = match own.get(i + 1) {
                Some(next) => ItemKind::Next(next.clone()),
                None => ItemKind::End,
            };
            match self.node(node, &own[i], &inner, transition) {
                Ok(()) => {}
                // A Catch's handler or a Choice's Default ended the block.
                Err(Stop::Done) => done = true,
                Err(Stop::Failed(f)) => {
                    // Consume the rest's names, then fail.
                    for later in &block[i + 1..] {
                        names.by_ref().take(nested_count(later)).for_each(drop);
                    }
                    return Err(f);
                }
            }
        }
        Ok(())
    }
}

/// How a node left its block.
enum Stop {
    /// The block ends here well (a Catch's handler or a Choice's Default ended it).
    Done,
    Failed(Failure),
}

fn nested_count(node: &Node) -> usize {
    match node {
        Node::Parallel(branches, _) => branches.iter().map(|b| count(b)).sum(),
        Node::Map(body, _, _) => count(body),
        _ => 0,
    }
}

fn count(block: &[Node]) -> usize {
    block.len() + block.iter().map(nested_count).sum::<usize>()
}

impl Expected {
    fn node(
        &mut self,
        node: &Node,
        name: &str,
        inner: &[String],
        transition: ItemKind,
    ) -> Result<(), Stop> {
        let (outcome, retries, h) = match node {
            Node::Pass => {
                self.visit(name, 0, Ending::Succeeded);
                self.hit(name, transition);
                return Ok(());
            }
            Node::Choice(rule) => return self.choice(name, *rule, transition),
            Node::Task(fails, h) => {
                let fails = fails.map(|e| Failure {
                    error: e,
                    origin: name.to_owned(),
                });
                let (outcome, retries) =
                    self.attempts(name, h, |_| fails.clone().map_or(Ok(()), Err));
                (outcome, retries, h)
            }
            Node::Parallel(branches, h) => {
                let (outcome, retries) = self.attempts(name, h, |me| {
                    let mut names = inner.iter();
                    branches.iter().try_for_each(|b| me.block(b, &mut names))
                });
                (outcome, retries, h)
            }
            Node::Map(body, items, h) => {
                let (outcome, retries) = self.attempts(name, h, |me| {
                    (0..*items).try_for_each(|_| me.block(body, &mut inner.iter()))
                });
                (outcome, retries, h)
            }
        };
        match outcome {
            Ok(()) => {
                self.visit(name, retries, Ending::Succeeded);
                self.hit(name, transition);
                Ok(())
            }
            Err(f) => match h.catch.filter(|&c| c == 2 || c == f.error) {
                Some(_) => {
                    self.visit(name, retries, Ending::Caught);
                    let handler = format!("H{name}");
                    self.hit(name, ItemKind::Catch(0, handler.clone()));
                    self.last_caught =
                        Some((f.origin, ERRORS[f.error].to_owned(), handler.clone()));
                    self.visit(&handler, 0, Ending::Succeeded);
                    self.hit(&handler, ItemKind::End);
                    Err(Stop::Done)
                }
                None => {
                    self.visit(name, retries, Ending::Failed);
                    Err(Stop::Failed(f))
                }
            },
        }
    }

    /// Runs `attempt` under the state's Retry; returns the last outcome and the retries.
    fn attempts(
        &mut self,
        name: &str,
        h: &Handling,
        mut attempt: impl FnMut(&mut Self) -> Result<(), Failure>,
    ) -> (Result<(), Failure>, u64) {
        let mut retries = 0;
        loop {
            match attempt(self) {
                Err(f) => match h.retry {
                    Some((e, max)) if (e == 2 || e == f.error) && retries < u64::from(max) => {
                        retries += 1;
                        self.hit(name, ItemKind::Retry(0));
                    }
                    _ => return (Err(f), retries),
                },
                Ok(()) => return (Ok(()), retries),
            }
        }
    }

    fn choice(&mut self, name: &str, rule: bool, transition: ItemKind) -> Result<(), Stop> {
        self.visit(name, 0, Ending::Succeeded);
        let (r, a) = (format!("R{name}"), format!("A{name}"));
        if rule {
            self.hit(name, ItemKind::Rule(0, r.clone()));
            self.visit(&r, 0, Ending::Succeeded);
            self.hit(&r, transition);
            Ok(())
        } else {
            self.hit(name, ItemKind::Default(a.clone()));
            self.visit(&a, 0, Ending::Succeeded);
            self.hit(&a, ItemKind::End);
            Err(Stop::Done)
        }
    }
}

fn record(e: &HistoryEvent) -> EventRecord {
    EventRecord {
        id: e.id,
        previous_event_id: e.previous_event_id,
        timestamp_ms: e.timestamp,
        event_type: e.event_type.as_str().to_owned(),
        details: e.details.clone(),
        replay_key: e.replay_key.as_ref().map(|k| k.to_string()),
    }
}

/// A generated machine, written, recomputed and run.
struct Case {
    text: String,
    definition: Value,
    machine: sfn_local::asl::StateMachine,
    names: Vec<String>,
    expected: Expected,
    outcome: Result<(), Failure>,
    events: Vec<HistoryEvent>,
    status: Status,
}

/// Writes the machine, recomputes its outcomes, and runs it with its Tasks mocked.
fn run_case(mut root: Vec<Node>) -> Case {
    settle(&mut root, true);
    let mut writer = Writer {
        count: 0,
        input: Map::new(),
        mocks: Map::new(),
    };
    let mut names = Vec::new();
    let definition = writer.block(&root, &mut names);
    let mut expected = Expected::default();
    let outcome = expected.block(&root, &mut names.iter());
    let text = definition.to_string();
    let (machine, diags) =
        sfn_local::asl::compile_text(&text, sfn_local::asl::MachineType::Standard);
    let machine = machine.unwrap_or_else(|| panic!("{text}\n{diags:?}"));
    let mocks = sfn_local::tasks::mock::MockConfig::default()
        .inline(&Value::Object(writer.mocks))
        .unwrap();
    let tasks = sfn_local::tasks::LocalTasks {
        mocks,
        mocks_only: true,
        ..Default::default()
    };
    let info = ExecutionInfo::new("us-east-1", "123456789012", "Oracle", "run", None, 0);
    let clock = Arc::new(common::conformance::VirtualClock::new(0));
    let (ran, events) = common::conformance::drive(
        run_in_memory(
            Arc::new(machine.clone()),
            info,
            Value::Object(writer.input),
            clock.clone(),
            Rc::new(tasks),
            EngineOptions::default(),
        ),
        &clock,
        common::conformance::VIRTUAL_HORIZON_MS,
    )
    .expect("the execution ends");
    Case {
        text,
        definition,
        machine,
        names,
        expected,
        outcome,
        events,
        status: ran.status,
    }
}

/// Coverage: every item's hits, and where the error that ended the execution happened.
fn check_coverage(case: &Case) -> Result<(), TestCaseError> {
    let coverable = Coverable::new(case.machine.clone(), &case.definition);
    let mut collector = Collector::new(&coverable);
    collector.add(case.events.iter().map(Into::into), &mut || 1.0);
    for (i, item) in coverable.items.iter().enumerate() {
        let key = (item.state.clone(), item.kind.clone());
        let want = case.expected.hits.get(&key).copied().unwrap_or(0);
        let why = format!("{} of {}\n{}", item.description, item.state, case.text);
        prop_assert_eq!(collector.hits.items[i], want, "{}", why);
    }
    let endings: Vec<(String, u64)> = (collector.hits.endings.iter())
        .map(|(s, e)| (s.clone(), e.failed))
        .collect();
    let want: Vec<(String, u64)> = (case.outcome.as_ref().err())
        .map(|f| (f.origin.clone(), 1))
        .into_iter()
        .collect();
    prop_assert_eq!(endings, want, "{}", case.text);
    Ok(())
}

/// "why": the failure that ended the execution, else the last one a Catch took.
fn check_why(case: &Case, records: &[EventRecord]) -> Result<(), TestCaseError> {
    let why = sfn_local::engine::diagnosis::root_failure(records, 1.0)
        .map(|f| (f.state, f.error.unwrap_or_default(), f.caught_to));
    let want = match &case.outcome {
        Err(f) => Some((f.origin.clone(), ERRORS[f.error].to_owned(), None)),
        Ok(()) => (case.expected.last_caught.clone()).map(|(s, e, to)| (s, e, Some(to))),
    };
    prop_assert_eq!(why, want, "{}", case.text);
    Ok(())
}

/// The overlay: visits, retries and the colour of every state.
fn check_overlay(case: &Case, records: &[EventRecord]) -> Result<(), TestCaseError> {
    let overlay = Overlay::from_history(records, &[], false, 0);
    for name in case.names.iter().chain(case.expected.visits.keys()) {
        let run = overlay.state(name);
        let (visits, retries, endings) =
            (case.expected.visits.get(name).cloned()).unwrap_or_default();
        let status = if endings.contains(&Ending::Failed) {
            StateStatus::Failed
        } else if endings.contains(&Ending::Caught) {
            StateStatus::Caught
        } else if visits > 0 {
            StateStatus::Succeeded
        } else {
            StateStatus::NotEntered
        };
        let got = (run.entered, run.retries, run.status());
        prop_assert_eq!(got, (visits, retries, status), "{}\n{}", name, case.text);
    }
    Ok(())
}

/// Runs one generated machine and checks every report against the recomputation.
fn check(root: Vec<Node>) -> Result<(), TestCaseError> {
    let case = run_case(root);
    let status = match case.outcome {
        Ok(()) => Status::Succeeded,
        Err(_) => Status::Failed,
    };
    prop_assert_eq!(case.status, status, "{}", case.text);
    check_coverage(&case)?;
    let records: Vec<EventRecord> = case.events.iter().map(record).collect();
    check_why(&case, &records)?;
    check_overlay(&case, &records)
}

proptest! {
    // At least 2,000 machines, in a few seconds.
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn coverage_why_and_the_overlay_agree_with_the_generated_outcomes(
        root in prop::collection::vec(node(), 1..4)
    ) {
        check(root)?;
    }
}
