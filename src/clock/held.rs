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
//! most, and then counts as a worker does: time flows at wall speed while it runs (a jump
//! could skip past a deadline the work would have met). A Lambda handler, which its
//! function's `Timeout` ends, holds until it ends, but past the patience no longer keeps later
//! results waiting (its code may be waiting for them).
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

/// How long work with no `TimeoutSeconds` that does not end by itself holds a virtual clock
/// unless `SFN_LOCAL_HOLD_PATIENCE_MS` says otherwise (tests shorten it): past it, time flows
/// again, as it does while a worker runs (a command that never ends must not freeze a test,
/// and work that waits for the clock's own executions, such as code calling `serve` back, must
/// not wait for itself).
pub const HOLD_PATIENCE: Duration = Duration::from_secs(10);

/// The patience in force (see [`HOLD_PATIENCE`]).
fn hold_patience() -> Duration {
    static PATIENCE: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *PATIENCE.get_or_init(|| {
        std::env::var("SFN_LOCAL_HOLD_PATIENCE_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(HOLD_PATIENCE, Duration::from_millis)
    })
}

thread_local! {
    /// The activity of the virtual clock whose execution this thread is polling.
    static POLLING: RefCell<Option<Arc<Activity>>> = const { RefCell::new(None) };
    /// The `TimeoutSeconds` of the Task attempt this thread is polling (`None` outside one,
    /// `Some(None)` for one without).
    static BUDGET: Cell<Option<Option<Duration>>> = const { Cell::new(None) };
}

/// Runs `f` with `activity` as the clock of the execution being polled (for [`outside`]).
pub(super) fn polling<R>(activity: &Arc<Activity>, f: impl FnOnce() -> R) -> R {
    let _restore = Restore::Polling(POLLING.replace(Some(activity.clone())));
    f()
}

/// Puts a thread-local back as it was when dropped, even by a panicking poll: a stale clock or
/// budget must not reach the next future this thread polls.
enum Restore {
    Polling(Option<Arc<Activity>>),
    Budget(Option<Option<Duration>>),
}

impl Drop for Restore {
    fn drop(&mut self) {
        match self {
            Restore::Polling(before) => POLLING.set(before.take()),
            Restore::Budget(before) => BUDGET.set(*before),
        }
    }
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
        let _restore = Restore::Budget(BUDGET.replace(Some(self.budget)));
        self.inner.as_mut().poll(cx)
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

    fn start(&mut self) {
        self.place = match POLLING.with_borrow(Clone::clone) {
            Some(activity) => {
                let budget = BUDGET.get().flatten();
                let unit = activity.turns().start(budget, self.bounded);
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
        if !activity.turns().granted(*unit, cx.waker()) {
            return Poll::Pending;
        }
        // Dropped once the lock is released: a flowing unit's guard rings the clocks.
        let removed = activity.turns().remove(*unit);
        drop(removed);
        this.place = Place::Done;
        this.output.take().map_or(Poll::Pending, Poll::Ready)
    }
}

impl<F: Future> Drop for Outside<F> {
    fn drop(&mut self) {
        if let Place::Held { activity, unit } = &self.place {
            let removed = activity.turns().remove(*unit);
            drop(removed);
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
pub(crate) struct Unit {
    started: Instant,
    /// The Task's `TimeoutSeconds`: past it, the unit neither holds the clock nor keeps later
    /// work waiting.
    budget: Option<Duration>,
    /// For work with no budget that may not end by itself: past it, the unit counts as a
    /// worker (`flowing`).
    patience: Option<Duration>,
    /// Past its patience: time flows while it runs.
    flowing: Option<Busy>,
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

    /// A new unit, for a Task whose `TimeoutSeconds` is `budget`; `bounded` work ends by itself.
    fn start(&mut self, budget: Option<Duration>, bounded: bool) -> u64 {
        self.next += 1;
        let unit = Unit {
            started: Instant::now(),
            budget,
            patience: (budget.is_none() && !bounded).then(hold_patience),
            flowing: None,
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

    /// True when the unit got its turn (or is gone); else its waker is kept.
    fn granted(&mut self, unit: u64, waker: &Waker) -> bool {
        match self.units.get_mut(&unit) {
            Some(u) if !u.granted => {
                u.waker = Some(waker.clone());
                false
            }
            _ => true,
        }
    }

    /// Forgets a unit; the caller drops it once the lock is released.
    fn remove(&mut self, unit: u64) -> Option<Unit> {
        self.units.remove(&unit)
    }

    /// What the work lets the clock do at `now` (wall time). A unit found past its patience
    /// starts counting as a worker here. A Lambda handler (bounded, no budget) running past the
    /// patience still holds the clock but no longer keeps later results waiting: its code may
    /// be waiting for them (a handler calling `serve` back, whose execution runs a handler).
    pub(crate) fn look(&mut self, now: Instant) -> Turn {
        let mut holding = None;
        for (id, unit) in &mut self.units {
            if unit.granted {
                continue;
            }
            if unit.finished {
                return Turn::Grant(*id);
            }
            let ran = now.saturating_duration_since(unit.started);
            match (unit.budget, unit.patience) {
                // Past its limit: it neither holds the clock nor keeps later work waiting.
                (Some(budget), _) if ran >= budget => continue,
                (Some(budget), _) => return Turn::Hold(budget - ran),
                (None, Some(patience)) if ran >= patience => {
                    unit.flowing.get_or_insert_with(Busy::external_unrung);
                    continue;
                }
                (None, Some(patience)) => return Turn::Hold(patience - ran),
                (None, None) if ran >= hold_patience() => {
                    holding = Some(Duration::from_secs(1));
                    continue;
                }
                (None, None) => return Turn::Hold(hold_patience() - ran),
            }
        }
        holding.map_or(Turn::Free, Turn::Hold)
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
        let first = turns.start(None, true);
        let second = turns.start(Some(Duration::from_secs(60)), false);
        turns.finish(second, Waker::noop());
        assert!(
            matches!(turns.look(now), Turn::Hold(_)),
            "the second waits while the first runs"
        );
        turns.finish(first, Waker::noop());
        assert_eq!(turns.look(now), Turn::Grant(first));
        turns.grant(first);
        assert!(turns.granted(first, Waker::noop()));
        turns.remove(first);
        assert_eq!(turns.look(now), Turn::Grant(second));
    }

    #[test]
    fn work_past_its_budget_neither_holds_nor_blocks() {
        let mut turns = Turns::new();
        let slow = turns.start(Some(Duration::from_millis(10)), false);
        let quick = turns.start(Some(Duration::from_secs(60)), false);
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

    // Regression (seen in review): a command with no TimeoutSeconds past the patience let the
    // clock jump to the next deadline (a machine's hour-long budget) while it still ran; it now
    // counts as a worker, and time flows at wall speed until it ends.
    #[test]
    fn work_past_its_patience_counts_as_a_worker_until_it_ends() {
        let mut turns = Turns::new();
        let unit = turns.start(None, false);
        let later = Instant::now() + hold_patience();
        assert_eq!(turns.look(later), Turn::Free);
        assert!(
            super::super::activity::gate().flowing(),
            "time flows while it runs"
        );
        assert!(turns.remove(unit).is_some_and(|u| u.flowing.is_some()));
    }

    // A handler calling `serve` back waits for an execution whose own handler started after
    // it: past the patience, the later result is handed on while the first still holds time.
    #[test]
    fn a_long_handler_holds_time_but_lets_later_results_through() {
        let mut turns = Turns::new();
        let calling_back = turns.start(None, true);
        let called = turns.start(None, true);
        turns.finish(called, Waker::noop());
        assert!(matches!(turns.look(Instant::now()), Turn::Hold(_)));
        let later = Instant::now() + hold_patience();
        assert_eq!(turns.look(later), Turn::Grant(called));
        turns.grant(called);
        drop(turns.remove(called));
        assert!(
            matches!(turns.look(later), Turn::Hold(_)),
            "still holds: {calling_back}"
        );
    }
}
