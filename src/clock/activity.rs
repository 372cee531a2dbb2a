//! What a virtual clock waits for before it may jump: work in flight.
//!
//! Time may skip ahead only when nothing can happen before the next deadline (Temporal's
//! time-skipping server and Go's `testing/synctest` draw the same line). Three counts say what
//! is happening:
//!
//! - each clock's own [`Activity`]: its executions' futures from the moment they are woken until
//!   their poll ends ([`Tracked`]). Clocks do not wait for each other's executions: `test` runs
//!   hundreds of cases side by side, each on a clock of its own.
//! - the process's internal work ([`Busy::internal`]): a write queued for the store's writer
//!   thread, an API request being answered. While any is in flight no clock jumps, so the same
//!   run gives the same history.
//! - the process's external work ([`Busy::external`]): a worker answering a token, a managed
//!   handler. Its answer comes through the store in wall time, so while any runs an automatic
//!   virtual clock lets time flow at wall speed, and deadlines that come due meanwhile fire as
//!   they would on AWS.
//! - each clock's outside work with a result (a command, a Lambda handler, an HTTP call): it
//!   holds its clock, and its results come back in turn ([`super::held`]).
//!
//! The counts are atomics; a clock's driver sleeps on its own [`Activity`] and is rung when one
//! of the counts it depends on falls to zero, so counting costs a real-time run two atomic
//! operations.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use super::held::{Turn, Turns};

/// Work in flight that one clock (or the process) waits for, and where its waiters sleep.
#[derive(Debug, Default)]
pub struct Activity {
    busy: AtomicUsize,
    lock: Mutex<()>,
    changed: Condvar,
    /// Its executions' outside work, which holds the clock (see [`super::held`]).
    turns: Mutex<Turns>,
}

impl Activity {
    const fn new() -> Activity {
        Activity {
            busy: AtomicUsize::new(0),
            lock: Mutex::new(()),
            changed: Condvar::new(),
            turns: Mutex::new(Turns::new()),
        }
    }

    /// Its executions' outside work.
    pub(super) fn turns(&self) -> MutexGuard<'_, Turns> {
        self.turns.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hands the result of the first outside work whose turn it is on, if any; true if it
    /// did. Only when nothing of the clock runs (see [`Readiness::Turn`]).
    pub(super) fn grant_turn(&self) -> bool {
        let mut turns = self.turns();
        // Looked at under the turns' lock, and the waker woken under it: a tracked waker
        // counts as work at once, so a second grant (the driver's and a `settle`'s) never
        // follows before the execution has dealt with this one.
        if self.busy.load(Ordering::SeqCst) > 0 || PROCESS.busy.load(Ordering::SeqCst) > 0 {
            return false;
        }
        let Turn::Grant(unit) = turns.look(Instant::now()) else {
            return false;
        };
        turns.grant(unit).into_iter().for_each(Waker::wake);
        true
    }

    /// A clock's activity, rung too when the process's work ends.
    pub(super) fn for_clock() -> Arc<Activity> {
        let activity = Arc::new(Activity::new());
        let mut clocks = CLOCKS.lock().unwrap_or_else(|p| p.into_inner());
        clocks.retain(|c| c.strong_count() > 0);
        clocks.push(Arc::downgrade(&activity));
        activity
    }

    fn enter(&self) {
        self.busy.fetch_add(1, Ordering::SeqCst);
    }

    /// True when the count fell to zero.
    fn leave(&self) -> bool {
        self.busy.fetch_sub(1, Ordering::SeqCst) == 1
    }

    /// Wakes whoever sleeps on this activity (taking its lock, so no wake is lost between a
    /// sleeper's look and its sleep).
    pub(super) fn ring(&self) {
        let _held = self.guard();
        self.changed.notify_all();
    }

