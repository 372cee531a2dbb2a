//! JSONata in ASL: the values of a JSONata state's fields, where strings of the form
//! `{% expr %}` are expressions.
//!
//! Three stages, as everywhere in `asl`:
//!
//! 1. **parse**: [`JsonataTemplate::compile`] walks a field's JSON once, at definition parse
//!    time, and compiles every `{% %}` string with the JSONata engine. Syntax errors become
//!    diagnostics at the field's pointer, with the error's line and column inside the
//!    expression.
//! 2. **compile**: the result is a tree of literals and compiled [`Expression`]s kept in the
//!    model. Each expression knows, from a static analysis, which variables it reads, so an
//!    evaluation binds only those (and builds `$states` only when it is read).
//! 3. **evaluate**: [`JsonataTemplate::evaluate`] runs the tree against a [`JsonataScope`]
//!    (`$states` and the variables in scope). It never parses again. Failures are
//!    [`EvaluationFailure`]s carrying AWS's `location` (`Output/result`) and cause text.
//!
//! The engine is [jlens-core](https://docs.rs/jlens-core), pinned to an exact version, behind
//! the small [`CompiledQuery`] trait: swapping engines means one new implementation of it.
//! AWS's own functions (`$partition`, `$range`, `$hash`, `$random`, `$uuid`, `$parse`) are
//! host functions of ours, registered once; `$eval` is refused, as on AWS.

use crate::asl::diagnostic::{Code, Diagnostic, Diagnostics, JsonPointer};
use crate::asl::eval::Variables;
use serde_json::{Map, Value};
use std::cell::OnceCell;
use std::fmt;
use std::sync::{Arc, OnceLock};

/// Stops an execution's evaluations from another thread: a stop request must not wait for a
/// 10-second evaluation to end, nor for the thread it holds. Once fired, the evaluations
/// running now fail (as cancelled) and every later one fails at once. Several may run at once
/// (Parallel branches and Map iterations evaluating where they wait, see [`Bound`]).
#[derive(Debug, Default)]
pub struct Interrupt {
    fired: std::sync::atomic::AtomicBool,
    /// The cancel tokens of the evaluations running now, by an id of each.
    running: std::sync::Mutex<Vec<(u64, jlens_core::CancelToken)>>,
}

impl Interrupt {
    /// Stops the evaluations running now and every later one; from any thread.
    pub fn fire(&self) {
        self.fired.store(true, std::sync::atomic::Ordering::SeqCst);
        for (_, token) in self.lock().iter() {
            token.cancel();
        }
    }

    /// Whether [`Interrupt::fire`] was called.
    pub fn is_fired(&self) -> bool {
        self.fired.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Registers a running evaluation's token until [`Interrupt::leave`] with the id returned.
    fn enter(&self, token: &jlens_core::CancelToken) -> u64 {
        static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.lock().push((id, token.clone()));
        // Fired before the token was listed: `fire` did not see it.
        if self.is_fired() {
            token.cancel();
        }
        id
    }

    fn leave(&self, id: u64) {
        self.lock().retain(|(i, _)| *i != id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, jlens_core::CancelToken)>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How an evaluation runs, besides what it reads: the instant `$now()` reads, what may stop
/// it, and how long it may take.
#[derive(Debug, Clone)]
pub struct Run {
    /// What `$now()` and `$millis()` read (milliseconds since the epoch) when the engine's
    /// clock is not the system's (a virtual clock); `None` reads the system clock.
    pub now: Option<i64>,
    /// The execution's stop.
    pub stop: Option<Arc<Interrupt>>,
    /// Fired when no one waits for the result any more (see [`Bound`]).
    pub abandon: Option<Arc<Interrupt>>,
    /// The longest it may run: [`MAX_TIME`], or less for a first try (see
    /// [`Expression::evaluate_within`]).
    pub time_limit: std::time::Duration,
}

impl Run {
    /// A run reading `now` (see [`Run::now`]) and stopped by `stop`, within [`MAX_TIME`].
    pub fn new(now: Option<i64>, stop: Option<Arc<Interrupt>>) -> Self {
        Run {
            now,
            stop,
            abandon: None,
            time_limit: MAX_TIME,
        }
    }
}

impl Default for Run {
    fn default() -> Self {
        Run::new(None, None)
    }
}

/// The most steps (nodes evaluated, functions called) one evaluation may take.
pub const MAX_STEPS: u64 = 10_000_000;
/// The longest string, and the largest result as JSON text, one evaluation may build: 16 times
/// the largest payload a state can pass on (256 KiB).
pub const MAX_BUILT_BYTES: usize = 4 * 1024 * 1024;
/// The most items of an array one evaluation may build.
pub const MAX_ARRAY_ITEMS: usize = 1_000_000;
/// The most memory one evaluation may hold (in a binary with [`crate::memory::Metered`]).
pub const MAX_HELD_BYTES: usize = 128 * 1024 * 1024;
/// The longest one evaluation may run, a backstop for what the step count does not see.
pub const MAX_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// The name of the reserved variable holding `input`, `result`, `errorOutput` and `context`.
pub const STATES_VARIABLE: &str = "states";

/// Why an expression did not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// The engine's error code (`S0201`, ...).
    pub code: String,
    /// What is wrong.
    pub message: String,
    /// Byte offset in the expression text where the error was found.
    pub offset: usize,
}

/// Why an evaluation failed inside the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineError {
    /// The JSONata error code (`T1006`, ...).
    pub code: String,
    /// The JSONata message.
    pub message: String,
}

/// What an evaluation produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A JSON value.
    Value(Value),
    /// Nothing (`undefined`).
    Undefined,
    /// A function, which JSON cannot hold.
    Function,
}

