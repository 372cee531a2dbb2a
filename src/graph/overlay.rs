//! What happened to each state in one execution, read from its stored history: the colours and
//! hover titles of [`super::Graph`]'s nodes.
//!
//! The history is read as the one tree of state visits every report shares
//! ([`crate::engine::visits`]), built from the events' links: a Parallel whose branch failed is
//! failed (or caught), never aborted, however its branches' events interleave.

use super::{Cluster, Edge, EdgeSlot};
use crate::engine::visits::{Ending, IterationEnd, Tree, Visit};
use crate::store::{EventRecord, TokenRecord};
use std::collections::HashMap;

/// What happened to a state, the colour it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StateStatus {
    /// Never entered.
    NotEntered,
    /// Exited normally.
    Succeeded,
    /// Failed, and a Catch sent the execution on.
    Caught,
    /// Stopped because its execution, branch or Map was (ABORTED, or a sibling failed).
    Aborted,
    /// Running now.
    Running,
    /// Waiting for a task token's answer.
    Waiting,
    /// Timed out (TimeoutSeconds or HeartbeatSeconds) and not caught.
    TimedOut,
    /// Failed, and not caught.
    Failed,
}

impl StateStatus {
    /// The lower-case name used as a CSS class and in tests.
    pub fn as_str(self) -> &'static str {
        match self {
            StateStatus::NotEntered => "not-entered",
            StateStatus::Succeeded => "succeeded",
            StateStatus::Caught => "caught",
            StateStatus::Aborted => "aborted",
            StateStatus::Running => "running",
            StateStatus::Waiting => "waiting",
            StateStatus::TimedOut => "timed-out",
            StateStatus::Failed => "failed",
        }
    }

    /// Every status, for legends and style sheets.
    pub const ALL: [StateStatus; 8] = [
        StateStatus::Succeeded,
        StateStatus::Failed,
        StateStatus::Caught,
        StateStatus::TimedOut,
        StateStatus::Waiting,
        StateStatus::Running,
        StateStatus::Aborted,
        StateStatus::NotEntered,
    ];

    /// Fill and stroke colours.
    pub fn colours(self) -> (&'static str, &'static str) {
        match self {
            StateStatus::NotEntered => ("#ffffff", "#9e9e9e"),
            StateStatus::Succeeded => ("#e6f4ea", "#1e8e3e"),
            StateStatus::Caught => ("#fff4e5", "#e8710a"),
            StateStatus::Aborted => ("#eeeeee", "#616161"),
            StateStatus::Running => ("#e8f0fe", "#1a73e8"),
            StateStatus::Waiting => ("#fef7e0", "#b06000"),
            StateStatus::TimedOut => ("#fce8f3", "#a50e7a"),
            StateStatus::Failed => ("#fce8e6", "#d93025"),
        }
    }
}

/// Map iterations by outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IterationCounts {
    /// Started.
    pub started: u64,
    /// Succeeded.
    pub succeeded: u64,
    /// Failed.
    pub failed: u64,
    /// Aborted.
    pub aborted: u64,
}

/// One state's story in the execution (all its visits together).
#[derive(Debug, Clone, Default)]
pub struct StateRun {
    /// How many times it was entered.
    pub entered: u64,
    /// Visits that exited normally.
    pub succeeded: u64,
    /// Visits that failed and were caught, with the error and where the Catch went.
    pub caught: Vec<(String, String)>,
    /// Visits that failed uncaught.
    pub failed: u64,
    /// Visits that timed out (uncaught).
    pub timed_out: u64,
    /// Visits aborted.
    pub aborted: u64,
    /// Visits still open (running or waiting).
    pub open: u64,
    /// Retries (attempts after the first), over all visits.
    pub retries: u64,
    /// Time spent in the state, over all closed visits, in ms.
    pub duration_ms: i64,
    /// The last error and cause seen.
    pub last_error: Option<(String, String)>,
    /// Open task tokens' next deadlines (ms since the epoch); `Some(None)` waits with none.
    pub waiting: Vec<Option<i64>>,
    /// Map iterations.
    pub iterations: Option<IterationCounts>,
    /// For a coverage picture (many executions, not one): what of this state no execution
    /// took. `None` in an execution's picture.
    pub not_covered: Option<Vec<String>>,
}

