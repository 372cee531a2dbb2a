//! Stage 3, place: each item's x, and each layer's band of y.
//!
//! Every layer in turn, down then up, is pulled towards its neighbours: each item wants its
//! anchor at the weighted mean of its neighbours' anchors in the layer just placed (then, to
//! settle, in both adjacent layers), and the layer keeps its order and its gaps. Keeping order with the least squared distance to what
//! each item wants is isotonic regression, solved exactly by pooling adjacent violators. Links
//! between dummies weigh most, so long edges run straight (dot's weights: 1, 2 and 8).

use super::rank::{ItemKind, Layered};
use super::{CHANNEL, PAD};

/// Rounds of a sweep down and a sweep up.
const ROUNDS: usize = 8;

/// Where the items are.
pub(super) struct Placed {
    /// Per item, its left side.
    pub x: Vec<f64>,
    /// Per layer, its top.
    pub band_top: Vec<f64>,
    /// Per layer, its height (its tallest item's).
    pub band_height: Vec<f64>,
    /// The cluster's width, margins included.
    pub width: f64,
    /// The cluster's height, margins included.
    pub height: f64,
}

/// Places every item of `l`.
pub(super) fn place(l: &Layered) -> Placed {
    let (up, down) = weighted_neighbours(l);
    let mut x = vec![0.0; l.items.len()];
    for r in 0..l.layers.len() {
        align(l, r, &[], &mut x);
    }
    for _ in 0..ROUNDS {
        for r in 1..l.layers.len() {
            align(l, r, &up, &mut x);
        }
        for r in (0..l.layers.len().saturating_sub(1)).rev() {
            align(l, r, &down, &mut x);
        }
    }
    // Then both sides at once: each layer's step lowers the sum of weighted squared lengths, so
    // what one-sided sweeps leave drifting (a label beside a chain of states) settles.
    let both: Weighted = up
        .iter()
        .zip(&down)
        .map(|(u, d)| u.iter().chain(d).copied().collect())
        .collect();
    for _ in 0..ROUNDS {
        for r in 0..l.layers.len() {
            align(l, r, &both, &mut x);
        }
        for r in (0..l.layers.len()).rev() {
            align(l, r, &both, &mut x);
        }
    }
    let left = x.iter().copied().fold(f64::INFINITY, f64::min);
    x.iter_mut().for_each(|v| *v += PAD - left);
    let right = (0..x.len())
        .map(|i| x[i] + l.items[i].w)
        .fold(0.0, f64::max);
    let band_height: Vec<f64> = l
        .layers
        .iter()
        .map(|layer| layer.iter().map(|&i| l.items[i].h).fold(0.0, f64::max))
        .collect();
    let mut band_top = Vec::with_capacity(band_height.len());
    let mut y = PAD;
    for h in &band_height {
        band_top.push(y);
        y += h + CHANNEL;
    }
    Placed {
        x,
        band_top,
        band_height,
        width: right + PAD,
        height: y - CHANNEL + PAD,
    }
}

/// Per item, its linked items above and below, each with the link's weight.
type Weighted = Vec<Vec<(usize, f64)>>;

fn weighted_neighbours(l: &Layered) -> (Weighted, Weighted) {
    let mut up = vec![Vec::new(); l.items.len()];
    let mut down = vec![Vec::new(); l.items.len()];
    // A label's place weighs as a node: it joins a shared trunk from the side, and a pull as
    // strong as the trunk's own would bend the trunk towards every join.
    let is_point = |i: usize| matches!(l.items[i].kind, ItemKind::Dummy(_));
    for link in &l.links {
        let weight = match (!is_point(link.upper), !is_point(link.lower)) {
            (true, true) => 1.0,
            (false, false) => 8.0,
            _ => 2.0,
        };
        up[link.lower].push((link.upper, weight));
        down[link.upper].push((link.lower, weight));
    }
    (up, down)
}

/// Places layer `r` as near as its order and gaps allow to where its items want to be: their
/// neighbours' mean on the side given (an empty `side`: packed from 0).
fn align(l: &Layered, r: usize, side: &[Vec<(usize, f64)>], x: &mut [f64]) {
    let layer = &l.layers[r];
    let mut offsets = Vec::with_capacity(layer.len());
    let (mut wanted, mut weights) = (Vec::new(), Vec::new());
    let mut offset = 0.0;
    for (p, &i) in layer.iter().enumerate() {
        let item = &l.items[i];
        let near = side.get(i).map_or(&[][..], Vec::as_slice);
        let total: f64 = near.iter().map(|n| n.1).sum();
        let want = match near.is_empty() {
            // No neighbour on this side: stay (weakly) where it is.
            true => (x[i], 1e-3),
            false => {
                let mean = near
                    .iter()
                    .map(|&(j, w)| (x[j] + l.items[j].anchor) * w)
                    .sum::<f64>()
                    / total;
                (mean - item.anchor, total)
            }
        };
        offsets.push(offset);
        wanted.push(want.0 - offset);
        weights.push(want.1);
        if let Some(&next) = layer.get(p + 1) {
            offset += item.w + item.gap(&l.items[next]);
        }
    }
    let fitted = isotonic(&wanted, &weights);
    for (p, &i) in layer.iter().enumerate() {
        x[i] = fitted[p] + offsets[p];
    }
}

/// The non-decreasing sequence nearest to `values` in weighted least squares (pool adjacent
/// violators).
fn isotonic(values: &[f64], weights: &[f64]) -> Vec<f64> {
    // Blocks of pooled values: (mean, weight, how many).
    let mut blocks: Vec<(f64, f64, usize)> = Vec::with_capacity(values.len());
    for (&v, &w) in values.iter().zip(weights) {
        blocks.push((v, w, 1));
        while blocks.len() > 1 && blocks[blocks.len() - 2].0 > blocks[blocks.len() - 1].0 {
            let (v2, w2, n2) = blocks.pop().unwrap();
            let last = blocks.last_mut().unwrap();
            let w = last.1 + w2;
            *last = ((last.0 * last.1 + v2 * w2) / w, w, last.2 + n2);
        }
    }
    blocks
        .iter()
        .flat_map(|&(v, _, n)| std::iter::repeat_n(v, n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::isotonic;

    #[test]
    fn isotonic_pools_what_is_out_of_order() {
        assert_eq!(
            isotonic(&[1.0, 3.0, 2.0, 4.0], &[1.0; 4]),
            [1.0, 2.5, 2.5, 4.0]
        );
        assert_eq!(isotonic(&[5.0, 1.0], &[3.0, 1.0]), [4.0, 4.0]);
    }
}
