//! SVG drawn by sfn-local itself, no Graphviz needed: a layered (Sugiyama-style) layout of each
//! scope, nested for Parallel branches and Map processors.
//!
//! Why our own layout: the layered-layout crates lay out flat graphs, and this picture is nested
//! (a Parallel's box holds its branches, each a graph of its own). The nesting makes the job
//! small: each scope is laid out alone, inner scopes first, and a compound state is just a larger
//! box to its parent. Per scope: back edges found by a depth-first search from the start, layers
//! by longest path, order in a layer by the mean position of the predecessors (one sweep down),
//! boxes placed left to right without overlap.
//!
//! Nothing collides by construction: boxes sit in layers, and between two layers runs a
//! *channel* that holds no box. An edge leaves its source's bottom, runs sideways only inside
//! channels, and enters its target's top; an edge that skips layers (or goes back up) runs down
//! (or up) a *lane* right of every box. Every labelled edge has a track of its own in the
//! channel under its source, and its label sits on that track, so no label meets a box or
//! another label. Each edge label says where it is (`data-box`), as each state does.

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

/// A laid-out cluster: its size, each node's box, each compound node's inner clusters, and each
/// edge's route.
struct Laid {
    w: f64,
    h: f64,
    boxes: Vec<Rect>,
    /// Per node: its inner clusters with their offsets inside the node's box.
    inner: Vec<Inner>,
    /// Per edge: its route.
    routes: Vec<Route>,
}

/// A compound node's inner clusters, each with its offset inside the node's box.
type Inner = Vec<(f64, f64, Laid)>;

/// An edge's way: an orthogonal polyline, and where its label sits.
#[derive(Debug, Clone, Default)]
struct Route {
    points: Vec<(f64, f64)>,
    label: Option<Rect>,
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

/// Font sizes and the width a character is taken to need (generous for Helvetica, so a label's
/// box holds its text).
const LABEL_SIZE: f64 = 10.0;
const TRACK: f64 = 14.0;

fn label_width(label: &str) -> f64 {
    label.chars().count() as f64 * LABEL_SIZE * 0.62 + 4.0
}

fn layout(c: &Cluster, overlay: Option<&Overlay>) -> Laid {
    let (mut boxes, inner) = size_boxes(c, overlay);
    let back = back_edges(c);
    let (rank, layers) = layers(c, &back);
    place_in_layers(c, &back, &layers, &mut boxes);
    let tracks = Tracks::assign(c, &back, &rank, layers.len());
    let tops = stack_layers(&layers, &tracks, &mut boxes);
    let mut routes = route_edges(c, &rank, &tracks, &tops, &boxes);
    // Shift everything right of the padding, labels included.
    let min_x = boxes
        .iter()
        .map(|b| b.x)
        .chain(routes.iter().filter_map(|r| r.label.map(|l| l.x)))
        .fold(f64::INFINITY, f64::min);
    let dx = PAD - min_x;
    for b in &mut boxes {
        b.x += dx;
    }
    for r in &mut routes {
        r.points.iter_mut().for_each(|p| p.0 += dx);
        if let Some(l) = &mut r.label {
            l.x += dx;
        }
    }
    let right = boxes
        .iter()
        .map(|b| b.x + b.w)
        .chain(routes.iter().flat_map(|r| r.points.iter().map(|p| p.0)))
        .chain(routes.iter().filter_map(|r| r.label.map(|l| l.x + l.w)))
        .fold(0.0, f64::max);
    Laid {
        w: right + PAD,
        h: tops[layers.len()] + tracks.height(layers.len()) + PAD,
        boxes,
        inner,
        routes,
    }
}

/// Each node's size (inner clusters laid out first), and the inner clusters' places.
fn size_boxes(c: &Cluster, overlay: Option<&Overlay>) -> (Vec<Rect>, Vec<Inner>) {
    let mut boxes = vec![Rect::default(); c.nodes.len()];
    let mut inner: Vec<Inner> = Vec::with_capacity(c.nodes.len());
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
    (boxes, inner)
}

/// Per edge, whether it goes back up: into a node still on the depth-first stack.
fn back_edges(c: &Cluster) -> Vec<bool> {
    let n = c.nodes.len();
    let out_edges = out_edges(c);
    let mut back = vec![false; c.edges.len()];
    let mut mark = vec![0u8; n]; // 0 new, 1 on stack, 2 done
    for root in 0..n {
        if mark[root] != 0 {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        mark[root] = 1;
        while let Some((u, next)) = stack.pop() {
            let Some(&k) = out_edges[u].get(next) else {
                mark[u] = 2;
                continue;
            };
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
        }
    }
    back
}

fn out_edges(c: &Cluster) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); c.nodes.len()];
    for (k, e) in c.edges.iter().enumerate() {
        out[e.from].push(k);
    }
    out
}

