//! The typed model of a state machine, with every field already compiled.
//!
//! The parser ([`crate::asl::parse`]) builds it once; the engine runs on it and never parses a
//! string again. Transitions are resolved to [`StateId`]s within their [`Scope`] (the top level,
//! a Parallel branch, or a Map's item processor), so a transition cannot leave its scope.

use crate::asl::choice::Rule;
use crate::asl::diagnostic::JsonPointer;
use crate::asl::intrinsics::Call;
use crate::asl::jsonata::JsonataTemplate;
use crate::asl::path::Path;
use crate::asl::resource::Resource;
use crate::asl::template::Template;
use std::collections::HashMap;

/// Which query language a state (or the machine) uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueryLanguage {
    /// `JSONPath`, the default: InputPath, Parameters, ResultSelector, ResultPath, OutputPath.
    #[default]
    JsonPath,
    /// `JSONata`: Arguments, Output, `{% %}` expressions.
    Jsonata,
}

impl QueryLanguage {
    /// The spelling in a definition.
    pub fn as_str(self) -> &'static str {
        match self {
            QueryLanguage::JsonPath => "JSONPath",
            QueryLanguage::Jsonata => "JSONata",
        }
    }
}

/// STANDARD or EXPRESS: some rules differ (Express has no callbacks or activities).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MachineType {
    /// Long-running, exactly-once workflows.
    #[default]
    Standard,
    /// Short, high-volume workflows.
    Express,
}

/// The index of a state within its [`Scope`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StateId(pub u32);

/// A whole state machine.
#[derive(Debug, Clone)]
pub struct StateMachine {
    /// `Comment`.
    pub comment: Option<String>,
    /// `QueryLanguage` at the top (the default for every state).
    pub query_language: QueryLanguage,
    /// `TimeoutSeconds` of the whole execution.
    pub timeout_seconds: Option<u64>,
    /// `Version`.
    pub version: Option<String>,
    /// The top-level `StartAt` and `States`.
    pub root: Scope,
}