    /// The lock a clock's driver looks under.
    pub(super) fn guard(&self) -> MutexGuard<'_, ()> {
        self.lock.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sleeps on this activity until rung or `timeout`.
    pub(super) fn sleep<'a>(
        &'a self,
        held: MutexGuard<'a, ()>,
        timeout: Duration,
    ) -> MutexGuard<'a, ()> {
        self.changed
            .wait_timeout(held, timeout)
            .unwrap_or_else(|p| p.into_inner())
            .0
    }

    /// Whether this clock may jump now: nothing it waits for is in flight, and work outside
    /// the process did not end just now.
    pub(super) fn readiness(&self) -> Readiness {
        if self.busy.load(Ordering::SeqCst) > 0 || PROCESS.busy.load(Ordering::SeqCst) > 0 {
            return Readiness::Working;
        }
        match self.turns().look(Instant::now()) {
            Turn::Grant(_) => return Readiness::Turn,
            Turn::Hold(left) => return Readiness::Held(left),
            Turn::Free => {}
        }
        let g = gate();
        if g.flowing() {
            return Readiness::Busy;
        }
        let Some(ago) = g.ended.map(|t| t.elapsed()) else {
            return Readiness::Idle;
        };
        if ago < EXTERNAL_SETTLE {
            return Readiness::Settling(EXTERNAL_SETTLE - ago);
        }
        // A store's watcher is looking for answers: wait for one whole look after the work
        // ended (two counted looks: the first may have begun before), however loaded the
        // machine, up to a bound.
        let unseen = WATCHING.load(Ordering::SeqCst) > 0
            && LOOKS.load(Ordering::SeqCst) < g.looks_at_end + 2;
        match unseen && ago < EXTERNAL_SETTLE_MAX {
            true => Readiness::Settling(Duration::from_millis(5)),
            false => Readiness::Idle,
        }
    }

    /// Waits until this clock may jump; true if that moment came. Work outside the process
    /// is waited for up to `patience`; work inside it up to [`INTERNAL_PATIENCE`] at least,
    /// however loaded the machine: a jump before it ends would come before what it does.
    pub fn wait_idle(&self, patience: Duration) -> bool {
        let start = Instant::now();
        let mut held = self.guard();
        loop {
            let (wait, patience) = match self.readiness() {
                Readiness::Idle => return true,
                Readiness::Settling(left) => (left, patience),
                Readiness::Working => (Duration::MAX, patience.max(INTERNAL_PATIENCE)),
                // Handed on here (or by the driver); the execution's end of work rings.
                Readiness::Turn => {
                    self.grant_turn();
                    (Duration::from_millis(10), patience.max(INTERNAL_PATIENCE))
                }
                Readiness::Held(left) => (left, patience.max(INTERNAL_PATIENCE)),
                Readiness::Busy => (Duration::MAX, patience),
            };
            let left = (start + patience).saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            held = self.sleep(held, left.min(wait));
        }
    }
}

/// Whether a clock may jump (see [`Activity::readiness`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Readiness {
    /// Work inside the process is in flight: this clock's executions, a write, an API
    /// request. Unlike work outside (a worker may never end), it always ends.
    Working,
    /// Nothing of the clock runs, and the result of outside work it holds for may be handed
    /// on (see [`super::held`]).
    Turn,
    /// Outside work holds the clock, for this long at most unless it ends.
    Held(Duration),
    /// Work outside the process is in flight.
    Busy,
    /// Work outside the process ended this long ago too recently: what it committed just
    /// before it ended may not have been noticed yet.
    Settling(Duration),
    /// It may jump.
    Idle,
}

/// How long a clock waits at least after work outside the process ended before it jumps: an
/// answer or a heartbeat another process committed just before its end reaches its waiter
/// through the store's watcher, which looks every 5 to 20 ms (`store::watch::LOOK_IDLE`); while
/// a watcher looks, the clock also waits for its next whole look (see [`looked`]).
pub const EXTERNAL_SETTLE: Duration = Duration::from_millis(50);

/// The least a clock waits for work inside the process to end before it moves anyway (see
/// [`Activity::wait_idle`]): only a runaway could hold it this long.
pub const INTERNAL_PATIENCE: Duration = Duration::from_secs(60);

/// The longest a clock waits for a store's watcher to look after work outside the process
/// ended.
pub const EXTERNAL_SETTLE_MAX: Duration = Duration::from_secs(2);

/// Looks the stores' watchers have finished (see [`looked`]).
static LOOKS: AtomicU64 = AtomicU64::new(0);

