//! Stage 4, route: each edge's way. An edge leaves its source's bottom (or, going back up, its
//! top) at a port of its own, spread along the side in the order of where the edges go, so the
//! edges of one node never cross each other. In a layer it runs straight down its item's column
//! (a box's, or its dummy's), where nothing else stands; it changes column only in the channels
//! between layers, along a curve that starts and ends vertically. Two such curves across one
//! channel cross only when their ends are in opposite orders, so the drawing has exactly the
//! crossings the order stage left.

use super::place::Placed;
use super::rank::{ItemKind, Layered, Link};
use super::{Rect, Route, Seg, LOOP};
use crate::graph::Cluster;

/// Most room between two ports of a side.
const PORT_STEP: f64 = 18.0;

/// Every edge's route (labels are placed by the next stage).
pub(super) fn route(c: &Cluster, l: &Layered, placed: &Placed, boxes: &[Rect]) -> Vec<Route> {
    let ports = ports(l, placed, boxes);
    let band_bottom = |r: usize| placed.band_top[r] + placed.band_height[r];
    let link_of: std::collections::HashMap<(usize, usize), usize> = l
        .links
        .iter()
        .enumerate()
        .map(|(m, link)| ((link.upper, link.lower), m))
        .collect();
    let mut routes = Vec::with_capacity(c.edges.len());
    for (k, chain) in l.chains.iter().enumerate() {
        let Some(chain) = chain else {
            routes.push(self_loop(&boxes[c.edges[k].from]));
            continue;
        };
        let (top, bottom) = (chain.items[0], *chain.items.last().unwrap());
        let first_port = ports[link_of[&(top, chain.items[1])]].0;
        let mut route = Route {
            start: (first_port, boxes[top].y + boxes[top].h),
            ..Route::default()
        };
        let layer_of = |i: usize| l.items[i].layer;
        line_to(&mut route, (first_port, band_bottom(layer_of(top))));
        for pair in chain.items.windows(2) {
            let lower = pair[1];
            let (x0, x1) = ports[link_of[&(pair[0], lower)]];
            let (y0, y1) = (
                band_bottom(layer_of(lower) - 1),
                placed.band_top[layer_of(lower)],
            );
            let mid = (y0 + y1) / 2.0;
            route.segs.push(Seg::Curve((x0, mid), (x1, mid), (x1, y1)));
            let end = match lower == bottom {
                true => boxes[bottom].y,
                false => band_bottom(layer_of(lower)),
            };
            line_to(&mut route, (x1, end));
        }
        routes.push(if chain.reversed {
            reversed(&route)
        } else {
            route
        });
    }
    routes
}

/// Per link (in the order of [`Layered::links`]): the x where it leaves its upper item, and the
/// x where it enters its lower one.
fn ports(l: &Layered, placed: &Placed, boxes: &[Rect]) -> Vec<(f64, f64)> {
    let anchor = |i: usize| placed.x[i] + l.items[i].anchor;
    let mut below: Vec<Vec<usize>> = vec![Vec::new(); l.items.len()];
    let mut above: Vec<Vec<usize>> = vec![Vec::new(); l.items.len()];
    for (m, link) in l.links.iter().enumerate() {
        below[link.upper].push(m);
        above[link.lower].push(m);
    }
    let mut ports = vec![(0.0, 0.0); l.links.len()];
    for i in 0..l.items.len() {
        // Two links between the same items keep their edges' order at both ends.
        let by = |end: fn(&Link) -> usize| {
            move |&a: &usize, &b: &usize| {
                let (la, lb) = (&l.links[a], &l.links[b]);
                anchor(end(la))
                    .total_cmp(&anchor(end(lb)))
                    .then(la.edge.cmp(&lb.edge))
            }
        };
        below[i].sort_by(by(|link| link.lower));
        above[i].sort_by(by(|link| link.upper));
        let spread = |j: usize, n: usize| match l.items[i].kind {
            ItemKind::Node(node) => {
                let span = (boxes[node].w - 24.0).max(0.0);
                let step = if n > 1 {
                    (span / (n - 1) as f64).min(PORT_STEP)
                } else {
                    0.0
                };
                boxes[node].cx() + (j as f64 - (n - 1) as f64 / 2.0) * step
            }
            _ => anchor(i),
        };
        for (j, &m) in below[i].iter().enumerate() {
            ports[m].0 = spread(j, below[i].len());
        }
        for (j, &m) in above[i].iter().enumerate() {
            ports[m].1 = spread(j, above[i].len());
        }
    }
    ports
}

/// Appends a straight piece to `to`, unless the route is there already.
fn line_to(route: &mut Route, to: (f64, f64)) {
    let at = match route.segs.last() {
        Some(Seg::Line(p)) | Some(Seg::Curve(_, _, p)) => *p,
        None => route.start,
    };
    if at != to {
        route.segs.push(Seg::Line(to));
    }
}

/// The same way walked the other way round.
fn reversed(route: &Route) -> Route {
    let mut points = vec![route.start];
    points.extend(route.segs.iter().map(|s| match s {
        Seg::Line(p) | Seg::Curve(_, _, p) => *p,
    }));
    let segs = route
        .segs
        .iter()
        .enumerate()
        .rev()
        .map(|(i, s)| match *s {
            Seg::Line(_) => Seg::Line(points[i]),
            Seg::Curve(a, b, _) => Seg::Curve(b, a, points[i]),
        })
        .collect();
    Route {
        start: *points.last().unwrap(),
        segs,
        label: None,
    }
}

/// An edge from a box back to itself: a loop off its right side.
fn self_loop(b: &Rect) -> Route {
    let (right, cy) = (b.x + b.w, b.y + b.h / 2.0);
    let out = right + LOOP - 4.0;
    Route {
        start: (right, cy - 6.0),
        segs: vec![Seg::Curve(
            (out, cy - 18.0),
            (out, cy + 18.0),
            (right, cy + 6.0),
        )],
        label: None,
    }
}
