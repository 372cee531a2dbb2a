//! Pass and Succeed: data flow only.

use crate::asl::model::{OptionalPath, Pass, QueryLanguage, Succeed, Transition};
use crate::engine::execution::{Engine, Failed, StateCx, StatesData, Step};
use serde_json::Value;

impl Engine {
    /// Pass: InputPath, Parameters, then `Result` (or the effective input) as the result.
    pub(crate) async fn pass(
        &self,
        cx: &StateCx<'_>,
        p: &Pass,
        input: Value,
    ) -> Result<Step, Failed> {
        if cx.state.query_language == QueryLanguage::Jsonata {
            let data = StatesData::input(&input);
            let output = self
                .jsonata_output(cx, p.io.output.as_ref(), data, input.clone())
                .await?;
            self.assign(cx, cx.state.assign.as_ref(), &input, data)
                .await?;
            return Ok(Step {
                output,
                next: p.transition,
                prev: cx.entered_id,
                no_exit_event: false,
            });
        }
        // The raw input is only needed again when ResultPath merges into it or Assign reads
        // it; avoid the clone otherwise (Pass chains are the hottest path there is).
        let keeps_input =
            !matches!(p.io.result_path, OptionalPath::Default) || cx.state.assign.is_some();
        let (input, effective) = if keeps_input {
            let effective = self.input_path(cx, &p.io, input.clone())?;
            (input, effective)
        } else {
            (Value::Null, self.input_path(cx, &p.io, input)?)
        };
        let result = match (&p.result, &p.io.parameters) {
            (Some(r), _) => r.clone(),
            (None, Some(t)) => self.template(cx, t, &effective, "Parameters", |_| {})?,
            (None, None) => effective,
        };
        // A JSONPath Pass assigns from its result (Result, or the effective input).
        self.assign(
            cx,
            cx.state.assign.as_ref(),
            &result,
            StatesData::input(&input),
        )
        .await?;
        let output = self.result_path(cx, &p.io, input, result)?;
        let output = self.output_path(cx, &p.io, output)?;
        Ok(Step {
            output,
            next: p.transition,
            prev: cx.entered_id,
            no_exit_event: false,
        })
    }

    /// Succeed: InputPath then OutputPath, and the scope ends.
    pub(crate) async fn succeed(
        &self,
        cx: &StateCx<'_>,
        s: &Succeed,
        input: Value,
    ) -> Result<Step, Failed> {
        if cx.state.query_language == QueryLanguage::Jsonata {
            let data = StatesData::input(&input);
            let output = self
                .jsonata_output(cx, s.io.output.as_ref(), data, input.clone())
                .await?;
            return Ok(Step {
                output,
                next: Transition::End,
                prev: cx.entered_id,
                no_exit_event: false,
            });
        }
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
