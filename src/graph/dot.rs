//! Graphviz DOT: states as shaped nodes, Parallel and Map as clusters headed by their own node,
//! branches as nested clusters, Catch edges dashed, an execution's statuses as fill colours.

use super::overlay::{EdgeCoverage, Overlay};
use super::{Cluster, EdgeKind, Graph, Node, NodeKind};
use std::fmt::Write as _;

/// Renders the graph, coloured by the overlay when one is given.
pub fn render(graph: &Graph, name: &str, overlay: Option<&Overlay>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", quoted(name));
    out.push_str("  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=11];\n  edge [fontname=\"Helvetica\", fontsize=9];\n");
    cluster(&graph.root, 1, overlay, &mut out);
    out.push_str("}\n");
    out
}

/// Catch edges dashed and red; in a coverage picture, taken edges green and bold, missed ones
/// orange, dashed and labelled "not taken".
fn edge_attributes(c: &Cluster, e: &super::Edge, overlay: Option<&Overlay>) -> Vec<String> {
    let coverage = overlay.and_then(|o| o.edge(c, e));
    let mut attrs = Vec::new();
    if e.kind == EdgeKind::Catch || coverage == Some(EdgeCoverage::Missed) {
        attrs.push("style=dashed".to_owned());
    }
    match coverage {
        Some(cov) => attrs.push(format!("color=\"{}\"", cov.colour())),
        None if e.kind == EdgeKind::Catch => attrs.push("color=\"#d93025\"".to_owned()),
        None => {}
    }
    if coverage == Some(EdgeCoverage::Taken) {
        attrs.push("penwidth=2".to_owned());
    }
    let label = match (&e.label, coverage) {
        (Some(l), Some(EdgeCoverage::Missed)) => Some(format!("{l}\nnot taken")),
        (None, Some(EdgeCoverage::Missed)) => Some("not taken".to_owned()),
        (l, _) => l.clone(),
    };
    if let Some(l) = label {
        attrs.push(format!("label={}", quoted(&l)));
    }
    attrs
}

fn quoted(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 2);
    s.push('"');
    for c in text.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

fn attributes(node: &Node, overlay: Option<&Overlay>) -> String {
    let (shape, style) = match node.kind {
        NodeKind::Start => ("circle", "filled"),
        NodeKind::End => ("doublecircle", "filled"),
        NodeKind::Task => ("box", "filled"),
        NodeKind::Pass => ("box", "rounded,filled"),
        NodeKind::Choice => ("diamond", "filled"),
        NodeKind::Wait => ("parallelogram", "filled"),
        NodeKind::Succeed => ("box", "rounded,bold,filled"),
        NodeKind::Fail => ("octagon", "filled"),
        NodeKind::Parallel => ("box3d", "filled"),
        NodeKind::Map => ("component", "filled"),
    };
    if node.kind.is_marker() {
        return format!(
            "shape={shape}, style={style}, fillcolor=\"#333333\", label=\"\", width=0.2, height=0.2"
        );
    }
    let mut label = node.name.clone();
    if let Some(retry) = &node.retry {
        label = format!("{label}\n{retry}");
    }
    let mut extra = String::new();
    let mut fill = "#ffffff";
    let mut stroke = "#444444";
    if let Some(overlay) = overlay {
        let run = overlay.state(&node.name);
        (fill, stroke) = run.status().colours();
        if run.retries > 0 {
            label = format!("{label}\nretried ×{}", run.retries);
        }
        if let Some(missed) = run.not_covered.as_ref().filter(|m| !m.is_empty()) {
            label = format!("{label}\n{} not covered", missed.len());
        }
        let _ = write!(
            extra,
            ", tooltip={}",
            quoted(&run.describe(overlay.now_ms).join("\n"))
        );
    }
    format!(
        "shape={shape}, style={}, fillcolor=\"{fill}\", color=\"{stroke}\", label={}{extra}",
        quoted(style),
        quoted(&label)
    )
}

fn cluster(c: &Cluster, depth: usize, overlay: Option<&Overlay>, out: &mut String) {
    let pad = "  ".repeat(depth);
    for node in &c.nodes {
        let attrs = attributes(node, overlay);
        if node.children.is_empty() {
            let _ = writeln!(out, "{pad}{} [{attrs}];", node.id);
            continue;
        }
        let _ = writeln!(out, "{pad}subgraph cluster_{} {{", node.id);
        let _ = writeln!(out, "{pad}  style=rounded; color=\"#777777\"; label=\"\";");
        let _ = writeln!(out, "{pad}  {} [{attrs}];", node.id);
        for child in &node.children {
            let _ = writeln!(out, "{pad}  subgraph cluster_{} {{", child.id);
            let _ = writeln!(
                out,
                "{pad}    style=dashed; color=\"#999999\"; label={};",
                quoted(&child.label)
            );
            cluster(child, depth + 2, overlay, out);
            let _ = writeln!(out, "{pad}  }}");
            let start = &child.nodes[0].id;
            let _ = writeln!(
                out,
                "{pad}  {} -> {start} [style=dotted, arrowhead=none];",
                node.id
            );
        }
        let _ = writeln!(out, "{pad}}}");
    }
    for e in &c.edges {
        let from = &c.nodes[e.from].id;
        let to = &c.nodes[e.to].id;
        let attrs = edge_attributes(c, e, overlay);
        if attrs.is_empty() {
            let _ = writeln!(out, "{pad}{from} -> {to};");
        } else {
            let _ = writeln!(out, "{pad}{from} -> {to} [{}];", attrs.join(", "));
        }
    }
}
