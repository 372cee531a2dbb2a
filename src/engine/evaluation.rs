//! Where a state's JSONata runs: on its execution's thread while it is quick, on a thread of its
//! own once it is not.
//!
//! An execution is a future on one thread, beside many others (see [`crate::engine::runner`]);
//! a JSONata evaluation cannot yield, and may run up to [`MAX_TIME`] (a catastrophic regex).
//! So each expression is first evaluated on the execution's thread within [`FIRST_TRY`]:
//! almost every one ends in microseconds, and costs nothing more. One that does not is
//! evaluated again, from the start, on a thread of its own while the execution awaits the
//! outcome and its thread runs the executions beside it. A stop reaches the evaluation there
//! as it did on the execution's thread; an execution that stops waiting (a Parallel branch
//! cancelled by its sibling's failure) abandons it, which stops it too.
//!
//! [`MAX_TIME`]: crate::asl::jsonata::MAX_TIME

use crate::asl::jsonata::{
    Bound, EngineError, Evaluate, Expression, Interrupt, JsonataScope, JsonataTemplate, Outcome,
    Run,
};
use crate::engine::execution::{Engine, Failed, StateCx, StatesData};
use serde_json::Value;
use std::cell::OnceCell;
use std::sync::Arc;
use std::time::Duration;

/// How long an expression may hold its execution's thread before it is evaluated again on
/// one of its own: far above what a state's expression takes (microseconds), far below what
/// the executions sharing the thread would notice.
pub const FIRST_TRY: Duration = Duration::from_millis(10);

/// The type a field's value must have (`Items` an array...), when it must have one.
pub(crate) type Expected = Option<&'static str>;

impl Engine {
    /// Evaluates a JSONata field with `$states` and the variables in scope set up for this
    /// state; `extra` sets more in the context object first (`$$.Task.Token`). A failure writes
    /// `EvaluationFailed` and becomes a `States.QueryEvaluationError` with AWS's cause.
    pub(crate) async fn evaluate_jsonata(
        &self,
        cx: &StateCx<'_>,
        data: StatesData<'_>,
        extra: impl Fn(&mut Value),
        template: &JsonataTemplate,
        field: &str,
        expected: Expected,
    ) -> Result<Value, Failed> {
        let evaluator = InState {
            engine: self,
            cx,
            data,
            extra,
            states: OnceCell::new(),
            // `$now()` reads the execution's clock when it is virtual.
            run: Run::new(
                self.clock.virtual_clock().map(|_| self.clock.now()),
                Some(self.stopping.interrupt.clone()),
            ),
        };
        match expected {
            Some(expected) => template.evaluate_as(field, &evaluator, expected).await,
            None => template.evaluate(field, &evaluator).await,
        }
        .map_err(|e| self.evaluation_failed(cx, Some(&e.location), &e.message))
    }

    /// Runs `f` in the JSONata scope of this state: `$states` from `data` and the context
    /// object entered for the state (and `extra`), kept in `states` once built; the variables
    /// in scope.
    fn in_jsonata_scope<R>(
        &self,
        cx: &StateCx<'_>,
        (data, states): (StatesData<'_>, &OnceCell<Value>),
        extra: impl Fn(&mut Value),
        f: impl FnOnce(&JsonataScope<'_>) -> R,
    ) -> R {
        let variables = cx.frame.read();
        let scope = |context: &Value| {
            let mut scope =
                JsonataScope::new(data.input, context, &variables).sharing_states(states);
            scope.result = data.result;
            scope.error_output = data.error_output;
            f(&scope)
        };
        // Built already (with the context as this state sees it), or never read.
        if !cx.state.uses_context || states.get().is_some() {
            return scope(&Value::Null);
        }
        scope(&self.entered_context(cx, extra))
    }
}

/// Evaluates a state's expressions: first on its thread, then, past [`FIRST_TRY`], elsewhere.
struct InState<'a, 'c, F> {
    engine: &'a Engine,
    cx: &'a StateCx<'c>,
    data: StatesData<'a>,
    extra: F,
    /// `$states`, built for the template's first expression that reads it.
    states: OnceCell<Value>,
    run: Run,
}

impl<F: Fn(&mut Value)> Evaluate for InState<'_, '_, F> {
    async fn evaluate(&self, expression: &Expression) -> Result<Outcome, EngineError> {
        let (engine, cx) = (self.engine, self.cx);
        let data = (self.data, &self.states);
        let quick = engine.in_jsonata_scope(cx, data, &self.extra, |scope| {
            expression.evaluate_within(scope, &self.run, FIRST_TRY)
        });
        if let Some(outcome) = quick {
            return outcome;
        }
        // The scope is made again rather than kept: it borrows the execution's context, which
        // must not stay borrowed while the execution waits.
        let bound = engine.in_jsonata_scope(cx, data, &self.extra, |scope| expression.bind(scope));
        evaluate_elsewhere(bound, self.run.clone()).await
    }
}

/// Evaluates on a thread of its own, counted as this process's work meanwhile (a virtual clock
/// does not move while it runs), and stopped once no one waits for the outcome.
async fn evaluate_elsewhere(bound: Bound, mut run: Run) -> Result<Outcome, EngineError> {
    /// Abandons the evaluation when the waiting future is dropped.
    struct AbandonOnDrop(Arc<Interrupt>);
    impl Drop for AbandonOnDrop {
        fn drop(&mut self) {
            self.0.fire();
        }
    }
    let abandon = AbandonOnDrop(Arc::new(Interrupt::default()));
    run.abandon = Some(abandon.0.clone());
    let _busy = crate::clock::Busy::internal();
    let (outcome_tx, outcome_rx) = tokio::sync::oneshot::channel();
    let spawned = crate::depth::spawn("sfn-local-jsonata", move || {
        // The receiver is gone only when the evaluation was abandoned.
        let _ = outcome_tx.send(bound.evaluate(&run));
    });
    if let Err(e) = spawned {
        return Err(EngineError {
            code: "U1001".to_owned(),
            message: format!("No thread could be started for a long evaluation: {e}"),
        });
    }
    outcome_rx.await.unwrap_or_else(|_| {
        Err(EngineError {
            code: "U1001".to_owned(),
            message: "The evaluation ended without an outcome".to_owned(),
        })
    })
}
