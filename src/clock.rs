//! Every clock the engine reads goes through [`Clock`]: the real one, a scaled one for
//! `--time-scale`, and a manual one for tests.
//!
//! Times are wall-clock milliseconds since the Unix epoch ([`Millis`]), because deadlines are
//! stored in the database and must mean the same thing to another process after a crash.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Wall-clock milliseconds since the Unix epoch (UTC).
pub type Millis = i64;

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
        Box::pin(async move {
            let wait = deadline - system_now();
            if wait > 0 {
                tokio::time::sleep(Duration::from_millis(wait as u64)).await;
            }
        })
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

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        self.now.fetch_add(by.as_millis() as i64, Ordering::SeqCst);
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
}
