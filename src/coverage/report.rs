//! Coverage reports: a text table, JSON, and LCOV (lines and branches of the definition file,
//! which Codecov, Coveralls, `genhtml` and editor gutters read with no plugin).

use super::model::{Category, ItemKind};
use super::MachineCoverage;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Covered out of total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Taken at least once.
    pub covered: u64,
    /// All of them.
    pub total: u64,
}

impl Counts {
    /// The share covered, in percent; 100 when there is nothing to cover.
    pub fn percent(self) -> f64 {
        if self.total == 0 {
            100.0
        } else {
            self.covered as f64 * 100.0 / self.total as f64
        }
    }

    fn add(self, other: Counts) -> Counts {
        Counts {
            covered: self.covered + other.covered,
            total: self.total + other.total,
        }
    }

    fn cell(self) -> String {
        format!("{}/{} {:.0}%", self.covered, self.total, self.percent())
    }
}

impl MachineCoverage {
    /// Covered and total items of one category.
    pub fn counts(&self, category: Category) -> Counts {
        let mut out = Counts::default();
        for (item, hits) in self.coverable.items.iter().zip(&self.hits.items) {
            if item.kind.category() == category {
                out.total += 1;
                out.covered += u64::from(*hits > 0);
            }
        }
        out
    }

    /// Where an item is, for people: `file:line`, or the machine and the JSON pointer.
    pub fn place(&self, index: usize) -> String {
        match (&self.file, self.lines.get(index).copied().flatten()) {
            (Some(file), Some(line)) => format!("{}:{line}", file.display()),
            _ => format!("{} {}", self.label, self.coverable.items[index].pointer),
        }
    }
}

/// The totals of several machines for one category.
pub fn total(machines: &[MachineCoverage], category: Category) -> Counts {
    machines
        .iter()
        .map(|m| m.counts(category))
        .fold(Counts::default(), Counts::add)
}

/// The text table: one row per machine, then what was missed and how states ended.
pub fn text(machines: &[MachineCoverage]) -> String {
    let mut out = String::new();
    let width = machines
        .iter()
        .map(|m| m.label.chars().count())
        .chain([7])
        .max()
        .unwrap_or(7);
    let row = |cells: [String; 5]| {
        let [machine, executions, states, branches, errors] = cells;
        let line =
            format!("{machine:<width$}  {executions:>10}  {states:<14}  {branches:<14}  {errors}");
        line.trim_end().to_owned()
    };
    let header = ["MACHINE", "EXECUTIONS", "STATES", "BRANCHES", "ERROR PATHS"].map(String::from);
    let _ = writeln!(out, "{}", row(header));
    for m in machines {
        let cells = [
            m.label.clone(),
            m.hits.executions.to_string(),
            m.counts(Category::State).cell(),
            m.counts(Category::Branch).cell(),
            m.counts(Category::ErrorPath).cell(),
        ];
        let _ = writeln!(out, "{}", row(cells));
    }
    for m in machines {
        missed_text(m, &mut out);
    }
    out
}

fn missed_text(m: &MachineCoverage, out: &mut String) {
    let missed: Vec<usize> = (0..m.coverable.items.len())
        .filter(|i| m.hits.items[*i] == 0)
        .collect();
    if !missed.is_empty() {
        let _ = writeln!(out, "\n{}: not covered", m.label);
        for i in missed {
            let item = &m.coverable.items[i];
            let what = match item.kind.category() {
                Category::State => "state",
                Category::Branch => "branch",
                Category::ErrorPath => "error path",
            };
            let _ = writeln!(out, "  {}  {what}: {}", m.place(i), item.description);
        }
    }
    let endings = endings(m);
    if !endings.is_empty() {
        let _ = writeln!(
            out,
            "\n{}: states that ended the execution with an error",
            m.label
        );
        for (state, e) in endings {
            let mut parts = Vec::new();
            for (n, what) in [
                (e.failed, "failed"),
                (e.timed_out, "timed out"),
                (e.heartbeat_timed_out, "heartbeat timed out"),
            ] {
                if n > 0 {
                    parts.push(format!("{what} ×{n}"));
                }
            }
            let _ = writeln!(out, "  {state}: {}", parts.join(", "));
        }
    }
    for u in &m.unmatched {
        let _ = writeln!(out, "\n{}: {}", m.label, u.describe());
    }
    let mut unattributed: Vec<_> = m.hits.unattributed.iter().collect();
    unattributed.sort();
    for (state, n) in unattributed {
        let _ = writeln!(
            out,
            "  note: {n} transition(s) of Choice {state} could not be matched to one of the rules sharing their target (rules reading variables, $$ or JSONata)"
        );
    }
}

fn endings(m: &MachineCoverage) -> BTreeMap<&str, &super::collect::Endings> {
    m.hits
        .endings
        .iter()
        .map(|(k, v)| (k.as_str(), v))
        .collect()
}

