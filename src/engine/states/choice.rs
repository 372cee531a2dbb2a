//! Choice: the first rule that matches picks the next state.

use crate::asl::error::names;
use crate::asl::model::{Choice, Condition, QueryLanguage, Transition};
use crate::engine::execution::{Engine, Failed, StateCx, StatesData, Step};
use serde_json::Value;

impl Engine {
    /// Choice: InputPath, rules in order against the effective input, Default, OutputPath.
    /// In JSONata, each rule's `Condition` is evaluated; the matching rule's `Output` and
    /// `Assign` apply, else the state's.
    pub(crate) async fn choice(
        &self,
        cx: &StateCx<'_>,
        c: &Choice,
        input: Value,
    ) -> Result<Step, Failed> {
        let effective = self.input_path(cx, &c.io, input.clone())?;
        let data = StatesData::input(&input);
        let mut matched = None;
        for branch in &c.choices {
            let hit = match &branch.condition {
                Condition::JsonPath(rule) => self
                    .with_env(cx, &effective, |_| {}, |env| rule.evaluate(env))
                    .map_err(|e| self.prefixed(cx, e))?,
                Condition::Jsonata(t) => match self.jsonata(cx, t, "Condition", data).await? {
                    Value::Bool(b) => b,
                    other => {
                        let what = match t.as_expression() {
                            Some(e) => format!("The JSONata expression '{}'", e.text()),
                            None => "The value".to_owned(),
                        };
                        return Err(self.evaluation_failed(
                            cx,
                            Some("Condition"),
                            &format!(
                                "{what} specified for the field 'Condition' returned an unexpected result type. Expected 'boolean', but was '{}' for value: {other}",
                                crate::asl::jsonata::type_name(&other)
                            ),
                        ));
                    }
                },
            };
            if hit {
                matched = Some(branch);
                break;
            }
        }
        let next = match (matched, c.default) {
            (Some(b), _) => b.next,
            (None, Some(d)) => d,
            (None, None) => {
                return Err(self.state_error(
                    cx,
                    names::NO_CHOICE_MATCHED,
                    "No Choice rule matched the input and there is no Default.",
                ))
            }
        };
        let assign = matched
            .and_then(|b| b.assign.as_ref())
            .or(cx.state.assign.as_ref());
        let output = if cx.state.query_language == QueryLanguage::Jsonata {
            let output = matched
                .and_then(|b| b.output.as_ref())
                .or(c.io.output.as_ref());
            self.jsonata_output(cx, output, data, input.clone()).await?
        } else {
            self.output_path(cx, &c.io, effective.clone())?
        };
        self.assign(cx, assign, &effective, data).await?;
        Ok(Step {
            output,
            next: Transition::Next(next),
            prev: cx.entered_id,
            no_exit_event: false,
        })
    }
}