/// What sfn-local needs of a JSONata implementation: a compiled expression that reports which
/// variables it reads and evaluates without an input document.
pub trait CompiledQuery: fmt::Debug + Send + Sync {
    /// The variables (without `$`) the expression may read from outside: neither built-in
    /// functions nor names it binds itself.
    fn free_variables(&self) -> &[String];
    /// The names called as functions (`$f(...)`): built-ins, AWS's, or unknown ones.
    fn called_names(&self) -> &[String];
    /// A JSONata 2.1 operator (`?:`, `??`) the expression uses: AWS runs JSONata 2.0.
    fn newer_operator(&self) -> Option<&'static str>;
    /// Evaluates with these variables bound (and no input document), as `run` says.
    fn evaluate(&self, variables: Vec<(&str, Value)>, run: &Run) -> Result<Outcome, EngineError>;
}

/// Compiles an expression with the engine sfn-local uses.
pub fn compile_query(source: &str) -> Result<Arc<dyn CompiledQuery>, SyntaxError> {
    jlens::compile(source)
}

/// The jlens-core implementation of [`CompiledQuery`].
mod jlens {
    use super::*;
    use jlens_core::ast::FallbackOp;
    use jlens_core::{Bindings, Expression, Node, NodeKind};

    #[derive(Debug)]
    struct Compiled {
        expression: Expression,
        free_variables: Vec<String>,
        called: Vec<String>,
        yields_function: bool,
        newer_operator: Option<&'static str>,
    }

    pub(super) fn compile(source: &str) -> Result<Arc<dyn CompiledQuery>, SyntaxError> {
        let expression = Expression::compile(source).map_err(|e| SyntaxError {
            code: e.code().to_owned(),
            message: e.message(),
            offset: e.span().map_or(0, |s| s.start).min(source.len()),
        })?;
        let reads = expression.reads_with(aws_functions());
        let free_variables: Vec<String> = reads
            .bindings()
            .keys()
            .filter(|name| aws_functions().get_function(name).is_none())
            .cloned()
            .collect();
        // Names in call position (`$f(...)`), which may be unknown functions rather than
        // variables: AWS accepts those and fails at run time (T1006).
        let mut called = Vec::new();
        let mut newer_operator = None;
        expression.ast().root.walk(&mut |n| match &n.kind {
            NodeKind::Function { procedure, .. } | NodeKind::Partial { procedure, .. } => {
                if let NodeKind::Variable { name } = &procedure.kind {
                    called.push(name.clone());
                }
            }
            NodeKind::Fallback { op, .. } => {
                newer_operator = Some(match op {
                    FallbackOp::Default => "?:",
                    FallbackOp::Coalesce => "??",
                });
            }
            _ => {}
        });
        let yields_function = yields_function(&expression.ast().root);
        Ok(Arc::new(Compiled {
            expression,
            free_variables,
            called,
            yields_function,
            newer_operator,
        }))
    }

    /// Whether the value of a node is always a function (a lambda, or a binding of one):
    /// jlens turns a function result into nothing, AWS reports it as an unsupported type.
    fn yields_function(n: &Node) -> bool {
        match &n.kind {
            NodeKind::Lambda(_) => true,
            NodeKind::Bind { rhs, .. } => yields_function(rhs),
            NodeKind::Block { exprs, .. } => exprs.last().is_some_and(yields_function),
            _ => false,
        }
    }

    impl CompiledQuery for Compiled {
        fn free_variables(&self) -> &[String] {
            &self.free_variables
        }

        fn called_names(&self) -> &[String] {
            &self.called
        }

        fn newer_operator(&self) -> Option<&'static str> {
            self.newer_operator
        }

