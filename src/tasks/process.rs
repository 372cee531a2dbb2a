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
//!
//! Nothing of the above runs when sfn-local itself is killed with `SIGKILL`. Two things make
//! its programs die with it anyway:
//! - each program's leader asks the kernel for `SIGKILL` when its parent dies
//!   (`PR_SET_PDEATHSIG`, set between fork and exec by [`die_with_parent`]). The kernel sends
//!   it when the *thread* that forked the program ends, not the process: sfn-local forks from
//!   its execution threads, which live as long as the process;
//! - the leader's children are out of PDEATHSIG's reach, so a small reaper (`sh`, started once
//!   per process, in a group of its own and deaf to terminal signals) holds a pipe from
//!   sfn-local and the list of live groups, to which each program adds its own group between
//!   fork and exec (so none runs unlisted). When the pipe closes (sfn-local ended, however)
//!   it sends `SIGKILL` to every group still listed, then exits.
//!
//! `.waitForTaskToken` workers (`--task` on a callback state) are not in this registry on
//! purpose: their answer is meant to outlive the runner (a resumed execution takes it).

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::collections::BTreeSet;
use std::io::Write;
use std::sync::{Mutex, OnceLock};
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
        tell_reaper("add", pgid);
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
        forget(pgid);
        return;
    }
    signal_group(pgid, Signal::SIGTERM);
    let spawned = std::thread::Builder::new()
        .name("sfn-local-kill-after".into())
        .spawn(move || {
            std::thread::sleep(kill_after);
            signal_group(pgid, Signal::SIGKILL);
            forget(pgid);
        });
    if spawned.is_err() {
        signal_group(pgid, Signal::SIGKILL);
        forget(pgid);
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
    let all: Vec<u32> = std::mem::take(&mut *live()).into_iter().collect();
    all.into_iter().for_each(|g| tell_reaper("del", g));
}

/// A group is over: off the registry and the reaper's list (its id may be reused).
fn forget(pgid: u32) {
    live().remove(&pgid);
    tell_reaper("del", pgid);
}

/// Sets, in a program forked by sfn-local before it runs, `SIGKILL` on its parent's death,
/// and lists its group with the reaper (see the module's overview). For
/// [`std::os::unix::process::CommandExt::pre_exec`].
///
/// The program lists itself, before it runs: listed by sfn-local after the spawn returns, a
/// program that started a child at once could be killed with sfn-local in between, its child
/// unlisted and left running (seen as a flaky test, then 5 times in 30 on purpose).
#[cfg(target_os = "linux")]
pub fn die_with_parent(command: &mut tokio::process::Command) {
    let parent = std::process::id();
    let reaper = reaper_fd();
    let held = held_step();
    // SAFETY: the closure runs between fork and exec and makes only async-signal-safe
    // system calls (prctl, getpid, write, sigaction, getppid, kill, and in a test's debug
    // build nanosleep): no allocation, no locks.
    unsafe {
        command.pre_exec(move || {
            hold(held, ExecStep::Pdeathsig, parent);
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            hold(held, ExecStep::Listing, parent);
            if let Some(fd) = reaper {
                list_with_reaper(fd);
            }
            hold(held, ExecStep::ParentCheck, parent);
            // The parent died before the prctl: nobody would send the signal.
            if std::os::unix::process::parent_id() != parent {
                let _ = nix::sys::signal::raise(Signal::SIGKILL);
            }
            Ok(())
        });
    }
}

/// The steps a program takes between fork and exec, each of which a test can hold it before
/// (`SFN_LOCAL_HOLD_BEFORE_EXEC`, debug builds only: see [`held_step`]).
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExecStep {
    /// Asking for `SIGKILL` at the parent's death (`PR_SET_PDEATHSIG`).
    Pdeathsig,
    /// Listing its group with the reaper.
    Listing,
    /// Checking that the parent is still the one that forked it.
    ParentCheck,
}

/// In a debug build, the step `SFN_LOCAL_HOLD_BEFORE_EXEC` names (`pdeathsig`, `listing`,
/// `parent-check`), read once, in sfn-local: every program is then held before that step
/// until sfn-local is gone (at most [`HOLD_NAPS`] naps), so `tests/children_die.rs` can kill
/// sfn-local in each window of the fork. A release build never holds.
#[cfg(target_os = "linux")]
fn held_step() -> Option<ExecStep> {
    #[cfg(debug_assertions)]
    {
        static HELD: OnceLock<Option<ExecStep>> = OnceLock::new();
        *HELD.get_or_init(
            || match std::env::var("SFN_LOCAL_HOLD_BEFORE_EXEC").ok()?.as_str() {
                "pdeathsig" => Some(ExecStep::Pdeathsig),
                "listing" => Some(ExecStep::Listing),
                "parent-check" => Some(ExecStep::ParentCheck),
                _ => None,
            },
        )
    }
    #[cfg(not(debug_assertions))]
    None
}

/// How many 10 ms naps a held program waits at most for its parent to die (10 s).
#[cfg(target_os = "linux")]
const HOLD_NAPS: u32 = 1000;

