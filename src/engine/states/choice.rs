//! Choice: the first rule that matches picks the next state.

use crate::asl::error::names;
use crate::asl::model::{Choice, Condition, Transition};
use crate::engine::execution::{Engine, Failed, StateCx, Step};
use serde_json::Value;

impl Engine {
    /// Choice: InputPath, rules in order against the effective input, Default, OutputPath.
    pub(crate) fn choice(
        &self,
        cx: &StateCx<'_>,
        c: &Choice,
        input: Value,
    ) -> Result<Step, Failed> {
        let effective = self.input_path(cx, &c.io, input)?;
        let mut next = None;
        for branch in &c.choices {
            let matched = match &branch.condition {
                Condition::JsonPath(rule) => self
                    .with_env(cx, &effective, |_| {}, |env| rule.evaluate(env))
                    .map_err(|e| self.prefixed(cx, e))?,
                Condition::Jsonata(_) => false,
            };
            if matched {
                next = Some(branch.next);
                break;
            }
        }
        let Some(next) = next.or(c.default) else {
            return Err(self.state_error(
                cx,
                names::NO_CHOICE_MATCHED,
                "No Choice rule matched the input and there is no Default.",
            ));
        };
        let output = self.output_path(cx, &c.io, effective)?;
        Ok(Step {
            output,
            next: Transition::Next(next),
            prev: cx.entered_id,
            no_exit_event: false,
        })
    }
}
