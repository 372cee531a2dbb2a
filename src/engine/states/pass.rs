//! Pass and Succeed: data flow only.

use crate::asl::model::{OptionalPath, Pass, Succeed, Transition};
use crate::engine::execution::{Engine, Failed, StateCx, Step};
use serde_json::Value;

impl Engine {
    /// Pass: InputPath, Parameters, then `Result` (or the effective input) as the result.
    pub(crate) fn pass(&self, cx: &StateCx<'_>, p: &Pass, input: Value) -> Result<Step, Failed> {
        // The raw input is only needed again when ResultPath merges into it; avoid the clone
        // otherwise (Pass chains are the hottest path there is).
        let (raw, effective) = match p.io.result_path {
            OptionalPath::Default => (Value::Null, self.input_path(cx, &p.io, input)?),
            _ => {
                let effective = self.input_path(cx, &p.io, input.clone())?;
                (input, effective)
            }
        };
        let result = match (&p.result, &p.io.parameters) {
            (Some(r), _) => r.clone(),
            (None, Some(t)) => self.template(cx, t, &effective, "Parameters", |_| {})?,
            (None, None) => effective,
        };
        let output = self.result_path(cx, &p.io, raw, result)?;
        let output = self.output_path(cx, &p.io, output)?;
        Ok(Step {
            output,
            next: p.transition,
            prev: cx.entered_id,
            no_exit_event: false,
        })
    }

    /// Succeed: InputPath then OutputPath, and the scope ends.
    pub(crate) fn succeed(
        &self,
        cx: &StateCx<'_>,
        s: &Succeed,
        input: Value,
    ) -> Result<Step, Failed> {
        let effective = self.input_path(cx, &s.io, input)?;
        let output = self.output_path(cx, &s.io, effective)?;
        Ok(Step {
            output,
            next: Transition::End,
            prev: cx.entered_id,
            no_exit_event: false,
        })
    }
}
