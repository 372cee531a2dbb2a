//! Stage 1, rank: which edges go back up, each node's layer, and the chain of items each edge
//! runs through (its two ends and a dummy in every layer between them).

use super::{label_size, Rect, GAP_DUMMY, GAP_X, LOOP};
use crate::graph::Cluster;

/// What an item of a layer stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ItemKind {
    /// The cluster's node at this index.
    Node(usize),
    /// A point of the edge at this index, in a layer it crosses.
    Dummy(usize),
    /// The place of the label of the edge at this index (the edge runs down its left side).
    Label(usize),
}

/// One item of a layer: a node, or a dummy of a long edge.
#[derive(Debug, Clone)]
pub(super) struct Item {
    /// What it stands for.
    pub kind: ItemKind,
    /// Its layer.
    pub layer: usize,
    /// The width it takes in its layer.
    pub w: f64,
    /// Its height.
    pub h: f64,
    /// Where its edges attach, from its left side.
    pub anchor: f64,
}

impl Item {
    /// The room to keep between this item and the next one in its layer.
    pub fn gap(&self, next: &Item) -> f64 {
        match (self.kind, next.kind) {
            (ItemKind::Node(_), ItemKind::Node(_)) => GAP_X,
            (ItemKind::Node(_), _) | (_, ItemKind::Node(_)) => GAP_DUMMY * 1.6,
            _ => GAP_DUMMY,
        }
    }
}

/// An edge's items from the top layer down; `reversed` when the edge goes back up.
#[derive(Debug, Clone)]
pub(super) struct Chain {
    /// Item indexes, one per layer, top first.
    pub items: Vec<usize>,
    /// Whether the edge runs from the bottom of the chain to its top.
    pub reversed: bool,
}

/// A link between two items of adjacent layers: one step of an edge's chain.
#[derive(Debug, Clone, Copy)]
pub(super) struct Link {
    /// The item in the upper layer.
    pub upper: usize,
    /// The item in the lower layer.
    pub lower: usize,
    /// The edge it belongs to.
    pub edge: usize,
}

/// A cluster as layers of items: nodes first (item `i` is node `i`), then dummies.
#[derive(Debug, Clone)]
pub(super) struct Layered {
    /// Every item.
    pub items: Vec<Item>,
    /// Per layer, its items in order from left to right.
    pub layers: Vec<Vec<usize>>,
    /// Per edge, its chain; `None` for an edge from a node to itself.
    pub chains: Vec<Option<Chain>>,
    /// Every link of every chain.
    pub links: Vec<Link>,
}

/// Ranks a cluster whose nodes have these boxes, its edges these label lines.
pub(super) fn rank(
    c: &Cluster,
    boxes: &[Rect],
    labels: &[Vec<String>],
) -> Result<Layered, TooLarge> {
    let back = back_edges(c);
    let layer = layers(c, &back, labels);
    let mut items: Vec<Item> = boxes
        .iter()
        .enumerate()
        .map(|(i, b)| Item {
            kind: ItemKind::Node(i),
            layer: layer[i],
            w: b.w + loop_room(c, i, labels),
            h: b.h,
            anchor: b.w / 2.0,
        })
        .collect();
    let chains = chains(c, &back, &layer, labels, &mut items)?;
    let mut layers = vec![Vec::new(); layer.iter().max().map_or(1, |m| m + 1)];
    for (i, item) in items.iter().enumerate() {
        layers[item.layer].push(i);
    }
    let links = links(&chains);
    Ok(Layered {
        items,
        layers,
        chains,
        links,
    })
}

/// Past this many dummies in one scope, long edges into the same node share theirs (they join
/// one trunk, as dot's `concentrate` draws them): a hundred states that all catch into one
/// handler would otherwise need a dummy per state per layer.
const SHARE_ABOVE: usize = 20_000;
/// The most items one scope may have, dummies shared, and the most layers its edges may cross
/// in all (each crossing is a piece of a path); past either the picture is not laid out.
const MOST_ITEMS: usize = 100_000;
const MOST_CROSSED: usize = 500_000;

/// A scope too large to lay out: the items it would need.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TooLarge(pub usize);

