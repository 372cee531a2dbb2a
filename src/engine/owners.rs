//! Who drives an execution: runner ids, and whether the runner an id names is gone.
//!
//! A runner's id records its pid and where that pid means something: this boot of this
//! machine and this pid namespace (a container has its own). A runner that finds another
//! runner's lease still live but its process gone from /proc (killed, crashed, OOM) ends that
//! runner's leases at once ([`expire_dead_runners`]), instead of waiting up to a lease period
//! for them to lapse. An id from elsewhere (another machine, container or boot, or a system
//! without /proc) is never judged so: its leases lapse as before.

use crate::clock::system_now;
use crate::store::{Store, StoreError};
use std::sync::OnceLock;

/// An owner id for this process: unique per runner, `pid-PID-RANDOM@SPACE` where /proc says
/// which pid space this is, `pid-PID-RANDOM` where it does not.
pub fn new_owner() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let pid = std::process::id();
    match pid_space() {
        Some(space) => format!("pid-{pid}-{}@{space}", &id[..8]),
        None => format!("pid-{pid}-{}", &id[..8]),
    }
}

/// This boot of this machine and this pid namespace, as `BOOT.NAMESPACE` (the start of the
/// kernel's boot id, the namespace's inode); `None` where /proc does not say.
fn pid_space() -> Option<&'static str> {
    static SPACE: OnceLock<Option<String>> = OnceLock::new();
    SPACE
        .get_or_init(|| {
            let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
            let namespace = std::fs::read_link("/proc/self/ns/pid").ok()?;
            // "pid:[4026531836]"
            let inode: String = namespace
                .to_string_lossy()
                .chars()
                .filter(char::is_ascii_digit)
                .collect();
            let boot: String = boot.trim().chars().take(8).collect();
            (!inode.is_empty() && boot.len() == 8).then(|| format!("{boot}.{inode}"))
        })
        .as_deref()
}

/// Whether `owner` is a runner of this pid space whose process no longer runs (a zombie
/// counts as gone). `false` when that cannot be known.
pub fn owner_is_gone(owner: &str) -> bool {
    let Some(space) = pid_space() else {
        return false;
    };
    let pid = owner
        .strip_prefix("pid-")
        .and_then(|rest| rest.strip_suffix(space))
        .and_then(|rest| rest.strip_suffix('@'))
        .and_then(|rest| rest.split('-').next())
        .and_then(|pid| pid.parse::<u32>().ok());
    match pid {
        Some(pid) => !process_runs(pid),
        None => false,
    }
}

/// Whether /proc shows `pid` as a process that has not exited.
fn process_runs(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses and may hold any.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X')),
        Err(_) => false,
    }
}

/// Ends the leases of every runner but `me` whose lease is live but whose process is gone
/// (see [`owner_is_gone`]); returns how many runners that was.
pub fn expire_dead_runners(store: &Store, me: &str) -> Result<usize, StoreError> {
    let mut expired = 0;
    for owner in store.live_runners(system_now())? {
        if owner != me && owner_is_gone(&owner) {
            store.expire_runner(&owner)?;
            expired += 1;
        }
    }
    Ok(expired)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_not_gone_and_a_pid_that_never_ran_is() {
        let me = new_owner();
        assert!(!owner_is_gone(&me), "{me}");
        if let Some(space) = pid_space() {
            // Above the kernel's pid_max (at most 2^22).
            assert!(owner_is_gone(&format!("pid-99999999-abcdef01@{space}")));
            assert!(!owner_is_gone("pid-99999999-abcdef01@elsewhere.1"));
            assert!(
                !owner_is_gone("pid-99999999-abcdef01"),
                "an id without its space"
            );
        }
    }
}
