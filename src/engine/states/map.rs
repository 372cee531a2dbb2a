//! Map (inline): the item processor runs once per item, at most `MaxConcurrency` at a time
//! (AWS caps inline Maps at 40), and the outputs are collected in item order.

use crate::asl::error::{names, StatesError};
use crate::asl::model::{Dynamic, ItemSelector, Map};
use crate::engine::execution::{bracket_notation, Engine, Failed, StateCx, Step};
use crate::engine::history::{Details, EventId, EventType};
use crate::engine::retry::Retries;
use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};
use std::cell::Cell;

/// AWS runs at most 40 iterations of an inline Map at once.
const INLINE_MAX_CONCURRENCY: usize = 40;

impl Engine {
    /// Map: InputPath, then attempts under Retry, then Catch.
    pub(crate) async fn map(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        input: Value,
    ) -> Result<Step, Failed> {
        let effective = self.input_path(cx, &m.io, input.clone())?;
        let mut retries = Retries::new(&m.errors.retry);
        loop {
            match self.map_attempt(cx, m, &input, &effective).await {
                Ok((output, prev)) => {
                    return Ok(Step {
                        output,
                        next: m.transition,
                        prev,
                        no_exit_event: false,
                    })
                }
                Err(failed) => match retries.on_failure(&failed) {
                    Some(delay) => self.retry_pause(delay).await,
                    None => return self.catch(&m.errors, &input, failed),
                },
            }
        }
    }

    async fn map_attempt(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        raw_input: &Value,
        effective: &Value,
    ) -> Result<(Value, EventId), Failed> {
        let items = match &m.items_path {
            None => effective.clone(),
            Some(p) => self
                .with_env(cx, effective, |_| {}, |env| p.select(env))
                .ok_or_else(|| {
                    self.state_error(
                        cx,
                        names::RUNTIME,
                        &format!(
                            "Invalid path '{}' : No results for path: {}",
                            p.text(),
                            bracket_notation(p.text())
                        ),
                    )
                })?,
        };
        let Value::Array(items) = items else {
            return Err(self.state_error(
                cx,
                names::RUNTIME,
                &format!(
                    "Invalid path '{}': The Map state's items must be an array, but the value is {}",
                    m.items_path.as_ref().map(|p| p.text()).unwrap_or("$"),
                    items
                ),
            ));
        };
        let max_concurrency = self
            .resolve_count(
                cx,
                m.max_concurrency.as_ref(),
                effective,
                "MaxConcurrencyPath",
                0,
            )?
            .unwrap_or(0) as usize;
        let tolerated_count = self
            .resolve_count(
                cx,
                m.tolerated_failure_count.as_ref(),
                effective,
                "ToleratedFailureCountPath",
                0,
            )?
            .unwrap_or(0) as usize;
        let tolerated_percentage = self.tolerated_percentage(cx, m, effective)?;
        let tolerant = tolerated_count > 0 || tolerated_percentage > 0.0;
        let total = items.len();
        let started = self.push(
            cx.entered_id,
            EventType::MapStateStarted,
            Some(Details::new().value("length", total.into()).build()),
        )?;
        let limit = match max_concurrency {
            0 => INLINE_MAX_CONCURRENCY,
            n => n.min(INLINE_MAX_CONCURRENCY),
        };
        let last = Cell::new(started);
        let mut running = stream::iter(items.into_iter().enumerate())
            .map(|(index, item)| self.iteration(cx, m, index, item, effective, started, &last))
            .buffer_unordered(limit);
        let mut results = vec![Value::Null; total];
        let mut failures = 0usize;
        while let Some((index, result)) = running.next().await {
            match result {
                Ok(output) => results[index] = output,
                Err(failed) if failed.terminal => return Err(failed),
                Err(failed) => {
                    failures += 1;
                    let exceeded = !tolerant
                        || failures > tolerated_count && tolerated_percentage == 0.0
                        || (tolerated_percentage > 0.0
                            && (failures as f64 * 100.0 / total as f64) > tolerated_percentage
                            && failures > tolerated_count);
                    if exceeded {
                        // Dropping the running iterations writes their aborted events.
                        drop(running);
                        let prev = self.push(failed.prev, EventType::MapStateFailed, None)?;
                        let error = if tolerant {
                            StatesError::new(
                                names::EXCEED_TOLERATED_FAILURE_THRESHOLD,
                                format!(
                                    "The Map state '{}' had {failures} failed iterations, more than it tolerates.",
                                    cx.state.name
                                ),
                            )
                        } else {
                            failed.error
                        };
                        return Err(Failed::new(error, prev));
                    }
                    results[index] = failed.error.to_error_output();
                }
            }
        }
        drop(running);
        let prev = self.push(last.get(), EventType::MapStateSucceeded, None)?;
        let output = self.finish_result(cx, &m.io, raw_input.clone(), Value::Array(results))?;
        Ok((output, prev))
    }

