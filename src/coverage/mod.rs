//! Coverage of state machines: which states, transitions and error paths the executions stored
//! in a database (or just run by `test`) took.
//!
//! - [`model`]: what can be covered in a machine ([`Coverable`]): each state, each `Next`,
//!   `End`, Choice rule and `Default`, each `Catch` and `Retry` entry, and a Task's declared
//!   `TimeoutSeconds` and `HeartbeatSeconds` running out, each with its place in the definition;
//! - [`collect`]: reads histories and counts what they took;
//! - [`report`]: text, JSON and LCOV.
//!
//! Executions are counted for a definition by content: the definition each execution stored,
//! read as JSON, must equal the definition (after its `${Name}` substitutions) with object keys
//! in any order and any spacing, so renaming a machine keeps its coverage. A machine is also
//! known by what the user means by it: its state machine name (as `run` and `serve` name it:
//! the file's name, a template machine's `StateMachineName` or logical ID). Executions of that
//! name that ran another definition (an older version, or other `${Name}` values) are not
//! counted but reported, with the first place their definition differs
//! ([`MachineCoverage::unmatched`]), so a report is never silently empty.
//!
//! ```
//! use sfn_local::coverage::{collect::EventView, Coverable, MachineCoverage};
//! let text = r#"{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}"#;
//! let (machine, _) = sfn_local::asl::compile_text(text, sfn_local::asl::MachineType::Standard);
//! let value: serde_json::Value = serde_json::from_str(text).unwrap();
//! let coverable = Coverable::new(machine.unwrap(), &value);
//! let mut measured = MachineCoverage::new("a.asl.json".into(), None, coverable, Vec::new());
//! let entered = EventView { id: 1, previous_event_id: 0, event_type: "PassStateEntered",
//!     timestamp_ms: 0, details: Some(r#"{"name":"A"}"#), replay_key: None };
//! let exited = EventView { id: 2, previous_event_id: 1, event_type: "PassStateExited", ..entered };
//! measured.add([entered, exited], &mut || 1.0);
//! let all = sfn_local::coverage::model::Category::Branch;
//! assert_eq!(measured.counts(all).covered, 1); // End was taken
//! ```

pub mod collect;
pub mod model;
pub mod report;

pub use collect::{Collector, EventView, Hits};
pub use model::{Category, Coverable};

use crate::asl::source::SpanIndex;
use crate::asl::{JsonPointer, MachineType};
use crate::graph::EdgeSlot;
use crate::store::{Store, StoreError};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Why coverage could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum CoverageError {
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One machine's coverage: what it has, what was taken, and where each item is written.
#[derive(Debug, Clone)]
pub struct MachineCoverage {
    /// What to call it: the file, `template#LogicalId`, or the state machine's names.
    pub label: String,
    /// The file whose lines [`MachineCoverage::lines`] count (none for a machine known only
    /// from the database).
    pub file: Option<PathBuf>,
    /// The state machine names its executions were started under.
    pub machine_names: Vec<String>,
    /// Its coverable items.
    pub coverable: Coverable,
    /// What was taken.
    pub hits: Hits,
    /// Per item, its 1-based line in `file`.
    pub lines: Vec<Option<usize>>,
    /// Executions of this machine's name that ran another definition, not counted here.
    pub unmatched: Vec<Unmatched>,
    /// The definition formatted one item per line, when its states share one line of `file`
    /// (a template's `DefinitionString`): LCOV reports on a copy of it, so that no line holds
    /// a state no execution entered beside one that ran.
    pub formatted: Option<String>,
}

/// Executions of a machine's name that ran a definition other than the one measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Unmatched {
    /// The state machine name they ran under.
    pub machine_name: String,
    /// How many.
    pub executions: u64,
    /// Where their definition first differs (a JSON pointer), with what they ran there and
    /// what the measured definition has (`None` where one of them has nothing).
    pub difference: (String, Option<Value>, Option<Value>),
}

impl Unmatched {
    /// One line for people: how many, where they differ, and how to match them.
    pub fn describe(&self) -> String {
        let (at, ran, here) = &self.difference;
        let show = |v: &Option<Value>| v.as_ref().map_or("nothing".to_owned(), |v| v.to_string());
        let at = if at.is_empty() { "/" } else { at };
        format!(
            "{} execution(s) of state machine '{}' ran another definition, not counted here: at {at} \
             they ran {} where this one has {}. If those are ${{Name}} values, give the values \
             they ran with (--sub NAME=VALUE); else they ran an older version of this machine",
            self.executions,
            self.machine_name,
            show(ran),
            show(here),
        )
    }
}