/// Between fork and exec: when `step` is the `held` one, naps until `parent` is gone (or
/// [`HOLD_NAPS`] ran out). Only nanosleep and getppid, both async-signal-safe.
#[cfg(target_os = "linux")]
fn hold(held: Option<ExecStep>, step: ExecStep, parent: u32) {
    if held != Some(step) {
        return;
    }
    let nap = nix::libc::timespec {
        tv_sec: 0,
        tv_nsec: 10_000_000,
    };
    for _ in 0..HOLD_NAPS {
        if std::os::unix::process::parent_id() != parent {
            return;
        }
        // SAFETY: nanosleep reads `nap` and writes nothing (no remainder asked for).
        unsafe {
            nix::libc::nanosleep(&nap, std::ptr::null_mut());
        }
    }
}

/// Writes `add PID` (this process's group, which it leads) to the reaper's pipe at `fd`,
/// between fork and exec: no allocation, one `write` (under `PIPE_BUF`, so whole), and
/// `SIGPIPE` ignored meanwhile (a reaper that is gone must not kill the program).
#[cfg(target_os = "linux")]
fn list_with_reaper(fd: std::os::fd::RawFd) {
    use nix::sys::signal::{signal, SigHandler};
    let mut line = *b"add                     ";
    let mut end = line.len() - 1;
    line[end] = b'\n';
    let mut pid = std::process::id();
    loop {
        end -= 1;
        line[end] = b'0' + (pid % 10) as u8;
        pid /= 10;
        if pid == 0 {
            break;
        }
    }
    line.copy_within(end.., 4);
    let len = 4 + line.len() - end;
    // SAFETY: between fork and exec nothing else runs in this process; the handler is put
    // back to the default, which is what the program starts with.
    unsafe {
        let _ = signal(Signal::SIGPIPE, SigHandler::SigIgn);
        let _ = nix::libc::write(fd, line.as_ptr().cast(), len);
        let _ = signal(Signal::SIGPIPE, SigHandler::SigDfl);
    }
}

/// Elsewhere there is no PDEATHSIG; the reaper alone ends the groups.
#[cfg(not(target_os = "linux"))]
pub fn die_with_parent(_command: &mut tokio::process::Command) {}

/// The reaper's script: keeps the list of live groups from its stdin (`add PGID`, `del PGID`;
/// a group is added twice, by the program and by sfn-local, and listed once) and, at end of
/// input, sends `SIGKILL` to every group left. dash's `kill` takes `-9 -PGID`. Each `add` first
/// drops the groups that are gone (`kill -0`, a builtin): a program whose exec failed listed
/// itself but never gets a `del`, and its number may later lead someone else's group.
const REAPER: &str = r#"trap '' INT TERM HUP QUIT PIPE
groups=' '
while read -r op g; do
  case $op in
    add)
      live=' '
      for x in $groups; do kill -0 "-$x" 2>/dev/null && live="$live$x "; done
      groups=$live
      case $groups in *" $g "*) ;; *) groups="$groups$g " ;; esac ;;
    del) case $groups in *" $g "*) groups="${groups%% $g *} ${groups#* $g }" ;; esac ;;
  esac
done
for g in $groups; do kill -9 "-$g" 2>/dev/null; done
"#;

/// The pipe to this process's reaper, started at the first group; `None` if `sh` could not
/// start (PDEATHSIG still ends the leaders).
fn reaper() -> &'static Mutex<Option<std::process::ChildStdin>> {
    static REAPER_PIPE: OnceLock<Mutex<Option<std::process::ChildStdin>>> = OnceLock::new();
    REAPER_PIPE.get_or_init(|| {
        use std::os::unix::process::CommandExt;
        let started = std::process::Command::new("sh")
            .args(["-c", REAPER])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            // Its own group: a Ctrl-C meant for sfn-local does not end it first.
            .process_group(0)
            .spawn();
        Mutex::new(started.ok().and_then(|mut child| child.stdin.take()))
    })
}

fn tell_reaper(op: &str, pgid: u32) {
    let mut pipe = reaper().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(stdin) = pipe.as_mut() {
        // A reaper that is gone stays gone; its pipe stays open, as programs write to its
        // descriptor (see `reaper_fd`).
        // One write, under `PIPE_BUF`: whole, even beside a program's own `add` line
        // (`writeln!` would write the pieces one by one, and the lines could interleave).
        let _ = stdin.write_all(format!("{op} {pgid}\n").as_bytes());
    }
}

/// The reaper's pipe, started now if it is not yet: programs list themselves on it before
/// they run. Never closed while sfn-local runs, so the descriptor names it for good.
#[cfg(target_os = "linux")]
fn reaper_fd() -> Option<std::os::fd::RawFd> {
    use std::os::fd::AsRawFd;
    let pipe = reaper().lock().unwrap_or_else(|p| p.into_inner());
    pipe.as_ref().map(|stdin| stdin.as_raw_fd())
}