        fn evaluate(
            &self,
            variables: Vec<(&str, Value)>,
            run: &Run,
        ) -> Result<Outcome, EngineError> {
            let mut bindings = aws_functions().clone();
            for (name, value) in variables {
                bindings = bindings.var(name, value);
            }
            // Metered: what one evaluation may hold is bounded too (see `crate::alloc`).
            let token = jlens_core::CancelToken::new();
            let mut options = limits()
                .clone()
                .timeout(run.time_limit)
                .cancel_token(token.clone());
            if let Some(now) = run.now {
                options = options.now(now);
            }
            let stoppers = [&run.stop, &run.abandon];
            let entered = stoppers.map(|s| s.as_ref().map(|i| i.enter(&token)));
            let section = crate::memory::Section::start(MAX_HELD_BYTES, token);
            let result = self.expression.evaluate_with(None, &bindings, &options);
            let exceeded = section.exceeded();
            drop(section);
            for (stopper, id) in stoppers.iter().zip(entered) {
                if let (Some(i), Some(id)) = (stopper, id) {
                    i.leave(id);
                }
            }
            let fired = |i: &Option<Arc<Interrupt>>| i.as_ref().is_some_and(|i| i.is_fired());
            match result {
                Err(e) if fired(&run.stop) && e.code() == "U1003" => Err(EngineError {
                    code: "U1003".to_owned(),
                    message: "The execution was stopped during the evaluation".to_owned(),
                }),
                Err(e) if fired(&run.abandon) && e.code() == "U1003" => Err(EngineError {
                    code: "U1003".to_owned(),
                    message: "The evaluation was abandoned".to_owned(),
                }),
                // The token was cancelled by neither: by the memory meter.
                Err(e) if exceeded && e.code() == "U1003" => Err(EngineError {
                    code: "U1001".to_owned(),
                    message: format!(
                        "The evaluation would hold more than {} MiB of memory",
                        MAX_HELD_BYTES >> 20
                    ),
                }),
                Ok(Some(v)) => Ok(Outcome::Value(v)),
                Ok(None) if self.yields_function => Ok(Outcome::Function),
                Ok(None) => Ok(Outcome::Undefined),
                // jlens refuses to turn a function into JSON with this code.
                Err(e) if e.code() == "U1007" || e.code() == "T0401" => Ok(Outcome::Function),
                Err(e) => Err(EngineError {
                    code: e.code().to_owned(),
                    message: e.message(),
                }),
            }
        }
    }

    /// The bounds of one evaluation, so that no expression hangs `run` or exhausts its memory
    /// (found by fuzzing: `{% $join([1..10000000].("aaaa")) %}` took over 1 GB, a naive
    /// recursive Fibonacci never ended). AWS documents no such limits; these are far above
    /// anything a state can use, as every state's input and output is at most 256 KiB:
    /// exceeding one is a `States.QueryEvaluationError` naming it, like any evaluation error.
    fn limits() -> &'static jlens_core::Options {
        static LIMITS: OnceLock<jlens_core::Options> = OnceLock::new();
        LIMITS.get_or_init(|| {
            jlens_core::Options::new()
                .max_steps(MAX_STEPS)
                .max_string_length(MAX_BUILT_BYTES)
                .max_result_size(MAX_BUILT_BYTES)
                .max_array_length(MAX_ARRAY_ITEMS)
                .timeout(MAX_TIME)
        })
    }

    /// The bindings every evaluation starts from: AWS's functions, registered once.
    fn aws_functions() -> &'static Bindings {
        static FUNCTIONS: OnceLock<Bindings> = OnceLock::new();
        FUNCTIONS.get_or_init(|| {
            let mut b = Bindings::new();
            for (name, f) in super::aws::functions() {
                b = b.function(name, f);
            }
            b
        })
    }
}

/// AWS's additions to JSONata, as host functions.
mod aws {
    use crate::asl::intrinsics::{hash, random_u64, JavaRandom};
    use jlens_core::{Error, HostFunction};
    use serde_json::{json, Value};

    /// AWS caps `$range` like `States.ArrayRange`.
    const MAX_RANGE_ITEMS: usize = 1000;

    fn fail(message: String) -> Error {
        // D3137 is `$error`'s code: "{{message}}" as given.
        Error::new("D3137").with("message", message)
    }

    fn number(v: &Option<Value>) -> Option<f64> {
        v.as_ref().and_then(Value::as_f64)
    }

