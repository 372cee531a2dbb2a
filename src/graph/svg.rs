//! SVG drawn by sfn-local itself, no Graphviz needed: each scope laid out in layers by
//! [`super::layout`] (nested for Parallel branches and Map processors), then drawn here: boxes,
//! edges as paths through the channels between layers, and edge labels beside their edge with a
//! halo (a band of background under the glyphs, `paint-order="stroke"`). Each state and each
//! label says where it is (`data-box`), so tests check the geometry without a browser.

use super::layout::{layout, Laid, Rect, Route, Seg, TooLarge};
use super::overlay::{EdgeCoverage, Overlay, StateStatus};
use super::{Cluster, EdgeKind, Graph, Node, NodeKind};
use std::fmt::Write as _;

/// A line of text in a box.
const LINE: f64 = 14.0;

/// The width text of `size` pixels takes (generous for Helvetica).
pub(super) fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.6
}

/// The lines under a state's name: its type, its Retry note, and the execution's extras.
pub(super) fn detail_lines(node: &Node, overlay: Option<&Overlay>) -> Vec<String> {
    let kind = match node.kind {
        NodeKind::Task => "Task",
        NodeKind::Pass => "Pass",
        NodeKind::Choice => "Choice",
        NodeKind::Wait => "Wait",
        NodeKind::Succeed => "Succeed",
        NodeKind::Fail => "Fail",
        NodeKind::Parallel => "Parallel",
        NodeKind::Map => "Map",
        NodeKind::Start | NodeKind::End => return Vec::new(),
    };
    let mut lines = vec![kind.to_owned()];
    if let Some(retry) = &node.retry {
        lines.push(retry.clone());
    }
    if let Some(overlay) = overlay {
        let run = overlay.state(&node.name);
        if run.retries > 0 {
            lines.push(format!("retried ×{}", run.retries));
        }
        if let Some((error, next)) = run.caught.last() {
            lines.push(super::shorten(&format!("caught {error} → {next}"), 40));
        }
        if let Some(it) = &run.iterations {
            let mut line = format!(
                "{} iterations: {} ok, {} failed",
                it.started, it.succeeded, it.failed
            );
            let running = it
                .started
                .saturating_sub(it.succeeded + it.failed + it.aborted);
            if running > 0 {
                line.push_str(&format!(", {running} running"));
            }
            if it.aborted > 0 {
                line.push_str(&format!(", {} aborted", it.aborted));
            }
            lines.push(line);
        }
        if !run.waiting.is_empty() {
            lines.push("waiting for a token".into());
        }
        if let Some(missed) = run.not_covered.as_ref().filter(|m| !m.is_empty()) {
            lines.push(format!("{} not covered", missed.len()));
        }
    }
    lines
}

/// Edge labels' font size.
const LABEL_SIZE: f64 = 10.0;

/// The width an edge label's line takes (generous, so the label's box holds its text).
pub(super) fn label_width(label: &str) -> f64 {
    label.chars().count() as f64 * LABEL_SIZE * 0.62 + 4.0
}

/// An edge's label, line by line (none when it has no label): its rule or error names, and in a
/// coverage picture "not taken" under an edge no execution took, as the coverage chapter says.
pub(super) fn edge_label_lines(
    c: &Cluster,
    e: &super::Edge,
    overlay: Option<&Overlay>,
) -> Vec<String> {
    let mut lines: Vec<String> = e.label.iter().cloned().collect();
    if overlay.and_then(|o| o.edge(c, e)) == Some(EdgeCoverage::Missed) {
        lines.push("not taken".into());
    }
    lines
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Renders the graph as a standalone SVG document, coloured by the overlay when one is given.
pub fn render(graph: &Graph, overlay: Option<&Overlay>) -> String {
    let laid = match layout(&graph.root, overlay) {
        Ok(laid) => laid,
        Err(too_large) => return too_large_to_draw(graph, too_large),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="sfn-graph" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="Helvetica, Arial, sans-serif">"#,
        w = laid.w,
        h = laid.h
    );
    out.push_str(STYLE);
    if overlay.is_some() {
        out.push_str("<style>");
        for status in StateStatus::ALL {
            let (fill, stroke) = status.colours();
            let _ = write!(
                out,
                ".sfn-graph .{s} > .shape {{ fill: {fill}; stroke: {stroke}; stroke-width: 2; }} ",
                s = status.as_str()
            );
        }
        out.push_str(".sfn-graph .not-entered > .shape { stroke-dasharray: 4 3; } ");
        for cov in [EdgeCoverage::Taken, EdgeCoverage::Missed] {
            let _ = write!(
                out,
                ".sfn-graph .edge.{} path {{ stroke: {}; stroke-width: 2; }} ",
                cov.as_str(),
                cov.colour()
            );
        }
        out.push_str(".sfn-graph .edge.missed path { stroke-dasharray: 3 3; }</style>\n");
    }
    out.push_str(
        r##"<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>
"##,
    );
    draw(&graph.root, &laid, 0.0, 0.0, overlay, &mut out);
    out.push_str("</svg>\n");
    out
}

/// The picture of a machine too large to lay out: a note saying so and what to use instead.
fn too_large_to_draw(graph: &Graph, TooLarge(needed): TooLarge) -> String {
    let note = format!(
        "{} states, whose edges would cross {needed} layers: too many to lay out (sfn-local's \
         limit); graph --format dot or mermaid draws it",
        graph.states().len()
    );
    let w = text_width(&note, 13.0) + 32.0;
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="sfn-graph too-large" width="{w:.0}" height="48" viewBox="0 0 {w:.0} 48" font-family="Helvetica, Arial, sans-serif"><rect width="100%" height="100%" fill="#ffffff"/><text x="16" y="29" font-size="13">{}</text></svg>
"##,
        esc(&note)
    )
}

