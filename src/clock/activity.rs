//! What a virtual clock waits for before it may jump: work in flight.
//!
//! Time may skip ahead only when nothing can happen before the next deadline (Temporal's
//! time-skipping server and Go's `testing/synctest` draw the same line). Two counters, one
//! per process, say what is happening:
//!
//! - **internal** work: an execution's future that was woken and has not finished its poll
//!   ([`Tracked`]), a write queued for the store's writer thread ([`Busy::internal`]). While
//!   any is in flight a virtual clock stands still, so the same run gives the same history.
//! - **external** work: a child process, an HTTP call, a Lambda handler ([`Busy::external`]).
//!   Its answer comes in wall time, so while any runs an automatic virtual clock lets time
//!   flow at wall speed (Temporal does the same while an activity runs), and deadlines that
//!   come due meanwhile fire as they would on AWS.
//!
//! The counters are plain atomics; a virtual clock's driver sleeps on [`GATE`] and is told
//! when a counter falls to zero, so counting costs a real-time run two atomic operations.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// Internal work in flight (see the module's overview).
static INTERNAL: AtomicUsize = AtomicUsize::new(0);

/// The lock virtual clocks' drivers sleep under, with the wall time spent on external work.
pub(super) static GATE: Mutex<ExternalTime> = Mutex::new(ExternalTime {
    running: 0,
    since: None,
    total: Duration::ZERO,
});

/// Signalled when work ends or a deadline arrives (under [`GATE`]).
pub(super) static CHANGED: Condvar = Condvar::new();

/// External work, and how much wall time has passed while any ran.
#[derive(Debug)]
pub(super) struct ExternalTime {
    running: usize,
    since: Option<Instant>,
    total: Duration,
}

impl ExternalTime {
    /// The wall time during which external work ran, up to now.
    pub(super) fn elapsed(&self) -> Duration {
        self.total + self.since.map_or(Duration::ZERO, |s| s.elapsed())
    }

    /// True when external work is running (an automatic virtual clock flows).
    pub(super) fn flowing(&self) -> bool {
        self.running > 0
    }

    /// True when nothing at all is in flight: the moment a virtual clock may jump.
    pub(super) fn idle(&self) -> bool {
        self.running == 0 && INTERNAL.load(Ordering::SeqCst) == 0
    }
}

/// The gate, whatever a panicking holder left behind (the counters stay meaningful).
pub(super) fn gate() -> MutexGuard<'static, ExternalTime> {
    GATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Tells sleeping drivers to look again.
pub(super) fn notify() {
    let _gate = gate();
    CHANGED.notify_all();
}