impl StateRun {
    /// The status its colour shows: the most telling of its visits.
    pub fn status(&self) -> StateStatus {
        if self.entered == 0 {
            StateStatus::NotEntered
        } else if self.failed > 0 {
            StateStatus::Failed
        } else if self.timed_out > 0 {
            StateStatus::TimedOut
        } else if !self.waiting.is_empty() {
            StateStatus::Waiting
        } else if self.open > 0 {
            StateStatus::Running
        } else if self.aborted > 0 {
            StateStatus::Aborted
        } else if !self.caught.is_empty() {
            StateStatus::Caught
        } else {
            StateStatus::Succeeded
        }
    }

    /// A few lines for a hover title: status, visits, retries, catch, deadlines, duration.
    pub fn describe(&self, now_ms: i64) -> Vec<String> {
        if let Some(missed) = &self.not_covered {
            return self.describe_coverage(missed);
        }
        let mut out = vec![self.status().as_str().replace('-', " ")];
        if self.entered > 1 {
            out.push(format!("entered ×{}", self.entered));
        }
        if self.retries > 0 {
            out.push(format!("retried ×{}", self.retries));
        }
        for (error, next) in &self.caught {
            out.push(format!("caught {error} → {next}"));
        }
        if let Some((error, cause)) = &self.last_error {
            if self.status() != StateStatus::Caught || !cause.is_empty() {
                out.push(format!("{error}: {}", super::shorten(cause, 80)));
            }
        }
        for deadline in &self.waiting {
            match deadline {
                Some(at) => out.push(format!(
                    "waiting for a token; deadline in {}",
                    duration_text((at - now_ms).max(0))
                )),
                None => out.push("waiting for a token; no deadline".into()),
            }
        }
        if let Some(it) = &self.iterations {
            out.push(format!(
                "iterations: {} started, {} succeeded, {} failed, {} aborted",
                it.started, it.succeeded, it.failed, it.aborted
            ));
        }
        if self.entered > self.open {
            out.push(format!(
                "time in state: {}",
                duration_text(self.duration_ms)
            ));
        }
        out
    }
}

impl StateRun {
    /// A coverage picture's hover lines: entered how often, retries, what was not covered.
    fn describe_coverage(&self, missed: &[String]) -> Vec<String> {
        let mut out = vec![if self.entered == 0 {
            "not covered".to_owned()
        } else {
            format!("entered ×{}", self.entered)
        }];
        if self.retries > 0 {
            out.push(format!("retried ×{}", self.retries));
        }
        out.extend(missed.iter().map(|m| format!("not covered: {m}")));
        out
    }
}

/// `850 ms`, `12.3 s`, `4 min 05 s`.
pub fn duration_text(ms: i64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{} min {:02} s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

/// Every state's story in one execution.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    /// By state name.
    pub states: HashMap<String, StateRun>,
    /// When the overlay was read (ms since the epoch), for deadlines counting down.
    pub now_ms: i64,
    /// Coverage pictures only: how often the tests took each transition a state declares
    /// (`Next`/`End`, Choice rules, `Default`, Catch entries), by source state and slot.
    pub edges: Option<HashMap<(String, EdgeSlot), u64>>,
}

/// An edge's coverage: taken by the tests or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeCoverage {
    /// Some execution took it.
    Taken,
    /// No execution took it.
    Missed,
}

impl EdgeCoverage {
    /// The lower-case name used as a CSS class.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeCoverage::Taken => "taken",
            EdgeCoverage::Missed => "missed",
        }
    }

    /// The stroke colour: green for taken, orange for missed (red is Catch's own colour).
    pub fn colour(self) -> &'static str {
        match self {
            EdgeCoverage::Taken => "#188038",
            EdgeCoverage::Missed => "#e37400",
        }
    }
}

