//! Pictures of a state machine: one graph model built from the parsed [`StateMachine`], then
//! three renderers ([`mermaid`], [`dot`], [`svg`]) that only draw it, and [`png`], which
//! rasterises the SVG.
//!
//! The model mirrors the definition's scopes: a [`Cluster`] is the top level, a Parallel branch
//! or a Map's item processor, holding its states as [`Node`]s (a Parallel or Map node holds its
//! inner clusters) and its transitions as [`Edge`]s, plus a start and an end marker. An
//! [`overlay::Overlay`] read from an execution's stored history colours the same nodes; pictures
//! add no state of their own.

pub mod dot;
mod layout;
pub mod mermaid;
pub mod overlay;
pub mod png;
pub mod svg;

use crate::asl::model::{
    Condition, ErrorHandling, Scope, State, StateKind, StateMachine, Transition,
};
use serde_json::Value;

/// What a node is: a state's type, or a scope's start or end marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// The scope's entry marker.
    Start,
    /// The scope's exit marker.
    End,
    /// A Task state.
    Task,
    /// A Pass state.
    Pass,
    /// A Choice state.
    Choice,
    /// A Wait state.
    Wait,
    /// A Succeed state.
    Succeed,
    /// A Fail state.
    Fail,
    /// A Parallel state (holds one cluster per branch).
    Parallel,
    /// A Map state (holds its processor's cluster).
    Map,
}

impl NodeKind {
    /// The lower-case name used in CSS classes and tests.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Start => "start",
            NodeKind::End => "end",
            NodeKind::Task => "task",
            NodeKind::Pass => "pass",
            NodeKind::Choice => "choice",
            NodeKind::Wait => "wait",
            NodeKind::Succeed => "succeed",
            NodeKind::Fail => "fail",
            NodeKind::Parallel => "parallel",
            NodeKind::Map => "map",
        }
    }

    /// Whether this is a start or end marker rather than a state.
    pub fn is_marker(self) -> bool {
        matches!(self, NodeKind::Start | NodeKind::End)
    }
}

/// One node of a cluster.
#[derive(Debug, Clone)]
pub struct Node {
    /// An identifier unique in the whole graph and safe in Mermaid, DOT and SVG (`n3`, `start0`).
    pub id: String,
    /// The state's name (`Start`/`End` for markers).
    pub name: String,
    /// Its kind.
    pub kind: NodeKind,
    /// A short note of its `Retry` rules (`retry States.ALL ×3`), if it has any.
    pub retry: Option<String>,
    /// Parallel branches or a Map processor.
    pub children: Vec<Cluster>,
}

/// What an edge means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeKind {
    /// `Next`, or the edge from the start marker, or to the end marker.
    Next,
    /// A Choice rule's `Next` (labelled with the rule).
    Rule,
    /// A Choice's `Default`.
    Default,
    /// A `Catch` (dashed, labelled with its error names).
    Catch,
}

/// Which of its source state's transitions an edge is, so a coverage picture can say whether
/// the tests took it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgeSlot {
    /// From the start marker to `StartAt`.
    Start,
    /// The state's `Next` or `End`.
    Transition,
    /// The Choice rule at this index.
    Rule(usize),
    /// The Choice's `Default`.
    Default,
    /// The `Catch` entry at this index.
    Catch(usize),
}

/// A transition inside one cluster; `from` and `to` index [`Cluster::nodes`].
#[derive(Debug, Clone)]
pub struct Edge {
    /// Source node index.
    pub from: usize,
    /// Target node index.
    pub to: usize,
    /// What it means.
    pub kind: EdgeKind,
    /// Which transition of the source state it is.
    pub slot: EdgeSlot,
    /// Its label, if any.
    pub label: Option<String>,
}

/// A scope: the top level, a Parallel branch or a Map processor.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Unique, safe identifier (`c0`, `c1`, ...).
    pub id: String,
    /// What to call it (`Branch 1`, `Item processor`), empty for the top level.
    pub label: String,
    /// Nodes: the start marker first, then the states in definition order, then the end marker.
    pub nodes: Vec<Node>,
    /// Edges between them.
    pub edges: Vec<Edge>,
}

/// The whole picture.
#[derive(Debug, Clone)]
pub struct Graph {
    /// The top-level scope.
    pub root: Cluster,
}

impl Graph {
    /// Builds the graph of a parsed machine.
    pub fn from_machine(machine: &StateMachine) -> Graph {
        let mut ids = Ids::default();
        Graph {
            root: cluster(&machine.root, String::new(), &mut ids),
        }
    }