const STYLE: &str = r#"<style>
.sfn-graph .shape { fill: #ffffff; stroke: #5f6368; stroke-width: 1.5; }
.sfn-graph .compound > .shape { fill: #f8f9fa; }
.sfn-graph .cluster { fill: none; stroke: #9aa0a6; stroke-dasharray: 5 4; }
.sfn-graph .cluster-label { font-size: 11px; fill: #5f6368; }
.sfn-graph .name { font-size: 13px; font-weight: bold; fill: #202124; }
.sfn-graph .detail { font-size: 11px; fill: #5f6368; }
.sfn-graph .marker > .shape { fill: #3c4043; stroke: #3c4043; }
.sfn-graph .edge path { fill: none; stroke: #555; stroke-width: 1.3; }
.sfn-graph .edge.catch path { stroke: #d93025; stroke-dasharray: 6 4; }
.sfn-graph .edge text { font-size: 10px; fill: #3c4043; stroke: #ffffff; stroke-width: 3px; stroke-linejoin: round; }
.sfn-graph .edge.catch text { fill: #d93025; }
</style>
"#;

/// Draws a laid-out cluster at `(ox, oy)`: its edges under its boxes, then each box and the
/// clusters inside it.
fn draw(c: &Cluster, laid: &Laid, ox: f64, oy: f64, overlay: Option<&Overlay>, out: &mut String) {
    for (k, e) in c.edges.iter().enumerate() {
        draw_edge(c, e, &laid.routes[k], (ox, oy), overlay, out);
    }
    for (i, node) in c.nodes.iter().enumerate() {
        let r = Rect {
            x: laid.boxes[i].x + ox,
            y: laid.boxes[i].y + oy,
            ..laid.boxes[i]
        };
        draw_node(node, &r, overlay, out);
        for (child, (dx, dy, inner)) in node.children.iter().zip(&laid.inner[i]) {
            let (x, y) = (r.x + dx, r.y + dy);
            let label_w = text_width(&child.label, 11.0);
            let _ = writeln!(
                out,
                r#"<rect class="cluster" data-cluster="{}" x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" rx="6"/><text class="cluster-label" x="{:.1}" y="{:.1}" data-box="{:.1} {:.1} {label_w:.1} 13.0">{}</text>"#,
                child.id,
                inner.w,
                inner.h,
                x + 6.0,
                y - 4.0,
                x + 6.0,
                y - 15.0,
                esc(&child.label)
            );
            draw(child, inner, x, y, overlay, out);
        }
    }
}

/// One edge: its path, its label beside it, its coverage class.
fn draw_edge(
    c: &Cluster,
    e: &super::Edge,
    route: &Route,
    (ox, oy): (f64, f64),
    overlay: Option<&Overlay>,
    out: &mut String,
) {
    let kind = if e.kind == EdgeKind::Catch {
        " catch"
    } else {
        ""
    };
    let coverage = overlay.and_then(|o| o.edge(c, e));
    let covered = coverage.map_or("", |cov| match cov {
        EdgeCoverage::Taken => " taken",
        EdgeCoverage::Missed => " missed",
    });
    let _ = write!(
        out,
        r#"<g class="edge{kind}{covered}" data-from="{}" data-to="{}">"#,
        c.nodes[e.from].id, c.nodes[e.to].id
    );
    if coverage == Some(EdgeCoverage::Missed) {
        out.push_str("<title>not taken by any execution</title>");
    }
    let _ = write!(
        out,
        r#"<path d="{}" marker-end="url(#arrow)"/>"#,
        path_data(route, (ox, oy))
    );
    if let Some(at) = route.label {
        let (x, y) = (at.x + ox, at.y + oy);
        for (k, line) in edge_label_lines(c, e, overlay).iter().enumerate() {
            // The first line says where the whole label is.
            let place = match k {
                0 => format!(r#" data-box="{x:.1} {y:.1} {:.1} {:.1}""#, at.w, at.h),
                _ => String::new(),
            };
            let _ = write!(
                out,
                r#"<text x="{:.1}" y="{:.1}" paint-order="stroke"{place}>{}</text>"#,
                x + 2.0,
                y + LABEL_SIZE + 1.0 + LINE * k as f64,
                esc(line)
            );
        }
    }
    out.push_str("</g>\n");
}

/// A route as SVG path data, moved by `(ox, oy)`.
fn path_data(route: &Route, (ox, oy): (f64, f64)) -> String {
    let p = |(x, y): (f64, f64)| format!("{:.1},{:.1}", x + ox, y + oy);
    let mut d = format!("M{}", p(route.start));
    for seg in &route.segs {
        let _ = match *seg {
            Seg::Line(to) => write!(d, " L{}", p(to)),
            Seg::Curve(a, b, to) => write!(d, " C{} {} {}", p(a), p(b), p(to)),
        };
    }
    d
}

/// One state (or marker): its box, its hover title, its name and detail lines.
fn draw_node(node: &Node, r: &Rect, overlay: Option<&Overlay>, out: &mut String) {
    let status = overlay.map(|o| o.state(&node.name).status());
    let mut class = String::from(if node.kind.is_marker() {
        "marker"
    } else if node.children.is_empty() {
        "state"
    } else {
        "state compound"
    });
    let _ = write!(class, " {}", node.kind.as_str());
    if let (Some(s), false) = (status, node.kind.is_marker()) {
        let _ = write!(class, " {}", s.as_str());
    }
    let _ = write!(
        out,
        r#"<g class="{class}" id="{}" data-name="{}" data-box="{:.1} {:.1} {:.1} {:.1}">"#,
        node.id,
        esc(&node.name),
        r.x,
        r.y,
        r.w,
        r.h
    );
    let mut title = vec![format!("{} ({})", node.name, node.kind.as_str())];
    if let Some(retry) = &node.retry {
        title.push(retry.clone());
    }
    if let (Some(o), false) = (overlay, node.kind.is_marker()) {
        title.extend(o.state(&node.name).describe(o.now_ms));
    }
    let _ = write!(out, "<title>{}</title>", esc(&title.join("\n")));
    shape(node.kind, r, out);
    if !node.kind.is_marker() {
        let _ = write!(
            out,
            r#"<text class="name" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            r.cx(),
            r.y + 18.0,
            esc(&node.name)
        );
        for (k, line) in detail_lines(node, overlay).iter().enumerate() {
            let _ = write!(
                out,
                r#"<text class="detail" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                r.cx(),
                r.y + 32.0 + LINE * k as f64,
                esc(line)
            );
        }
    }
    out.push_str("</g>\n");
}

fn shape(kind: NodeKind, r: &Rect, out: &mut String) {
    let (x, y, w, h) = (r.x, r.y, r.w, r.h);
    let _ = match kind {
        NodeKind::Start => write!(
            out,
            r#"<circle class="shape" cx="{:.1}" cy="{:.1}" r="{:.1}"/>"#,
            r.cx(),
            y + h / 2.0,
            w / 2.0
        ),
        NodeKind::End => write!(
            out,
            r##"<circle class="shape" cx="{cx:.1}" cy="{cy:.1}" r="{:.1}" fill-opacity="0.15"/><circle cx="{cx:.1}" cy="{cy:.1}" r="{:.1}" fill="#3c4043"/>"##,
            w / 2.0,
            w / 2.0 - 4.0,
            cx = r.cx(),
            cy = y + h / 2.0
        ),
        NodeKind::Choice => write!(
            out,
            r#"<polygon class="shape" points="{:.1},{y:.1} {:.1},{y:.1} {:.1},{:.1} {:.1},{:.1} {:.1},{:.1} {x:.1},{:.1}"/>"#,
            x + 12.0,
            x + w - 12.0,
            x + w,
            y + h / 2.0,
            x + w - 12.0,
            y + h,
            x + 12.0,
            y + h,
            y + h / 2.0
        ),
        NodeKind::Wait => write!(
            out,
            r#"<polygon class="shape" points="{:.1},{y:.1} {:.1},{y:.1} {:.1},{:.1} {x:.1},{:.1}"/>"#,
            x + 10.0,
            x + w,
            x + w - 10.0,
            y + h,
            y + h
        ),
        NodeKind::Succeed | NodeKind::Fail => write!(
            out,
            r#"<rect class="shape" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" rx="{:.1}"{}/>"#,
            h / 2.0,
            if kind == NodeKind::Fail {
                r#" stroke-width="3""#
            } else {
                ""
            }
        ),
        NodeKind::Pass => write!(
            out,
            r#"<rect class="shape" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" rx="10"/>"#
        ),
        NodeKind::Task | NodeKind::Parallel | NodeKind::Map => write!(
            out,
            r#"<rect class="shape" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" rx="3"/>"#
        ),
    };
}