fn counts_json(c: Counts) -> Value {
    json!({"covered": c.covered, "total": c.total, "percent": (c.percent() * 100.0).round() / 100.0})
}

/// The JSON report: per machine, the counts, every item with its hits, and the endings.
pub fn json(machines: &[MachineCoverage]) -> Value {
    let list: Vec<Value> = machines.iter().map(machine_json).collect();
    json!({
        "states": counts_json(total(machines, Category::State)),
        "branches": counts_json(total(machines, Category::Branch)),
        "errorPaths": counts_json(total(machines, Category::ErrorPath)),
        "machines": list,
    })
}

fn machine_json(m: &MachineCoverage) -> Value {
    let items: Vec<Value> = m
        .coverable
        .items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let mut v = json!({
                "category": item.kind.category().as_str(),
                "kind": item.kind.as_str(),
                "state": item.state,
                "description": item.description,
                "pointer": item.pointer.to_string(),
                "line": m.lines.get(i).copied().flatten(),
                "hits": m.hits.items[i],
            });
            match &item.kind {
                ItemKind::Rule(n, to) | ItemKind::Catch(n, to) => {
                    v["index"] = json!(n);
                    v["target"] = json!(to);
                }
                ItemKind::Retry(n) => v["index"] = json!(n),
                ItemKind::Next(to) | ItemKind::Default(to) => v["target"] = json!(to),
                _ => {}
            }
            v
        })
        .collect();
    let endings: Vec<Value> = endings(m)
        .into_iter()
        .map(|(state, e)| {
            json!({"state": state, "failed": e.failed, "timedOut": e.timed_out,
                   "heartbeatTimedOut": e.heartbeat_timed_out})
        })
        .collect();
    json!({
        "machine": m.label,
        "file": m.file.as_ref().map(|f| f.display().to_string()),
        "stateMachineNames": m.machine_names,
        "executions": m.hits.executions,
        "states": counts_json(m.counts(Category::State)),
        "branches": counts_json(m.counts(Category::Branch)),
        "errorPaths": counts_json(m.counts(Category::ErrorPath)),
        "items": items,
        "endings": endings,
        "unattributed": m.hits.unattributed,
        "unmatched": m.unmatched.iter().map(|u| json!({
            "stateMachineName": u.machine_name,
            "executions": u.executions,
            "differsAt": u.difference.0,
            "ran": u.difference.1,
            "here": u.difference.2,
        })).collect::<Vec<_>>(),
    })
}

/// LCOV: one record per definition file. A state's line (its key) is a line whose count is the
/// visits; every transition and error path is a branch (`BRDA`) on its own line, in a block per
/// state, `-` when its state was never entered. Several machines in one file (a template) share
/// one record. `None` when a machine has no file of its own (read from the database alone).
pub fn lcov(machines: &[MachineCoverage]) -> Option<String> {
    let mut files: BTreeMap<String, Vec<&MachineCoverage>> = BTreeMap::new();
    for m in machines {
        files
            .entry(m.file.as_ref()?.display().to_string())
            .or_default()
            .push(m);
    }
    let mut out = String::new();
    for (file, ms) in files {
        lcov_record(&file, &ms, &mut out);
    }
    Some(out)
}

fn lcov_record(file: &str, machines: &[&MachineCoverage], out: &mut String) {
    let _ = writeln!(out, "TN:\nSF:{file}");
    let mut lines: BTreeMap<usize, u64> = BTreeMap::new();
    let mut branches: Vec<(usize, usize, usize, Option<u64>)> = Vec::new();
    let mut block = 0;
    for m in machines {
        for (_, state) in sorted_states(m) {
            let visits = m.hits.items[state.state];
            if let Some(line) = m.lines[state.state] {
                *lines.entry(line).or_default() += visits;
            }
            for (k, item) in state.own().into_iter().enumerate() {
                if let Some(line) = m.lines[item] {
                    let taken = (visits > 0).then_some(m.hits.items[item]);
                    branches.push((line, block, k, taken));
                }
            }
            block += 1;
        }
    }
    for (line, block, branch, taken) in &branches {
        let taken = taken.map_or("-".to_owned(), |n| n.to_string());
        let _ = writeln!(out, "BRDA:{line},{block},{branch},{taken}");
    }
    let hit = branches
        .iter()
        .filter(|b| b.3.is_some_and(|n| n > 0))
        .count();
    let _ = writeln!(out, "BRF:{}\nBRH:{hit}", branches.len());
    for (line, n) in &lines {
        let _ = writeln!(out, "DA:{line},{n}");
    }
    let found = lines.len();
    let hit = lines.values().filter(|n| **n > 0).count();
    let _ = writeln!(out, "LF:{found}\nLH:{hit}\nend_of_record");
}

/// A machine's states in definition order.
fn sorted_states(m: &MachineCoverage) -> Vec<(&str, &super::model::StateItems)> {
    let mut states: Vec<_> = m
        .coverable
        .states
        .iter()
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    states.sort_by_key(|(_, s)| s.state);
    states
}
