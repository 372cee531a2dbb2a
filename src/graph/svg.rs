//! SVG drawn by sfn-local itself, no Graphviz needed: a layered (Sugiyama-style) layout of each
//! scope, nested for Parallel branches and Map processors.
//!
//! Why our own layout: the layered-layout crates lay out flat graphs, and this picture is nested
//! (a Parallel's box holds its branches, each a graph of its own). The nesting makes the job
//! small: each scope is laid out alone, inner scopes first, and a compound state is just a larger
//! box to its parent. Per scope: back edges found by a depth-first search from the start (loops
//! are drawn up the right side), layers by longest path, order in a layer by the mean position of
//! the predecessors (one sweep down), boxes placed left to right without overlap. Boxes never
//! overlap by construction: a layer's boxes are placed side by side, and layers are stacked.

use super::overlay::{EdgeCoverage, Overlay, StateStatus};
use super::{Cluster, EdgeKind, Graph, Node, NodeKind};
use std::fmt::Write as _;

const GAP_X: f64 = 28.0;
const GAP_Y: f64 = 56.0;
const PAD: f64 = 16.0;
const HEADER: f64 = 52.0;
const MARKER: f64 = 20.0;
const LINE: f64 = 14.0;
const BACK_EDGE_STEP: f64 = 10.0;

/// A box, relative to its cluster's origin while laying out.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rect {
    /// Left.
    pub x: f64,
    /// Top.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

impl Rect {
    fn cx(&self) -> f64 {
        self.x + self.w / 2.0
    }
}

/// A laid-out cluster: its size, each node's box, and each compound node's inner clusters.
struct Laid {
    w: f64,
    h: f64,
    boxes: Vec<Rect>,
    /// Per node: its inner clusters with their offsets inside the node's box.
    inner: Vec<Vec<(f64, f64, Laid)>>,
    /// Edge index → whether it goes back up (a loop).
    back: Vec<bool>,
    /// Edge index → the column a back edge runs up, right of every box.
    back_x: Vec<f64>,
    /// Edge index → the column a long forward edge runs down, when a straight line would
    /// cross a box of a layer between its ends.
    route: Vec<Option<f64>>,
}

fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.6
}