/// Waits up to `patience` until nothing is in flight; true if that moment came.
pub fn wait_idle(patience: Duration) -> bool {
    let until = Instant::now() + patience;
    let mut g = gate();
    loop {
        if g.idle() {
            return true;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        g = CHANGED
            .wait_timeout(g, left)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}

/// Work in flight, for as long as the guard lives.
#[must_use = "the work counts only while the guard lives"]
#[derive(Debug)]
pub struct Busy {
    external: bool,
}

impl Busy {
    /// Work inside this process that a virtual clock waits for (a store write).
    pub fn internal() -> Busy {
        INTERNAL.fetch_add(1, Ordering::SeqCst);
        Busy { external: false }
    }

    /// Work outside this process (a child process, an HTTP call): time flows meanwhile.
    pub fn external() -> Busy {
        let mut g = gate();
        if g.running == 0 {
            g.since = Some(Instant::now());
        }
        g.running += 1;
        Busy { external: true }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if self.external {
            let mut g = gate();
            g.running -= 1;
            if g.running == 0 {
                if let Some(since) = g.since.take() {
                    g.total += since.elapsed();
                }
            }
            CHANGED.notify_all();
        } else {
            internal_done();
        }
    }
}

fn internal_done() {
    if INTERNAL.fetch_sub(1, Ordering::SeqCst) == 1 {
        notify();
    }
}

/// Runs `fut` as an external piece of work (see [`Busy::external`]).
pub async fn external<T>(fut: impl Future<Output = T>) -> T {
    let _busy = Busy::external();
    fut.await
}

/// A future counted as internal work from the moment it is woken until its poll ends, so a
/// virtual clock never jumps while it could still act. Made by [`tracked`].
pub struct Tracked<F> {
    inner: Pin<Box<F>>,
    waker: Option<Arc<TrackedWaker>>,
}

/// Wraps an execution's future (or any future whose progress a virtual clock must wait for).
/// With `track` false it is a plain box: a real clock pays nothing.
pub fn tracked<F: Future>(fut: F, track: bool) -> Tracked<F> {
    let waker = track.then(|| {
        // Counted from the start: a new future is about to be polled.
        INTERNAL.fetch_add(1, Ordering::SeqCst);
        Arc::new(TrackedWaker {
            state: AtomicU8::new(WOKEN),
            inner: Mutex::new(None),
        })
    });
    Tracked {
        inner: Box::pin(fut),
        waker,
    }
}

const IDLE: u8 = 0;
const WOKEN: u8 = 1;
const DONE: u8 = 2;

/// The waker handed to a tracked future: counts a wake once, then passes it on.
struct TrackedWaker {
    state: AtomicU8,
    inner: Mutex<Option<Waker>>,
}

impl Wake for TrackedWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self
            .state
            .compare_exchange(IDLE, WOKEN, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            INTERNAL.fetch_add(1, Ordering::SeqCst);
        }
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(w) = inner {
            w.wake();
        }
    }
}

impl<F: Future> Future for Tracked<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let Some(tracker) = self.waker.clone() else {
            return self.inner.as_mut().poll(cx);
        };
        {
            let mut inner = tracker.inner.lock().unwrap_or_else(|p| p.into_inner());
            if !inner.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *inner = Some(cx.waker().clone());
            }
        }
        // The count this poll consumes stays held until the poll ends; a wake meanwhile
        // counts anew, for the poll it schedules.
        let was = tracker.state.swap(IDLE, Ordering::SeqCst);
        let waker = Waker::from(tracker.clone());
        let polled = self.inner.as_mut().poll(&mut Context::from_waker(&waker));
        if polled.is_ready() && tracker.state.swap(DONE, Ordering::SeqCst) == WOKEN {
            internal_done();
        }
        if was == WOKEN {
            internal_done();
        }
        polled
    }
}

impl<F> Drop for Tracked<F> {
    fn drop(&mut self) {
        if let Some(tracker) = &self.waker {
            if tracker.state.swap(DONE, Ordering::SeqCst) == WOKEN {
                internal_done();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state<F>(t: &Tracked<F>) -> u8 {
        t.waker.as_ref().unwrap().state.load(Ordering::SeqCst)
    }

    // The counters are the process's, shared with tests running beside this one: the
    // tracker's own state says what it counts.
    #[test]
    fn a_tracked_future_counts_while_runnable_and_not_while_it_waits() {
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let mut task = tracked(
            std::future::poll_fn(move |cx| Pin::new(&mut rx).poll(cx)),
            true,
        );
        assert_eq!(state(&task), WOKEN, "counted before its first poll");
        let noop = Waker::noop();
        let mut cx = Context::from_waker(noop);
        assert!(Pin::new(&mut task).poll(&mut cx).is_pending());
        assert_eq!(
            state(&task),
            IDLE,
            "waiting on the channel is not work in flight"
        );
        tx.send(()).unwrap();
        assert_eq!(state(&task), WOKEN, "woken: in flight until its poll ends");
        assert!(Pin::new(&mut task).poll(&mut cx).is_ready());
        assert_eq!(state(&task), DONE);
    }

    #[test]
    fn external_work_accumulates_wall_time_only_while_it_runs() {
        let before = gate().elapsed();
        {
            let _busy = Busy::external();
            assert!(gate().flowing());
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(gate().elapsed() >= before + Duration::from_millis(5));
    }
}
