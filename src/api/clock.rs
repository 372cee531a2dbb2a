//! The virtual clock's extension of the API (`POST /sfn-local/clock`; AWS has no such
//! operation), shared by `serve`, which answers it, and `sfn-local clock`, which asks.
//!
//! The body is JSON, `{"action": "now" | "settle" | "advance" | "next" | "until-idle",
//! "duration": "61s"}`
//! (`duration`, for `advance`, in humantime's units, or a number of seconds); the answer says
//! where the clock stands: `{"clock", "now", "nowMillis", "nextDeadline", "pendingDeadlines"}`,
//! and, for `next`, `skippedTo` (the instant it jumped to, or null when nothing waited on time).

use crate::clock::virtual_time::ClockError;
use crate::clock::{iso8601, Clock, VirtualClock};
use serde_json::{json, Value};
use std::time::Duration;

/// The path of the extension.
pub const PATH: &str = "/sfn-local/clock";

/// What a client asks of the clock.
#[derive(Debug, Clone, PartialEq)]
pub enum ClockAction {
    /// Where it stands.
    Now,
    /// Where it stands once nothing is in flight (no jump): what a test waits for before it
    /// looks for a token, so that it never skips past a deadline it has not seen yet.
    Settle,
    /// Forward by a duration, firing every deadline on the way in order.
    Advance(Duration),
    /// To the next deadline, firing every one due then.
    Next,
    /// From deadline to deadline until nothing waits on time.
    UntilIdle,
}

impl ClockAction {
    /// Reads a request body.
    pub fn parse(body: &Value) -> Result<ClockAction, String> {
        let action = body.get("action").and_then(Value::as_str).unwrap_or("now");
        match action {
            "now" => Ok(ClockAction::Now),
            "settle" => Ok(ClockAction::Settle),
            "next" => Ok(ClockAction::Next),
            "until-idle" => Ok(ClockAction::UntilIdle),
            "advance" => match body.get("duration") {
                Some(Value::String(text)) => parse_duration(text).map(ClockAction::Advance),
                Some(Value::Number(n)) => n
                    .as_f64()
                    .and_then(|s| Duration::try_from_secs_f64(s).ok())
                    .ok_or_else(|| format!("duration {n} is not a number of seconds >= 0"))
                    .and_then(|d| within_reach(&n.to_string(), d))
                    .map(ClockAction::Advance),
                _ => Err("advance needs a \"duration\" (e.g. \"61s\", \"1h\", or seconds)".into()),
            },
            other => Err(format!(
                "unknown action {other:?}: expected now, settle, advance, next or until-idle"
            )),
        }
    }
}

/// A duration as people write it: `61s`, `1h 30m`, `1day`, `500ms` (or bare seconds), no
/// longer than the clock can ever move (see [`within_reach`]).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let duration = match text.trim().parse::<f64>() {
        Ok(secs) => Duration::try_from_secs_f64(secs).map_err(|e| format!("{text:?}: {e}"))?,
        Err(_) => humantime::parse_duration(text.trim())
            .map_err(|e| format!("{text:?} is not a duration (e.g. 61s, 1h 30m, 1day): {e}"))?,
    };
    within_reach(text, duration)
}

/// Refuses a duration longer than from 1970 to the clock's last instant
/// ([`crate::clock::LATEST`]): no advance by it could land, whatever the clock reads. The
/// server refuses a shorter one that would pass that instant from where its clock stands.
fn within_reach(text: &str, duration: Duration) -> Result<Duration, String> {
    match crate::clock::checked_after(0, duration) {
        Some(_) => Ok(duration),
        None => Err(format!(
            "{text:?} is longer than the clock can move: it reads no later than {} ({} ms after 1970)",
            iso8601(crate::clock::LATEST),
            crate::clock::LATEST
        )),
    }
}

/// Moves the clock as asked (waiting for work in flight to settle), then describes it;
/// `next` also says where it skipped to (`skippedTo`, null when nothing waited on time).
/// An advance past the clock's last instant is refused, the clock unmoved.
pub fn act(clock: &VirtualClock, action: &ClockAction) -> Result<Value, ClockError> {
    let mut skipped = None;
    match action {
        ClockAction::Now => {}
        ClockAction::Settle => clock.settle(),
        ClockAction::Advance(by) => {
            clock.advance(*by)?;
        }
        ClockAction::Next => {
            skipped = Some(clock.skip_to_next().map(iso8601));
        }
        ClockAction::UntilIdle => {
            clock.until_idle();
        }
    }
    let mut answer = describe(clock);
    if let Some(skipped) = skipped {
        answer["skippedTo"] = json!(skipped);
    }
    Ok(answer)
}

/// Where a virtual clock stands.
pub fn describe(clock: &VirtualClock) -> Value {
    let now = clock.now();
    json!({
        "clock": "virtual",
        "now": iso8601(now),
        "nowMillis": now,
        "nextDeadline": clock.next_deadline().map(iso8601),
        "pendingDeadlines": clock.pending(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_and_durations_read_as_people_write_them() {
        let advance = |d: Value| ClockAction::parse(&json!({"action": "advance", "duration": d}));
        assert_eq!(
            advance(json!("61s")),
            Ok(ClockAction::Advance(Duration::from_secs(61)))
        );
        assert_eq!(
            advance(json!("1h 30m")),
            Ok(ClockAction::Advance(Duration::from_secs(5400)))
        );
        assert_eq!(
            advance(json!(1.5)),
            Ok(ClockAction::Advance(Duration::from_millis(1500)))
        );
        assert!(advance(json!("soon")).is_err());
        assert!(advance(json!(-1)).is_err());
        // 1970 to 9999-12-31T23:59:59.999Z is the longest; past it (and near 2^64 ms) refused.
        let longest = Duration::from_millis(crate::clock::LATEST as u64);
        assert_eq!(
            advance(json!("253402300799s 999ms")),
            Ok(ClockAction::Advance(longest))
        );
        for too_far in [
            json!("1e18"),
            json!(1e18),
            json!("253402300800"),
            json!(1.844_674_407_370_955e16),
        ] {
            let refused = advance(too_far.clone()).unwrap_err();
            assert!(
                refused.contains("9999-12-31T23:59:59.999Z"),
                "{too_far}: {refused}"
            );
        }
        assert!(parse_duration("584942417355years").is_err());
        assert_eq!(ClockAction::parse(&json!({})), Ok(ClockAction::Now));
        assert!(ClockAction::parse(&json!({"action": "rewind"})).is_err());
    }
}
