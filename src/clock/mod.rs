//! Every clock the engine reads goes through [`Clock`]: the real one, a scaled one for
//! `--time-scale`, the virtual one for `--clock virtual` ([`virtual_time`]), and a manual one
//! for tests. [`Timekeeping`] is the choice the flags make, lowered once.
//!
//! Times are wall-clock milliseconds since the Unix epoch ([`Millis`]), because deadlines are
//! stored in the database and must mean the same thing to another process after a crash.
//!
//! Every deadline the system clock waits for (Wait states, task timeouts, heartbeat expiries,
//! retry back-offs, execution timeouts), in every execution of the process, is one entry of one
//! sorted map, [`Timers`]; one thread sleeps until the earliest entry and wakes the futures
//! that are due (mini-redis's expiry task). Ten thousand executions waiting cost ten thousand
//! map entries and one sleeping thread.

pub mod activity;
pub mod held;
pub mod virtual_time;

pub use activity::{tracked, yield_now, Busy};
pub use held::{outside, outside_bounded, within_budget};
pub use virtual_time::VirtualClock;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// Wall-clock milliseconds since the Unix epoch (UTC).
pub type Millis = i64;

/// The latest instant a clock here reads, 9999-12-31T23:59:59.999Z: the last one a timestamp
/// with a four-digit year (AWS's, RFC 3339's) can say. The virtual clock never moves past it.
pub const LATEST: Millis = 253_402_300_799_999;

/// The instant `by` after `from`, when it is not past [`LATEST`] (nor past what [`Millis`]
/// holds: a duration near `u64::MAX` milliseconds does not wrap).
pub fn checked_after(from: Millis, by: Duration) -> Option<Millis> {
    i64::try_from(by.as_millis())
        .ok()
        .and_then(|ms| from.checked_add(ms))
        .filter(|at| *at <= LATEST)
}

/// A source of time and a way to wait for it.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> Millis;

    /// How long a declared duration really lasts on this clock (`--time-scale` shrinks it).
    fn scale(&self, declared: Duration) -> Duration {
        declared
    }

    /// Waits until `deadline` (already scaled). Returns at once if it has passed.
    fn sleep_until(
        &self,
        deadline: Millis,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>;

    /// The virtual clock behind this one, if it is one.
    fn virtual_clock(&self) -> Option<&VirtualClock> {
        None
    }
}

/// How time passes for the executions of one process: the choice of `--clock`,
/// `--clock-start` and `--time-scale`, lowered once.
#[derive(Debug, Clone)]
pub enum Timekeeping {
    /// The system clock, every declared duration multiplied by `scale` (1 is real time).
    Real {
        /// `--time-scale`.
        scale: f64,
    },
    /// A virtual clock shared by every execution of the process.
    Virtual(VirtualClock),
}

impl Default for Timekeeping {
    fn default() -> Self {
        Timekeeping::Real { scale: 1.0 }
    }
}

impl Timekeeping {
    /// Real time, scaled.
    pub fn scaled(scale: f64) -> Timekeeping {
        Timekeeping::Real { scale }
    }

    /// The clock executions read.
    pub fn clock(&self) -> Arc<dyn Clock> {
        match self {
            Timekeeping::Real { scale } => Arc::new(SystemClock::new(*scale)),
            Timekeeping::Virtual(clock) => Arc::new(clock.clone()),
        }
    }

    /// Now, on this clock.
    pub fn now(&self) -> Millis {
        match self {
            Timekeeping::Real { .. } => system_now(),
            Timekeeping::Virtual(clock) => clock.now(),
        }
    }

    /// The factor declared durations are multiplied by (1 under a virtual clock: its seconds
    /// are whole).
    pub fn time_scale(&self) -> f64 {
        match self {
            Timekeeping::Real { scale } => *scale,
            Timekeeping::Virtual(_) => 1.0,
        }
    }

    /// The virtual clock, if time is virtual.
    pub fn virtual_clock(&self) -> Option<&VirtualClock> {
        match self {
            Timekeeping::Real { .. } => None,
            Timekeeping::Virtual(clock) => Some(clock),
        }
    }

    /// Wraps an execution's future so a virtual clock waits for it (see [`tracked`]).
    pub fn track<F: std::future::Future>(&self, fut: F) -> activity::Tracked<F> {
        tracked(fut, self.virtual_clock().map(VirtualClock::activity))
    }
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock {
    /// `--time-scale`: every declared duration is multiplied by this.
    pub time_scale: f64,
}

impl SystemClock {
    /// A clock with durations multiplied by `time_scale` (1.0 is real time).
    pub fn new(time_scale: f64) -> Self {
        SystemClock { time_scale }
    }
}

/// The current wall-clock time.
pub fn system_now() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as Millis)
        .unwrap_or(0)
}