impl StateMachine {
    /// Every state in the machine, depth first, with its scope nesting.
    pub fn all_states(&self) -> Vec<&State> {
        fn walk<'a>(scope: &'a Scope, out: &mut Vec<&'a State>) {
            for s in &scope.states {
                out.push(s);
                for inner in s.inner_scopes() {
                    walk(inner, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &mut out);
        out
    }

    /// Whether a Task of the machine waits for a task token (a callback or an activity): only
    /// then can its executions hold tokens.
    pub fn waits_for_tokens(&self) -> bool {
        self.all_states()
            .iter()
            .any(|s| matches!(&s.kind, StateKind::Task(t) if t.resource.waits_for_token()))
    }
}

/// A set of states with a start: the top level, a Parallel branch or a Map item processor.
#[derive(Debug, Clone)]
pub struct Scope {
    /// `StartAt`.
    pub start_at: StateId,
    /// The states, in definition order (a [`StateId`] indexes this).
    pub states: Vec<State>,
    /// Name → id.
    pub names: HashMap<String, StateId>,
    /// Where the scope's `States` object is.
    pub pointer: JsonPointer,
}

impl Scope {
    /// The state with this id.
    pub fn state(&self, id: StateId) -> &State {
        &self.states[id.0 as usize]
    }

    /// The state with this name, if the scope has it.
    pub fn find(&self, name: &str) -> Option<StateId> {
        self.names.get(name).copied()
    }

    /// The first state.
    pub fn start(&self) -> &State {
        self.state(self.start_at)
    }
}

/// Where a state goes when it is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// `Next`: another state of the same scope.
    Next(StateId),
    /// `End: true`: the scope ends with this state's output.
    End,
}

/// One state.
#[derive(Debug, Clone)]
pub struct State {
    /// Its name (unique in the whole machine).
    pub name: String,
    /// Where it is defined (`/States/Name`, or deeper for branches).
    pub pointer: JsonPointer,
    /// `Comment`.
    pub comment: Option<String>,
    /// The query language in force for this state.
    pub query_language: QueryLanguage,
    /// `Assign`: variables set when the state completes (not on Succeed or Fail).
    pub assign: Option<Assign>,
    /// Whether any of the state's own fields mentions the context object (`$$`), so the
    /// engine builds `$$` only for states that read it.
    pub uses_context: bool,
    /// What kind of state, with its own fields.
    pub kind: StateKind,
}

impl State {
    /// The state's `Type`, as spelled in a definition and in history events (`TaskStateEntered`).
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            StateKind::Pass(_) => "Pass",
            StateKind::Task(_) => "Task",
            StateKind::Choice(_) => "Choice",
            StateKind::Wait(_) => "Wait",
            StateKind::Succeed(_) => "Succeed",
            StateKind::Fail(_) => "Fail",
            StateKind::Parallel(_) => "Parallel",
            StateKind::Map(_) => "Map",
        }
    }

    /// The scopes nested in this state (Parallel branches, a Map's processor).
    pub fn inner_scopes(&self) -> Vec<&Scope> {
        match &self.kind {
            StateKind::Parallel(p) => p.branches.iter().collect(),
            StateKind::Map(m) => vec![&m.processor],
            _ => Vec::new(),
        }
    }

    /// Every transition out of this state (Next, Choice targets, Default, Catch targets).
    pub fn targets(&self) -> Vec<StateId> {
        let mut out = Vec::new();
        let mut transition = |t: &Transition| {
            if let Transition::Next(id) = t {
                out.push(*id)
            }
        };
        match &self.kind {
            StateKind::Pass(s) => transition(&s.transition),
            StateKind::Wait(s) => transition(&s.transition),
            StateKind::Task(s) => transition(&s.transition),
            StateKind::Parallel(s) => transition(&s.transition),
            StateKind::Map(s) => transition(&s.transition),
            StateKind::Choice(c) => {
                out.extend(c.choices.iter().map(|b| b.next));
                out.extend(c.default);
            }
            StateKind::Succeed(_) | StateKind::Fail(_) => {}
        }
        out.extend(self.catchers().iter().map(|c| c.next));
        out
    }

    /// The state's catchers (empty for states that cannot have any).
    pub fn catchers(&self) -> &[Catcher] {
        match &self.kind {
            StateKind::Task(t) => &t.errors.catch,
            StateKind::Parallel(p) => &p.errors.catch,
            StateKind::Map(m) => &m.errors.catch,
            _ => &[],
        }
    }

    /// Whether the state can end its scope (End, Succeed, Fail).
    pub fn is_terminal(&self) -> bool {
        match &self.kind {
            StateKind::Succeed(_) | StateKind::Fail(_) => true,
            StateKind::Pass(s) => s.transition == Transition::End,
            StateKind::Wait(s) => s.transition == Transition::End,
            StateKind::Task(s) => s.transition == Transition::End,
            StateKind::Parallel(s) => s.transition == Transition::End,
            StateKind::Map(s) => s.transition == Transition::End,
            StateKind::Choice(_) => false,
        }
    }
}

/// The state types with their own fields.
// States are built once and live in a Vec; their size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum StateKind {
    /// Passes its input on, optionally with a static `Result`.
    Pass(Pass),
    /// Does work through a resource.
    Task(Task),
    /// Branches on rules.
    Choice(Choice),
    /// Waits for a duration or until a time.
    Wait(Wait),
    /// Ends its scope successfully.
    Succeed(Succeed),
    /// Ends the execution (or branch) with an error.
    Fail(Fail),
    /// Runs branches concurrently.
    Parallel(Parallel),
    /// Runs its processor once per item.
    Map(Map),
}

/// A path field that may be absent (default `$`) or `null`.
#[derive(Debug, Clone, Default)]
pub enum OptionalPath {
    /// Not given: `$`, the whole value.
    #[default]
    Default,
    /// `null`: for InputPath/OutputPath an empty object; for ResultPath, discard the result.
    Null,
    /// A path.
    Path(Path),
}

/// `Assign`: a JSONPath payload template or a JSONata value.
#[derive(Debug, Clone)]
pub enum Assign {
    /// In a JSONPath state: keys ending `.$` take paths or intrinsics.
    JsonPath(Template),
    /// In a JSONata state: values may be `{% %}` expressions.
    Jsonata(JsonataTemplate),
}