    fn integer(v: &Option<Value>) -> Option<i64> {
        number(v)
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| f as i64)
    }

    /// `$range(start, end, step)`: the integers from `start` to `end` (when a step lands on
    /// it) `step` apart. AWS returns them as a JSONata sequence, so a range of one integer is
    /// that integer, not an array of it: `$range(3, 3, 1)` is `3` on AWS, as measured for
    /// floci (<https://github.com/floci-io/floci/pull/2676>, test
    /// `range_singleElementRangeCollapsesToScalar`), and as LocalStack's `$range` gives it, a
    /// JSONata `$map` over the indices (`localstack-core/localstack/services/stepfunctions/asl/
    /// component/intrinsic/jsonata.py` in <https://github.com/localstack/localstack>).
    /// `$partition`'s chunks stay arrays: AWS recorded `$partition([0], 1)` as `[[0]]`.
    fn range(args: &[Option<Value>]) -> Result<Option<Value>, Error> {
        let get = |i: usize| integer(args.get(i).unwrap_or(&None));
        let (Some(start), Some(end), Some(step)) = (get(0), get(1), get(2)) else {
            return Err(fail("$range: start, end and step must be integers".into()));
        };
        if step == 0 {
            return Err(fail("$range: step must not be 0".into()));
        }
        let mut items = Vec::new();
        let mut n = start;
        while (step > 0 && n <= end) || (step < 0 && n >= end) {
            if items.len() == MAX_RANGE_ITEMS {
                return Err(fail(format!(
                    "$range: the result would have more than {MAX_RANGE_ITEMS} items"
                )));
            }
            items.push(json!(n));
            n += step;
        }
        Ok(Some(match <[Value; 1]>::try_from(items) {
            Ok([only]) => only,
            Err(items) => Value::Array(items),
        }))
    }

    pub(super) fn functions() -> Vec<(&'static str, HostFunction)> {
        let mut out = Vec::new();
        let mut add = |name: &'static str, f: HostFunction| out.push((name, f.without_input()));
        add(
            "partition",
            HostFunction::new(2, |args, _| {
                let Some(Value::Array(items)) = args.first().cloned().flatten() else {
                    return Err(fail(
                        "$partition: the first argument must be an array".into(),
                    ));
                };
                let size = match integer(args.get(1).unwrap_or(&None)) {
                    Some(n) if n > 0 => n as usize,
                    _ => {
                        return Err(fail(
                            "$partition: the chunk size must be a positive integer".into(),
                        ))
                    }
                };
                Ok(Some(Value::Array(
                    items
                        .chunks(size)
                        .map(|c| Value::Array(c.to_vec()))
                        .collect(),
                )))
            }),
        );
        add("range", HostFunction::new(3, |args, _| range(args)));
        add(
            "hash",
            HostFunction::new(2, |args, _| {
                let data = match args.first().cloned().flatten() {
                    Some(Value::String(s)) => s,
                    Some(other) => other.to_string(),
                    None => return Err(fail("$hash: the data is undefined".into())),
                };
                let alg = args.get(1).cloned().flatten();
                let alg = alg.as_ref().and_then(Value::as_str).unwrap_or("");
                match hash(alg, data.as_bytes()) {
                    Some(h) => Ok(Some(Value::String(h))),
                    None => Err(fail(format!(
                        "$hash: the algorithm must be one of MD5, SHA-1, SHA-256, SHA-384, SHA-512, not '{alg}'"
                    ))),
                }
            }),
        );
        add(
            "random",
            HostFunction::new(1, |args, _| {
                let seed = match args.first().cloned().flatten() {
                    None => random_u64() as i64,
                    Some(v) => match v.as_f64() {
                        Some(f) if f.fract() == 0.0 => f as i64,
                        _ => return Err(fail("$random: the seed must be an integer".into())),
                    },
                };
                Ok(Some(json!(JavaRandom::new(seed).next_double())))
            }),
        );
        add(
            "uuid",
            HostFunction::new(0, |_, _| {
                Ok(Some(Value::String(crate::random::uuid().to_string())))
            }),
        );
        add(
            "parse",
            HostFunction::new(1, |args, _| match args.first().cloned().flatten() {
                Some(Value::String(s)) => serde_json::from_str::<Value>(&s)
                    .map(Some)
                    .map_err(|e| fail(format!("$parse: not JSON text: {e}"))),
                _ => Err(fail("$parse: the argument must be a string".into())),
            }),
        );
        add(
            "eval",
            HostFunction::new(1, |_, _| Err(Error::new("T1006"))),
        );
        out
    }
}

/// A compiled `{% %}` expression.
#[derive(Clone)]
pub struct Expression {
    /// The text between the delimiters, trimmed, as AWS quotes it in causes.
    text: String,
    query: Arc<dyn CompiledQuery>,
}

impl fmt::Debug for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{% {} %}}", self.text)
    }
}

impl PartialEq for Expression {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Expression {
    /// The expression text (between `{%` and `%}`, trimmed).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The variables it reads, `states` included.
    pub fn variables(&self) -> &[String] {
        self.query.free_variables()
    }

    /// The names it calls as functions (`$f(...)`).
    pub fn called_names(&self) -> &[String] {
        self.query.called_names()
    }

    /// Evaluates in `scope` on this thread, if that takes at most `budget`; `None` when it
    /// would take longer, to be evaluated again where waiting for it holds no one up (see
    /// [`Bound`]). Almost every expression ends in microseconds, and then is evaluated once.
    pub fn evaluate_within(
        &self,
        scope: &JsonataScope<'_>,
        run: &Run,
        budget: std::time::Duration,
    ) -> Option<Result<Outcome, EngineError>> {
        let budget = budget.min(run.time_limit);
        let first_try = Run {
            time_limit: budget,
            ..run.clone()
        };
        match self.query.evaluate(self.bind_borrowed(scope), &first_try) {
            // D1012: the time limit passed (the shorter one, when it is shorter).
            Err(e) if e.code == "D1012" && budget < run.time_limit => None,
            outcome => Some(outcome),
        }
    }