    /// Every state node (not markers), depth first, in definition order.
    pub fn states(&self) -> Vec<&Node> {
        fn walk<'a>(c: &'a Cluster, out: &mut Vec<&'a Node>) {
            for n in &c.nodes {
                if !n.kind.is_marker() {
                    out.push(n);
                }
                for child in &n.children {
                    walk(child, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &mut out);
        out
    }
}

#[derive(Default)]
struct Ids {
    nodes: usize,
    clusters: usize,
}

fn cluster(scope: &Scope, label: String, ids: &mut Ids) -> Cluster {
    let cid = ids.clusters;
    ids.clusters += 1;
    let mut nodes = vec![Node {
        id: format!("start{cid}"),
        name: "Start".into(),
        kind: NodeKind::Start,
        retry: None,
        children: Vec::new(),
    }];
    for state in &scope.states {
        let id = format!("n{}", ids.nodes);
        ids.nodes += 1;
        nodes.push(node(state, id, ids));
    }
    let end = nodes.len();
    nodes.push(Node {
        id: format!("end{cid}"),
        name: "End".into(),
        kind: NodeKind::End,
        retry: None,
        children: Vec::new(),
    });
    // State i of the scope is node i + 1.
    let at = |id: crate::asl::model::StateId| id.0 as usize + 1;
    let mut edges = vec![Edge {
        from: 0,
        to: at(scope.start_at),
        kind: EdgeKind::Next,
        slot: EdgeSlot::Start,
        label: None,
    }];
    for (i, state) in scope.states.iter().enumerate() {
        let from = i + 1;
        let mut push = |to: usize, kind: EdgeKind, slot: EdgeSlot, label: Option<String>| {
            edges.push(Edge {
                from,
                to,
                kind,
                slot,
                label,
            })
        };
        let transition = match &state.kind {
            StateKind::Pass(s) => Some(s.transition),
            StateKind::Wait(s) => Some(s.transition),
            StateKind::Task(s) => Some(s.transition),
            StateKind::Parallel(s) => Some(s.transition),
            StateKind::Map(s) => Some(s.transition),
            StateKind::Choice(_) => None,
            StateKind::Succeed(_) | StateKind::Fail(_) => Some(Transition::End),
        };
        match transition {
            Some(Transition::Next(id)) => push(at(id), EdgeKind::Next, EdgeSlot::Transition, None),
            Some(Transition::End) => push(end, EdgeKind::Next, EdgeSlot::Transition, None),
            None => {}
        }
        if let StateKind::Choice(c) = &state.kind {
            for (index, branch) in c.choices.iter().enumerate() {
                let label = match &branch.condition {
                    Condition::JsonPath(rule) => rule_text(rule.raw()),
                    Condition::Jsonata(t) => jsonata_text(t.raw()),
                };
                let label = Some(shorten(&label, 48));
                push(
                    at(branch.next),
                    EdgeKind::Rule,
                    EdgeSlot::Rule(index),
                    label,
                );
            }
            if let Some(d) = c.default {
                let label = Some("Default".into());
                push(at(d), EdgeKind::Default, EdgeSlot::Default, label);
            }
        }
        for (index, catcher) in state.catchers().iter().enumerate() {
            let label = Some(shorten(&catcher.error_equals.join(", "), 48));
            push(
                at(catcher.next),
                EdgeKind::Catch,
                EdgeSlot::Catch(index),
                label,
            );
        }
    }
    Cluster {
        id: format!("c{cid}"),
        label,
        nodes,
        edges,
    }
}

fn node(state: &State, id: String, ids: &mut Ids) -> Node {
    let (kind, errors, children) = match &state.kind {
        StateKind::Pass(_) => (NodeKind::Pass, None, Vec::new()),
        StateKind::Task(t) => (NodeKind::Task, Some(&t.errors), Vec::new()),
        StateKind::Choice(_) => (NodeKind::Choice, None, Vec::new()),
        StateKind::Wait(_) => (NodeKind::Wait, None, Vec::new()),
        StateKind::Succeed(_) => (NodeKind::Succeed, None, Vec::new()),
        StateKind::Fail(_) => (NodeKind::Fail, None, Vec::new()),
        StateKind::Parallel(p) => {
            let children = p
                .branches
                .iter()
                .enumerate()
                .map(|(i, b)| cluster(b, format!("Branch {}", i + 1), ids))
                .collect();
            (NodeKind::Parallel, Some(&p.errors), children)
        }
        StateKind::Map(m) => {
            let children = vec![cluster(&m.processor, "Item processor".into(), ids)];
            (NodeKind::Map, Some(&m.errors), children)
        }
    };
    Node {
        id,
        name: state.name.clone(),
        kind,
        retry: errors.and_then(retry_note),
        children,
    }
}

/// `retry States.ALL ×3; Lambda.X ×2`.
fn retry_note(errors: &ErrorHandling) -> Option<String> {
    if errors.retry.is_empty() {
        return None;
    }
    let rules: Vec<String> = errors
        .retry
        .iter()
        .map(|r| format!("{} ×{}", r.error_equals.join(","), r.max_attempts))
        .collect();
    Some(shorten(&format!("retry {}", rules.join("; ")), 60))
}

/// Cuts a label to at most `max` characters, with an ellipsis.
pub fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn jsonata_text(raw: &Value) -> String {
    match raw {
        Value::String(s) => s
            .trim()
            .strip_prefix("{%")
            .and_then(|s| s.strip_suffix("%}"))
            .unwrap_or(s)
            .trim()
            .to_owned(),
        other => other.to_string(),
    }
}

/// A short rendering of a JSONPath Choice rule: `$.total > 100`, `$.a is present`,
/// `not ($.x == "y")`, `($.a < 1) and ($.b >= 2)`.
pub fn rule_text(rule: &Value) -> String {
    let Value::Object(map) = rule else {
        return rule.to_string();
    };
    for (key, joiner) in [("And", " and "), ("Or", " or ")] {
        if let Some(Value::Array(rules)) = map.get(key) {
            let parts: Vec<String> = rules
                .iter()
                .map(|r| {
                    let t = rule_text(r);
                    if rules.len() > 1 && (t.contains(" and ") || t.contains(" or ")) {
                        format!("({t})")
                    } else {
                        t
                    }
                })
                .collect();
            return parts.join(joiner);
        }
    }
    if let Some(inner) = map.get("Not") {
        return format!("not ({})", rule_text(inner));
    }
    let variable = map
        .get("Variable")
        .and_then(Value::as_str)
        .unwrap_or("$")
        .to_owned();
    for (key, value) in map {
        if matches!(
            key.as_str(),
            "Variable" | "Next" | "Comment" | "Assign" | "Output"
        ) {
            continue;
        }
        let truth = value.as_bool().unwrap_or(true);
        let test = |what: &str| {
            if truth {
                format!("{variable} is {what}")
            } else {
                format!("{variable} is not {what}")
            }
        };
        match key.as_str() {
            "IsPresent" => return test("present"),
            "IsNull" => return test("null"),
            "IsNumeric" => return test("numeric"),
            "IsString" => return test("a string"),
            "IsBoolean" => return test("a boolean"),
            "IsTimestamp" => return test("a timestamp"),
            "StringMatches" => return format!("{variable} matches {value}"),
            _ => {}
        }
        let (name, operand) = match key.strip_suffix("Path") {
            Some(name) => (name, value.as_str().unwrap_or_default().to_owned()),
            None => (key.as_str(), value.to_string()),
        };
        let op = if name.ends_with("GreaterThanEquals") {
            ">="
        } else if name.ends_with("LessThanEquals") {
            "<="
        } else if name.ends_with("GreaterThan") {
            ">"
        } else if name.ends_with("LessThan") {
            "<"
        } else if name.ends_with("Equals") {
            "=="
        } else {
            name
        };
        return format!("{variable} {op} {operand}");
    }
    variable
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules_read_short() {
        assert_eq!(
            rule_text(&json!({"Variable": "$.total", "NumericGreaterThan": 100, "Next": "A"})),
            "$.total > 100"
        );
        assert_eq!(
            rule_text(&json!({"Variable": "$.items[0]", "IsPresent": true})),
            "$.items[0] is present"
        );
        assert_eq!(
            rule_text(&json!({"Not": {"Variable": "$.s", "StringEquals": "x"}})),
            "not ($.s == \"x\")"
        );
        assert_eq!(
            rule_text(&json!({"And": [
                {"Variable": "$.a", "NumericLessThanPath": "$.b"},
                {"Variable": "$.c", "BooleanEquals": false}
            ]})),
            "$.a < $.b and $.c == false"
        );
    }
}

/// Why an execution's picture cannot be drawn.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// No execution has that ARN or name.
    #[error("ExecutionDoesNotExist: Execution Does Not Exist: '{0}'")]
    NoExecution(String),
    /// The stored definition no longer compiles (it did when the execution started).
    #[error("the stored definition of {0} does not compile")]
    Definition(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// An execution drawn on its machine: the graph, what happened to each state, and the record.
#[derive(Debug, Clone)]
pub struct ExecutionPicture {
    /// The machine's graph.
    pub graph: Graph,
    /// What happened to each state.
    pub overlay: overlay::Overlay,
    /// The execution as stored.
    pub record: crate::store::ExecutionRecord,
}

impl ExecutionPicture {
    /// Reads an execution (by ARN or name), its history and open tokens from the store.
    pub fn load(
        store: &crate::store::Store,
        arn_or_name: &str,
        now_ms: i64,
    ) -> Result<ExecutionPicture, GraphError> {
        let record = store
            .execution(arn_or_name)?
            .ok_or_else(|| GraphError::NoExecution(arn_or_name.to_owned()))?;
        let (machine, _) =
            crate::asl::compile_text(&record.definition, crate::asl::MachineType::Standard);
        let machine =
            machine.ok_or_else(|| GraphError::Definition(record.execution_arn.clone()))?;
        let events = store.history(&record.execution_arn, false)?;
        let running = record.status == crate::store::ExecutionStatus::Running;
        let tokens = if running {
            store.open_tokens(Some(&record.execution_arn))?
        } else {
            Vec::new()
        };
        Ok(ExecutionPicture {
            graph: Graph::from_machine(&machine),
            overlay: overlay::Overlay::from_history(&events, &tokens, running, now_ms),
            record,
        })
    }
}
