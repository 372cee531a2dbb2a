//! The virtual clock (`--clock virtual`): time does not pass by itself; it jumps to the next
//! deadline when nothing else can happen, as Temporal's time-skipping test server and Go's
//! `testing/synctest` do it.
//!
//! Every deadline of every execution on the clock is one entry of one sorted map (the same
//! shape as [`super::Timers`]); the entry that comes first is the only one that may fire,
//! and it fires only when [`super::activity`] says nothing is in flight. Entries at one
//! instant fire one at a time, in the order they were armed, each after the work it caused
//! has settled: the same run gives the same history.
//!
//! Two ways to move it:
//! - **automatic** (`run`, `test`): a driver thread jumps whenever the process is idle. While
//!   outside work with a result runs (a command, a Lambda handler, an HTTP call) time holds,
//!   and the driver hands the results on in turn ([`super::held`]); while a worker runs, time
//!   flows at wall speed, so its answer lands at the instant it arrives, and a deadline that
//!   comes due meanwhile fires as it would on AWS.
//! - **on request** (`serve`): time never moves on its own; a client moves it
//!   ([`VirtualClock::advance`], [`VirtualClock::skip_to_next`]), so a test reads a token,
//!   heartbeats and answers at leisure. Its driver thread only hands results of outside work
//!   on.

use super::activity::{gate, Activity, Readiness};
use super::{checked_after, iso8601, Clock, Deadlines, Millis, LATEST};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// How long a client's request to move the clock waits for work outside the process to settle
/// before it moves the clock anyway (a worker that never ends must not freeze the test); work
/// inside it is waited for longer (see [`super::activity::INTERNAL_PATIENCE`]).
pub const SETTLE_PATIENCE: Duration = Duration::from_secs(5);

/// Most deadlines one request fires (a machine that loops on a Wait forever must not hang
/// `until-idle`).
pub const MAX_STEPS: usize = 100_000;

/// Why a request to move the clock was refused (the clock did not move).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClockError {
    /// Advancing by a duration would pass [`LATEST`] (or overflow).
    #[error("advancing by {by:?} from {} would move the clock past {}, the latest instant it reads", iso8601(*from), iso8601(LATEST))]
    AdvancePastLatest {
        /// Where the clock stood.
        from: Millis,
        /// The duration asked for.
        by: Duration,
    },
}

/// A clock that only moves when nothing can happen before its next deadline.
#[derive(Clone)]
pub struct VirtualClock {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for VirtualClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualClock")
            .field("now", &self.now())
            .field("automatic", &self.inner.automatic)
            .finish()
    }
}

struct Inner {
    state: Mutex<State>,
    /// Jumps by itself when idle (`run`, `test`); otherwise only when asked (`serve`).
    automatic: bool,
    /// Its executions' work in flight, and where its driver sleeps.
    activity: Arc<Activity>,
}

struct State {
    /// The instant the clock stood at when external work last started flowing, or last jumped.
    base: Millis,
    /// The external wall time counted up to `base` (see [`activity`]).
    external_at_base: Duration,
    timers: Deadlines,
}

impl VirtualClock {
    /// A clock standing at `start` that jumps by itself whenever the process is idle.
    pub fn automatic(start: Millis) -> VirtualClock {
        VirtualClock::new(start, true)
    }

    /// A clock standing at `start` that moves only when asked (`serve`).
    pub fn on_request(start: Millis) -> VirtualClock {
        VirtualClock::new(start, false)
    }

    /// The clock, and its driver: the thread that hands on the results of outside work (see
    /// [`super::held`]) and, if `automatic`, jumps when the process is idle.
    fn new(start: Millis, automatic: bool) -> VirtualClock {
        let clock = VirtualClock::standing(start, automatic);
        let weak = Arc::downgrade(&clock.inner);
        // No thread: the clock then moves, and hands results of outside work on, only when
        // asked (`settle`).
        let _ = std::thread::Builder::new()
            .name("sfn-local-virtual-time".into())
            .spawn(move || drive(weak));
        clock
    }