    /// What the expression reads from `scope`, owned, to evaluate on any thread.
    pub fn bind(&self, scope: &JsonataScope<'_>) -> Bound {
        Bound {
            query: self.query.clone(),
            variables: self
                .bind_borrowed(scope)
                .into_iter()
                .map(|(name, v)| (name.to_owned(), v))
                .collect(),
        }
    }

    /// The values of the variables it reads, `$states` built only when read.
    fn bind_borrowed(&self, scope: &JsonataScope<'_>) -> Vec<(&str, Value)> {
        let mut bound = Vec::with_capacity(self.query.free_variables().len());
        for name in self.query.free_variables() {
            if name == STATES_VARIABLE {
                bound.push((name.as_str(), scope.states_value().clone()));
            } else if let Some(v) = scope.variables.get(name) {
                bound.push((name.as_str(), v.clone()));
            }
        }
        bound
    }
}

/// An expression with the values it reads: it holds nothing of the state's thread, so it may
/// be evaluated on another thread while the state's thread runs the executions beside it.
pub struct Bound {
    query: Arc<dyn CompiledQuery>,
    variables: Vec<(String, Value)>,
}

impl Bound {
    /// Evaluates, as `run` says.
    pub fn evaluate(self, run: &Run) -> Result<Outcome, EngineError> {
        let (names, values): (Vec<String>, Vec<Value>) = self.variables.into_iter().unzip();
        let variables = names.iter().map(String::as_str).zip(values).collect();
        self.query.evaluate(variables, run)
    }
}

/// Evaluates the expressions of a template one at a time, as the engine sees fit: on the
/// state's thread, or elsewhere while the state waits.
#[allow(async_fn_in_trait)] // The engine's futures stay on their thread: no `Send` bound.
pub trait Evaluate {
    /// The outcome of one expression.
    async fn evaluate(&self, expression: &Expression) -> Result<Outcome, EngineError>;
}

/// A node of a compiled template.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Literal(Value),
    Expression(Expression),
    Object(Vec<(String, Node)>),
    Array(Vec<Node>),
}

/// A field value in a JSONata state: JSON with `{% ... %}` expressions anywhere inside,
/// compiled once.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonataTemplate {
    raw: Value,
    root: Node,
    /// Every expression in `root` in the order they are evaluated (depth first, members in
    /// order), with its place below the field (`/key/0`): evaluation walks this list, so that
    /// each expression may be awaited without a recursive future.
    expressions: Vec<(String, Expression)>,
}

/// What an expression may read: `$states` and the variables in scope.
pub struct JsonataScope<'a> {
    /// `$states.input`.
    pub input: &'a Value,
    /// `$states.context`.
    pub context: &'a Value,
    /// `$states.result` (Task, Map and Parallel `Output` and `Assign`).
    pub result: Option<&'a Value>,
    /// `$states.errorOutput` (a Catcher's `Output` and `Assign`).
    pub error_output: Option<&'a Value>,
    /// The variables in scope.
    pub variables: &'a dyn Variables,
    states: StatesCell<'a>,
}

/// Where a scope keeps `$states` once built: its own, or one shared by the scopes of one
/// template's expressions (built once, not once per expression).
enum StatesCell<'a> {
    Own(OnceCell<Value>),
    Shared(&'a OnceCell<Value>),
}

impl<'a> JsonataScope<'a> {
    /// A scope with `$states.input` and `$states.context` and these variables.
    pub fn new(input: &'a Value, context: &'a Value, variables: &'a dyn Variables) -> Self {
        JsonataScope {
            input,
            context,
            result: None,
            error_output: None,
            variables,
            states: StatesCell::Own(OnceCell::new()),
        }
    }

    /// The same scope keeping `$states` in `cell` (and reading it from there when it is
    /// already built).
    pub fn sharing_states(mut self, cell: &'a OnceCell<Value>) -> Self {
        self.states = StatesCell::Shared(cell);
        self
    }

    /// The same scope with `$states.result`.
    pub fn with_result(mut self, result: &'a Value) -> Self {
        self.result = Some(result);
        self
    }

    /// The same scope with `$states.errorOutput`.
    pub fn with_error_output(mut self, error_output: &'a Value) -> Self {
        self.error_output = Some(error_output);
        self
    }

    /// `$states`, built on first use.
    fn states_value(&self) -> &Value {
        let cell = match &self.states {
            StatesCell::Own(cell) => cell,
            StatesCell::Shared(cell) => cell,
        };
        cell.get_or_init(|| {
            let mut m = Map::new();
            m.insert("input".into(), self.input.clone());
            if let Some(r) = self.result {
                m.insert("result".into(), r.clone());
            }
            if let Some(e) = self.error_output {
                m.insert("errorOutput".into(), e.clone());
            }
            m.insert("context".into(), self.context.clone());
            Value::Object(m)
        })
    }
}