/// Each node's layer by the longest path over forward edges (the end marker last), and the
/// layers' nodes in a topological order.
fn layers(c: &Cluster, back: &[bool]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let n = c.nodes.len();
    let out_edges = out_edges(c);
    // Kahn's order over forward edges.
    let mut indegree = vec![0usize; n];
    for (k, e) in c.edges.iter().enumerate() {
        if !back[k] {
            indegree[e.to] += 1;
        }
    }
    let mut order: Vec<usize> = (0..n).filter(|&u| indegree[u] == 0).collect();
    let mut at = 0;
    while at < order.len() {
        let u = order[at];
        at += 1;
        for &k in &out_edges[u] {
            let v = c.edges[k].to;
            if !back[k] {
                indegree[v] -= 1;
                if indegree[v] == 0 {
                    order.push(v);
                }
            }
        }
    }
    let mut rank = vec![0usize; n];
    for &u in &order {
        for &k in &out_edges[u] {
            if !back[k] {
                let v = c.edges[k].to;
                rank[v] = rank[v].max(rank[u] + 1);
            }
        }
    }
    let end = n - 1;
    rank[end] = (0..end).map(|i| rank[i]).max().unwrap_or(0) + 1;
    let mut layers: Vec<Vec<usize>> = vec![Vec::new(); rank[end] + 1];
    for &u in &order {
        layers[rank[u]].push(u);
    }
    (rank, layers)
}

/// Each box's x: layer by layer, under the mean centre of its predecessors, never touching.
fn place_in_layers(c: &Cluster, back: &[bool], layers: &[Vec<usize>], boxes: &mut [Rect]) {
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); c.nodes.len()];
    for (k, e) in c.edges.iter().enumerate() {
        if !back[k] && e.from != e.to {
            preds[e.to].push(e.from);
        }
    }
    for layer in layers {
        let mut want: Vec<(f64, usize)> = layer
            .iter()
            .map(|&u| {
                let centres: Vec<f64> = preds[u].iter().map(|&p| boxes[p].cx()).collect();
                let mean = centres.iter().sum::<f64>() / centres.len().max(1) as f64;
                (mean, u)
            })
            .collect();
        want.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total: f64 =
            want.iter().map(|&(_, u)| boxes[u].w).sum::<f64>() + GAP_X * (want.len() as f64 - 1.0);
        let mean = want.iter().map(|w| w.0).sum::<f64>() / want.len().max(1) as f64;
        let mut x = mean - total / 2.0;
        let mut right = f64::NEG_INFINITY;
        for &(wanted, u) in &want {
            let left = if want.len() == 1 {
                wanted - boxes[u].w / 2.0
            } else {
                x
            };
            let left = left.max(right + GAP_X);
            boxes[u].x = left;
            right = left + boxes[u].w;
            x = right + GAP_X;
        }
    }
}

/// The channels between layers (channel `r` is above layer `r`; the last is below the last
/// layer) and each edge's tracks in them: one under its source, and for an edge that skips
/// layers or goes back up, one above its target.
struct Tracks {
    /// Per channel, how many tracks it holds.
    count: Vec<usize>,
    /// Per edge: its track in the channel under its source, and the one above its target.
    edge: Vec<(usize, Option<usize>)>,
}

impl Tracks {
    fn assign(c: &Cluster, back: &[bool], rank: &[usize], layers: usize) -> Tracks {
        let mut count = vec![0usize; layers + 1];
        let mut take = |channel: usize| {
            count[channel] += 1;
            count[channel] - 1
        };
        let edge = c
            .edges
            .iter()
            .enumerate()
            .map(|(k, e)| {
                let under = take(rank[e.from] + 1);
                let detour = back[k] || rank[e.to] > rank[e.from] + 1;
                (under, detour.then(|| take(rank[e.to])))
            })
            .collect();
        Tracks { count, edge }
    }