/// Input and output processing, in AWS's order. A JSONPath state uses the path fields; a JSONata
/// state uses `arguments` and `output`. Fields a state type does not allow stay empty.
#[derive(Debug, Clone, Default)]
pub struct DataFlow {
    /// `InputPath` (JSONPath).
    pub input_path: OptionalPath,
    /// `Parameters` (JSONPath; Map's legacy `Parameters` is its item selector instead).
    pub parameters: Option<Template>,
    /// `ResultSelector` (JSONPath).
    pub result_selector: Option<Template>,
    /// `ResultPath` (JSONPath).
    pub result_path: OptionalPath,
    /// `OutputPath` (JSONPath).
    pub output_path: OptionalPath,
    /// `Arguments` (JSONata; Task and Parallel).
    pub arguments: Option<JsonataTemplate>,
    /// `Output` (JSONata).
    pub output: Option<JsonataTemplate>,
}

/// A count or duration given as a literal, a reference path, or a JSONata expression.
#[derive(Debug, Clone)]
pub enum Dynamic<T> {
    /// A literal value.
    Literal(T),
    /// A `*Path` field: read from the effective input.
    Path(Path),
    /// A JSONata `{% %}` expression.
    Jsonata(JsonataTemplate),
}

/// `Retry` and `Catch` (Task, Parallel, Map).
#[derive(Debug, Clone, Default)]
pub struct ErrorHandling {
    /// Retriers, in order.
    pub retry: Vec<Retrier>,
    /// Catchers, in order.
    pub catch: Vec<Catcher>,
}

/// How a retry interval is randomised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JitterStrategy {
    /// Exactly the computed interval.
    #[default]
    None,
    /// A random delay between zero and the computed interval.
    Full,
}

/// One `Retry` entry.
#[derive(Debug, Clone)]
pub struct Retrier {
    /// `ErrorEquals`.
    pub error_equals: Vec<String>,
    /// `IntervalSeconds` (default 1).
    pub interval_seconds: u64,
    /// `MaxAttempts` (default 3; 0 never retries).
    pub max_attempts: u64,
    /// `BackoffRate` (default 2.0).
    pub backoff_rate: f64,
    /// `MaxDelaySeconds`: a cap on any one interval.
    pub max_delay_seconds: Option<u64>,
    /// `JitterStrategy`.
    pub jitter: JitterStrategy,
}

/// One `Catch` entry.
#[derive(Debug, Clone)]
pub struct Catcher {
    /// `ErrorEquals`.
    pub error_equals: Vec<String>,
    /// `Next`.
    pub next: StateId,
    /// `ResultPath` (JSONPath): where the Error Output goes; default replaces the input.
    pub result_path: OptionalPath,
    /// `Output` (JSONata).
    pub output: Option<JsonataTemplate>,
    /// `Assign`: replaces the state's own `Assign` when this catcher is taken.
    pub assign: Option<Assign>,
}

/// A Pass state.
#[derive(Debug, Clone)]
pub struct Pass {
    /// Data flow.
    pub io: DataFlow,
    /// `Result`: a static result.
    pub result: Option<serde_json::Value>,
    /// Where it goes.
    pub transition: Transition,
}

/// A Task state.
#[derive(Debug, Clone)]
pub struct Task {
    /// `Resource`.
    pub resource: Resource,
    /// Data flow.
    pub io: DataFlow,
    /// `TimeoutSeconds` or `TimeoutSecondsPath`: the budget of one attempt.
    pub timeout_seconds: Option<Dynamic<u64>>,
    /// `HeartbeatSeconds` or `HeartbeatSecondsPath`: the longest silence tolerated.
    pub heartbeat_seconds: Option<Dynamic<u64>>,
    /// `Credentials`, as written (a role to assume; meaningless locally).
    pub credentials: Option<serde_json::Value>,
    /// Retry and Catch.
    pub errors: ErrorHandling,
    /// Where it goes.
    pub transition: Transition,
}

/// The condition of one Choice branch.
#[derive(Debug, Clone)]
pub enum Condition {
    /// A JSONPath rule (`Variable` + comparator, or `And`/`Or`/`Not`).
    JsonPath(Rule),
    /// A JSONata `Condition`.
    Jsonata(JsonataTemplate),
}

/// One top-level rule of a Choice state.
#[derive(Debug, Clone)]
pub struct ChoiceBranch {
    /// When it matches.
    pub condition: Condition,
    /// Where it goes.
    pub next: StateId,
    /// `Output` (JSONata).
    pub output: Option<JsonataTemplate>,
    /// `Assign`.
    pub assign: Option<Assign>,
}