/// A failed evaluation: where (AWS's `location`, e.g. `Output/result`) and why (the cause
/// text after AWS's state prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvaluationFailure {
    /// The field, with the keys and indexes down to the expression, joined by `/`.
    pub location: String,
    /// The cause.
    pub message: String,
}

/// The JSON type names AWS uses in "Expected 'array', but was 'boolean'".
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl JsonataTemplate {
    /// Compiles a field's value, reporting every bad expression at `at`.
    pub fn compile(value: &Value, at: &JsonPointer, diags: &mut Diagnostics) -> Self {
        let root = compile_node(value, at, diags);
        let mut expressions = Vec::new();
        list_expressions(&root, &mut String::new(), &mut expressions);
        JsonataTemplate {
            raw: value.clone(),
            root,
            expressions,
        }
    }

    /// The value as written.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// The expression, when the whole value is one.
    pub fn as_expression(&self) -> Option<&Expression> {
        match &self.root {
            Node::Expression(e) => Some(e),
            _ => None,
        }
    }

    /// Every expression in it.
    pub fn expressions(&self) -> impl Iterator<Item = &Expression> {
        self.expressions.iter().map(|(_, e)| e)
    }

    /// Whether a string is a whole JSONata expression, `{% ... %}`.
    pub fn is_expression(s: &str) -> bool {
        expression_body(s).is_some()
    }

    /// Whether the value holds any expression.
    pub fn has_expressions(&self) -> bool {
        !self.expressions.is_empty()
    }

    /// Evaluates: literals as written, expressions by `evaluator`, in order until one fails.
    /// `field` is the field's name, the start of every failure's location.
    pub async fn evaluate(
        &self,
        field: &str,
        evaluator: &impl Evaluate,
    ) -> Result<Value, EvaluationFailure> {
        let mut values = Vec::with_capacity(self.expressions.len());
        for (place, e) in &self.expressions {
            // The location is written only for a failure: evaluations are a hot path.
            let fail = |what: String| {
                let location = format!("{field}{place}");
                EvaluationFailure {
                    message: format!(
                        "The JSONata expression '{}' specified for the field '{location}' {what}",
                        e.text
                    ),
                    location,
                }
            };
            values.push(match evaluator.evaluate(e).await {
                Ok(Outcome::Value(v)) => v,
                Ok(Outcome::Undefined) => return Err(fail("returned nothing (undefined).".into())),
                Ok(Outcome::Function) => {
                    return Err(fail("returned an unsupported result type.".into()))
                }
                Err(err) => {
                    return Err(fail(format!(
                        "threw an error during evaluation. {}: {}",
                        err.code, err.message
                    )))
                }
            });
        }
        Ok(fill(&self.root, &mut values.into_iter()))
    }

    /// Evaluates a field whose value must be of one JSON type (`Items` must be an array...),
    /// with AWS's cause when it is not.
    pub async fn evaluate_as(
        &self,
        field: &str,
        evaluator: &impl Evaluate,
        expected: &str,
    ) -> Result<Value, EvaluationFailure> {
        let v = self.evaluate(field, evaluator).await?;
        if type_name(&v) == expected
            || (expected == "integer" && v.as_f64().is_some_and(|f| f.fract() == 0.0))
        {
            return Ok(v);
        }
        let what = match &self.root {
            Node::Expression(e) => format!("The JSONata expression '{}'", e.text),
            _ => "The value".to_owned(),
        };
        Err(EvaluationFailure {
            location: field.to_owned(),
            message: format!(
                "{what} specified for the field '{field}' returned an unexpected result type. Expected '{expected}', but was '{}' for value: {v}",
                type_name(&v)
            ),
        })
    }
}

/// The text between `{%` and `%}`, trimmed, when `s` is an expression.
///
/// The delimiters must be the very first and last characters: AWS takes `" {% x %} "` as a
/// literal string.
fn expression_body(s: &str) -> Option<&str> {
    if s.len() < 4 {
        return None;
    }
    let inner = s.strip_prefix("{%")?.strip_suffix("%}")?;
    Some(inner.trim())
}

fn compile_node(value: &Value, at: &JsonPointer, diags: &mut Diagnostics) -> Node {
    match value {
        Value::String(s) => match expression_body(s) {
            Some(body) => match compile_expression(body, s, at, diags) {
                Some(e) => Node::Expression(e),
                None => Node::Literal(Value::Null),
            },
            None => Node::Literal(value.clone()),
        },
        Value::Object(map) => {
            let members: Vec<(String, Node)> = map
                .iter()
                .map(|(k, v)| (k.clone(), compile_node(v, &at.key(k), diags)))
                .collect();
            if members.iter().all(|(_, n)| matches!(n, Node::Literal(_))) {
                Node::Literal(value.clone())
            } else {
                Node::Object(members)
            }
        }
        Value::Array(items) => {
            let nodes: Vec<Node> = items
                .iter()
                .enumerate()
                .map(|(i, v)| compile_node(v, &at.index(i), diags))
                .collect();
            if nodes.iter().all(|n| matches!(n, Node::Literal(_))) {
                Node::Literal(value.clone())
            } else {
                Node::Array(nodes)
            }
        }
        other => Node::Literal(other.clone()),
    }
}