impl MachineCoverage {
    /// Nothing taken yet.
    pub fn new(
        label: String,
        file: Option<PathBuf>,
        coverable: Coverable,
        lines: Vec<Option<usize>>,
    ) -> Self {
        let hits = Collector::new(&coverable).hits;
        MachineCoverage {
            label,
            file,
            machine_names: Vec::new(),
            coverable,
            hits,
            lines,
            unmatched: Vec::new(),
            formatted: None,
        }
    }

    /// A target's machine, placed in its file, with nothing taken yet.
    pub fn from_target(target: Target) -> Self {
        let coverable = Coverable::new(target.machine, &target.definition);
        let lines = match &target.placement {
            Some(p) => lines(&coverable, p),
            None => vec![None; coverable.items.len()],
        };
        let on_one_line = matches!(target.placement, Some(Placement::Field { .. }));
        let formatted = on_one_line
            .then(|| serde_json::to_string_pretty(&target.definition).ok())
            .flatten();
        MachineCoverage {
            formatted,
            ..MachineCoverage::new(target.label, target.file, coverable, lines)
        }
    }

    /// The same machine placed on the lines of its formatted copy at `copy` (see
    /// [`MachineCoverage::formatted`]); itself when it has none.
    pub fn on_formatted_copy(&self, copy: PathBuf) -> Self {
        let Some(text) = &self.formatted else {
            return self.clone();
        };
        let placement = Placement::Text {
            text: text.clone(),
            yaml: false,
            base: JsonPointer::root(),
        };
        MachineCoverage {
            file: Some(copy),
            lines: lines(&self.coverable, &placement),
            ..self.clone()
        }
    }

    /// Counts one execution's history (oldest event first); see [`Collector::add`].
    pub fn add<'e>(
        &mut self,
        events: impl IntoIterator<Item = EventView<'e>>,
        time_scale: &mut dyn FnMut() -> f64,
    ) {
        self.collect(|collector| collector.add(events, time_scale));
    }

    /// Counts the history of a distributed Map's child execution (see
    /// [`Collector::add_map_child`]).
    pub fn add_map_child<'e>(
        &mut self,
        events: impl IntoIterator<Item = EventView<'e>>,
        time_scale: &mut dyn FnMut() -> f64,
    ) {
        self.collect(|collector| collector.add_map_child(events, time_scale));
    }

    /// Runs `read` on a collector holding what was counted so far.
    fn collect(&mut self, read: impl FnOnce(&mut Collector<'_>)) {
        let mut collector = Collector::new(&self.coverable);
        collector.hits = std::mem::take(&mut self.hits);
        read(&mut collector);
        self.hits = collector.hits;
    }
}

impl MachineCoverage {
    /// The picture's colours: a state entered by some execution as reached, the others as not
    /// entered, each with what of it no execution took (for `graph --coverage`, the console).
    pub fn overlay(&self) -> crate::graph::overlay::Overlay {
        let mut states = std::collections::HashMap::new();
        for (name, items) in &self.coverable.states {
            let visits = self.hits.items[items.state];
            let retries = items.retriers.iter().map(|i| self.hits.items[*i]).sum();
            let missed = items
                .own()
                .into_iter()
                .filter(|i| self.hits.items[*i] == 0)
                .map(|i| self.coverable.items[i].description.clone())
                .collect();
            let run = crate::graph::overlay::StateRun {
                entered: visits,
                succeeded: visits,
                retries,
                not_covered: Some(missed),
                ..Default::default()
            };
            states.insert(name.clone(), run);
        }
        crate::graph::overlay::Overlay {
            states,
            now_ms: 0,
            edges: Some(self.edge_hits()),
        }
    }

    /// How often each declared transition was taken, by source state and graph slot.
    fn edge_hits(&self) -> std::collections::HashMap<(String, EdgeSlot), u64> {
        let mut edges = std::collections::HashMap::new();
        for (name, items) in &self.coverable.states {
            let slots = items
                .transition
                .map(|i| (EdgeSlot::Transition, i))
                .into_iter()
                .chain(
                    items
                        .rules
                        .iter()
                        .enumerate()
                        .map(|(k, &i)| (EdgeSlot::Rule(k), i)),
                )
                .chain(items.default.map(|i| (EdgeSlot::Default, i)))
                .chain(
                    items
                        .catchers
                        .iter()
                        .enumerate()
                        .map(|(k, &i)| (EdgeSlot::Catch(k), i)),
                );
            for (slot, item) in slots {
                edges.insert((name.clone(), slot), self.hits.items[item]);
            }
        }
        edges
    }
}

