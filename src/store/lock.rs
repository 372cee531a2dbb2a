//! Taking the write lock: `BEGIN IMMEDIATE` retried with short, jittered sleeps until the busy
//! timeout.
//!
//! SQLite's own busy handler backs off to 100 ms sleeps. Under many writer processes (a runner
//! per execution, a `send-task-heartbeat` process per beat) that is unfair: a process that has
//! waited long sleeps 100 ms while newcomers retry after 1 or 2 ms and take the lock first, so
//! one unlucky worker's answer can wait out the whole timeout while the lock is free most of
//! the time. Here every waiter retries every few milliseconds whatever its age, so the lock goes
//! to waiters roughly at random and no one starves. Statements inside the transaction keep
//! SQLite's handler (with the WAL and the write lock held they hardly ever wait).

use std::cell::Cell;
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, Transaction, TransactionBehavior};

/// The longest sleep between two attempts at the lock.
const MAX_SLEEP_MICROS: u64 = 8_000;
/// The shortest.
const MIN_SLEEP_MICROS: u64 = 500;

/// Opens an IMMEDIATE transaction on `conn`, waiting up to `timeout` for another connection's
/// write lock. Fails with SQLite's `SQLITE_BUSY` once the timeout has passed.
pub(crate) fn begin_immediate(
    conn: &Connection,
    timeout: Duration,
) -> rusqlite::Result<Transaction<'_>> {
    let started = Instant::now();
    // Our loop waits, not SQLite's handler (restored below for the statements that follow).
    conn.busy_timeout(Duration::ZERO)?;
    let result = loop {
        // `new_unchecked` takes `&Connection`: callers hand us their `&mut` borrow's target, so
        // nothing else uses the connection while the transaction lives.
        match Transaction::new_unchecked(conn, TransactionBehavior::Immediate) {
            Err(e) if is_busy(&e) && started.elapsed() < timeout => {
                let left = timeout.saturating_sub(started.elapsed());
                std::thread::sleep(jittered_sleep().min(left));
            }
            other => break other,
        }
    };
    conn.busy_timeout(timeout)?;
    result
}

/// Runs `op` again while it fails with `SQLITE_BUSY`, until `timeout`. For what SQLite's busy
/// handler does not wait on: two processes opening a new database at once both switch it to
/// WAL, which needs an exclusive lock, and SQLite answers one of them BUSY at once rather than
/// let them deadlock.
pub(crate) fn retry_busy<T>(
    timeout: Duration,
    mut op: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let started = Instant::now();
    loop {
        match op() {
            Err(e) if is_busy(&e) && started.elapsed() < timeout => {
                let left = timeout.saturating_sub(started.elapsed());
                std::thread::sleep(jittered_sleep().min(left));
            }
            other => return other,
        }
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked)
    )
}

thread_local! {
    /// xorshift64 state, seeded once per thread from the OS.
    static JITTER: Cell<u64> = Cell::new(getrandom::u64().unwrap_or(0x9E37_79B9_7F4A_7C15) | 1);
}

/// A sleep drawn uniformly from [`MIN_SLEEP_MICROS`, `MAX_SLEEP_MICROS`): random so that
/// waiters which started together do not retry in lockstep.
fn jittered_sleep() -> Duration {
    let r = JITTER.with(|state| {
        let mut x = state.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        x
    });
    Duration::from_micros(MIN_SLEEP_MICROS + r % (MAX_SLEEP_MICROS - MIN_SLEEP_MICROS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_stay_in_range_and_vary() {
        let sleeps: Vec<Duration> = (0..100).map(|_| jittered_sleep()).collect();
        assert!(sleeps
            .iter()
            .all(|d| d.as_micros() >= u128::from(MIN_SLEEP_MICROS)
                && d.as_micros() < u128::from(MAX_SLEEP_MICROS)));
        assert!(sleeps.windows(2).any(|w| w[0] != w[1]));
    }

    /// A WAL database whose write lock the returned connection holds.
    fn locked_database() -> (tempfile::TempDir, std::path::PathBuf, Connection) {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("lock.db");
        let holder = Connection::open(&path).expect("open");
        holder
            .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x)")
            .expect("schema");
        holder.execute_batch("BEGIN IMMEDIATE").expect("hold");
        (dir, path, holder)
    }

    #[test]
    fn a_lock_held_elsewhere_is_waited_for_then_taken() {
        let (_dir, path, holder) = locked_database();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            holder.execute_batch("COMMIT").expect("release");
        });
        let waiter = Connection::open(&path).expect("open");
        let tx =
            begin_immediate(&waiter, Duration::from_secs(5)).expect("lock taken after release");
        tx.execute("INSERT INTO t VALUES (1)", []).expect("write");
        tx.commit().expect("commit");
        release.join().expect("holder");
    }

    #[test]
    fn a_lock_held_past_the_timeout_is_busy() {
        let (_dir, path, holder) = locked_database();
        let waiter = Connection::open(&path).expect("open");
        let started = Instant::now();
        let err = begin_immediate(&waiter, Duration::from_millis(100)).expect_err("busy");
        assert!(is_busy(&err), "{err}");
        assert!(started.elapsed() >= Duration::from_millis(100));
        drop(holder);
    }
}
