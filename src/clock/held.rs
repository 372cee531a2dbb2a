//! Outside work whose result an execution waits for (a `--task` command, a Lambda handler, an
//! HTTP call): under a virtual clock, time stands still while it runs, and the results come
//! back one at a time, in the order the work started, each when the clock's executions have
//! settled. Go's `testing/synctest` and Temporal's test server hold time the same way while an
//! activity runs: a history then depends on what the work returned, never on how long it took
//! in wall time or on which of two pieces of work finished first.
//!
//! Each piece of work is a numbered unit of its clock's [`Turns`], numbered when it starts
//! (in an order the execution decides, so the same in every run). A unit holds the clock (no
//! jump, no deadline fires) while it runs within its limit and while its result waits for its
//! turn; the first unit whose result is in gets the turn when nothing else of the clock is
//! running, and no unit gets it while an earlier one still runs within its limit. The limit
//! is the Task's `TimeoutSeconds`: work that runs past it in wall time stops holding, so the
//! clock moves on and the Task times out at its virtual deadline. Work with no
//! `TimeoutSeconds` that does not end by itself (a command) holds for [`HOLD_PATIENCE`] at
//! most; a Lambda handler, which its function's `Timeout` ends, holds until it ends.
//!
//! Workers (a `--task` worker answering a token, a managed handler that heartbeats) are not
//! units: their answers come through the store, and time flows while they run
//! ([`super::Busy::external`]). Off a virtual clock a unit is plain outside work.

use super::activity::{Activity, Busy};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// How long work with no `TimeoutSeconds` that does not end by itself holds a virtual clock:
/// past it, time moves again, as it does while a worker runs (a command that never ends
/// must not freeze a test, and work that waits for the clock's own executions, such as
/// code calling `serve` back, must not wait for itself).
pub const HOLD_PATIENCE: Duration = Duration::from_secs(10);

thread_local! {
    /// The activity of the virtual clock whose execution this thread is polling.
    static POLLING: RefCell<Option<Arc<Activity>>> = const { RefCell::new(None) };
    /// The `TimeoutSeconds` of the Task attempt this thread is polling (`None` outside one,
    /// `Some(None)` for one without).
    static BUDGET: Cell<Option<Option<Duration>>> = const { Cell::new(None) };
}

/// Runs `f` with `activity` as the clock of the execution being polled (for [`outside`]).
pub(super) fn polling<R>(activity: &Arc<Activity>, f: impl FnOnce() -> R) -> R {
    let before = POLLING.replace(Some(activity.clone()));
    let result = f();
    POLLING.set(before);
    result
}

/// `fut`, the attempt of a Task whose `TimeoutSeconds` is `budget`: outside work it starts
/// holds a virtual clock no longer than that in wall time.
pub fn within_budget<F: Future>(budget: Option<Duration>, fut: F) -> Budgeted<F> {
    Budgeted {
        budget,
        inner: Box::pin(fut),
    }
}

/// A Task attempt's future, made by [`within_budget`].
pub struct Budgeted<F> {
    budget: Option<Duration>,
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for Budgeted<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let before = BUDGET.replace(Some(self.budget));
        let polled = self.inner.as_mut().poll(cx);
        BUDGET.set(before);
        polled
    }
}

/// Outside work that may not end by itself (a command, an HTTP call): see the module's
/// overview.
pub fn outside<F: Future>(fut: F) -> Outside<F> {
    Outside::new(fut, false)
}

/// Outside work that ends by itself within a bound of its own (a Lambda handler and its
/// function's `Timeout`): it holds a virtual clock until it ends, or past the Task's
/// `TimeoutSeconds`.
pub fn outside_bounded<F: Future>(fut: F) -> Outside<F> {
    Outside::new(fut, true)
}

/// A piece of outside work, made by [`outside`] or [`outside_bounded`].
pub struct Outside<F: Future> {
    inner: Pin<Box<F>>,
    bounded: bool,
    place: Place,
    output: Option<F::Output>,
}

// The output is never pinned: it is moved out whole.
impl<F: Future> Unpin for Outside<F> {}

/// Where a piece of outside work stands with its clock.
enum Place {
    /// Not polled yet.
    New,
    /// Off a virtual clock: time flows while it runs (the guard counts it).
    Flowing { _busy: Busy },
    /// A unit of a virtual clock's turns.
    Held { activity: Arc<Activity>, unit: u64 },
    /// Its result was handed on.
    Done,
}

impl<F: Future> Outside<F> {
    fn new(fut: F, bounded: bool) -> Self {
        Outside {
            inner: Box::pin(fut),
            bounded,
            place: Place::New,
            output: None,
        }
    }

    /// How long the unit may hold its clock in wall time (`None`: until it ends).
    fn limit(&self) -> Option<Duration> {
        match BUDGET.get().flatten() {
            Some(budget) => Some(budget),
            None if self.bounded => None,
            None => Some(HOLD_PATIENCE),
        }
    }

    fn start(&mut self) {
        self.place = match POLLING.with_borrow(Clone::clone) {
            Some(activity) => {
                let unit = activity.turns().start(self.limit());
                Place::Held { activity, unit }
            }
            None => Place::Flowing {
                _busy: Busy::external(),
            },
        };
    }
}