    fn standing(start: Millis, automatic: bool) -> VirtualClock {
        let external_at_base = gate().elapsed();
        VirtualClock {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    base: start,
                    external_at_base,
                    timers: Deadlines::default(),
                }),
                automatic,
                activity: Activity::for_clock(),
            }),
        }
    }

    /// What the clock waits for: [`crate::clock::Timekeeping::track`] counts its executions'
    /// futures here.
    pub fn activity(&self) -> Arc<Activity> {
        self.inner.activity.clone()
    }

    /// Waits until nothing this clock waits for is in flight (see [`Activity::wait_idle`]),
    /// without moving it.
    pub fn settle(&self) {
        self.inner.activity.wait_idle(SETTLE_PATIENCE);
    }

    /// The earliest deadline waited for, if any.
    pub fn next_deadline(&self) -> Option<Millis> {
        self.inner.state().timers.first().map(|(d, _)| d)
    }

    /// How many deadlines are waited for.
    pub fn pending(&self) -> usize {
        self.inner.state().timers.len()
    }

    /// Moves the clock forward by `by`, firing every deadline on the way in order, each after
    /// the work it caused has settled. Returns the new instant; refused, without moving, when
    /// that would pass [`LATEST`].
    pub fn advance(&self, by: Duration) -> Result<Millis, ClockError> {
        let from = self.now();
        let target = checked_after(from, by).ok_or(ClockError::AdvancePastLatest { from, by })?;
        for _ in 0..MAX_STEPS {
            self.settle();
            if !self.fire_first_until(target) {
                break;
            }
        }
        self.inner.settle_at(target);
        self.settle();
        Ok(self.now())
    }

    /// Jumps to the next deadline and fires every one due at that instant. Returns the new
    /// instant, or `None` when nothing waits on time.
    pub fn skip_to_next(&self) -> Option<Millis> {
        self.settle();
        let next = self.next_deadline()?;
        let target = next.max(self.now());
        for _ in 0..MAX_STEPS {
            if !self.fire_first_until(target) {
                break;
            }
            self.settle();
        }
        self.inner.settle_at(target);
        Some(self.now())
    }

    /// Skips from deadline to deadline until nothing waits on time (or [`MAX_STEPS`]).
    /// Returns the new instant.
    pub fn until_idle(&self) -> Millis {
        for _ in 0..MAX_STEPS {
            if self.skip_to_next().is_none() {
                break;
            }
        }
        self.now()
    }

    /// Fires the first deadline if it is at or before `target`, jumping to it. False when
    /// there is none.
    fn fire_first_until(&self, target: Millis) -> bool {
        // Read before the state's lock: no lock is ever taken while holding it.
        let external = gate().elapsed();
        let mut st = self.inner.state();
        let Some((deadline, _)) = st.timers.first() else {
            return false;
        };
        if deadline > target {
            return false;
        }
        let now = self.inner.now_at(&st, external);
        st.rebase(deadline.max(now), external);
        let waker = st.timers.pop_due(deadline);
        drop(st);
        waker.into_iter().for_each(Waker::wake);
        true
    }
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Now, given the external wall time counted so far.
    fn now_at(&self, st: &State, external: Duration) -> Millis {
        if self.automatic {
            let flowed = external.saturating_sub(st.external_at_base);
            // Wall time flowing never carries the clock past its last instant.
            checked_after(st.base, flowed).unwrap_or(LATEST.max(st.base))
        } else {
            st.base
        }
    }

    /// Stands the clock at `target` unless it is already later.
    fn settle_at(&self, target: Millis) {
        let external = gate().elapsed();
        let mut st = self.state();
        let now = self.now_at(&st, external);
        st.rebase(now.max(target), external);
    }
}

impl State {
    fn rebase(&mut self, at: Millis, external: Duration) {
        self.base = at;
        self.external_at_base = external;
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Millis {
        let external = gate().elapsed();
        self.inner.now_at(&self.inner.state(), external)
    }

    fn sleep_until(&self, deadline: Millis) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(VirtualSleep {
            clock: self.inner.clone(),
            // A deadline past the clock's last instant is due at it: jumping to it (`next`,
            // `until-idle`, `run`) never carries the clock past LATEST.
            deadline: deadline.min(LATEST),
            id: None,
        })
    }

    fn virtual_clock(&self) -> Option<&VirtualClock> {
        Some(self)
    }
}

/// A wait for one deadline of a virtual clock; dropping it removes its entry.
struct VirtualSleep {
    clock: Arc<Inner>,
    deadline: Millis,
    id: Option<u64>,
}

impl Future for VirtualSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let external = gate().elapsed();
        let clock = self.clock.clone();
        let mut st = clock.state();
        if clock.now_at(&st, external) >= self.deadline {
            let id = self.id.take();
            st.timers.disarm(self.deadline, id);
            return Poll::Ready(());
        }
        let deadline = self.deadline;
        st.timers.arm(deadline, &mut self.id, cx.waker());
        drop(st);
        // A driver sleeping until a later deadline (while time flows) must look again.
        self.clock.activity.ring();
        Poll::Pending
    }
}

impl Drop for VirtualSleep {
    fn drop(&mut self) {
        if self.id.is_some() {
            self.clock.state().timers.disarm(self.deadline, self.id);
        }
    }
}

/// The automatic clock's driver: fires the first deadline when it is due, jumps to it when
/// the clock is idle, and otherwise sleeps until told that work ended or a deadline arrived.
fn drive(clock: Weak<Inner>) {
    loop {
        let Some(inner) = clock.upgrade() else {
            return;
        };
        let activity = inner.activity.clone();
        // Looked at under the activity's lock: work that ends after the look rings it, and the
        // ring waits for the sleep below.
        let held = activity.guard();
        let wait = inner.step();
        drop(inner);
        if let Some(wait) = wait {
            drop(activity.sleep(held, wait));
        }
    }
}