impl Overlay {
    /// Whether the tests took `edge` of `cluster`: `None` unless this is a coverage picture
    /// and coverage counts the edge (the start marker's edge is not a transition of a state).
    pub fn edge(&self, cluster: &Cluster, edge: &Edge) -> Option<EdgeCoverage> {
        let edges = self.edges.as_ref()?;
        let from = &cluster.nodes[edge.from];
        if from.kind.is_marker() {
            return None;
        }
        let hits = edges.get(&(from.name.clone(), edge.slot))?;
        Some(match hits {
            0 => EdgeCoverage::Missed,
            _ => EdgeCoverage::Taken,
        })
    }

    /// Reads an execution's history and its open task tokens, as the one tree of visits
    /// every report reads ([`Tree`]).
    pub fn from_history(
        events: &[EventRecord],
        open_tokens: &[TokenRecord],
        execution_running: bool,
        now_ms: i64,
    ) -> Overlay {
        let tree = Tree::from_records(events);
        let last_ms = events.last().map_or(0, |e| e.timestamp_ms);
        let mut states: HashMap<String, StateRun> = HashMap::new();
        for (id, visit) in tree.visits.iter().enumerate() {
            let run = states.entry(visit.state.clone()).or_default();
            run.entered += 1;
            run.retries += visit.attempts.len().saturating_sub(1) as u64;
            if let Some(f) = visit.failure.as_ref().filter(|f| f.error.is_some()) {
                let error = f.error.clone().unwrap_or_default();
                run.last_error = Some((error, f.cause.clone().unwrap_or_default()));
            }
            if visit.state_type == "Map" {
                run.iterations = Some(iteration_counts(&tree, visit));
            }
            let next = tree.next(id).map(|v| v.state.clone());
            let open = Open {
                running: execution_running,
                tokens: open_tokens,
                last_ms,
            };
            record_ending(run, visit, next, &open);
        }
        for run in states.values_mut() {
            run.waiting.dedup();
        }
        Overlay {
            states,
            now_ms,
            edges: None,
        }
    }

    /// The story of one state (a never-entered one when the history does not name it).
    pub fn state(&self, name: &str) -> StateRun {
        self.states.get(name).cloned().unwrap_or_default()
    }
}

/// What an open visit means: running (or waiting for a token) while its execution runs,
/// cut short when the execution ended around it.
struct Open<'t> {
    running: bool,
    tokens: &'t [TokenRecord],
    last_ms: i64,
}

/// Counts how one visit ended into its state's story.
fn record_ending(run: &mut StateRun, visit: &Visit, next: Option<String>, open: &Open<'_>) {
    let ended_ms = match (visit.ended_ms, visit.ending) {
        (Some(at), _) => at,
        (None, Ending::Open) if open.running => {
            run.open += 1;
            let tokens = open.tokens.iter().filter(|t| t.state_name == visit.state);
            run.waiting.extend(tokens.map(TokenRecord::next_deadline));
            return;
        }
        (None, _) => open.last_ms,
    };
    run.duration_ms += ended_ms - visit.entered_ms;
    let failure = visit.failure.as_ref();
    match (visit.ending, failure) {
        (Ending::Fail, _) => run.failed += 1,
        (Ending::Exited, Some(f)) => run.caught.push((
            f.error.clone().unwrap_or_default(),
            next.unwrap_or_default(),
        )),
        (Ending::Exited, None) => run.succeeded += 1,
        (_, Some(f)) if f.timed_out() => run.timed_out += 1,
        (_, Some(_)) => run.failed += 1,
        (_, None) => run.aborted += 1,
    }
}

/// A Map visit's iterations by how they ended.
fn iteration_counts(tree: &Tree, visit: &Visit) -> IterationCounts {
    let mut counts = IterationCounts::default();
    for &lane in &visit.lanes {
        counts.started += 1;
        match tree.lanes[lane].iteration_end {
            Some(IterationEnd::Succeeded) => counts.succeeded += 1,
            Some(IterationEnd::Failed) => counts.failed += 1,
            Some(IterationEnd::Aborted) => counts.aborted += 1,
            None => {}
        }
    }
    counts
}