impl<F: Future> Future for Outside<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        if matches!(this.place, Place::New) {
            this.start();
        }
        if this.output.is_none() {
            let Poll::Ready(output) = this.inner.as_mut().poll(cx) else {
                return Poll::Pending;
            };
            let Place::Held { activity, unit } = &this.place else {
                this.place = Place::Done;
                return Poll::Ready(output);
            };
            activity.turns().finish(*unit, cx.waker());
            this.output = Some(output);
        }
        let Place::Held { activity, unit } = &this.place else {
            return Poll::Pending;
        };
        if !activity.turns().take(*unit, cx.waker()) {
            return Poll::Pending;
        }
        this.place = Place::Done;
        this.output.take().map_or(Poll::Pending, Poll::Ready)
    }
}

impl<F: Future> Drop for Outside<F> {
    fn drop(&mut self) {
        if let Place::Held { activity, unit } = &self.place {
            activity.turns().remove(*unit);
            // The clock may have waited for this unit (a Task's timeout dropped it).
            activity.ring();
        }
    }
}

/// The outside work of one virtual clock's executions (see the module's overview).
#[derive(Debug, Default)]
pub(crate) struct Turns {
    next: u64,
    units: BTreeMap<u64, Unit>,
}

#[derive(Debug)]
struct Unit {
    started: Instant,
    limit: Option<Duration>,
    finished: bool,
    granted: bool,
    waker: Option<Waker>,
}

/// What a clock's outside work lets it do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Nothing holds it.
    Free,
    /// This unit's result may be handed on.
    Grant(u64),
    /// Work holds it; look again after this long at the latest.
    Hold(Duration),
}

impl Turns {
    /// No work.
    pub(crate) const fn new() -> Turns {
        Turns {
            next: 0,
            units: BTreeMap::new(),
        }
    }

    fn start(&mut self, limit: Option<Duration>) -> u64 {
        self.next += 1;
        let unit = Unit {
            started: Instant::now(),
            limit,
            finished: false,
            granted: false,
            waker: None,
        };
        self.units.insert(self.next, unit);
        self.next
    }

    fn finish(&mut self, unit: u64, waker: &Waker) {
        if let Some(u) = self.units.get_mut(&unit) {
            u.finished = true;
            u.waker = Some(waker.clone());
        }
    }

    /// True (and the unit forgotten) when it got its turn; else its waker is kept.
    fn take(&mut self, unit: u64, waker: &Waker) -> bool {
        match self.units.get_mut(&unit) {
            Some(u) if u.granted => {
                self.units.remove(&unit);
                true
            }
            Some(u) => {
                u.waker = Some(waker.clone());
                false
            }
            None => true,
        }
    }

    fn remove(&mut self, unit: u64) {
        self.units.remove(&unit);
    }

    /// What the work lets the clock do at `now` (wall time).
    pub(crate) fn look(&self, now: Instant) -> Turn {
        for (id, unit) in &self.units {
            if unit.granted {
                continue;
            }
            if unit.finished {
                return Turn::Grant(*id);
            }
            let ran = now.saturating_duration_since(unit.started);
            match unit.limit {
                // Past its limit: it neither holds the clock nor keeps later work waiting.
                Some(limit) if ran >= limit => continue,
                Some(limit) => return Turn::Hold(limit - ran),
                None => return Turn::Hold(Duration::from_secs(1)),
            }
        }
        Turn::Free
    }

    /// Gives `unit` its turn; returns the waker to wake (outside the lock).
    pub(crate) fn grant(&mut self, unit: u64) -> Option<Waker> {
        let u = self.units.get_mut(&unit)?;
        u.granted = true;
        u.waker.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_handed_on_in_the_order_the_work_started() {
        let mut turns = Turns::new();
        let now = Instant::now();
        let (first, second) = (
            turns.start(None),
            turns.start(Some(Duration::from_secs(60))),
        );
        turns.finish(second, Waker::noop());
        assert_eq!(
            turns.look(now),
            Turn::Hold(Duration::from_secs(1)),
            "the second waits while the first runs"
        );
        turns.finish(first, Waker::noop());
        assert_eq!(turns.look(now), Turn::Grant(first));
        turns.grant(first);
        assert!(turns.take(first, Waker::noop()));
        assert_eq!(turns.look(now), Turn::Grant(second));
    }

    #[test]
    fn work_past_its_limit_neither_holds_nor_blocks() {
        let mut turns = Turns::new();
        let slow = turns.start(Some(Duration::from_millis(10)));
        let quick = turns.start(Some(Duration::from_secs(60)));
        let later = Instant::now() + Duration::from_millis(20);
        assert!(
            matches!(turns.look(later), Turn::Hold(_)),
            "quick still runs"
        );
        turns.finish(quick, Waker::noop());
        assert_eq!(turns.look(later), Turn::Grant(quick));
        turns.remove(quick);
        assert_eq!(turns.look(later), Turn::Free, "slow timed out: {slow}");
    }
}
