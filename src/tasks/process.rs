//! The programs sfn-local starts, each in its own process group, and how they are ended.
//!
//! A `--task` command and a managed handler run as the leader of a new process group, so a
//! signal sent to the group reaches whatever they started (a pipeline, a forked child, a
//! `sleep` in a shell script). A [`GroupGuard`] owns the group while sfn-local watches it:
//! dropped while armed (the task timed out, its execution stopped, the runner is shutting
//! down) it sends `SIGTERM` to the group and `SIGKILL` after a grace period. Every live group
//! is also listed in a process-wide registry, so [`end_all`] can end what is left when a
//! command exits without dropping its futures (Ctrl-C on `run` leaves them undropped on
//! purpose: dropping would write aborted events).
//!
//! A program that leaves the group on purpose (`setsid`, a daemon) is out of reach: that is
//! its choice, as with any supervisor that works by process groups.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

/// Groups started and not known to be over.
static LIVE: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

fn live() -> std::sync::MutexGuard<'static, BTreeSet<u32>> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Sends `signal` to a process group (its leader's pid is its id). A group that is gone
/// already is not an error.
pub fn signal_group(pgid: u32, signal: Signal) {
    if pgid == 0 || pgid > i32::MAX as u32 {
        // 0 would signal sfn-local's own group.
        return;
    }
    let _ = killpg(Pid::from_raw(pgid as i32), signal);
}

/// Whether any process of the group is still alive (or not yet reaped).
pub fn group_alive(pgid: u32) -> bool {
    pgid != 0 && pgid <= i32::MAX as u32 && killpg(Pid::from_raw(pgid as i32), None).is_ok()
}

/// Owns a started program's process group until it is over; see the module's overview.
#[derive(Debug)]
pub struct GroupGuard {
    pgid: u32,
    kill_after: Duration,
    armed: bool,
}

impl GroupGuard {
    /// Watches the group `pgid` (the pid of a leader started with `process_group(0)`). When
    /// dropped armed, it gets `SIGTERM` and, `kill_after` later, `SIGKILL` (at once when
    /// `kill_after` is zero).
    pub fn new(pgid: u32, kill_after: Duration) -> GroupGuard {
        live().insert(pgid);
        GroupGuard {
            pgid,
            kill_after,
            armed: true,
        }
    }

    /// Ends what is left of the group, now: `SIGTERM`, then `SIGKILL` after the grace period
    /// (on a thread of its own; the caller does not wait). Used after the leader exited, for
    /// the children it left behind, and on drop.
    pub fn end(mut self) {
        self.armed = false;
        end_group(self.pgid, self.kill_after);
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            end_group(self.pgid, self.kill_after);
        }
    }
}

/// `SIGTERM` now, `SIGKILL` after `kill_after`; the group leaves the registry once killed.
fn end_group(pgid: u32, kill_after: Duration) {
    if kill_after.is_zero() || !group_alive(pgid) {
        signal_group(pgid, Signal::SIGKILL);
        live().remove(&pgid);
        return;
    }
    signal_group(pgid, Signal::SIGTERM);
    let spawned = std::thread::Builder::new()
        .name("sfn-local-kill-after".into())
        .spawn(move || {
            std::thread::sleep(kill_after);
            signal_group(pgid, Signal::SIGKILL);
            live().remove(&pgid);
        });
    if spawned.is_err() {
        signal_group(pgid, Signal::SIGKILL);
        live().remove(&pgid);
    }
}

/// Ends every group still registered: `SIGTERM`, a moment for cleanup handlers, then `SIGKILL`.
/// Called as a command exits, so no program it started outlives it.
pub fn end_all() {
    let groups: Vec<u32> = live().iter().copied().filter(|&g| group_alive(g)).collect();
    if groups.is_empty() {
        return;
    }
    for &g in &groups {
        signal_group(g, Signal::SIGTERM);
    }
    std::thread::sleep(Duration::from_millis(200));
    for &g in &groups {
        signal_group(g, Signal::SIGKILL);
    }
    live().clear();
}
