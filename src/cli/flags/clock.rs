//! `--clock`, `--clock-start`, `--time-scale` and `--seed`: how time passes for the executions
//! a command runs, lowered once into a [`Timekeeping`].
//!
//! No setting may reorder deadlines: `--time-scale 0`, which used to put a heartbeat and its
//! task's whole budget on one instant, now means the virtual clock, on which every deadline
//! keeps its place and time jumps to it.

use super::FlagError;
use crate::clock::{Millis, Timekeeping, VirtualClock};

/// Which clock executions read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClockKind {
    /// The system clock (scaled by `--time-scale`).
    Real,
    /// Time jumps to the next deadline whenever every execution waits.
    Virtual,
}

/// The clock flags of `run`, `test`, `resume`, `redrive` and `serve`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ClockArgs {
    /// `virtual`: time does not pass by itself but jumps to the next deadline whenever every
    /// execution waits (no state evaluating, no command, HTTP call or request in flight), so a
    /// day-long Wait or an hour-long task budget passes in milliseconds, every deadline in
    /// AWS's order. `real`: the system clock
    #[arg(long, value_enum, value_name = "CLOCK", env = "SFN_LOCAL_CLOCK")]
    pub clock: Option<ClockKind>,
    /// The instant a virtual clock starts at (RFC 3339, e.g. 2030-01-01T00:00:00Z; default: now)
    #[arg(long, value_name = "RFC3339", env = "SFN_LOCAL_CLOCK_START")]
    pub clock_start: Option<String>,
    /// Multiply every duration the engine waits for (Wait, retry intervals, timeouts) by F on
    /// the real clock. 0 means `--clock virtual`
    #[arg(long, value_name = "F")]
    pub time_scale: Option<f64>,
    /// Seed generated names, ARNs and task tokens, so that runs with the same --clock-start
    /// and --seed write byte-identical histories (tokens are then predictable: tests only)
    #[arg(long, value_name = "N", env = "SFN_LOCAL_SEED")]
    pub seed: Option<u64>,
}

impl ClockArgs {
    /// True when any clock flag was given (`resume` and `redrive` otherwise keep the clock an
    /// execution ran on). `--seed` is installed either way by [`ClockArgs::lower`] or here.
    pub fn given(&self) -> bool {
        if let Some(n) = self.seed {
            crate::random::seed(n);
        }
        self.clock.is_some() || self.clock_start.is_some() || self.time_scale.is_some()
    }

    /// The clock in force: `default` unless a flag chose; an automatic virtual clock jumps by
    /// itself (`run`, `test`), one on request waits for a client (`serve`). Installs `--seed`.
    pub fn lower(&self, default: ClockKind, automatic: bool) -> Result<Timekeeping, FlagError> {
        let scale = self.time_scale.map(check).transpose()?;
        let kind = match (self.clock, scale) {
            (Some(ClockKind::Real), Some(0.0)) => {
                return Err(usage(
                    "--time-scale 0 with --clock real would put every deadline on one instant \
                     and reorder them (a heartbeat and its task's budget both due at once); \
                     use --clock virtual",
                ))
            }
            (Some(kind), _) => kind,
            (None, Some(0.0)) => ClockKind::Virtual,
            (None, Some(_)) => ClockKind::Real,
            (None, None) => default,
        };
        if let Some(n) = self.seed {
            crate::random::seed(n);
        }
        match kind {
            ClockKind::Real => {
                if self.clock_start.is_some() {
                    return Err(usage("--clock-start needs --clock virtual"));
                }
                Ok(Timekeeping::scaled(scale.unwrap_or(1.0)))
            }
            ClockKind::Virtual => {
                if scale.is_some_and(|s| s != 0.0 && s != 1.0) {
                    return Err(usage(
                        "--time-scale scales the real clock; a virtual clock needs none \
                         (its seconds are whole and pass at once)",
                    ));
                }
                let start = match &self.clock_start {
                    Some(text) => parse_start(text)?,
                    None => crate::clock::system_now(),
                };
                Ok(Timekeeping::Virtual(match automatic {
                    true => VirtualClock::automatic(start),
                    false => VirtualClock::on_request(start),
                }))
            }
        }
    }
}

/// Checks a time scale: a finite number, zero or more.
pub fn check(scale: f64) -> Result<f64, FlagError> {
    if scale.is_finite() && scale >= 0.0 {
        Ok(scale)
    } else {
        Err(usage("--time-scale must be a non-negative number"))
    }
}

/// An RFC 3339 instant, as milliseconds since the epoch, no later than the clock's last
/// instant ([`crate::clock::LATEST`]; an offset can carry 9999-12-31 into year 10000).
pub fn parse_start(text: &str) -> Result<Millis, FlagError> {
    let start = chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .map_err(|e| {
            usage(&format!(
                "--clock-start {text:?} is not an RFC 3339 instant (e.g. 2030-01-01T00:00:00Z): {e}"
            ))
        })?;
    if start > crate::clock::LATEST {
        return Err(usage(&format!(
            "--clock-start {text:?} is past {}, the latest instant the clock reads",
            crate::clock::iso8601(crate::clock::LATEST)
        )));
    }
    Ok(start)
}

fn usage(message: &str) -> FlagError {
    FlagError::Usage(message.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_scale_zero_is_the_virtual_clock_and_never_a_collapsed_real_one() {
        let zero = ClockArgs {
            time_scale: Some(0.0),
            ..ClockArgs::default()
        };
        assert!(zero
            .lower(ClockKind::Real, false)
            .unwrap()
            .virtual_clock()
            .is_some());
        let real_zero = ClockArgs {
            clock: Some(ClockKind::Real),
            ..zero
        };
        let err = real_zero.lower(ClockKind::Real, false).unwrap_err();
        assert!(err.to_string().contains("--clock virtual"), "{err}");
    }

    #[test]
    fn clock_start_pins_the_virtual_clock() {
        let args = ClockArgs {
            clock: Some(ClockKind::Virtual),
            clock_start: Some("2030-01-01T00:00:00Z".into()),
            ..ClockArgs::default()
        };
        let time = args.lower(ClockKind::Real, false).unwrap();
        assert_eq!(time.now(), 1_893_456_000_000);
        assert!(parse_start("tomorrow").is_err());
        assert_eq!(
            parse_start("9999-12-31T23:59:59.999Z").ok(),
            Some(crate::clock::LATEST)
        );
        // 9999-12-31 at -01:00 is year 10000 in UTC.
        assert!(parse_start("9999-12-31T23:59:59.999-01:00").is_err());
    }
}
