//! Retry: which retrier handles an error, and how long to wait before the next attempt.

use crate::asl::model::{JitterStrategy, Retrier};
use crate::engine::execution::Failed;
use std::time::Duration;

/// The retry state of one state execution: each retrier's own attempt counter (kept across
/// all its attempts, reset when the machine moves to another state).
pub(crate) struct Retries<'a> {
    retriers: &'a [Retrier],
    counters: Vec<u64>,
    /// How many retries so far (`$$.State.RetryCount`).
    pub count: u64,
}

impl<'a> Retries<'a> {
    pub(crate) fn new(retriers: &'a [Retrier]) -> Self {
        Retries {
            retriers,
            counters: vec![0; retriers.len()],
            count: 0,
        }
    }

    /// Decides whether to retry after a failure: the first retrier whose `ErrorEquals` matches
    /// is the only one considered, even when it is exhausted. Returns the delay to wait.
    pub(crate) fn on_failure(&mut self, failed: &Failed) -> Option<Duration> {
        if failed.terminal {
            return None;
        }
        let i = self
            .retriers
            .iter()
            .position(|r| r.error_equals.iter().any(|p| failed.error.matches(p)))?;
        let r = &self.retriers[i];
        if self.counters[i] >= r.max_attempts {
            return None;
        }
        self.counters[i] += 1;
        self.count += 1;
        Some(delay(r, self.counters[i]))
    }
}

/// The wait before retry number `attempt` (1-based) of a retrier:
/// `IntervalSeconds × BackoffRate^(attempt-1)`, capped at `MaxDelaySeconds`, then jittered.
pub fn delay(r: &Retrier, attempt: u64) -> Duration {
    let exponent = attempt.saturating_sub(1).min(1024) as i32;
    let mut seconds = r.interval_seconds as f64 * r.backoff_rate.powi(exponent);
    if let Some(max) = r.max_delay_seconds {
        seconds = seconds.min(max as f64);
    }
    // AWS's own cap on a single interval is a year; anything beyond is effectively forever.
    seconds = seconds.min(31_536_000.0);
    if r.jitter == JitterStrategy::Full {
        seconds *= random_unit();
    }
    Duration::from_secs_f64(seconds.max(0.0))
}

/// A random number in [0, 1) from the OS.
fn random_unit() -> f64 {
    let mut b = [0u8; 8];
    if crate::random::fill(&mut b).is_err() {
        return 1.0;
    }
    (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retrier(interval: u64, rate: f64, max_delay: Option<u64>) -> Retrier {
        Retrier {
            error_equals: vec!["States.ALL".into()],
            interval_seconds: interval,
            max_attempts: 3,
            backoff_rate: rate,
            max_delay_seconds: max_delay,
            jitter: JitterStrategy::None,
        }
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let r = retrier(3, 2.0, None);
        assert_eq!(delay(&r, 1), Duration::from_secs(3));
        assert_eq!(delay(&r, 2), Duration::from_secs(6));
        let r = retrier(3, 2.0, Some(4));
        assert_eq!(delay(&r, 2), Duration::from_secs(4));
    }

    #[test]
    fn full_jitter_stays_below_the_interval() {
        let mut r = retrier(10, 1.0, None);
        r.jitter = JitterStrategy::Full;
        for _ in 0..20 {
            assert!(delay(&r, 1) <= Duration::from_secs(10));
        }
    }
}
