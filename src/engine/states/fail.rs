//! Fail: ends the execution (or branch) with an error and a cause.

use crate::asl::error::{names, StatesError};
use crate::asl::model::{Fail, FailText};
use crate::engine::execution::{Engine, Failed, StateCx, StatesData, Step};
use serde_json::Value;

impl Engine {
    /// Fail: resolves Error/ErrorPath and Cause/CausePath against the state's input.
    pub(crate) async fn fail(
        &self,
        cx: &StateCx<'_>,
        f: &Fail,
        input: Value,
    ) -> Result<Step, Failed> {
        let (error_field, cause_field) = match cx.state.query_language {
            crate::asl::model::QueryLanguage::Jsonata => ("Error", "Cause"),
            crate::asl::model::QueryLanguage::JsonPath => ("ErrorPath", "CausePath"),
        };
        let error = self
            .fail_text(cx, f.error.as_ref(), &input, error_field)
            .await?;
        let cause = self
            .fail_text(cx, f.cause.as_ref(), &input, cause_field)
            .await?;
        Err(Failed::new(
            StatesError {
                error,
                cause,
                heartbeat: false,
            },
            cx.entered_id,
        ))
    }

    async fn fail_text(
        &self,
        cx: &StateCx<'_>,
        text: Option<&FailText>,
        input: &Value,
        field: &str,
    ) -> Result<Option<String>, Failed> {
        let value = match text {
            None => return Ok(None),
            Some(FailText::Literal(s)) => return Ok(Some(s.clone())),
            Some(FailText::Jsonata(t)) => {
                return match self.jsonata(cx, t, field, StatesData::input(input)).await? {
                    Value::String(s) => Ok(Some(s)),
                    other => Err(self.evaluation_failed(
                        cx,
                        Some(field),
                        &format!(
                            "The JSONata expression '{}' specified for the field '{field}' returned an unexpected result type. Expected 'string', but was '{}' for value: {other}",
                            t.as_expression().map_or("", |e| e.text()),
                            crate::asl::jsonata::type_name(&other)
                        ),
                    )),
                }
            }
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
