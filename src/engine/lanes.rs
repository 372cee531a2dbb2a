//! Lanes run side by side: a Parallel state's branches, an inline Map's iterations.
//!
//! AWS starts every branch (every iteration a Map's concurrency allows) before any of them
//! can fail the state, and records their events interleaved: a two-branch Parallel of Pass
//! states writes both `PassStateEntered` before either `PassStateExited`, and an inline Map
//! writes every `MapIterationStarted` before the first iteration's `TaskStateEntered`, then
//! each iteration's `TaskStateEntered` and `TaskScheduled`, then the `TaskStarted`s
//! (LocalStack's AWS recording `test_service_lambda_map_timeout`). sfn-local gets the same
//! order from one rule: while two or more lanes run, a lane gives the others a turn
//! ([`Engine::turn`]) when it starts, after a state's entry (before a Pass, Choice, Succeed or
//! Fail state's work) and after a Task's scheduling event, and lanes take turns in the order
//! they started ([`FuturesUnordered`] polls woken futures first in, first out, and the lanes
//! that gave a turn are woken in the order they gave it).
//!
//! When one lane fails the state, the others are aborted in their order (branch or iteration
//! index), their `*StateAborted` and `MapIterationAborted` events all pointing at the event
//! that failed the state, as AWS links them.
//!
//! The engine also counts its leaves (lanes that started no lanes of their own) and how many of
//! them wait durably ([`Engine::parked`]): when all do, a resume has replayed its history to where the
//! execution stood, and the store is told once (see [`Engine::on_settled`]), so the quarantine
//! does not count the next takeover against an execution that only waited.

use crate::engine::execution::Engine;
use crate::engine::history::EventId;
use futures_util::future::LocalBoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// One lane's future with its index; dropping its future aborts the lane.
struct Slot<'a, T> {
    engine: &'a Engine,
    index: usize,
    fut: Option<LocalBoxFuture<'a, T>>,
}

impl<T> Future for Slot<'_, T> {
    type Output = (usize, T);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<(usize, T)> {
        let index = self.index;
        match self.fut.as_mut() {
            Some(fut) => fut.as_mut().poll(cx).map(|t| (index, t)),
            None => Poll::Pending,
        }
    }
}

impl<T> Drop for Slot<'_, T> {
    fn drop(&mut self) {
        let leaves = &self.engine.leaves;
        leaves.set(leaves.get().saturating_sub(1));
    }
}

/// The running lanes of one Parallel or Map attempt.
pub(crate) struct Lanes<'a, T> {
    engine: &'a Engine,
    running: FuturesUnordered<Slot<'a, T>>,
    /// Whether this set counts among the engine's side-by-side sets (two or more lanes).
    side_by_side: bool,
}

impl<'a, T> Lanes<'a, T> {
    /// Lanes of which at most `concurrency` run at once (and `total` in all).
    pub(crate) fn new(engine: &'a Engine, concurrency: usize, total: usize) -> Self {
        let side_by_side = concurrency.min(total) > 1;
        if side_by_side {
            engine.side_by_side.set(engine.side_by_side.get() + 1);
        }
        // The lane starting these waits on them: a leaf no more until they end.
        engine.leaves.set(engine.leaves.get().saturating_sub(1));
        Lanes {
            engine,
            running: FuturesUnordered::new(),
            side_by_side,
        }
    }

    /// Starts lane `index` (it runs from its first poll, after the lanes started before it).
    pub(crate) fn push(&mut self, index: usize, fut: LocalBoxFuture<'a, T>) {
        self.engine.leaves.set(self.engine.leaves.get() + 1);
        self.running.push(Slot {
            engine: self.engine,
            index,
            fut: Some(fut),
        });
    }

    /// How many lanes are running.
    pub(crate) fn len(&self) -> usize {
        self.running.len()
    }