/// Where a definition's items are written, for line numbers.
#[derive(Debug, Clone)]
pub enum Placement {
    /// The definition is the whole text (JSON or YAML), or sits at `base` in it (a template's
    /// inline `Definition`).
    Text {
        /// The file's text.
        text: String,
        /// Whether it is YAML.
        yaml: bool,
        /// Where the definition starts in it (the root for a definition file).
        base: JsonPointer,
    },
    /// Everything is on the line of one field (a template's `DefinitionString`).
    Field {
        /// The file's text.
        text: String,
        /// Whether it is YAML.
        yaml: bool,
        /// The field.
        pointer: JsonPointer,
    },
}

/// The 1-based line of each item.
pub fn lines(coverable: &Coverable, placement: &Placement) -> Vec<Option<usize>> {
    let (text, yaml) = match placement {
        Placement::Text { text, yaml, .. } | Placement::Field { text, yaml, .. } => (text, *yaml),
    };
    let index = if yaml {
        SpanIndex::new_yaml(text)
    } else {
        SpanIndex::new(text)
    };
    let line = |p: &JsonPointer| Some(index.line_col(index.span(p).start).0);
    coverable
        .items
        .iter()
        .map(|item| match placement {
            Placement::Field { pointer, .. } => line(pointer),
            Placement::Text { base, .. } => {
                let mut at = base.clone();
                for token in item.pointer.tokens() {
                    at = at.key(&token);
                }
                line(&at)
            }
        })
        .collect()
}

/// A definition to measure: what to call it, its file, the machine and its JSON after
/// substitution.
#[derive(Debug, Clone)]
pub struct Target {
    /// What to call it.
    pub label: String,
    /// The file its lines are in.
    pub file: Option<PathBuf>,
    /// Its logical ID, when it is a template's machine.
    pub logical_id: Option<String>,
    /// The compiled machine.
    pub machine: crate::asl::StateMachine,
    /// The definition as JSON, after substitution: executions must have run this content.
    pub definition: Value,
    /// The state machine names executions of it run under (see the module docs).
    pub machine_names: Vec<String>,
    /// Where its items are written.
    pub placement: Option<Placement>,
}

/// The definition's content, independent of key order and spacing: JSON with object keys
/// sorted.
pub fn canonical(value: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(&map[k], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// The stored definition texts, grouped by content (texts that are not JSON are left out).
fn stored_by_content(store: &Store) -> Result<BTreeMap<String, Vec<String>>, StoreError> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (text, _) in store.distinct_definitions()? {
        if let Ok(value) = serde_json::from_str::<Value>(&text) {
            groups.entry(canonical(&value)).or_default().push(text);
        }
    }
    Ok(groups)
}

/// Reads every execution that ran one of `texts` into `measured`.
fn read_executions(
    store: &Store,
    texts: &[String],
    measured: &mut MachineCoverage,
) -> Result<(), StoreError> {
    let mut names = std::collections::BTreeSet::new();
    for text in texts {
        let heads = store.executions_with_definition(text)?;
        names.extend(heads.iter().map(|h| h.state_machine_name.clone()));
        store.for_each_history(&heads, &mut |head, events| {
            let mut scale = || time_scale(store, &head.execution_arn);
            measured.add(events.iter().map(EventView::from), &mut scale);
        })?;
        if has_distributed_map(&measured.coverable.machine.root) {
            for head in &heads {
                read_map_children(store, &head.execution_arn, measured)?;
            }
        }
    }
    measured.machine_names = names.into_iter().collect();
    Ok(())
}

/// Whether a scope (or one nested in it) holds a distributed Map, whose processor's states
/// run in child executions with histories of their own.
fn has_distributed_map(scope: &crate::asl::model::Scope) -> bool {
    use crate::asl::model::{ProcessorMode, StateKind};
    scope.states.iter().any(|state| {
        matches!(&state.kind, StateKind::Map(m) if m.mode == ProcessorMode::Distributed)
            || state.inner_scopes().into_iter().any(has_distributed_map)
    })
}

/// Counts the histories of the children of every Map run `execution_arn` started.
fn read_map_children(
    store: &Store,
    execution_arn: &str,
    measured: &mut MachineCoverage,
) -> Result<(), StoreError> {
    let mut scale = || time_scale(store, execution_arn);
    for run in store.map_runs_of(execution_arn)? {
        for child in store.map_run_executions(&run.map_run_arn, None)? {
            if let Some(events) = store.map_run_history(&child.execution_arn, false)? {
                measured.add_map_child(events.iter().map(EventView::from), &mut scale);
            }
        }
    }
    Ok(())
}

fn time_scale(store: &Store, execution_arn: &str) -> f64 {
    crate::engine::diagnosis::recorded_time_scale(store, execution_arn)
}

/// Coverage of each target from the executions in `store` that ran its content; executions of
/// its name that ran another definition are listed in [`MachineCoverage::unmatched`].
pub fn measure(store: &Store, targets: Vec<Target>) -> Result<Vec<MachineCoverage>, CoverageError> {
    let stored = stored_by_content(store)?;
    let mut out = Vec::new();
    for target in targets {
        let content = canonical(&target.definition);
        let unmatched = unmatched(
            store,
            &stored,
            &content,
            &target.machine_names,
            &target.definition,
        )?;
        let mut measured = MachineCoverage::from_target(target);
        if let Some(texts) = stored.get(&content) {
            read_executions(store, texts, &mut measured)?;
        }
        measured.unmatched = unmatched;
        out.push(measured);
    }
    Ok(out)
}

/// The executions of the state machines `names` that ran a definition other than `content`
/// (`definition` as JSON).
fn unmatched(
    store: &Store,
    stored: &BTreeMap<String, Vec<String>>,
    content: &str,
    names: &[String],
    definition: &Value,
) -> Result<Vec<Unmatched>, StoreError> {
    let mut out = Vec::new();
    for (other, texts) in stored.iter().filter(|(c, _)| c.as_str() != content) {
        for text in texts {
            let heads = store.executions_with_definition(text)?;
            for name in names {
                let executions = heads
                    .iter()
                    .filter(|h| &h.state_machine_name == name)
                    .count() as u64;
                if executions == 0 {
                    continue;
                }
                let ran: Value = serde_json::from_str(other).unwrap_or(Value::Null);
                let difference = first_difference(&ran, definition, String::new());
                out.push(Unmatched {
                    machine_name: name.clone(),
                    executions,
                    difference: difference.unwrap_or_default(),
                });
            }
        }
    }
    Ok(out)
}

/// The first place (JSON pointer) where two definitions differ, with each one's value there.
fn first_difference(
    ran: &Value,
    here: &Value,
    at: String,
) -> Option<(String, Option<Value>, Option<Value>)> {
    match (ran, here) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let inner = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => first_difference(x, y, inner),
                    (x, y) => Some((inner, x.cloned(), y.cloned())),
                }
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, format!("{at}/{i}"))),
        _ if ran == here => None,
        _ => Some((at, Some(ran.clone()), Some(here.clone()))),
    }
}