/// Every edge's chain, its dummies added to `items` (shared between edges into one node when
/// there would be too many).
fn chains(
    c: &Cluster,
    back: &[bool],
    layer: &[usize],
    labels: &[Vec<String>],
    items: &mut Vec<Item>,
) -> Result<Vec<Option<Chain>>, TooLarge> {
    let ends = |k: usize| match back[k] {
        true => (c.edges[k].to, c.edges[k].from),
        false => (c.edges[k].from, c.edges[k].to),
    };
    let needed: usize = (0..c.edges.len())
        .map(&ends)
        .map(|(top, bottom)| layer[bottom].saturating_sub(layer[top] + 1))
        .sum();
    if needed > MOST_CROSSED {
        return Err(TooLarge(needed));
    }
    let share = needed > SHARE_ABOVE;
    let mut trunks: std::collections::HashMap<(usize, usize), usize> = Default::default();
    let mut chains = Vec::with_capacity(c.edges.len());
    for (k, e) in c.edges.iter().enumerate() {
        if e.from == e.to {
            chains.push(None);
            continue;
        }
        let (top, bottom) = ends(k);
        let mut chain = vec![top];
        for r in layer[top] + 1..layer[bottom] {
            // The label sits next to the edge's source: under it, or over it going back up.
            let label_here = match back[k] {
                true => r + 1 == layer[bottom],
                false => r == layer[top] + 1,
            } && !labels[k].is_empty();
            let fresh = items.len();
            let at = match share && !label_here {
                true => *trunks.entry((bottom, r)).or_insert(fresh),
                false => fresh,
            };
            if at == fresh {
                items.push(dummy(k, r, label_here, &labels[k]));
            }
            if items.len() > MOST_ITEMS {
                return Err(TooLarge(needed));
            }
            chain.push(at);
        }
        chain.push(bottom);
        chains.push(Some(Chain {
            items: chain,
            reversed: back[k],
        }));
    }
    Ok(chains)
}

/// Room right of node `i` for its edges back to itself, and their labels.
fn loop_room(c: &Cluster, i: usize, labels: &[Vec<String>]) -> f64 {
    c.edges
        .iter()
        .enumerate()
        .filter(|(_, e)| e.from == i && e.to == i)
        .map(|(k, _)| LOOP + label_size(&labels[k]).0)
        .fold(0.0, f64::max)
}

/// A dummy of edge `k` in layer `r`: the label's place when it is the one next to the source.
fn dummy(k: usize, r: usize, label_here: bool, label: &[String]) -> Item {
    if label_here {
        let (w, h) = label_size(label);
        return Item {
            kind: ItemKind::Label(k),
            layer: r,
            w: w + 8.0,
            h,
            anchor: 3.0,
        };
    }
    Item {
        kind: ItemKind::Dummy(k),
        layer: r,
        w: 6.0,
        h: 0.0,
        anchor: 3.0,
    }
}

/// The links of every chain, once each (edges that share dummies share links).
fn links(chains: &[Option<Chain>]) -> Vec<Link> {
    let mut seen = std::collections::HashSet::new();
    let mut links = Vec::new();
    for (edge, chain) in chains.iter().enumerate() {
        for pair in chain.iter().flat_map(|c| c.items.windows(2)) {
            if seen.insert((pair[0], pair[1])) {
                links.push(Link {
                    upper: pair[0],
                    lower: pair[1],
                    edge,
                });
            }
        }
    }
    links
}

/// Per edge, whether it goes back up: into a node still on the depth-first stack, searching
/// from the start marker first.
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

/// Each node's layer: the longest path to it over the edges turned the way they point down, a
/// labelled edge counting two (its label gets the layer between).
fn layers(c: &Cluster, back: &[bool], labels: &[Vec<String>]) -> Vec<usize> {
    let n = c.nodes.len();
    // The edges as they point down, with their least span; loops left out.
    let down: Vec<(usize, usize, usize)> = c
        .edges
        .iter()
        .enumerate()
        .filter(|(_, e)| e.from != e.to)
        .map(|(k, e)| {
            let span = if labels[k].is_empty() { 1 } else { 2 };
            match back[k] {
                true => (e.to, e.from, span),
                false => (e.from, e.to, span),
            }
        })
        .collect();
    // Kahn's order, then the longest path along it.
    let mut indegree = vec![0usize; n];
    for &(_, v, _) in &down {
        indegree[v] += 1;
    }
    let mut order: Vec<usize> = (0..n).filter(|&u| indegree[u] == 0).collect();
    let mut at = 0;
    while at < order.len() {
        let u = order[at];
        at += 1;
        for &(_, v, _) in down.iter().filter(|d| d.0 == u) {
            indegree[v] -= 1;
            if indegree[v] == 0 {
                order.push(v);
            }
        }
    }
    let mut layer = vec![0usize; n];
    for &u in &order {
        for &(_, v, span) in down.iter().filter(|d| d.0 == u) {
            layer[v] = layer[v].max(layer[u] + span);
        }
    }
    layer
}
