//! Wait: for a number of seconds or until a time, on the engine's clock.

use crate::asl::error::names;
use crate::asl::model::{Dynamic, QueryLanguage, Wait, WaitFor};
use crate::asl::parse::parse_timestamp;
use crate::clock::Millis;
use crate::engine::execution::{Engine, Failed, StateCx, StatesData, Step};
use serde_json::Value;
use std::time::Duration;

/// AWS refuses waits past a year plus a little: "Wait state delay is too long."
const MAX_WAIT_SECONDS: u64 = 31_622_400;

impl Engine {
    /// Wait: InputPath, resolve the duration or time, sleep, OutputPath.
    pub(crate) async fn wait(
        &self,
        cx: &StateCx<'_>,
        w: &Wait,
        input: Value,
    ) -> Result<Step, Failed> {
        let effective = self.input_path(cx, &w.io, input.clone())?;
        // The wait counts from the state's entry, which a resumed execution reads from its
        // history: the deadline is the same absolute time as before the crash.
        let now = cx.entered_at;
        let declared = match &w.wait {
            WaitFor::Seconds(Dynamic::Literal(s)) => Duration::from_secs(*s),
            WaitFor::Seconds(Dynamic::Path(p)) => {
                let v = self
                    .with_env(cx, &effective, |_| {}, |env| p.select(env))
                    .ok_or_else(|| {
                        self.state_error(
                            cx,
                            names::RUNTIME,
                            &format!(
                                "The SecondsPath parameter does not reference an input value: {}",
                                p.text()
                            ),
                        )
                    })?;
                let seconds = match &v {
                    Value::Number(n) if n.as_u64().is_some() => n.as_u64().unwrap_or(0),
                    Value::Number(n) if n.as_i64().is_some_and(|i| i < 0) => {
                        return Err(self.state_error(
                            cx,
                            names::RUNTIME,
                            &format!(
                                "The SecondsPath parameter references a negative value: {} == {v}",
                                p.text()
                            ),
                        ))
                    }
                    _ => {
                        let shown = match &v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        return Err(self.state_error(
                            cx,
                            names::RUNTIME,
                            &format!(
                                "The SecondsPath parameter cannot be parsed as a long value: {} == {shown}",
                                p.text()
                            ),
                        ));
                    }
                };
                Duration::from_secs(seconds)
            }
            WaitFor::Timestamp(Dynamic::Literal(t)) => until(now, t.timestamp_millis()),
            WaitFor::Timestamp(Dynamic::Path(p)) => {
                let v = self.with_env(cx, &effective, |_| {}, |env| p.select(env));
                let parsed = v.as_ref().and_then(Value::as_str).and_then(parse_timestamp);
                match parsed {
                    Some(t) => until(now, t.timestamp_millis()),
                    None => {
                        let shown = match &v {
                            Some(Value::String(s)) => s.clone(),
                            Some(other) => other.to_string(),
                            None => "null".into(),
                        };
                        return Err(self.state_error(
                            cx,
                            names::RUNTIME,
                            &format!(
                                "The TimestampPath parameter does not reference a valid ISO-8601 extended offset date-time format string: {} == {shown}",
                                p.text()
                            ),
                        ));
                    }
                }
            }
            WaitFor::Seconds(Dynamic::Jsonata(t)) => {
                Duration::from_secs(self.jsonata_count(cx, t, "Seconds", &input, 0).await?)
            }
            WaitFor::Timestamp(Dynamic::Jsonata(t)) => {
                let v = self
                    .jsonata(cx, t, "Timestamp", StatesData::input(&input))
                    .await?;
                match v.as_str().and_then(parse_timestamp) {
                    Some(at) => until(now, at.timestamp_millis()),
                    None => {
                        let shown = match &v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        // The expression was evaluated; its value is rejected once the
                        // state waits, so AWS points this EvaluationFailed at WaitStateEntered.
                        let waiting = StateCx {
                            entered_prev: cx.entered_id,
                            ..cx.clone()
                        };
                        return Err(self.evaluation_failed(
                            &waiting,
                            Some("Timestamp"),
                            &format!("The Timestamp field cannot be parsed as an ISO-8601 extended offset date-time format string: {shown}"),
                        ));
                    }
                }
            }
        };
        if declared.as_secs() > MAX_WAIT_SECONDS {
            return Err(self.state_error(cx, names::RUNTIME, "Wait state delay is too long."));
        }
        // WAIT_TIME_SCALE (Step Functions Local's) shortens Waits only, before the clock's own
        // scale; a capped product, as the clock's (1e308 must not panic).
        let declared = Duration::try_from_secs_f64(declared.as_secs_f64() * self.wait_scale)
            .unwrap_or(declared);
        let deadline = now + self.clock.scale(declared).as_millis() as Millis;
        if deadline > now {
            self.history.borrow_mut().submit();
            self.parked(self.clock.sleep_until(deadline)).await;
        }
        let output = match cx.state.query_language {
            QueryLanguage::Jsonata => {
                let data = StatesData::input(&input);
                let output = self
                    .jsonata_output(cx, w.io.output.as_ref(), data, input.clone())
                    .await?;
                self.assign(cx, cx.state.assign.as_ref(), &input, data)
                    .await?;
                output
            }
            QueryLanguage::JsonPath => {
                self.assign(
                    cx,
                    cx.state.assign.as_ref(),
                    &effective,
                    StatesData::input(&input),
                )
                .await?;
                self.output_path(cx, &w.io, effective)?
            }
        };
        Ok(Step {
            output,
            next: w.transition,
            prev: cx.entered_id,
            no_exit_event: false,
        })
    }
}

/// The time from `now` until `at` (zero when it has passed).
fn until(now: Millis, at: Millis) -> Duration {
    Duration::from_millis((at - now).max(0) as u64)
}
