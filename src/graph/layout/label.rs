//! Stage 5, label: each edge label beside its edge, in the place its label dummy took in its
//! layer (the edge runs down that place's left side), or right of a loop. Nothing else stands
//! there, so a label meets no box, no other label and no other edge.

use super::place::Placed;
use super::rank::{ItemKind, Layered};
use super::{label_size, Rect, Route, LOOP};
use crate::graph::Cluster;

/// Sets each labelled edge's label box in its route.
pub(super) fn place_labels(
    c: &Cluster,
    l: &Layered,
    placed: &Placed,
    boxes: &[Rect],
    labels: &[Vec<String>],
    routes: &mut [Route],
) {
    for (i, item) in l.items.iter().enumerate() {
        let ItemKind::Label(k) = item.kind else {
            continue;
        };
        let (w, h) = label_size(&labels[k]);
        let r = item.layer;
        routes[k].label = Some(Rect {
            x: placed.x[i] + 8.0,
            y: placed.band_top[r] + (placed.band_height[r] - h) / 2.0,
            w,
            h,
        });
    }
    for (k, e) in c.edges.iter().enumerate() {
        if e.from == e.to && !labels[k].is_empty() {
            let (w, h) = label_size(&labels[k]);
            let b = boxes[e.from];
            routes[k].label = Some(Rect {
                x: b.x + b.w + LOOP,
                y: b.y + (b.h - h) / 2.0,
                w,
                h,
            });
        }
    }
}