/// Compiles one expression; `written` is the whole string (`{% ... %}`), to place errors.
fn compile_expression(
    body: &str,
    written: &str,
    at: &JsonPointer,
    diags: &mut Diagnostics,
) -> Option<Expression> {
    if body.is_empty() {
        diags.schema(
            at,
            "The JSONata expression is empty: write an expression between '{%' and '%}'",
        );
        return None;
    }
    match compile_query(body) {
        Ok(query) => {
            if let Some(op) = query.newer_operator() {
                diags.schema(
                    at,
                    format!(
                        "The JSONata expression '{body}' uses the operator '{op}', which AWS does not support (AWS runs JSONata 2.0.6)"
                    ),
                );
            }
            if query.called_names().iter().any(|n| n == "eval") {
                diags.schema(
                    at,
                    format!("The JSONata expression '{body}' calls $eval, which AWS does not support: use $parse"),
                );
            }
            Some(Expression {
                text: body.to_owned(),
                query,
            })
        }
        Err(e) => {
            // Place the error in the string as written: the body starts after `{%` and the
            // whitespace that follows it.
            let body_start = written.find(body).unwrap_or(0);
            let offset = body_start + e.offset;
            let (line, column) = line_column(written, offset);
            diags.push(Diagnostic {
                // Reports place it in the file: the field's string, `offset` bytes in.
                location: crate::asl::diagnostic::Location::InString {
                    pointer: at.clone(),
                    offset,
                },
                ..Diagnostic::error(
                    Code::SchemaValidationFailed,
                    at,
                    format!(
                        "The JSONata expression '{body}' is not valid: {}: {} (line {line}, column {column} of the string)",
                        e.code, e.message
                    ),
                )
            });
            None
        }
    }
}

