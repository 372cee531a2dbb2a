//! Mermaid flowcharts (they render in GitHub markdown): states as shaped nodes, Parallel and Map
//! as subgraphs, Catch edges dotted, an execution's statuses as `classDef` colours.

use super::overlay::{EdgeCoverage, Overlay, StateStatus};
use super::{Cluster, EdgeKind, Graph, Node, NodeKind};
use std::fmt::Write as _;

/// Renders the graph, coloured by the overlay when one is given.
pub fn render(graph: &Graph, overlay: Option<&Overlay>) -> String {
    let mut out = String::from("flowchart TD\n");
    let mut links = Links::default();
    cluster(&graph.root, 1, overlay, &mut links, &mut out);
    out.push_str(&links.styles);
    if let Some(overlay) = overlay {
        for status in StateStatus::ALL {
            let (fill, stroke) = status.colours();
            let _ = writeln!(
                out,
                "  classDef {} fill:{fill},stroke:{stroke},stroke-width:2px",
                class(status)
            );
        }
        for node in graph.states() {
            let status = overlay.state(&node.name).status();
            let _ = writeln!(out, "  class {} {}", node.id, class(status));
        }
    }
    out
}

/// Mermaid numbers links in the order they are written; a coverage picture styles each by
/// number (`linkStyle N ...`).
#[derive(Default)]
struct Links {
    written: usize,
    styles: String,
}

impl Links {
    /// Counts a link written, styled by its coverage if it has one.
    fn written(&mut self, coverage: Option<EdgeCoverage>) {
        if let Some(cov) = coverage {
            let width = match cov {
                EdgeCoverage::Taken => "stroke-width:2px",
                EdgeCoverage::Missed => "stroke-width:2px,stroke-dasharray:4 3",
            };
            let _ = writeln!(
                self.styles,
                "  linkStyle {} stroke:{},{width}",
                self.written,
                cov.colour()
            );
        }
        self.written += 1;
    }
}

/// Mermaid class names cannot contain `-`.
fn class(status: StateStatus) -> String {
    status.as_str().replace('-', "_")
}

/// A label in Mermaid's quoted form (`#quot;` stands for a quote inside it).
fn quoted(text: &str) -> String {
    let escaped = text
        .replace('&', "#amp;")
        .replace('"', "#quot;")
        .replace('<', "#lt;")
        .replace('>', "#gt;");
    format!("\"{escaped}\"")
}

fn label(node: &Node, overlay: Option<&Overlay>) -> String {
    let mut text = node.name.clone();
    if let Some(retry) = &node.retry {
        text = format!("{text}\n{retry}");
    }
    if let Some(overlay) = overlay {
        let run = overlay.state(&node.name);
        if run.retries > 0 {
            text = format!("{text}\nretried ×{}", run.retries);
        }
        if let Some(it) = &run.iterations {
            text = format!(
                "{text}\n{} iterations: {} ok, {} failed",
                it.started, it.succeeded, it.failed
            );
        }
        if let Some(missed) = run.not_covered.as_ref().filter(|m| !m.is_empty()) {
            text = format!("{text}\n{} not covered", missed.len());
        }
    }
    // Mermaid breaks lines on <br/>, written after escaping.
    quoted(&text).replace('\n', "<br/>")
}

fn cluster(
    c: &Cluster,
    depth: usize,
    overlay: Option<&Overlay>,
    links: &mut Links,
    out: &mut String,
) {
    let pad = "  ".repeat(depth);
    for node in &c.nodes {
        let id = &node.id;
        let l = label(node, overlay);
        match node.kind {
            NodeKind::Start => {
                let _ = writeln!(out, "{pad}{id}((\"start\"))");
            }
            NodeKind::End => {
                let _ = writeln!(out, "{pad}{id}(((\"end\")))");
            }
            NodeKind::Task => {
                let _ = writeln!(out, "{pad}{id}[{l}]");
            }
            NodeKind::Pass => {
                let _ = writeln!(out, "{pad}{id}({l})");
            }
            NodeKind::Choice => {
                let _ = writeln!(out, "{pad}{id}{{{l}}}");
            }
            NodeKind::Wait => {
                let _ = writeln!(out, "{pad}{id}[/{l}/]");
            }
            NodeKind::Succeed => {
                let _ = writeln!(out, "{pad}{id}([{l}])");
            }
            NodeKind::Fail => {
                let _ = writeln!(out, "{pad}{id}[[{l}]]");
            }
            NodeKind::Parallel | NodeKind::Map => {
                let what = if node.kind == NodeKind::Map {
                    "Map"
                } else {
                    "Parallel"
                };
                let title = label(node, overlay);
                let title = format!("{}<br/>{what}\"", title.trim_end_matches('"'));
                let _ = writeln!(out, "{pad}subgraph {id}[{title}]");
                let _ = writeln!(out, "{pad}  direction TB");
                for child in &node.children {
                    let _ = writeln!(
                        out,
                        "{pad}  subgraph {}[{}]",
                        child.id,
                        quoted(&child.label)
                    );
                    let _ = writeln!(out, "{pad}    direction TB");
                    cluster(child, depth + 2, overlay, links, out);
                    let _ = writeln!(out, "{pad}  end");
                }
                let _ = writeln!(out, "{pad}end");
            }
        }
    }
    for e in &c.edges {
        let from = &c.nodes[e.from].id;
        let to = &c.nodes[e.to].id;
        let arrow = if e.kind == EdgeKind::Catch {
            "-.->"
        } else {
            "-->"
        };
        let coverage = overlay.and_then(|o| o.edge(c, e));
        links.written(coverage);
        let label = match (&e.label, coverage) {
            (Some(l), Some(EdgeCoverage::Missed)) => Some(format!("{l} (not taken)")),
            (None, Some(EdgeCoverage::Missed)) => Some("not taken".to_owned()),
            (l, _) => l.clone(),
        };
        match &label {
            Some(l) => {
                let _ = writeln!(out, "{pad}{from} {arrow}|{}| {to}", quoted(l));
            }
            None => {
                let _ = writeln!(out, "{pad}{from} {arrow} {to}");
            }
        }
    }
}