/// A Choice state.
#[derive(Debug, Clone)]
pub struct Choice {
    /// Data flow (InputPath/OutputPath or Output).
    pub io: DataFlow,
    /// `Choices`, in order.
    pub choices: Vec<ChoiceBranch>,
    /// `Default`.
    pub default: Option<StateId>,
}

/// What a Wait state waits for.
#[derive(Debug, Clone)]
pub enum WaitFor {
    /// `Seconds` (literal, `SecondsPath`, or JSONata).
    Seconds(Dynamic<u64>),
    /// `Timestamp` (literal RFC 3339, `TimestampPath`, or JSONata).
    Timestamp(Dynamic<chrono::DateTime<chrono::FixedOffset>>),
}

/// A Wait state.
#[derive(Debug, Clone)]
pub struct Wait {
    /// Data flow.
    pub io: DataFlow,
    /// How long.
    pub wait: WaitFor,
    /// Where it goes.
    pub transition: Transition,
}

/// A Succeed state.
#[derive(Debug, Clone)]
pub struct Succeed {
    /// Data flow (InputPath/OutputPath or Output).
    pub io: DataFlow,
}

/// A string field of a Fail state: literal, a path, an intrinsic call, or JSONata.
#[derive(Debug, Clone)]
pub enum FailText {
    /// A literal.
    Literal(String),
    /// `ErrorPath`/`CausePath` as a reference path.
    Path(Path),
    /// `ErrorPath`/`CausePath` as an intrinsic function call.
    Intrinsic(Call),
    /// A JSONata value.
    Jsonata(JsonataTemplate),
}

/// A Fail state.
#[derive(Debug, Clone)]
pub struct Fail {
    /// `Error` or `ErrorPath`.
    pub error: Option<FailText>,
    /// `Cause` or `CausePath`.
    pub cause: Option<FailText>,
}

/// A Parallel state.
#[derive(Debug, Clone)]
pub struct Parallel {
    /// Data flow.
    pub io: DataFlow,
    /// `Branches`.
    pub branches: Vec<Scope>,
    /// Retry and Catch.
    pub errors: ErrorHandling,
    /// Where it goes.
    pub transition: Transition,
}

/// How a Map runs its items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProcessorMode {
    /// In this execution.
    #[default]
    Inline,
    /// As child executions (a distributed Map).
    Distributed,
}

/// What builds each iteration's input: `ItemSelector` (or the legacy `Parameters`).
#[derive(Debug, Clone)]
pub enum ItemSelector {
    /// A JSONPath payload template (with `$$.Map.Item.*`).
    JsonPath(Template),
    /// A JSONata value.
    Jsonata(JsonataTemplate),
}

/// A Map state.
#[derive(Debug, Clone)]
pub struct Map {
    /// Data flow (Parameters stays empty: Map's legacy Parameters is `item_selector`).
    pub io: DataFlow,
    /// `ItemProcessor` (or the legacy `Iterator`).
    pub processor: Scope,
    /// `ProcessorConfig.Mode`.
    pub mode: ProcessorMode,
    /// `ItemsPath` (JSONPath; default `$`).
    pub items_path: Option<Path>,
    /// `Items` (JSONata).
    pub items: Option<JsonataTemplate>,
    /// `ItemSelector` or legacy `Parameters`.
    pub item_selector: Option<ItemSelector>,
    /// `MaxConcurrency` / `MaxConcurrencyPath` (0 = unlimited).
    pub max_concurrency: Option<Dynamic<u64>>,
    /// `ToleratedFailureCount` / `...Path`.
    pub tolerated_failure_count: Option<Dynamic<u64>>,
    /// `ToleratedFailurePercentage` / `...Path`.
    pub tolerated_failure_percentage: Option<Dynamic<f64>>,
    /// `ItemReader`, as written (distributed Maps read from S3).
    pub item_reader: Option<serde_json::Value>,
    /// `ItemBatcher`, as written.
    pub item_batcher: Option<serde_json::Value>,
    /// `ResultWriter`, as written.
    pub result_writer: Option<serde_json::Value>,
    /// `Label`.
    pub label: Option<String>,
    /// Retry and Catch.
    pub errors: ErrorHandling,
    /// Where it goes.
    pub transition: Transition,
}