    /// The next lane to end, with its index.
    pub(crate) async fn next(&mut self) -> Option<(usize, T)> {
        std::future::poll_fn(|cx| {
            let mut rounds = 0;
            loop {
                match self.running.poll_next_unpin(cx) {
                    Poll::Pending => {
                        // No lane is ready: the lanes that gave a turn go on, in the order they
                        // gave it, without a trip through the runtime. After a few rounds the
                        // runtime gets its turn too (timers, stops, other executions).
                        let turns = std::mem::take(&mut *self.engine.turns.borrow_mut());
                        if turns.is_empty() {
                            return Poll::Pending;
                        }
                        for waker in turns {
                            waker.wake();
                        }
                        if rounds == ROUNDS_PER_POLL {
                            return Poll::Pending;
                        }
                        rounds += 1;
                    }
                    ready => return ready,
                }
            }
        })
        .await
    }

    /// Aborts every running lane, in index order: their aborted events point at `failure`.
    pub(crate) fn abort(mut self, failure: EventId) {
        let outer = self.engine.abort_link.replace(Some(failure));
        self.drop_in_order();
        self.engine.abort_link.set(outer);
    }

    /// Drops the running lanes' futures (writing their aborted events) in index order.
    fn drop_in_order(&mut self) {
        let mut slots: Vec<&mut Slot<'a, T>> = self.running.iter_mut().collect();
        slots.sort_by_key(|s| s.index);
        for slot in slots {
            drop(slot.fut.take());
        }
    }
}

impl<T> Drop for Lanes<'_, T> {
    fn drop(&mut self) {
        // Lanes still running when their state is itself aborted (a sibling of an enclosing
        // Parallel or Map failed it) end in their order too.
        self.drop_in_order();
        self.running.clear();
        self.engine.leaves.set(self.engine.leaves.get() + 1);
        if self.side_by_side {
            self.engine
                .side_by_side
                .set(self.engine.side_by_side.get() - 1);
        }
    }
}

/// How many times one poll of [`Lanes::next`] wakes the lanes that gave a turn before it
/// leaves the rest to the runtime's next poll.
const ROUNDS_PER_POLL: usize = 32;

/// A lane's turn given to the others: pending once, queued on the engine's turns, then ready.
/// The lanes' driver ([`Lanes::next`]) wakes the queue when no other lane is ready. (Waking
/// itself at once cost a trip through the runtime every two lanes: futures' own
/// `FuturesUnordered` gives way to the runtime once two of its futures woke themselves.)
struct Turn<'a> {
    engine: &'a Engine,
    given: bool,
}

impl Future for Turn<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.given {
            return Poll::Ready(());
        }
        self.given = true;
        self.engine.turns.borrow_mut().push(cx.waker().clone());
        Poll::Pending
    }
}

/// A lane's durable wait (a Wait, a retry interval, a bare task token), counted while it lasts.
struct Parked<'a> {
    engine: &'a Engine,
}

impl Drop for Parked<'_> {
    fn drop(&mut self) {
        let parked = &self.engine.parked;
        parked.set(parked.get().saturating_sub(1));
    }
}

impl Engine {
    /// Awaits `wait`, a durable wait (a Wait, a retry interval, a bare task token), counting
    /// the running lane as parked from the first time it is pending (a deadline already passed
    /// or an answer already there is no wait) until it ends.
    pub(crate) async fn parked<F: Future>(&self, wait: F) -> F::Output {
        let mut wait = std::pin::pin!(wait);
        let mut parked = None;
        std::future::poll_fn(|cx| match wait.as_mut().poll(cx) {
            Poll::Pending => {
                parked.get_or_insert_with(|| self.park());
                Poll::Pending
            }
            ready => ready,
        })
        .await
    }

    /// Counts the running lane as waiting durably until the guard is dropped; the first time
    /// every leaf does, calls the engine's `settled` hook.
    fn park(&self) -> Parked<'_> {
        self.parked.set(self.parked.get() + 1);
        if self.parked.get() >= self.leaves.get() {
            let settled = self.settled.borrow_mut().take();
            if let Some(settled) = settled {
                settled();
            }
        }
        Parked { engine: self }
    }

    /// Gives the other lanes running side by side a turn (see the module's overview); a
    /// no-op when no two lanes run side by side, and right after an event a resume found
    /// recorded (the lane catches up with its recording first).
    pub(crate) async fn turn(&self) {
        if self.side_by_side.get() > 0 && !self.replayed_last.get() {
            Turn {
                engine: self,
                given: false,
            }
            .await;
        }
    }
}