/// Watchers looking now (they have waiters).
static WATCHING: AtomicUsize = AtomicUsize::new(0);

/// A store's watcher finished a look, and woke whoever it found answered (the store calls it,
/// so a clock can wait for answers committed by a process that just ended).
pub fn looked() {
    LOOKS.fetch_add(1, Ordering::SeqCst);
}

/// A store's watcher starts (`true`) or stops (`false`) looking.
pub fn watching(active: bool) {
    match active {
        true => WATCHING.fetch_add(1, Ordering::SeqCst),
        false => WATCHING.fetch_sub(1, Ordering::SeqCst),
    };
}

/// The process's internal work (writes, API requests), which every clock waits for.
static PROCESS: Activity = Activity::new();

/// Every virtual clock's activity, rung when the process's work ends.
static CLOCKS: Mutex<Vec<Weak<Activity>>> = Mutex::new(Vec::new());

/// The wall time spent on external work.
static GATE: Mutex<ExternalTime> = Mutex::new(ExternalTime {
    running: 0,
    since: None,
    total: Duration::ZERO,
    ended: None,
    looks_at_end: 0,
});

/// External work, and how much wall time has passed while any ran.
#[derive(Debug)]
pub(super) struct ExternalTime {
    running: usize,
    since: Option<Instant>,
    total: Duration,
    /// When the last external work ended.
    ended: Option<Instant>,
    /// How many looks the watchers had finished then.
    looks_at_end: u64,
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
}

/// The external time, whatever a panicking holder left behind (the counts stay meaningful).
pub(super) fn gate() -> MutexGuard<'static, ExternalTime> {
    GATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Tells every clock to look again (the process's work ended). Costs one uncontended lock
/// when there is no virtual clock (every write of a real-time run ends here).
fn ring_all() {
    let clocks: Vec<Arc<Activity>> = {
        let mut clocks = CLOCKS.lock().unwrap_or_else(|p| p.into_inner());
        if clocks.is_empty() {
            return;
        }
        clocks.retain(|c| c.strong_count() > 0);
        clocks.iter().filter_map(Weak::upgrade).collect()
    };
    clocks.iter().for_each(|c| c.ring());
}

/// Work in flight, for as long as the guard lives.
#[must_use = "the work counts only while the guard lives"]
#[derive(Debug)]
pub struct Busy {
    external: bool,
}

impl Busy {
    /// Work inside this process that every virtual clock waits for (a store write, an API
    /// request).
    pub fn internal() -> Busy {
        PROCESS.enter();
        Busy { external: false }
    }

    /// Work outside this process (a child process, an HTTP call): time flows meanwhile.
    pub fn external() -> Busy {
        let busy = Busy::external_unrung();
        // A driver sleeping while frozen must start counting flowing time.
        ring_all();
        busy
    }
}

impl Busy {
    /// Work outside this process, counted by a clock's driver that looks again by itself (no
    /// ring: it holds its activity's lock).
    pub(super) fn external_unrung() -> Busy {
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
                g.ended = Some(Instant::now());
                g.looks_at_end = LOOKS.load(Ordering::SeqCst);
            }
            drop(g);
            ring_all();
        } else if PROCESS.leave() {
            ring_all();
        }
    }
}

/// A future counted as its clock's work from the moment it is woken until its poll ends, so
/// the clock never jumps while it could still act. Made by [`tracked`].
pub struct Tracked<F> {
    inner: Pin<Box<F>>,
    waker: Option<Arc<TrackedWaker>>,
}

