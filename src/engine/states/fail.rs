//! Fail: ends the execution (or branch) with an error and a cause.

use crate::asl::error::{names, StatesError};
use crate::asl::model::{Fail, FailText};
use crate::engine::execution::{Engine, Failed, StateCx, Step};
use serde_json::Value;

impl Engine {
    /// Fail: resolves Error/ErrorPath and Cause/CausePath against the state's input.
    pub(crate) fn fail(&self, cx: &StateCx<'_>, f: &Fail, input: Value) -> Result<Step, Failed> {
        let error = self.fail_text(cx, f.error.as_ref(), &input, "ErrorPath")?;
        let cause = self.fail_text(cx, f.cause.as_ref(), &input, "CausePath")?;
        Err(Failed::new(
            StatesError {
                error,
                cause,
                heartbeat: false,
            },
            cx.entered_id,
        ))
    }

    fn fail_text(
        &self,
        cx: &StateCx<'_>,
        text: Option<&FailText>,
        input: &Value,
        field: &str,
    ) -> Result<Option<String>, Failed> {
        let value = match text {
            None => return Ok(None),
            Some(FailText::Literal(s)) => return Ok(Some(s.clone())),
            Some(FailText::Jsonata(_)) => return Ok(None),
            Some(FailText::Path(p)) => self
                .with_env(cx, input, |_| {}, |env| p.select(env))
                .ok_or_else(|| {
                    self.state_error(
                        cx,
                        names::RUNTIME,
                        &format!(
                            "The JSONPath '{}' specified for the field '{field}' could not be found in the input '{input}'",
                            p.text()
                        ),
                    )
                })?,
            Some(FailText::Intrinsic(c)) => self
                .with_env(cx, input, |_| {}, |env| c.evaluate(env))
                .map_err(|e| self.prefixed(cx, e))?,
        };
        match value {
            Value::String(s) => Ok(Some(s)),
            other => Err(self.state_error(
                cx,
                names::RUNTIME,
                &format!("The value of the field '{field}' must be a string, but is {other}"),
            )),
        }
    }
}