impl Clock for SystemClock {
    fn now(&self) -> Millis {
        system_now()
    }

    fn scale(&self, declared: Duration) -> Duration {
        if self.time_scale == 1.0 || !self.time_scale.is_finite() || self.time_scale < 0.0 {
            declared
        } else {
            // Capped, not `mul_f64`, which panics past `Duration::MAX` (`--time-scale 1e308`
            // on a Wait panicked: found by fuzzing's hostile inputs). A century is forever
            // here and keeps every deadline (`now + millis`) far inside `Millis`.
            const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
            Duration::try_from_secs_f64(declared.as_secs_f64() * self.time_scale)
                .map_or(FOREVER, |d| d.min(FOREVER))
        }
    }

    fn sleep_until(
        &self,
        deadline: Millis,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(Timers::global().sleep_until(deadline))
    }
}

/// The process's deadlines: a sorted map of `(deadline, id)` to the waker of the future
/// waiting for it, and one thread sleeping until the earliest (see the module's overview).
pub struct Timers {
    state: Mutex<TimerState>,
    /// Wakes the timer thread: an entry earlier than the one it sleeps for arrived.
    earlier: Condvar,
}

#[derive(Default)]
struct TimerState {
    entries: Deadlines,
    started: bool,
}

/// Deadlines in order: `(deadline, id)` to the waker of the future waiting for it, ids given in
/// the order futures first waited, so entries at one instant keep that order. The real clock's
/// timers and a virtual clock share it.
#[derive(Default)]
pub(crate) struct Deadlines {
    entries: BTreeMap<(Millis, u64), Waker>,
    next_id: u64,
}

impl Deadlines {
    /// Arms (or re-arms) the entry of a waiting future; `id` is its id, given on its first
    /// wait. True when it is now the first.
    pub(crate) fn arm(&mut self, deadline: Millis, id: &mut Option<u64>, waker: &Waker) -> bool {
        let id = *id.get_or_insert_with(|| {
            self.next_id += 1;
            self.next_id
        });
        let earliest = self
            .entries
            .first_key_value()
            .is_none_or(|(first, _)| (deadline, id) < *first);
        self.entries.insert((deadline, id), waker.clone());
        earliest
    }

    /// Forgets a future's entry (it is done, or dropped).
    pub(crate) fn disarm(&mut self, deadline: Millis, id: Option<u64>) {
        if let Some(id) = id {
            self.entries.remove(&(deadline, id));
        }
    }

    /// The first entry's key.
    pub(crate) fn first(&self) -> Option<(Millis, u64)> {
        self.entries.keys().next().copied()
    }

    /// Takes the first entry if it is due at `now`.
    pub(crate) fn pop_due(&mut self, now: Millis) -> Option<Waker> {
        let entry = self.entries.first_entry()?;
        (entry.key().0 <= now).then(|| entry.remove())
    }

    /// How many are waited for.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

impl Timers {
    /// The process's timers (the thread starts with the first entry).
    pub fn global() -> &'static Timers {
        static TIMERS: OnceLock<Timers> = OnceLock::new();
        TIMERS.get_or_init(|| Timers {
            state: Mutex::new(TimerState::default()),
            earlier: Condvar::new(),
        })
    }

    /// Resolves at `deadline` (wall-clock milliseconds); at once if it has passed.
    pub fn sleep_until(&'static self, deadline: Millis) -> TimerSleep {
        TimerSleep {
            timers: self,
            deadline,
            id: None,
        }
    }

    /// How many deadlines are waited for (for tests and benchmarks).
    pub fn pending(&self) -> usize {
        self.state().entries.len()
    }