/// Coverage of every machine that has executions in `store`, one per distinct definition
/// content, named by its state machines' names; items are placed by JSON pointer. A
/// definition that no longer compiles is left out. A machine is known by its name: a content
/// that is no longer any name's newest is labelled an older version, and the newest one says
/// how many executions ran older versions ([`MachineCoverage::unmatched`]).
pub fn every_machine(store: &Store) -> Result<Vec<MachineCoverage>, CoverageError> {
    let stored = stored_by_content(store)?;
    let newest = newest_content_by_name(store, &stored)?;
    let mut out = Vec::new();
    for (content, texts) in &stored {
        let Some(first) = texts.first() else { continue };
        let machine = [MachineType::Standard, MachineType::Express]
            .into_iter()
            .find_map(|t| crate::asl::compile_text(first, t).0);
        let (Some(machine), Ok(value)) = (machine, serde_json::from_str::<Value>(first)) else {
            continue;
        };
        let coverable = Coverable::new(machine, &value);
        // No file of its own: places are given as pointers.
        let lines = vec![None; coverable.items.len()];
        let mut measured = MachineCoverage::new(String::new(), None, coverable, lines);
        read_executions(store, texts, &mut measured)?;
        let current: Vec<String> = (measured.machine_names.iter())
            .filter(|n| newest.get(*n) == Some(content))
            .cloned()
            .collect();
        measured.label = measured.machine_names.join(", ");
        if current.is_empty() {
            measured.label.push_str(" (older version)");
        }
        measured.unmatched = unmatched(store, &stored, content, &current, &value)?;
        out.push(measured);
    }
    out.sort_by(|a, b| a.label.cmp(&b.label));
    Ok(out)
}

/// Per state machine name, the content its latest execution ran.
fn newest_content_by_name(
    store: &Store,
    stored: &BTreeMap<String, Vec<String>>,
) -> Result<std::collections::HashMap<String, String>, StoreError> {
    let mut latest: std::collections::HashMap<String, (i64, String)> = Default::default();
    for (content, texts) in stored {
        for text in texts {
            for head in store.executions_with_definition(text)? {
                let entry = latest
                    .entry(head.state_machine_name)
                    .or_insert((head.id, content.clone()));
                if head.id >= entry.0 {
                    *entry = (head.id, content.clone());
                }
            }
        }
    }
    Ok(latest.into_iter().map(|(name, (_, c))| (name, c)).collect())
}