    fn tolerated_percentage(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        effective: &Value,
    ) -> Result<f64, Failed> {
        let value = match &m.tolerated_failure_percentage {
            None | Some(Dynamic::Jsonata(_)) => return Ok(0.0),
            Some(Dynamic::Literal(p)) => *p,
            Some(Dynamic::Path(p)) => {
                let v = self
                    .with_env(cx, effective, |_| {}, |env| p.select(env))
                    .unwrap_or(Value::Null);
                match v.as_f64() {
                    Some(f) => f,
                    None => {
                        let shown = match &v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        return Err(self.state_error(
                            cx,
                            names::RUNTIME,
                            &format!(
                                "The ToleratedFailurePercentagePath field refers to value \"{shown}\" which is not a valid float: {}",
                                p.text()
                            ),
                        ));
                    }
                }
            }
        };
        if !(0.0..=100.0).contains(&value) {
            return Err(self.state_error(
                cx,
                names::RUNTIME,
                "ToleratedFailurePercentage must be between 0 and 100.",
            ));
        }
        Ok(value)
    }

    /// One iteration: its input (ItemSelector with `$$.Map.Item`), its events, its scope.
    #[allow(clippy::too_many_arguments)]
    async fn iteration(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        index: usize,
        item: Value,
        effective: &Value,
        started: EventId,
        last: &Cell<EventId>,
    ) -> (usize, Result<Value, Failed>) {
        let result = async {
            let input = match &m.item_selector {
                Some(ItemSelector::JsonPath(t)) => {
                    let item_cx = json!({"Index": index, "Value": item});
                    self.template(cx, t, effective, "ItemSelector", |context| {
                        if let Value::Object(c) = context {
                            c.insert("Map".into(), json!({ "Item": item_cx }));
                        }
                    })?
                }
                _ => item,
            };
            let details = || {
                Some(
                    Details::new()
                        .str("name", &cx.state.name)
                        .value("index", index.into())
                        .build(),
                )
            };
            let it_started = self.push(
                last.get().max(started),
                EventType::MapIterationStarted,
                details(),
            )?;
            let guard = IterationGuard {
                engine: self,
                prev: it_started,
                details: details(),
                armed: Cell::new(true),
            };
            let result = self.run_scope(&m.processor, input, it_started).await;
            guard.armed.set(false);
            match result {
                Ok((output, prev)) => {
                    let id = self.push(prev, EventType::MapIterationSucceeded, details())?;
                    last.set(id);
                    Ok(output)
                }
                Err(failed) if failed.terminal => Err(failed),
                Err(failed) => {
                    let id = self.push(failed.prev, EventType::MapIterationFailed, details())?;
                    last.set(id);
                    Err(Failed { prev: id, ..failed })
                }
            }
        }
        .await;
        (index, result)
    }
}

/// Writes `MapIterationAborted` when a running iteration is dropped.
struct IterationGuard<'a> {
    engine: &'a Engine,
    prev: EventId,
    details: Option<String>,
    armed: Cell<bool>,
}

impl Drop for IterationGuard<'_> {
    fn drop(&mut self) {
        if self.armed.get() {
            let _ = self.engine.push(
                self.prev,
                EventType::MapIterationAborted,
                self.details.take(),
            );
        }
    }
}
