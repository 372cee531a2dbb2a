//! The layered layout of [`super::svg`]'s pictures, in the stages of Sugiyama's method as
//! Graphviz's `dot` runs them, one file each:
//!
//! 1. [`rank`]: back edges found by a depth-first search from the start marker are turned
//!    around, and each node gets a layer by the longest path (a labelled edge spans two layers,
//!    so its label has a layer of its own to sit in); an edge that spans several layers becomes
//!    a chain through one *dummy* per layer it crosses.
//! 2. [`order`]: the order within each layer, by barycentre sweeps down and up with adjacent
//!    transpositions, keeping the order with the fewest crossings.
//! 3. [`place`]: each item's x (every layer in turn pulled towards its neighbours' mean, kept in
//!    order and apart by isotonic regression) and each layer's band of y.
//! 4. [`route`]: each edge's way, through ports spread on its ends and the dummies' columns,
//!    curving only in the channels between layers, where no box or label stands.
//! 5. [`label`]: each label beside its edge, in its label dummy's place.
//!
//! Why our own layout: the layered-layout crates lay out flat graphs, and this picture is nested
//! (a Parallel's box holds its branches, each a graph of its own), with labels that must own
//! their place. The nesting keeps the job small: each scope is laid out alone, inner scopes
//! first, and a compound state is just a larger box to its parent.

mod label;
mod order;
mod place;
mod rank;
mod route;

use super::overlay::Overlay;
use super::svg::{detail_lines, edge_label_lines, label_width, text_width};
use super::Cluster;

/// Space between two boxes of a layer.
const GAP_X: f64 = 28.0;
/// Space between a dummy and its neighbours in a layer.
const GAP_DUMMY: f64 = 10.0;
/// Height of the channel between two layers, where edges change column.
const CHANNEL: f64 = 40.0;
/// Margin around a cluster's content.
const PAD: f64 = 16.0;
/// Height of a compound box's title (its first line).
const HEADER: f64 = 52.0;
/// Start and end markers' diameter.
const MARKER: f64 = 20.0;
/// A line of text in a box, and a line of an edge label.
const LINE: f64 = 14.0;
/// Room right of a box for an edge that loops back to it.
const LOOP: f64 = 26.0;

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
    /// The centre's x.
    pub fn cx(&self) -> f64 {
        self.x + self.w / 2.0
    }
}

/// A laid-out cluster: its size, each node's box, each compound node's inner clusters, and each
/// edge's route.
pub(super) struct Laid {
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
    /// Per node: its box.
    pub boxes: Vec<Rect>,
    /// Per node: its inner clusters with their offsets inside the node's box.
    pub inner: Vec<Inner>,
    /// Per edge: its route.
    pub routes: Vec<Route>,
}

/// A compound node's inner clusters, each with its offset inside the node's box.
pub(super) type Inner = Vec<(f64, f64, Laid)>;

/// A piece of an edge's path, from where the previous one ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Seg {
    /// A straight line to this point.
    Line((f64, f64)),
    /// A cubic Bézier curve: two control points, then where it ends.
    Curve((f64, f64), (f64, f64), (f64, f64)),
}

/// An edge's way (a start and its pieces), and where its label sits.
#[derive(Debug, Clone, Default)]
pub(super) struct Route {
    /// Where the edge leaves its source.
    pub start: (f64, f64),
    /// The pieces, in order; the last ends at the target.
    pub segs: Vec<Seg>,
    /// The label's box, if the edge has a label.
    pub label: Option<Rect>,
}

pub(super) use rank::TooLarge;

/// Lays out one cluster (its inner clusters first), unless one of them is too large to.
pub(super) fn layout(c: &Cluster, overlay: Option<&Overlay>) -> Result<Laid, TooLarge> {
    let (mut boxes, inner) = size_boxes(c, overlay)?;
    let labels: Vec<Vec<String>> = c
        .edges
        .iter()
        .map(|e| edge_label_lines(c, e, overlay))
        .collect();
    let mut layered = rank::rank(c, &boxes, &labels)?;
    order::order(&mut layered);
    let placed = place::place(&layered);
    for (i, b) in boxes.iter_mut().enumerate() {
        b.x = placed.x[i];
        b.y = placed.band_top[layered.items[i].layer]
            + (placed.band_height[layered.items[i].layer] - b.h) / 2.0;
    }
    let mut routes = route::route(c, &layered, &placed, &boxes);
    label::place_labels(c, &layered, &placed, &boxes, &labels, &mut routes);
    Ok(Laid {
        w: placed.width,
        h: placed.height,
        boxes,
        inner,
        routes,
    })
}

/// Each node's size (inner clusters laid out first), and the inner clusters' places.
fn size_boxes(c: &Cluster, overlay: Option<&Overlay>) -> Result<(Vec<Rect>, Vec<Inner>), TooLarge> {
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
                let laid = layout(child, overlay)?;
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
    Ok((boxes, inner))
}

/// The size of a label of these lines.
fn label_size(lines: &[String]) -> (f64, f64) {
    let w = lines.iter().map(|l| label_width(l)).fold(0.0, f64::max);
    (w, LINE * lines.len() as f64)
}
