//! Stage 2, order: each layer's items from left to right, with as few crossings as the
//! heuristics find: barycentre sweeps (each item moved to the mean position of its neighbours
//! in the layer just ordered), alternately down and up, each followed by transpositions of
//! neighbours that cross less swapped; the best order seen is kept. The sweeps start from a few
//! first orders, since a long edge on the wrong side needs many swaps at once to move.

use super::rank::Layered;

/// Sweeps down and up this many times (dot's default is 24; these graphs are small).
const SWEEPS: usize = 16;
/// At most this many passes of transpositions after a sweep.
const TRANSPOSE_PASSES: usize = 24;

/// Orders every layer of `l` in place: sweeps from each of a few first orders, the best kept.
pub(super) fn order(l: &mut Layered) {
    let (up, down) = neighbours(l);
    let mut best: Option<(usize, Vec<Vec<usize>>)> = None;
    for start in first_orders(l, &down) {
        l.layers = start;
        let found = sweeps(l, &up, &down);
        if best.as_ref().is_none_or(|b| found.0 < b.0) {
            best = Some(found);
        }
    }
    l.layers = best.map(|b| b.1).unwrap_or_default();
}

/// The orders the sweeps start from: as ranked, its mirror, and the orders in which
/// depth-first searches down from the top (children first to last, and last to first) meet
/// the items.
fn first_orders(l: &Layered, down: &[Vec<usize>]) -> Vec<Vec<Vec<usize>>> {
    let mirrored = l
        .layers
        .iter()
        .map(|r| r.iter().rev().copied().collect())
        .collect();
    let mut orders = vec![l.layers.clone(), mirrored];
    for backwards in [false, true] {
        let mut layers = vec![Vec::new(); l.layers.len()];
        let mut seen = vec![false; l.items.len()];
        let roots: Vec<usize> = l.layers.iter().flatten().copied().collect();
        for root in roots {
            let mut stack = vec![root];
            while let Some(i) = stack.pop() {
                if std::mem::replace(&mut seen[i], true) {
                    continue;
                }
                layers[l.items[i].layer].push(i);
                let next = down[i].iter().copied();
                match backwards {
                    true => stack.extend(next),
                    false => stack.extend(next.rev()),
                }
            }
        }
        orders.push(layers);
    }
    orders
}

/// Barycentre sweeps with transpositions from the current order: the fewest crossings seen, and
/// the order that had them.
fn sweeps(l: &mut Layered, up: &[Vec<usize>], down: &[Vec<usize>]) -> (usize, Vec<Vec<usize>>) {
    let mut best = (crossings(l), l.layers.clone());
    let mut pos = positions(l);
    for sweep in 0..SWEEPS {
        if best.0 == 0 {
            break;
        }
        let going_down = sweep % 2 == 0;
        let rows: Vec<usize> = match going_down {
            true => (1..l.layers.len()).collect(),
            false => (0..l.layers.len().saturating_sub(1)).rev().collect(),
        };
        for r in rows {
            sort_by_barycentre(l, r, if going_down { up } else { down }, &mut pos);
        }
        transpose(l, up, down, &mut pos);
        let now = crossings(l);
        if now < best.0 {
            best = (now, l.layers.clone());
        }
    }
    best
}

/// Per item, its linked items in the layer above and in the layer below.
fn neighbours(l: &Layered) -> (Vec<Vec<usize>>, Vec<Vec<usize>>) {
    let mut up = vec![Vec::new(); l.items.len()];
    let mut down = vec![Vec::new(); l.items.len()];
    for link in &l.links {
        up[link.lower].push(link.upper);
        down[link.upper].push(link.lower);
    }
    (up, down)
}

/// Each item's index within its layer.
fn positions(l: &Layered) -> Vec<usize> {
    let mut pos = vec![0; l.items.len()];
    for layer in &l.layers {
        for (p, &i) in layer.iter().enumerate() {
            pos[i] = p;
        }
    }
    pos
}

/// Layer `r` sorted by the mean position of each item's neighbours in `fixed`; an item without
/// any keeps its place. `pos` follows.
fn sort_by_barycentre(l: &mut Layered, r: usize, fixed: &[Vec<usize>], pos: &mut [usize]) {
    let mut keyed: Vec<(f64, usize)> = l.layers[r]
        .iter()
        .map(|&i| {
            let n = &fixed[i];
            let key = match n.is_empty() {
                true => pos[i] as f64,
                false => n.iter().map(|&j| pos[j] as f64).sum::<f64>() / n.len() as f64,
            };
            (key, i)
        })
        .collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
    l.layers[r] = keyed.into_iter().map(|(_, i)| i).collect();
    for (p, &i) in l.layers[r].iter().enumerate() {
        pos[i] = p;
    }
}