impl Inner {
    /// One look of the driver: `None` when it fired or jumped (look again at once), else how
    /// long to sleep.
    fn step(&self) -> Option<Duration> {
        let (external, flowing) = {
            let g = gate();
            (g.elapsed(), g.flowing())
        };
        let readiness = self.activity.readiness();
        // Outside work holds the clock: neither a jump nor a deadline until its results, in
        // turn, are dealt with (see [`super::held`]).
        match readiness {
            Readiness::Turn => {
                self.activity.grant_turn();
                return None;
            }
            Readiness::Held(left) => {
                return Some(left.clamp(Duration::from_millis(1), Duration::from_secs(1)))
            }
            _ if !self.automatic => return Some(Duration::from_secs(1)),
            _ => {}
        }
        let idle = readiness == Readiness::Idle;
        let mut st = self.state();
        let now = self.now_at(&st, external);
        match st.timers.first() {
            Some((deadline, _)) if deadline <= now && (idle || flowing) => {
                let waker = st.timers.pop_due(now);
                drop(st);
                waker.into_iter().for_each(Waker::wake);
                None
            }
            Some((deadline, _)) if idle => {
                st.rebase(deadline, external);
                None
            }
            Some((deadline, _)) if flowing => Some(Duration::from_millis(
                (deadline - now).clamp(1, 1_000) as u64,
            )),
            Some(_) => match readiness {
                Readiness::Settling(left) => Some(left),
                _ => Some(Duration::from_secs(1)),
            },
            // Frozen or empty: rung when work ends or a deadline arrives; the timeout only
            // notices a clock that was dropped.
            _ => Some(Duration::from_secs(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advance_stops_at_the_latest_instant_and_a_refused_one_does_not_move() {
        let clock = VirtualClock::on_request(LATEST - 1_000);
        assert_eq!(clock.advance(Duration::from_secs(1)), Ok(LATEST));
        let refused = clock.advance(Duration::from_millis(1));
        assert_eq!(
            refused,
            Err(ClockError::AdvancePastLatest {
                from: LATEST,
                by: Duration::from_millis(1)
            })
        );
        assert!(refused
            .unwrap_err()
            .to_string()
            .contains("past 9999-12-31T23:59:59.999Z"));
        let early = VirtualClock::on_request(0);
        for by in [
            Duration::MAX,
            Duration::from_millis(u64::MAX),
            Duration::from_secs(1 << 60),
        ] {
            assert!(early.advance(by).is_err(), "{by:?}");
        }
        assert_eq!(early.now(), 0, "never wrapped, never moved");
    }

    #[test]
    fn a_deadline_past_the_latest_instant_is_due_at_it() {
        let clock = VirtualClock::on_request(LATEST - 10);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        let (c, activity) = (clock.clone(), clock.activity());
        let sleeper = async move { c.sleep_until(i64::MAX).await };
        let woke = local.spawn_local(crate::clock::tracked(sleeper, Some(activity)));
        local.block_on(&rt, tokio::task::yield_now());
        assert_eq!(clock.next_deadline(), Some(LATEST));
        let c = clock.clone();
        let skipping = std::thread::spawn(move || c.until_idle());
        local.block_on(&rt, async {
            while !skipping.is_finished() {
                tokio::task::yield_now().await;
            }
        });
        assert_eq!(clock.now(), LATEST);
        assert!(woke.is_finished());
    }

    #[test]
    fn on_request_time_stands_still_until_advanced_and_fires_in_deadline_order() {
        let clock = VirtualClock::on_request(1_000);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let local = tokio::task::LocalSet::new();
        for deadline in [61_000, 3_601_000, 31_000] {
            let (clock, order) = (clock.clone(), order.clone());
            let activity = clock.activity();
            // Tracked, so the clock waits for each to record its instant before the next jump.
            let sleeper = async move {
                clock.sleep_until(deadline).await;
                order.lock().unwrap().push((deadline, clock.now()));
            };
            local.spawn_local(crate::clock::tracked(sleeper, Some(activity)));
        }
        local.block_on(&rt, async {
            tokio::task::yield_now().await;
        });
        assert_eq!(clock.pending(), 3);
        assert_eq!(clock.now(), 1_000);
        let c = clock.clone();
        let advancing = std::thread::spawn(move || c.advance(Duration::from_secs(61)));
        local.block_on(&rt, async {
            while !advancing.is_finished() {
                tokio::task::yield_now().await;
            }
        });
        assert_eq!(clock.now(), 62_000);
        assert_eq!(
            *order.lock().unwrap(),
            vec![(31_000, 31_000), (61_000, 61_000)],
            "each fires at its own instant, in order"
        );
        assert_eq!(clock.next_deadline(), Some(3_601_000));
    }
}