/// Wraps an execution's future so that `activity`'s clock waits for it; with `None` it is a
/// plain box: a real clock pays nothing.
pub fn tracked<F: Future>(fut: F, activity: Option<Arc<Activity>>) -> Tracked<F> {
    let waker = activity.map(|activity| {
        // Counted from the start: a new future is about to be polled.
        activity.enter();
        Arc::new(TrackedWaker {
            state: AtomicU8::new(WOKEN),
            inner: Mutex::new(None),
            activity,
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
    activity: Arc<Activity>,
}

impl TrackedWaker {
    fn done(&self) {
        if self.activity.leave() {
            self.activity.ring();
        }
    }
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
            self.activity.enter();
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
        let inner = &mut self.inner;
        let polled = super::held::polling(&tracker.activity, || {
            inner.as_mut().poll(&mut Context::from_waker(&waker))
        });
        if polled.is_ready() && tracker.state.swap(DONE, Ordering::SeqCst) == WOKEN {
            tracker.done();
        }
        if was == WOKEN {
            tracker.done();
        }
        polled
    }
}

impl<F> Drop for Tracked<F> {
    fn drop(&mut self) {
        if let Some(tracker) = &self.waker {
            if tracker.state.swap(DONE, Ordering::SeqCst) == WOKEN {
                tracker.done();
            }
        }
    }
}

/// Gives the other tasks of this thread a turn: pending once, having woken itself at once.
/// tokio's `yield_now` defers that wake until its scheduler looks for new work, so between the
/// end of the poll and the wake a [`Tracked`] execution counted as waiting, and a virtual clock
/// could jump in the gap (a `test` history showed a state entered a day late).
pub async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            return Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tracked_future_counts_while_runnable_and_not_while_it_waits() {
        let activity = Activity::for_clock();
        let busy = || activity.busy.load(Ordering::SeqCst);
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let mut task = tracked(
            std::future::poll_fn(move |cx| Pin::new(&mut rx).poll(cx)),
            Some(activity.clone()),
        );
        assert_eq!(busy(), 1, "counted before its first poll");
        let mut cx = Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut task).poll(&mut cx).is_pending());
        assert_eq!(busy(), 0, "waiting on the channel is not work in flight");
        tx.send(()).unwrap();
        assert_eq!(busy(), 1, "woken: in flight until its poll ends");
        assert!(Pin::new(&mut task).poll(&mut cx).is_ready());
        assert_eq!(busy(), 0);
        drop(task);
        assert_eq!(busy(), 0);
    }

    // Regression (suspected cause of a flaky virtual_time test under the full suite): waiting
    // for a clock to settle gave up after its patience (5 s) even while work inside the
    // process ran, so `clock advance` could return before a fired deadline's work was done.
    // Only work outside the process (a worker that may never end) is cut short now.
    #[test]
    fn waiting_to_settle_outlasts_the_patience_while_internal_work_runs() {
        let activity = Activity::for_clock();
        activity.enter();
        let worker = activity.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            if worker.leave() {
                worker.ring();
            }
        });
        let start = Instant::now();
        activity.wait_idle(Duration::from_millis(20));
        assert!(
            start.elapsed() >= Duration::from_millis(150),
            "gave up after {:?}, with the work still running",
            start.elapsed()
        );
    }

    // Regression: an execution yielding its thread (every 5 ms of states without a wait) used
    // tokio's yield_now, whose wake comes after the poll ends; in between, the execution
    // counted as waiting, and the `test` command's virtual clock jumped to the next deadline,
    // a day away (a flaky run of every_example_suite_in_definitions_passes).
    #[test]
    fn a_tracked_future_that_yields_its_thread_stays_in_flight() {
        use std::sync::atomic::AtomicBool;
        let activity = Activity::for_clock();
        let (started, done) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        // Another thread watches the count the whole time, as a clock's driver does, from the
        // future's first poll (before it, the future counts as waiting, rightly).
        let watcher = {
            let (activity, started, done) = (activity.clone(), started.clone(), done.clone());
            std::thread::spawn(move || {
                let mut seen_waiting = 0;
                while !started.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
                while !done.load(Ordering::SeqCst) {
                    let busy = activity.busy.load(Ordering::SeqCst);
                    if busy == 0 && !done.load(Ordering::SeqCst) {
                        seen_waiting += 1;
                    }
                }
                seen_waiting
            })
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let finished = done.clone();
        rt.block_on(tracked(
            async move {
                started.store(true, Ordering::SeqCst);
                for _ in 0..20_000 {
                    yield_now().await;
                }
                finished.store(true, Ordering::SeqCst);
            },
            Some(activity.clone()),
        ));
        let seen_waiting = watcher.join().expect("watcher");
        assert_eq!(
            seen_waiting, 0,
            "the yielding future counted as waiting between two polls"
        );
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