/// The lines under a state's name: its type, its Retry note, and the execution's extras.
fn detail_lines(node: &Node, overlay: Option<&Overlay>) -> Vec<String> {
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

fn layout(c: &Cluster, overlay: Option<&Overlay>) -> Laid {
    let n = c.nodes.len();
    // Sizes first (inner clusters laid out recursively).
    let mut boxes = vec![Rect::default(); n];
    let mut inner: Vec<Vec<(f64, f64, Laid)>> = Vec::with_capacity(n);
    for (i, node) in c.nodes.iter().enumerate() {
        let lines = detail_lines(node, overlay);
        let text_w = lines
            .iter()
            .map(|l| text_width(l, 11.0))
            .fold(text_width(&node.name, 13.0), f64::max);
        if node.kind.is_marker() {
            boxes[i].w = MARKER;
            boxes[i].h = MARKER;
            inner.push(Vec::new());
        } else if node.children.is_empty() {
            boxes[i].w = (text_w + 32.0).max(120.0);
            boxes[i].h = 26.0 + LINE * lines.len() as f64;
            inner.push(Vec::new());
        } else {
            let header = HEADER + LINE * lines.len().saturating_sub(1) as f64;
            let mut x = PAD;
            let mut h: f64 = 0.0;
            let mut kids = Vec::new();
            for child in &node.children {
                let laid = layout(child, overlay);
                h = h.max(laid.h);
                let w = laid.w;
                kids.push((x, header, laid));
                x += w + GAP_X / 2.0;
            }
            let content_w = x - GAP_X / 2.0 + PAD;
            let w = content_w.max(text_w + 2.0 * PAD);
            // Centre the branches when the title is wider than they are.
            let shift = (w - content_w) / 2.0;
            for k in &mut kids {
                k.0 += shift;
            }
            boxes[i].w = w;
            boxes[i].h = header + h + PAD;
            inner.push(kids);
        }
    }

    // Back edges: edges into a node still on the depth-first stack.
    let mut out_edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (k, e) in c.edges.iter().enumerate() {
        out_edges[e.from].push(k);
    }
    let mut back = vec![false; c.edges.len()];
    let mut mark = vec![0u8; n]; // 0 new, 1 on stack, 2 done
    let mut post = Vec::with_capacity(n);
    for root in 0..n {
        if mark[root] != 0 {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        mark[root] = 1;
        while let Some((u, next)) = stack.pop() {
            if let Some(&k) = out_edges[u].get(next) {
                stack.push((u, next + 1));
                let v = c.edges[k].to;
                match mark[v] {
                    0 => {
                        mark[v] = 1;
                        stack.push((v, 0));
                    }
                    1 => back[k] = true,
                    _ => {}
                }
            } else {
                mark[u] = 2;
                post.push(u);
            }
        }
    }
    // Layers by longest path over forward edges, in topological order.
    let mut rank = vec![0usize; n];
    for &u in post.iter().rev() {
        for &k in &out_edges[u] {
            if !back[k] {
                let v = c.edges[k].to;
                rank[v] = rank[v].max(rank[u] + 1);
            }
        }
    }
    let end = n - 1;
    let last = (0..end).map(|i| rank[i]).max().unwrap_or(0);
    rank[end] = last + 1;
    let layers_count = rank[end] + 1;
    let mut layers: Vec<Vec<usize>> = vec![Vec::new(); layers_count];
    for &u in post.iter().rev() {
        layers[rank[u]].push(u);
    }

    // Place layer by layer: each box wants to sit under the mean centre of its predecessors.
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (k, e) in c.edges.iter().enumerate() {
        if !back[k] && e.from != e.to {
            preds[e.to].push(e.from);
        }
    }
    let mut y = PAD;
    let mut placed = vec![false; n];
    for layer in &mut layers {
        let layer_h = layer.iter().map(|&u| boxes[u].h).fold(0.0, f64::max);
        let mut want: Vec<(f64, usize)> = layer
            .iter()
            .map(|&u| {
                let centres: Vec<f64> = preds[u]
                    .iter()
                    .filter(|&&p| placed[p])
                    .map(|&p| boxes[p].cx())
                    .collect();
                let want = if centres.is_empty() {
                    0.0
                } else {
                    centres.iter().sum::<f64>() / centres.len() as f64
                };
                (want, u)
            })
            .collect();
        want.sort_by(|a, b| a.0.total_cmp(&b.0));
        // Spread the layer around its wanted centres, then never let two boxes touch.
        let total: f64 =
            want.iter().map(|&(_, u)| boxes[u].w).sum::<f64>() + GAP_X * (want.len() as f64 - 1.0);
        let mean = want.iter().map(|w| w.0).sum::<f64>() / want.len().max(1) as f64;
        let mut x = mean - total / 2.0;
        let mut right = f64::NEG_INFINITY;
        for &(wanted, u) in &want {
            let single = want.len() == 1;
            let left = if single { wanted - boxes[u].w / 2.0 } else { x };
            let left = left.max(right + GAP_X);
            boxes[u].x = left;
            boxes[u].y = y + (layer_h - boxes[u].h) / 2.0;
            right = left + boxes[u].w;
            x = right + GAP_X;
            placed[u] = true;
        }
        y += layer_h + GAP_Y;
    }
    // Shift everything right of the padding.
    let min_x = boxes.iter().map(|b| b.x).fold(f64::INFINITY, f64::min);
    for b in &mut boxes {
        b.x += PAD - min_x;
    }
    let mut max_right = boxes.iter().map(|b| b.x + b.w).fold(0.0, f64::max);
    // Long forward edges: go straight down when nothing is in the way, else round the side
    // nearer to the source (the left when there is room, else the right).
    let mut route = vec![None; c.edges.len()];
    let mut left_lanes = Vec::new();
    let mut right_lanes = Vec::new();
    for (k, e) in c.edges.iter().enumerate() {
        if back[k] || rank[e.to] <= rank[e.from] + 1 {
            continue;
        }
        let (a, b) = (boxes[e.from], boxes[e.to]);
        let (top, bottom) = (a.y + a.h, b.y);
        let between: Vec<&Rect> = boxes
            .iter()
            .filter(|r| r.y < bottom && r.y + r.h > top)
            .collect();
        let lo = a.cx().min(b.cx()) - 4.0;
        let hi = a.cx().max(b.cx()) + 4.0;
        if !between.iter().any(|r| r.x < hi && r.x + r.w > lo) {
            continue;
        }
        let min_left = between.iter().map(|r| r.x).fold(f64::INFINITY, f64::min);
        let max_r = between.iter().map(|r| r.x + r.w).fold(0.0, f64::max);
        let left_lane = lane(&mut left_lanes, top, bottom) as f64 * BACK_EDGE_STEP;
        let left = min_left - GAP_X / 2.0 - left_lane;
        if left >= PAD / 2.0 && (a.cx() - left) <= (max_r - a.cx()) {
            route[k] = Some(left);
        } else {
            let right_lane = lane(&mut right_lanes, top, bottom) as f64 * BACK_EDGE_STEP;
            let x = max_r + GAP_X / 2.0 + right_lane;
            max_right = max_right.max(x);
            route[k] = Some(x);
        }
    }
    // Back edges share columns where their vertical spans do not meet.
    let mut back_lanes = Vec::new();
    let mut back_x = vec![0.0; c.edges.len()];
    for (k, e) in c.edges.iter().enumerate() {
        if back[k] {
            let (a, b) = (boxes[e.from], boxes[e.to]);
            let (y1, y2) = (a.y + a.h / 2.0, b.y + b.h / 2.0);
            let i = lane(&mut back_lanes, y1.min(y2), y1.max(y2));
            back_x[k] = max_right + BACK_EDGE_STEP * (i as f64 + 1.0);
        }
    }
    // Room for the labels of back edges, centred on their columns.
    let back_label = c
        .edges
        .iter()
        .enumerate()
        .filter(|(k, _)| back[*k])
        .filter_map(|(_, e)| e.label.as_deref())
        .map(|l| text_width(l, 10.0) / 2.0)
        .fold(0.0, f64::max);
    Laid {
        route,
        w: max_right + PAD + back_lanes.len() as f64 * BACK_EDGE_STEP + back_label,
        h: y - GAP_Y + PAD,
        boxes,
        inner,
        back,
        back_x,
    }
}

/// The first column whose vertical spans stay clear of `top..bottom` (with a margin), taken.
fn lane(lanes: &mut Vec<Vec<(f64, f64)>>, top: f64, bottom: f64) -> usize {
    let (top, bottom) = (top - 8.0, bottom + 8.0);
    for (i, spans) in lanes.iter_mut().enumerate() {
        if spans.iter().all(|&(a, b)| bottom < a || top > b) {
            spans.push((top, bottom));
            return i;
        }
    }
    lanes.push(vec![(top, bottom)]);
    lanes.len() - 1
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Renders the graph as a standalone SVG document, coloured by the overlay when one is given.
pub fn render(graph: &Graph, overlay: Option<&Overlay>) -> String {
    let laid = layout(&graph.root, overlay);
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
.sfn-graph .edge text { font-size: 10px; fill: #3c4043; paint-order: stroke; stroke: #ffffff; stroke-width: 3px; }
.sfn-graph .edge.catch text { fill: #d93025; }
</style>
"#;

fn draw(c: &Cluster, laid: &Laid, ox: f64, oy: f64, overlay: Option<&Overlay>, out: &mut String) {
    let abs = |r: &Rect| Rect {
        x: r.x + ox,
        y: r.y + oy,
        ..*r
    };
    // Edges under the boxes.
    for (k, e) in c.edges.iter().enumerate() {
        let a = abs(&laid.boxes[e.from]);
        let b = abs(&laid.boxes[e.to]);
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
        let class = format!("edge{kind}{covered}");
        let _ = write!(
            out,
            r#"<g class="{class}" data-from="{}" data-to="{}">"#,
            c.nodes[e.from].id, c.nodes[e.to].id
        );
        if coverage == Some(EdgeCoverage::Missed) {
            out.push_str("<title>not taken by any execution</title>");
        }
        let (path, lx, ly) = if laid.back[k] {
            let x = laid.back_x[k] + ox;
            let y1 = a.y + a.h / 2.0;
            let y2 = b.y + b.h / 2.0;
            (
                format!(
                    "M{:.1},{y1:.1} H{x:.1} V{y2:.1} H{:.1}",
                    a.x + a.w,
                    b.x + b.w
                ),
                x,
                (y1 + y2) / 2.0,
            )
        } else if let Some(x) = laid.route[k] {
            let x = x + ox;
            let (x1, y1) = (a.cx(), a.y + a.h);
            let (x2, y2) = (b.cx(), b.y);
            let bend = (GAP_Y / 2.0).min((y2 - y1) / 3.0);
            (
                format!(
                    "M{x1:.1},{y1:.1} C{x1:.1},{:.1} {x:.1},{y1:.1} {x:.1},{:.1} V{:.1} C{x:.1},{y2:.1} {x2:.1},{:.1} {x2:.1},{y2:.1}",
                    y1 + bend,
                    y1 + bend,
                    y2 - bend,
                    y2 - bend
                ),
                x,
                y1 + bend + 10.0,
            )
        } else {
            let (x1, y1) = (a.cx(), a.y + a.h);
            let (x2, y2) = (b.cx(), b.y);
            let dy = (y2 - y1) / 2.0;
            (
                format!(
                    "M{x1:.1},{y1:.1} C{x1:.1},{:.1} {x2:.1},{:.1} {x2:.1},{y2:.1}",
                    y1 + dy,
                    y2 - dy
                ),
                (x1 + x2) / 2.0,
                (y1 + y2) / 2.0,
            )
        };
        let _ = write!(out, r#"<path d="{path}" marker-end="url(#arrow)"/>"#);
        if let Some(label) = &e.label {
            let _ = write!(
                out,
                r#"<text x="{lx:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                ly + 3.0,
                esc(label)
            );
        }
        out.push_str("</g>\n");
    }
    for (i, node) in c.nodes.iter().enumerate() {
        let r = abs(&laid.boxes[i]);
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
        shape(node.kind, &r, out);
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
        for (child, (dx, dy, inner)) in node.children.iter().zip(&laid.inner[i]) {
            let (x, y) = (r.x + dx, r.y + dy);
            let _ = writeln!(
                out,
                r#"<rect class="cluster" data-cluster="{}" x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" rx="6"/><text class="cluster-label" x="{:.1}" y="{:.1}">{}</text>"#,
                child.id,
                inner.w,
                inner.h,
                x + 6.0,
                y - 4.0,
                esc(&child.label)
            );
            draw(child, inner, x, y, overlay, out);
        }
    }
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