/// 1-based line and column (in characters) of a byte offset in `s`.
pub fn line_column(s: &str, offset: usize) -> (usize, usize) {
    let mut line = 1;
    let mut column = 1;
    for (i, c) in s.char_indices() {
        if i >= offset {
            break;
        }
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    (line, column)
}

/// Lists the expressions under `node` in evaluation order, each with its place (`/key/0`).
fn list_expressions(node: &Node, place: &mut String, out: &mut Vec<(String, Expression)>) {
    let mut below = |place: &mut String, step: &str, n: &Node| {
        let len = place.len();
        place.push('/');
        place.push_str(step);
        list_expressions(n, place, out);
        place.truncate(len);
    };
    match node {
        Node::Literal(_) => {}
        Node::Expression(e) => out.push((place.clone(), e.clone())),
        Node::Object(members) => members.iter().for_each(|(k, n)| below(place, k, n)),
        Node::Array(items) => {
            (items.iter().enumerate()).for_each(|(i, n)| below(place, &i.to_string(), n))
        }
    }
}

/// The template's value with its expressions' `values`, taken in evaluation order.
fn fill(node: &Node, values: &mut impl Iterator<Item = Value>) -> Value {
    match node {
        Node::Literal(v) => v.clone(),
        // As many values as expressions: `evaluate` returned before unless all succeeded.
        Node::Expression(_) => values.next().unwrap_or(Value::Null),
        Node::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, n)| (k.clone(), fill(n, values)))
                .collect(),
        ),
        Node::Array(items) => Value::Array(items.iter().map(|n| fill(n, values)).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Evaluates every expression in one scope on the calling thread, within [`MAX_TIME`].
    struct Inline<'a>(&'a JsonataScope<'a>);

    impl Evaluate for Inline<'_> {
        async fn evaluate(&self, expression: &Expression) -> Result<Outcome, EngineError> {
            expression
                .query
                .evaluate(expression.bind_borrowed(self.0), &Run::default())
        }
    }

    fn eval(source: &str) -> Outcome {
        compile_query(source)
            .expect("compiles")
            .evaluate(Vec::new(), &Run::default())
            .expect("evaluates")
    }

    /// Sums a million numbers one function call at a time: long enough (tens of
    /// milliseconds or more) to pass any first try's budget here, short enough for a test.
    const LONG: &str = "{% $sum($map([1..1000000], function($v) { $v * 2 })) %}";

    fn long_template() -> JsonataTemplate {
        let mut diags = Diagnostics::default();
        let template =
            JsonataTemplate::compile(&json!({"a": [1, LONG]}), &JsonPointer::root(), &mut diags);
        assert!(diags.is_empty(), "{diags:?}");
        template
    }

    /// An expression past its first try's budget is not evaluated to the end on the caller's
    /// thread: it is handed back, to be bound and evaluated where waiting blocks no one.
    #[test]
    fn a_long_expression_gives_up_its_first_try_and_ends_when_bound() {
        let template = long_template();
        let expression = template.expressions().next().unwrap();
        let (input, context) = (json!({}), json!({}));
        let variables = serde_json::Map::new();
        let scope = JsonataScope::new(&input, &context, &variables);
        let budget = std::time::Duration::from_micros(100);
        let run = Run::default();
        assert_eq!(expression.evaluate_within(&scope, &run, budget), None);
        let bound = expression.bind(&scope);
        let outcome = std::thread::spawn(move || bound.evaluate(&Run::default()));
        assert_eq!(
            outcome.join().unwrap().unwrap(),
            Outcome::Value(json!(1_000_001_000_000u64))
        );
        // Within a budget it outlasts, the first try is the evaluation.
        let ample = MAX_TIME;
        assert!(matches!(
            expression.evaluate_within(&scope, &run, ample),
            Some(Ok(Outcome::Value(_)))
        ));
    }

    /// Abandoning an evaluation (its waiter went away) or stopping the execution stops it at
    /// once, wherever it runs; several evaluations of one execution may run at once.
    #[test]
    fn abandoning_or_stopping_ends_evaluations_running_at_once() {
        let subject = "a".repeat(70) + "!";
        let query = compile_query(&format!("$match('{subject}', /(a+)+$/)")).unwrap();
        let stop = Arc::new(Interrupt::default());
        let spin = |abandon: Option<Arc<Interrupt>>| {
            let query = query.clone();
            let run = Run {
                abandon,
                ..Run::new(None, Some(stop.clone()))
            };
            std::thread::spawn(move || query.evaluate(Vec::new(), &run))
        };
        let abandon = Arc::new(Interrupt::default());
        let abandoned = spin(Some(abandon.clone()));
        let (first, second) = (spin(None), spin(None));
        std::thread::sleep(std::time::Duration::from_millis(50));
        let started = std::time::Instant::now();
        abandon.fire();
        assert_eq!(abandoned.join().unwrap().unwrap_err().code, "U1003");
        stop.fire();
        for spinning in [first, second] {
            let e = spinning.join().unwrap().unwrap_err();
            assert_eq!(e.message, "The execution was stopped during the evaluation");
        }
        // Far below the 10 s an evaluation may otherwise run.
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    /// The template's value is built from its expressions in place, literals kept.
    #[test]
    fn a_template_evaluates_its_expressions_in_place() {
        let mut diags = Diagnostics::default();
        let raw = json!({"a": [1, "{% $x + 1 %}"], "b": {"c": "{% $states.input.n %}"}, "d": "x"});
        let template = JsonataTemplate::compile(&raw, &JsonPointer::root(), &mut diags);
        let (input, context) = (json!({"n": 7}), json!({}));
        let mut variables = serde_json::Map::new();
        variables.insert("x".into(), json!(2));
        let scope = JsonataScope::new(&input, &context, &variables);
        let value =
            futures_util::FutureExt::now_or_never(template.evaluate("Output", &Inline(&scope)));
        assert_eq!(
            value.unwrap().unwrap(),
            json!({"a": [1, 3], "b": {"c": 7}, "d": "x"})
        );
        let failing = json!({"a": [1, "{% $nothing %}"]});
        let template = JsonataTemplate::compile(&failing, &JsonPointer::root(), &mut diags);
        let failure =
            futures_util::FutureExt::now_or_never(template.evaluate("Output", &Inline(&scope)));
        assert_eq!(failure.unwrap().unwrap_err().location, "Output/a/1");
    }

    /// AWS's `$range` is a JSONata sequence: one integer is that integer (measured on AWS for
    /// floci, <https://github.com/floci-io/floci/pull/2676>), more stay an array (AWS's
    /// recordings: `$range(0, 9, 3)` is `[0,3,6,9]`).
    #[test]
    fn a_range_of_one_integer_is_that_integer() {
        assert_eq!(eval("$range(3, 3, 1)"), Outcome::Value(json!(3)));
        assert_eq!(eval("$range(1, 2, 5)"), Outcome::Value(json!(1)));
        assert_eq!(eval("$range(4, 3, -2)"), Outcome::Value(json!(4)));
        assert_eq!(eval("[$range(3, 3, 1)]"), Outcome::Value(json!([3])));
        assert_eq!(eval("$range(0, 9, 3)"), Outcome::Value(json!([0, 3, 6, 9])));
        assert_eq!(eval("$range(1, 2, 1)"), Outcome::Value(json!([1, 2])));
    }

    /// `$partition`'s chunks are arrays however few they hold, as AWS recorded them
    /// (`$partition([0], 1)` is `[[0]]`, `$partition([0, 1, 2], 2)` is `[[0,1],[2]]`).
    #[test]
    fn partition_chunks_stay_arrays() {
        assert_eq!(eval("$partition([0], 1)"), Outcome::Value(json!([[0]])));
        assert_eq!(
            eval("$partition([0, 1, 2], 2)"),
            Outcome::Value(json!([[0, 1], [2]]))
        );
    }
}