    fn state(&self) -> MutexGuard<'_, TimerState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The timer thread: wakes what is due, then sleeps until the next deadline or until an
    /// earlier one arrives.
    fn run(&'static self) {
        let mut state = self.state();
        loop {
            let now = system_now();
            let mut due = Vec::new();
            while let Some(waker) = state.entries.pop_due(now) {
                due.push(waker);
            }
            if !due.is_empty() {
                drop(state);
                due.into_iter().for_each(Waker::wake);
                state = self.state();
                continue;
            }
            let wait = state
                .entries
                .first()
                .map(|(deadline, _)| Duration::from_millis((deadline - now).max(1) as u64));
            state = match wait {
                Some(wait) => {
                    self.earlier
                        .wait_timeout(state, wait)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
                None => self.earlier.wait(state).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }
}

/// A wait for one deadline of [`Timers`]; dropping it removes its entry.
pub struct TimerSleep {
    timers: &'static Timers,
    deadline: Millis,
    id: Option<u64>,
}

impl std::future::Future for TimerSleep {
    type Output = ();

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if system_now() >= self.deadline {
            let id = self.id.take();
            self.timers.state().entries.disarm(self.deadline, id);
            return Poll::Ready(());
        }
        let timers = self.timers;
        let mut state = timers.state();
        let deadline = self.deadline;
        let earliest = state.entries.arm(deadline, &mut self.id, cx.waker());
        if !state.started {
            state.started = true;
            let spawned = std::thread::Builder::new()
                .name("sfn-local-timers".into())
                .spawn(move || timers.run());
            if spawned.is_err() {
                // No thread, no timer: wake at once; the caller finds the deadline not yet due
                // and polls again (a busy wait beats a wait that never ends).
                state.started = false;
                cx.waker().wake_by_ref();
            }
        }
        drop(state);
        if earliest {
            timers.earlier.notify_one();
        }
        Poll::Pending
    }
}

impl Drop for TimerSleep {
    fn drop(&mut self) {
        if self.id.is_some() {
            self.timers.state().entries.disarm(self.deadline, self.id);
        }
    }
}

/// A clock that only moves when a test says so; sleepers wake when it passes their deadline.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<AtomicI64>,
    moved: Arc<tokio::sync::Notify>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: Millis) -> Self {
        ManualClock {
            now: Arc::new(AtomicI64::new(start)),
            moved: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Moves the clock forward (saturating: it never wraps into the past).
    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        let _ = self
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(by))
            });
        self.moved.notify_waiters();
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Millis {
        self.now.load(Ordering::SeqCst)
    }

    fn sleep_until(
        &self,
        deadline: Millis,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            loop {
                let moved = self.moved.notified();
                if self.now() >= deadline {
                    return;
                }
                moved.await;
            }
        })
    }
}

/// Formats milliseconds as AWS prints times in the context object: ISO 8601 with milliseconds
/// and `Z`, e.g. `2019-03-26T20:14:13.192Z`.
pub fn iso8601(ms: Millis) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_has_millis_and_z() {
        assert_eq!(iso8601(1_553_631_253_192), "2019-03-26T20:14:13.192Z");
    }

    #[test]
    fn checked_after_stops_at_the_latest_instant_and_never_wraps() {
        assert_eq!(iso8601(LATEST), "9999-12-31T23:59:59.999Z");
        let ms = Duration::from_millis;
        assert_eq!(checked_after(0, ms(LATEST as u64)), Some(LATEST));
        assert_eq!(checked_after(1, ms(LATEST as u64)), None);
        assert_eq!(checked_after(LATEST, Duration::ZERO), Some(LATEST));
        assert_eq!(checked_after(LATEST, ms(1)), None);
        // Past what an i64 holds, and near u64::MAX ms: refused, not wrapped.
        assert_eq!(checked_after(0, ms(i64::MAX as u64)), None);
        assert_eq!(checked_after(0, ms(i64::MAX as u64 + 1)), None);
        assert_eq!(checked_after(0, ms(u64::MAX)), None);
        assert_eq!(checked_after(1_000, Duration::MAX), None);
        assert_eq!(checked_after(i64::MAX, ms(1)), None);
        assert_eq!(checked_after(i64::MIN, ms(u64::MAX)), None);
        assert_eq!(checked_after(-1_000, ms(1_000)), Some(0));
    }

    #[test]
    fn manual_clock_saturates_instead_of_wrapping() {
        let clock = ManualClock::new(i64::MAX - 10);
        clock.advance(Duration::from_millis(u64::MAX));
        assert_eq!(clock.now(), i64::MAX);
    }

    #[tokio::test]
    async fn manual_clock_wakes_sleepers_when_advanced() {
        let clock = ManualClock::new(1_000);
        let c2 = clock.clone();
        let sleeper = tokio::spawn(async move { c2.sleep_until(5_000).await });
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished());
        clock.advance(Duration::from_secs(4));
        sleeper.await.unwrap();
        assert_eq!(clock.now(), 5_000);
    }

    #[tokio::test]
    async fn timers_wake_each_sleeper_at_its_deadline_and_forget_dropped_ones() {
        let timers = Timers::global();
        let start = system_now();
        // Out of order, and one dropped before its deadline.
        let late = tokio::spawn(timers.sleep_until(start + 60));
        let early = tokio::spawn(timers.sleep_until(start + 20));
        let dropped = tokio::spawn(timers.sleep_until(start + 3_600_000));
        early.await.unwrap();
        assert!(system_now() >= start + 20);
        late.await.unwrap();
        assert!(system_now() >= start + 60);
        dropped.abort();
        let _ = dropped.await;
        // A past deadline is due at once.
        timers.sleep_until(start).await;
        assert!(
            timers
                .state()
                .entries
                .entries
                .keys()
                .all(|(deadline, _)| *deadline != start + 3_600_000),
            "a dropped sleep leaves its entry behind"
        );
    }
}