/// Crossings between the links of `a` and of `b` (in the same layer, `a` left of `b`) to the
/// layer on one side (`side` lists each item's neighbours there).
fn pair_crossings(a: usize, b: usize, side: &[Vec<usize>], pos: &[usize]) -> usize {
    let mut n = 0;
    for &x in &side[a] {
        n += side[b].iter().filter(|&&y| pos[y] < pos[x]).count();
    }
    n
}

/// Swaps neighbours of a layer while that crosses less, until no swap helps.
fn transpose(l: &mut Layered, up: &[Vec<usize>], down: &[Vec<usize>], pos: &mut [usize]) {
    for _ in 0..TRANSPOSE_PASSES {
        let mut improved = false;
        for layer in &mut l.layers {
            for p in 0..layer.len().saturating_sub(1) {
                let (a, b) = (layer[p], layer[p + 1]);
                let now = pair_crossings(a, b, up, pos) + pair_crossings(a, b, down, pos);
                let swapped = pair_crossings(b, a, up, pos) + pair_crossings(b, a, down, pos);
                if swapped < now {
                    layer.swap(p, p + 1);
                    (pos[a], pos[b]) = (pos[b], pos[a]);
                    improved = true;
                }
            }
        }
        if !improved {
            break;
        }
    }
}

/// Crossings between links of adjacent layers, over the whole cluster: per layer, its links
/// sorted by their upper ends, and the pairs whose lower ends are in the other order counted
/// with a Fenwick tree (links that share an end never cross).
pub(super) fn crossings(l: &Layered) -> usize {
    let pos = positions(l);
    let mut by_layer: Vec<Vec<(usize, usize)>> = vec![Vec::new(); l.layers.len()];
    for link in &l.links {
        by_layer[l.items[link.upper].layer].push((pos[link.upper], pos[link.lower]));
    }
    let mut n = 0;
    for (r, mut pairs) in by_layer.into_iter().enumerate() {
        pairs.sort_unstable();
        let width = l.layers.get(r + 1).map_or(0, Vec::len);
        // tree[i]: how many lower ends seen so far in a range ending at i (1-based).
        let mut tree = vec![0usize; width + 1];
        for (seen, &(_, lower)) in pairs.iter().enumerate() {
            // Seen so far with a lower end at or left of this one.
            let (mut at, mut not_right) = (lower + 1, 0);
            while at > 0 {
                not_right += tree[at];
                at &= at - 1;
            }
            n += seen - not_right;
            let mut at = lower + 1;
            while at <= width {
                tree[at] += 1;
                at += at & at.wrapping_neg();
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::super::rank::{Item, ItemKind, Layered, Link};
    use super::*;

    /// Two layers of `n` items each, linked as `pairs` says (upper index, lower index).
    fn two_layers(n: usize, pairs: &[(usize, usize)]) -> Layered {
        let item = |layer: usize| Item {
            kind: ItemKind::Dummy(0),
            layer,
            w: 6.0,
            h: 0.0,
            anchor: 3.0,
        };
        Layered {
            items: (0..2 * n).map(|i| item(i / n)).collect(),
            layers: vec![(0..n).collect(), (n..2 * n).collect()],
            chains: Vec::new(),
            links: pairs
                .iter()
                .map(|&(upper, lower)| Link {
                    upper,
                    lower: n + lower,
                    edge: 0,
                })
                .collect(),
        }
    }

    /// The Fenwick count is the pair-by-pair count: pairs whose ends are in opposite orders,
    /// links that share an end never crossing.
    #[test]
    fn crossings_are_counted_as_pairs_in_opposite_orders() {
        let mut seed = 7u64;
        for _ in 0..200 {
            let mut next = |m: usize| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (seed >> 33) as usize % m
            };
            let n = 1 + next(6);
            let pairs: Vec<(usize, usize)> = (0..next(12)).map(|_| (next(n), next(n))).collect();
            let mut brute = 0;
            for (i, a) in pairs.iter().enumerate() {
                for b in &pairs[i + 1..] {
                    brute += usize::from((a.0 < b.0 && a.1 > b.1) || (a.0 > b.0 && a.1 < b.1));
                }
            }
            assert_eq!(crossings(&two_layers(n, &pairs)), brute, "{pairs:?}");
        }
    }
}