    /// A channel's height: room for its tracks, at least the gap between layers.
    fn height(&self, channel: usize) -> f64 {
        let least = if channel == 0 { PAD } else { GAP_Y };
        (TRACK * (self.count[channel] as f64 + 1.0)).max(least)
    }

    /// The y of a track, from its channel's top.
    fn y(&self, channel: usize, track: usize) -> f64 {
        // Tracks spread over the channel, the first one a label's height down.
        let step = self.height(channel) / (self.count[channel] as f64 + 1.0);
        step * (track as f64 + 1.0)
    }
}

/// Each layer's top (and the last channel's), channels included; boxes centred in their layer.
fn stack_layers(layers: &[Vec<usize>], tracks: &Tracks, boxes: &mut [Rect]) -> Vec<f64> {
    let mut tops = Vec::with_capacity(layers.len() + 1);
    let mut y = 0.0;
    for (r, layer) in layers.iter().enumerate() {
        y += tracks.height(r);
        tops.push(y);
        let layer_h = layer.iter().map(|&u| boxes[u].h).fold(0.0, f64::max);
        for &u in layer {
            boxes[u].y = y + (layer_h - boxes[u].h) / 2.0;
        }
        y += layer_h;
    }
    // The channel under the last layer starts here.
    tops.push(y);
    tops
}

/// Every edge's route: down from its source into the channel under it, sideways there, down
/// into its target; an edge that skips layers or goes back up runs along a lane right of
/// every box between two channels.
fn route_edges(
    c: &Cluster,
    rank: &[usize],
    tracks: &Tracks,
    tops: &[f64],
    boxes: &[Rect],
) -> Vec<Route> {
    let max_right = boxes.iter().map(|b| b.x + b.w).fold(0.0, f64::max);
    // Channel `r` ends where layer `r` starts; the last one starts under the last layer.
    let last = tops.len() - 1;
    let channel_top = |r: usize| match r == last {
        true => tops[last],
        false => tops[r] - tracks.height(r),
    };
    let mut lanes = Vec::new();
    c.edges
        .iter()
        .enumerate()
        .map(|(k, e)| {
            let (a, b) = (boxes[e.from], boxes[e.to]);
            let (under, above) = tracks.edge[k];
            let out_channel = rank[e.from] + 1;
            let y1 = channel_top(out_channel) + tracks.y(out_channel, under);
            let mut points = vec![(a.cx(), a.y + a.h), (a.cx(), y1)];
            let turn_x = match above {
                Some(t) => {
                    let y2 = channel_top(rank[e.to]) + tracks.y(rank[e.to], t);
                    let lane_i = lane(&mut lanes, y1.min(y2), y1.max(y2));
                    let x = max_right + GAP_X / 2.0 + BACK_EDGE_STEP * lane_i as f64;
                    points.extend([(x, y1), (x, y2), (b.cx(), y2)]);
                    x
                }
                None => {
                    points.push((b.cx(), y1));
                    b.cx()
                }
            };
            points.push((b.cx(), b.y));
            let label = e.label.as_deref().map(|l| {
                let w = label_width(l);
                // On its own track, over the first sideways run.
                let mid = (a.cx() + turn_x) / 2.0;
                Rect {
                    x: mid - w / 2.0,
                    y: y1 - LABEL_SIZE - 1.0,
                    w,
                    h: LABEL_SIZE + 2.0,
                }
            });
            Route { points, label }
        })
        .collect()
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

/// One edge: its path, its label on its track, its coverage class.
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
    let mut path = String::new();
    for (i, (x, y)) in route.points.iter().enumerate() {
        let command = if i == 0 { 'M' } else { 'L' };
        let _ = write!(path, "{command}{:.1},{:.1} ", x + ox, y + oy);
    }
    let _ = write!(
        out,
        r#"<path d="{}" marker-end="url(#arrow)"/>"#,
        path.trim_end()
    );
    if let (Some(label), Some(at)) = (&e.label, route.label) {
        let (x, y) = (at.x + ox, at.y + oy);
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" data-box="{x:.1} {y:.1} {:.1} {:.1}">{}</text>"#,
            x + at.w / 2.0,
            y + LABEL_SIZE - 1.0,
            at.w,
            at.h,
            esc(label)
        );
    }
    out.push_str("</g>\n");
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
