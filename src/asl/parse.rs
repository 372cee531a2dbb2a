//! JSON value → [`StateMachine`], collecting every problem with its JSON pointer.
//!
//! Parsing is lenient: a bad field becomes a diagnostic and the parser goes on, so `validate`
//! reports every problem at once. A machine is only handed out when there is no ERROR, so the
//! placeholders left where a field was bad are never run.
//!
//! Each object is read through `Fields`, which remembers which keys were taken: whatever is
//! left at the end is a field AWS does not support there, reported as AWS does.

use crate::asl::choice::Rule;
use crate::asl::diagnostic::{Code, Diagnostics, JsonPointer};
use crate::asl::error::names;
use crate::asl::intrinsics::Call;
use crate::asl::jsonata::JsonataTemplate;
use crate::asl::model::*;
use crate::asl::path::Path;
use crate::asl::resource::{IntegrationPattern, Resource, ResourceKind};
use crate::asl::template::Template;
use serde_json::{Map as JsonMap, Value};
use std::collections::{HashMap, HashSet};

/// The largest number AWS accepts in `TimeoutSeconds`, `IntervalSeconds` and the like.
const MAX_SECONDS: u64 = 99_999_999;
/// The longest state name AWS accepts.
const MAX_STATE_NAME: usize = 80;

/// Fields only JSONPath states may have.
pub(crate) const JSONPATH_ONLY: &[&str] = &[
    "InputPath",
    "OutputPath",
    "Parameters",
    "ResultSelector",
    "ResultPath",
    "Result",
    "TimeoutSecondsPath",
    "HeartbeatSecondsPath",
    "SecondsPath",
    "TimestampPath",
    "ErrorPath",
    "CausePath",
    "ItemsPath",
    "MaxConcurrencyPath",
    "ToleratedFailureCountPath",
    "ToleratedFailurePercentagePath",
    "Iterator",
];
/// Fields only JSONata states may have.
pub(crate) const JSONATA_ONLY: &[&str] = &["Arguments", "Output", "Items"];

/// Parses a definition value into a machine, recording problems in `diags`. The machine is
/// `None` when there was any ERROR.
pub fn parse_machine(
    value: &Value,
    machine_type: MachineType,
    diags: &mut Diagnostics,
) -> Option<StateMachine> {
    parse_machine_as(value, machine_type, crate::asl::Compat::Aws, diags)
}

/// [`parse_machine`] with the rules of `compat`.
pub fn parse_machine_as(
    value: &Value,
    machine_type: MachineType,
    compat: crate::asl::Compat,
    diags: &mut Diagnostics,
) -> Option<StateMachine> {
    let Value::Object(obj) = value else {
        diags.push(crate::asl::diagnostic::Diagnostic {
            location: crate::asl::diagnostic::Location::None,
            ..crate::asl::diagnostic::Diagnostic::error(
                Code::SchemaValidationFailed,
                &JsonPointer::root(),
                "Definition must be a valid JSON object",
            )
        });
        return None;
    };
    let mut p = Parser {
        diags,
        machine_type,
        compat,
        machine_language: QueryLanguage::JsonPath,
        names: HashMap::new(),
        missing_targets: Vec::new(),
    };
    let root = JsonPointer::root();
    let mut f = Fields::new(obj, &root);
    let comment = f.string(p.diags, "Comment");
    let version = f.string(p.diags, "Version");
    let timeout_seconds = f.bounded_uint(p.diags, "TimeoutSeconds", 1);
    p.machine_language = f.query_language(p.diags).unwrap_or_default();
    let ql = p.machine_language;
    let scope = p.scope_fields(&mut f, &root, ql);
    f.finish(p.diags, ql, "the state machine");
    p.report_missing_targets();
    let scope = scope?;
    let machine = StateMachine {
        comment,
        query_language: ql,
        timeout_seconds,
        version,
        root: scope,
    };
    crate::asl::variables::check(&machine, p.diags);
    if p.diags.has_errors() {
        return None;
    }
    Some(machine)
}

/// A transition target that named no state of its scope, reported once every name is known.
struct MissingTarget {
    at: JsonPointer,
    field: &'static str,
    name: String,
    /// ` (did you mean "X"?)` for a likely typo of a state of the same scope.
    hint: String,
}

struct Parser<'d> {
    diags: &'d mut Diagnostics,
    machine_type: MachineType,
    compat: crate::asl::Compat,
    machine_language: QueryLanguage,
    /// Every state name seen so far, machine-wide, with where it was defined.
    names: HashMap<String, JsonPointer>,
    missing_targets: Vec<MissingTarget>,
}

/// The names of one scope, known before its states are parsed, so transitions resolve at once.
struct ScopeNames {
    ids: HashMap<String, StateId>,
}

impl Parser<'_> {
    fn report_missing_targets(&mut self) {
        for m in std::mem::take(&mut self.missing_targets) {
            let message = match self.names.get(&m.name) {
                Some(defined) => format!(
                    "Missing '{}' target: {} (a state of that name is defined at {defined}, in another scope: transitions may not leave a Parallel branch or Map processor, nor enter one)",
                    m.field, m.name
                ),
                None => format!("Missing '{}' target: {}{}", m.field, m.name, m.hint),
            };
            self.diags
                .error(Code::MissingTransitionTarget, &m.at, message);
        }
    }

    /// Reads `StartAt` and `States` from an object (the top level, a branch, a processor).
    fn scope_fields(
        &mut self,
        f: &mut Fields<'_>,
        at: &JsonPointer,
        ql: QueryLanguage,
    ) -> Option<Scope> {
        let states = f.take("States");
        let start_at = f.take("StartAt");
        let mut missing = Vec::new();
        if states.is_none() {
            missing.push("States");
        }
        if start_at.is_none() {
            missing.push("StartAt");
        }
        if !missing.is_empty() {
            self.diags.schema(
                at,
                format!("These fields are required: [{}]", missing.join(", ")),
            );
        }
        let states_at = at.key("States");
        let states = match states {
            Some(Value::Object(m)) => Some(m),
            Some(_) => {
                self.diags
                    .schema(&states_at, "Expected value of type Object");
                None
            }
            None => None,
        };
        let start_name = match start_at {
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => {
                self.diags
                    .schema(&at.key("StartAt"), "Expected value of type String");
                None
            }
            None => None,
        };
        let states = states?;
        if states.is_empty() {
            self.diags.schema(
                &states_at,
                "The 'States' field must contain at least one state",
            );
        }
        let names = ScopeNames {
            ids: states
                .keys()
                .enumerate()
                .map(|(i, k)| (k.clone(), StateId(i as u32)))
                .collect(),
        };
        let mut parsed = Vec::with_capacity(states.len());
        for (name, value) in states {
            let state_at = states_at.key(name);
            parsed.push(self.state(name, value, &state_at, ql, &names));
        }
        let start = match start_name {
            Some(s) => match names.ids.get(s) {
                Some(id) => Some(*id),
                None => {
                    self.diags.error(
                        Code::MissingTransitionTarget,
                        &at.key("StartAt"),
                        format!(
                            "Missing 'StartAt' target: {s}{}",
                            crate::suggest::did_you_mean(s, names.ids.keys().map(String::as_str))
                        ),
                    );
                    None
                }
            },
            None => None,
        };
        if let Some(start) = start {
            self.check_reachability(states, &states_at, start, &names);
        }
        if !parsed.is_empty() && !parsed.iter().any(State::is_terminal) {
            // A scope that cannot end. Choice states can only loop back, so this is a definite
            // error rather than a guess.
            self.diags.error(
                Code::MissingEndState,
                &states_at,
                "No terminal state found: at least one state must have \"End\": true or be of type Succeed or Fail",
            );
        }
        Some(Scope {
            start_at: start.unwrap_or(StateId(0)),
            states: parsed,
            names: names.ids,
            pointer: states_at,
        })
    }

    /// Reports every state no transition reaches. Works on the raw JSON, so a state that failed
    /// to parse still contributes its transitions and causes no false reports.
    fn check_reachability(
        &mut self,
        states: &JsonMap<String, Value>,
        states_at: &JsonPointer,
        start: StateId,
        names: &ScopeNames,
    ) {
        let by_index: Vec<&Value> = states.values().collect();
        let mut seen = vec![false; by_index.len()];
        let mut stack = vec![start.0 as usize];
        while let Some(i) = stack.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            for target in raw_targets(by_index[i]) {
                // A misspelled target reaches the state it was meant to name: the typo is
                // reported once, not again as that state's "not reachable".
                let meant = names.ids.get(target).or_else(|| {
                    crate::suggest::closest(target, names.ids.keys().map(String::as_str))
                        .and_then(|c| names.ids.get(c))
                });
                if let Some(id) = meant {
                    if !seen[id.0 as usize] {
                        stack.push(id.0 as usize);
                    }
                }
            }
        }
        for (i, name) in states.keys().enumerate() {
            if !seen[i] {
                self.diags.error(
                    Code::MissingTransitionTarget,
                    &states_at.key(name),
                    format!("State \"{name}\" is not reachable."),
                );
            }
        }
    }

    fn target(
        &mut self,
        f: &mut Fields<'_>,
        key: &'static str,
        names: &ScopeNames,
    ) -> Option<Option<StateId>> {
        let v = f.take(key)?;
        let at = f.at.key(key);
        Some(self.resolve(v, &at, key, names))
    }

    fn resolve(
        &mut self,
        v: &Value,
        at: &JsonPointer,
        field: &'static str,
        names: &ScopeNames,
    ) -> Option<StateId> {
        let Value::String(name) = v else {
            self.diags.schema(at, "Expected value of type String");
            return None;
        };
        match names.ids.get(name) {
            Some(id) => Some(*id),
            None => {
                self.missing_targets.push(MissingTarget {
                    at: at.clone(),
                    field,
                    name: name.clone(),
                    hint: crate::suggest::did_you_mean(name, names.ids.keys().map(String::as_str)),
                });
                None
            }
        }
    }

    /// `Next` xor `End: true`.
    fn transition(&mut self, f: &mut Fields<'_>, names: &ScopeNames) -> Transition {
        let next = self.target(f, "Next", names);
        let end = f.boolean(self.diags, "End");
        match (next, end) {
            (Some(_), Some(true)) => {
                self.diags
                    .schema(&f.at, "A state may have 'Next' or \"End\": true, not both");
                Transition::End
            }
            (Some(Some(id)), _) => Transition::Next(id),
            (Some(None), _) => Transition::End,
            (None, Some(true)) => Transition::End,
            (None, _) => {
                self.diags.schema(
                    &f.at,
                    "This state must have either a 'Next' field or \"End\": true",
                );
                Transition::End
            }
        }
    }

    fn state(
        &mut self,
        name: &str,
        value: &Value,
        at: &JsonPointer,
        scope_ql: QueryLanguage,
        names: &ScopeNames,
    ) -> State {
        if name.chars().count() > MAX_STATE_NAME {
            self.diags.error(
                Code::InvalidStateName,
                at,
                format!("State name is longer than {MAX_STATE_NAME} characters: {name}"),
            );
        }
        if name.is_empty() {
            self.diags
                .error(Code::InvalidStateName, at, "State name must not be empty");
        }
        if let Some(first) = self.names.get(name) {
            self.diags.push(
                crate::asl::diagnostic::Diagnostic::error(
                    Code::DuplicateStateName,
                    at,
                    format!("Duplicate State name: {name}"),
                )
                .with_related(first.clone(), "first defined here"),
            );
        } else {
            self.names.insert(name.to_owned(), at.clone());
        }
        let placeholder = |ql| State {
            name: name.to_owned(),
            pointer: at.clone(),
            comment: None,
            query_language: ql,
            assign: None,
            uses_context: false,
            kind: StateKind::Succeed(Succeed {
                io: DataFlow::default(),
            }),
        };
        let Value::Object(obj) = value else {
            self.diags.schema(at, "Expected value of type Object");
            return placeholder(scope_ql);
        };
        let mut f = Fields::new(obj, at);
        let comment = f.string(self.diags, "Comment");
        let ql = match f.query_language(self.diags) {
            Some(QueryLanguage::JsonPath) if self.machine_language == QueryLanguage::Jsonata => {
                self.diags.schema(
                    at,
                    "'QueryLanguage' can not be 'JSONPath' if set to 'JSONata' for whole state machine",
                );
                QueryLanguage::JsonPath
            }
            Some(ql) => ql,
            None => scope_ql,
        };
        let type_name = match f.take("Type") {
            Some(Value::String(t)) => t.as_str(),
            Some(_) => {
                self.diags
                    .schema(&at.key("Type"), "Expected value of type String");
                return placeholder(ql);
            }
            None => {
                self.diags.schema(at, "These fields are required: [Type]");
                return placeholder(ql);
            }
        };
        let assign = match type_name {
            "Succeed" | "Fail" => None,
            _ => self.assign(&mut f, ql),
        };
        let kind = match type_name {
            "Pass" => StateKind::Pass(self.pass(&mut f, ql, names)),
            "Task" => StateKind::Task(self.task(&mut f, ql, names)),
            "Choice" => StateKind::Choice(self.choice(&mut f, ql, names)),
            "Wait" => StateKind::Wait(self.wait(&mut f, ql, names)),
            "Succeed" => StateKind::Succeed(Succeed {
                io: self.io(&mut f, ql, IoFields::INPUT_OUTPUT),
            }),
            "Fail" => StateKind::Fail(self.fail(&mut f, ql)),
            "Parallel" => StateKind::Parallel(self.parallel(&mut f, ql, names)),
            "Map" => StateKind::Map(self.map(&mut f, ql, names)),
            other => {
                self.diags.schema(
                    &at.key("Type"),
                    format!(
                        "Unknown state type '{other}': expected one of Pass, Task, Choice, Wait, Succeed, Fail, Parallel, Map"
                    ),
                );
                return placeholder(ql);
            }
        };
        f.finish(self.diags, ql, &format!("{type_name} states"));
        State {
            name: name.to_owned(),
            pointer: at.clone(),
            comment,
            query_language: ql,
            assign,
            uses_context: mentions_context(value),
            kind,
        }
    }

    fn assign(&mut self, f: &mut Fields<'_>, ql: QueryLanguage) -> Option<Assign> {
        let v = f.take("Assign")?;
        let at = f.at.key("Assign");
        Some(self.assign_value(v, &at, ql))
    }

    fn assign_value(&mut self, v: &Value, at: &JsonPointer, ql: QueryLanguage) -> Assign {
        if let Value::Object(vars) = v {
            for name in vars.keys() {
                let var = name.strip_suffix(".$").unwrap_or(name);
                if var == "states" {
                    self.diags
                        .schema(&at.key(name), "The variable name 'states' is reserved");
                } else if !is_variable_name(var) {
                    self.diags.schema(
                        &at.key(name),
                        format!("Invalid variable name '{var}': it must be an identifier of at most 80 characters"),
                    );
                }
            }
        } else {
            self.diags.schema(at, "Expected value of type Object");
        }
        match ql {
            QueryLanguage::JsonPath => Assign::JsonPath(Template::compile(v, at, self.diags)),
            QueryLanguage::Jsonata => Assign::Jsonata(JsonataTemplate::compile(v, at, self.diags)),
        }
    }

    fn path_field(
        &mut self,
        f: &mut Fields<'_>,
        key: &'static str,
        reference: bool,
    ) -> OptionalPath {
        match f.take(key) {
            None => OptionalPath::Default,
            Some(Value::Null) => OptionalPath::Null,
            Some(Value::String(s)) => {
                let at = f.at.key(key);
                match self.path(s, &at, key, reference) {
                    Some(p) => OptionalPath::Path(p),
                    None => OptionalPath::Default,
                }
            }
            Some(_) => {
                self.diags
                    .schema(&f.at.key(key), "Expected value of type String or null");
                OptionalPath::Default
            }
        }
    }

    fn path(&mut self, text: &str, at: &JsonPointer, field: &str, reference: bool) -> Option<Path> {
        let parsed = if reference {
            Path::parse_reference(text)
        } else {
            Path::parse(text)
        };
        match parsed {
            Ok(p) => {
                for note in p.dialect_notes() {
                    self.diags.warning(Code::JsonPathDialect, at, note);
                }
                Some(p)
            }
            Err(e) => {
                let kind = if reference {
                    "a valid reference path"
                } else {
                    "a valid JSONPath"
                };
                self.diags.schema(
                    at,
                    format!("The value for the field '{field}' must be {kind}: {e}"),
                );
                None
            }
        }
    }

    fn template(&mut self, f: &mut Fields<'_>, key: &'static str) -> Option<Template> {
        let v = f.take(key)?;
        let at = f.at.key(key);
        if !v.is_object() {
            self.diags.schema(&at, "Expected value of type Object");
        }
        Some(Template::compile(v, &at, self.diags))
    }

    /// `Parameters` or `ResultSelector`: built in the order of `compat` (Step Functions Local
    /// puts the `.$` members last, see [`Template::in_step_functions_local_order`]).
    fn payload_template(&mut self, f: &mut Fields<'_>, key: &'static str) -> Option<Template> {
        let template = self.template(f, key)?;
        Some(match self.compat {
            crate::asl::Compat::Aws => template,
            crate::asl::Compat::StepFunctionsLocal => template.in_step_functions_local_order(),
        })
    }

    fn jsonata(&mut self, f: &mut Fields<'_>, key: &'static str) -> Option<JsonataTemplate> {
        let at = f.at.key(key);
        f.take(key)
            .map(|v| JsonataTemplate::compile(v, &at, self.diags))
    }

    fn io(&mut self, f: &mut Fields<'_>, ql: QueryLanguage, which: IoFields) -> DataFlow {
        let mut io = DataFlow::default();
        match ql {
            QueryLanguage::JsonPath => {
                if which.input_output {
                    io.input_path = self.path_field(f, "InputPath", false);
                    io.output_path = self.path_field(f, "OutputPath", false);
                }
                if which.parameters {
                    io.parameters = self.payload_template(f, "Parameters");
                }
                if which.result_selector {
                    io.result_selector = self.payload_template(f, "ResultSelector");
                }
                if which.result_path {
                    io.result_path = self.path_field(f, "ResultPath", true);
                    if let OptionalPath::Path(p) = &io.result_path {
                        if !matches!(p.root(), crate::asl::path::PathRoot::Input) {
                            self.diags.schema(
                                &f.at.key("ResultPath"),
                                "ResultPath must start with '$.' (it may not reference the context object or a variable)",
                            );
                        }
                    }
                }
            }
            QueryLanguage::Jsonata => {
                if which.input_output {
                    io.output = self.jsonata(f, "Output");
                }
                if which.parameters {
                    io.arguments = self.jsonata(f, "Arguments");
                }
            }
        }
        io
    }

    fn errors(
        &mut self,
        f: &mut Fields<'_>,
        ql: QueryLanguage,
        names: &ScopeNames,
    ) -> ErrorHandling {
        let mut out = ErrorHandling::default();
        if let Some(v) = f.take("Retry") {
            let at = f.at.key("Retry");
            match v {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        let at = at.index(i);
                        if let Some(r) = self.retrier(item, &at, i + 1 == items.len()) {
                            out.retry.push(r);
                        }
                    }
                }
                _ => self.diags.schema(&at, "Expected value of type Array"),
            }
        }
        if let Some(v) = f.take("Catch") {
            let at = f.at.key("Catch");
            match v {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        let at = at.index(i);
                        if let Some(c) = self.catcher(item, &at, i + 1 == items.len(), ql, names) {
                            out.catch.push(c);
                        }
                    }
                }
                _ => self.diags.schema(&at, "Expected value of type Array"),
            }
        }
        out
    }

    fn error_equals(&mut self, f: &mut Fields<'_>, last: bool, what: &str) -> Vec<String> {
        let at = f.at.key("ErrorEquals");
        let Some(v) = f.take("ErrorEquals") else {
            self.diags
                .schema(&f.at, "These fields are required: [ErrorEquals]");
            return Vec::new();
        };
        let Some(items) = v.as_array() else {
            self.diags.schema(&at, "Expected value of type Array");
            return Vec::new();
        };
        if items.is_empty() {
            self.diags
                .schema(&at, "ErrorEquals must name at least one error");
        }
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(name) => {
                    // A WARNING, not an ERROR: AWS accepts such names (deployed definitions
                    // in AWS's own samples catch `States.TaskFailedId`), and a Fail state or a
                    // task may raise them.
                    if name.starts_with("States.") && !names::PREDEFINED.contains(&name) {
                        self.diags.warning(
                            Code::UnknownStatesError,
                            &at.index(i),
                            format!("'{name}' is not one of AWS's predefined error names (names starting with 'States.' are reserved for AWS's own errors); it matches only an error raised with exactly this name"),
                        );
                    }
                    out.push(name.to_owned());
                }
                None => self
                    .diags
                    .schema(&at.index(i), "Expected value of type String"),
            }
        }
        if out.iter().any(|e| e == names::ALL) && (out.len() != 1 || !last) {
            self.diags.schema(
                &at,
                format!("States.ALL can only appear in the last element of {what}, and by itself"),
            );
        }
        out
    }

    fn retrier(&mut self, v: &Value, at: &JsonPointer, last: bool) -> Option<Retrier> {
        let Value::Object(obj) = v else {
            self.diags.schema(at, "Expected value of type Object");
            return None;
        };
        let mut f = Fields::new(obj, at);
        f.string(self.diags, "Comment");
        let error_equals = self.error_equals(&mut f, last, "Retry");
        // Step Functions Local takes 0 (retry at once); AWS asks for at least 1.
        let least_interval = match self.compat {
            crate::asl::Compat::Aws => 1,
            crate::asl::Compat::StepFunctionsLocal => 0,
        };
        let interval_seconds = f
            .bounded_uint(self.diags, "IntervalSeconds", least_interval)
            .unwrap_or(1);
        let max_attempts = f.bounded_uint(self.diags, "MaxAttempts", 0).unwrap_or(3);
        let backoff_rate = match f.take("BackoffRate") {
            None => 2.0,
            Some(v) => match v.as_f64() {
                Some(r) if r >= 1.0 => r,
                Some(_) => {
                    self.diags.schema(
                        &at.key("BackoffRate"),
                        "BackoffRate must be greater than or equal to 1.0",
                    );
                    2.0
                }
                None => {
                    self.diags
                        .schema(&at.key("BackoffRate"), "Expected value of type Number");
                    2.0
                }
            },
        };
        let max_delay_seconds = f.bounded_uint(self.diags, "MaxDelaySeconds", 1);
        let jitter = match f.take("JitterStrategy") {
            None => JitterStrategy::None,
            Some(Value::String(s)) if s == "FULL" => JitterStrategy::Full,
            Some(Value::String(s)) if s == "NONE" => JitterStrategy::None,
            Some(_) => {
                self.diags.schema(
                    &at.key("JitterStrategy"),
                    "JitterStrategy must be \"FULL\" or \"NONE\"",
                );
                JitterStrategy::None
            }
        };
        f.finish(self.diags, QueryLanguage::JsonPath, "a Retrier");
        Some(Retrier {
            error_equals,
            interval_seconds,
            max_attempts,
            backoff_rate,
            max_delay_seconds,
            jitter,
        })
    }

    fn catcher(
        &mut self,
        v: &Value,
        at: &JsonPointer,
        last: bool,
        ql: QueryLanguage,
        names: &ScopeNames,
    ) -> Option<Catcher> {
        let Value::Object(obj) = v else {
            self.diags.schema(at, "Expected value of type Object");
            return None;
        };
        let mut f = Fields::new(obj, at);
        f.string(self.diags, "Comment");
        let error_equals = self.error_equals(&mut f, last, "Catch");
        let next = match self.target(&mut f, "Next", names) {
            Some(t) => t,
            None => {
                self.diags.schema(at, "These fields are required: [Next]");
                None
            }
        };
        let (result_path, output) = match ql {
            QueryLanguage::JsonPath => (self.path_field(&mut f, "ResultPath", true), None),
            QueryLanguage::Jsonata => (OptionalPath::Default, self.jsonata(&mut f, "Output")),
        };
        let assign = self.assign(&mut f, ql);
        f.finish(self.diags, ql, "a Catcher");
        Some(Catcher {
            error_equals,
            next: next.unwrap_or(StateId(0)),
            result_path,
            output,
            assign,
        })
    }

    fn pass(&mut self, f: &mut Fields<'_>, ql: QueryLanguage, names: &ScopeNames) -> Pass {
        let io = self.io(f, ql, IoFields::PASS);
        let result = match ql {
            QueryLanguage::JsonPath => f.take("Result").cloned(),
            QueryLanguage::Jsonata => None,
        };
        if let Some(r) = &result {
            if contains_path_like(r) {
                self.diags.warning(
                    Code::PassResultIsStatic,
                    &f.at.key("Result"),
                    "The 'Result' field is static: path-looking strings in it are not evaluated; use 'Parameters' with keys ending in '.$' to read the input",
                );
            }
        }
        Pass {
            io,
            result,
            transition: self.transition(f, names),
        }
    }

    fn task(&mut self, f: &mut Fields<'_>, ql: QueryLanguage, names: &ScopeNames) -> Task {
        let resource_at = f.at.key("Resource");
        let resource = match f.take("Resource") {
            Some(Value::String(s)) => match Resource::parse_task(s) {
                Ok(r) => Some(r),
                Err(e) => {
                    self.diags.schema(&resource_at, e.to_string());
                    None
                }
            },
            Some(_) => {
                self.diags
                    .schema(&resource_at, "Expected value of type String");
                None
            }
            None => {
                self.diags
                    .schema(&f.at, "These fields are required: [Resource]");
                None
            }
        };
        if let (Some(r), MachineType::Express) = (&resource, self.machine_type) {
            match (&r.kind, r.pattern()) {
                (ResourceKind::Activity { .. }, _) => self.diags.schema(
                    &resource_at,
                    "Express state machine does not support Activity ARN",
                ),
                (_, Some(IntegrationPattern::WaitForTaskToken)) => self.diags.schema(
                    &resource_at,
                    "Express state machine does not support '.waitForTaskToken' service integration ",
                ),
                (_, Some(IntegrationPattern::Sync)) => self.diags.schema(
                    &resource_at,
                    "Express state machine does not support '.sync' service integration ",
                ),
                _ => {}
            }
        }
        let io = self.io(f, ql, IoFields::ALL);
        let timeout_seconds = self.seconds(f, ql, "TimeoutSeconds", "TimeoutSecondsPath", 1);
        let heartbeat_seconds = self.seconds(f, ql, "HeartbeatSeconds", "HeartbeatSecondsPath", 1);
        if let (Some(Dynamic::Literal(t)), Some(Dynamic::Literal(h))) =
            (&timeout_seconds, &heartbeat_seconds)
        {
            if h >= t {
                self.diags.push(
                    crate::asl::diagnostic::Diagnostic::error(
                        Code::SchemaValidationFailed,
                        &f.at.key("HeartbeatSeconds"),
                        format!("HeartbeatSeconds ({h}) must be smaller than TimeoutSeconds ({t})"),
                    )
                    .with_related(f.at.key("TimeoutSeconds"), format!("TimeoutSeconds is {t}")),
                );
            }
        }
        let credentials = f.take("Credentials").cloned();
        if let Some(c) = &credentials {
            let at = f.at.key("Credentials");
            match c {
                Value::Object(m) if m.contains_key("RoleArn") || m.contains_key("RoleArn.$") => {}
                Value::Object(_) => self
                    .diags
                    .schema(&at, "The field 'RoleArn' is required but was missing"),
                _ => self.diags.schema(&at, "Expected value of type Object"),
            }
        }
        if let Some(r) = &resource {
            if r.pattern() == Some(IntegrationPattern::WaitForTaskToken) && !passes_task_token(&io)
            {
                let at = match ql {
                    QueryLanguage::JsonPath if io.parameters.is_some() => f.at.key("Parameters"),
                    QueryLanguage::Jsonata if io.arguments.is_some() => f.at.key("Arguments"),
                    _ => resource_at.clone(),
                };
                let token = match ql {
                    QueryLanguage::JsonPath => "$$.Task.Token",
                    QueryLanguage::Jsonata => "$states.context.Task.Token",
                };
                self.diags.warning(
                    Code::MissingTaskToken,
                    &at,
                    format!("This '.waitForTaskToken' task never passes {token} to its worker, so no worker can ever answer it"),
                );
            }
        }
        let errors = self.errors(f, ql, names);
        let transition = self.transition(f, names);
        Task {
            resource: resource.unwrap_or_else(|| Resource {
                arn: String::new(),
                kind: ResourceKind::LambdaFunction,
            }),
            io,
            timeout_seconds,
            heartbeat_seconds,
            credentials,
            errors,
            transition,
        }
    }

    /// A `*Path` field of a JSONPath state: a reference path (nothing in JSONata states, where
    /// the field is left for `Fields::finish` to report).
    fn reference_path_field(
        &mut self,
        f: &mut Fields<'_>,
        ql: QueryLanguage,
        path_key: &'static str,
    ) -> Option<Path> {
        if ql != QueryLanguage::JsonPath {
            return None;
        }
        match f.take(path_key)? {
            Value::String(s) => {
                let at = f.at.key(path_key);
                self.path(s, &at, path_key, true)
            }
            _ => {
                self.diags
                    .schema(&f.at.key(path_key), "Expected value of type String");
                None
            }
        }
    }

    /// A field given both as a literal and as its `*Path` twin is an error, reported at the
    /// path with the literal labelled; otherwise whichever was given.
    fn one_of<T>(
        &mut self,
        f: &Fields<'_>,
        (key, literal): (&str, Option<T>),
        (path_key, path): (&str, Option<T>),
    ) -> Option<T> {
        match (literal, path) {
            (Some(_), Some(_)) => {
                self.diags.push(
                    crate::asl::diagnostic::Diagnostic::error(
                        Code::SchemaValidationFailed,
                        &f.at.key(path_key),
                        format!("A state may have '{key}' or '{path_key}', not both"),
                    )
                    .with_related(f.at.key(key), format!("{key} is here")),
                );
                None
            }
            (l, p) => l.or(p),
        }
    }

    /// A positive count given as a literal or a `*Path` (JSONPath), or a literal or expression
    /// (JSONata). Reports both forms together.
    fn seconds(
        &mut self,
        f: &mut Fields<'_>,
        ql: QueryLanguage,
        key: &'static str,
        path_key: &'static str,
        min: u64,
    ) -> Option<Dynamic<u64>> {
        let literal_at = f.at.key(key);
        let literal = match (ql, f.peek(key)) {
            (QueryLanguage::Jsonata, Some(Value::String(s)))
                if JsonataTemplate::is_expression(s) =>
            {
                f.take(key);
                Some(Dynamic::Jsonata(JsonataTemplate::compile(
                    &Value::String(s.clone()),
                    &literal_at,
                    self.diags,
                )))
            }
            _ => f.bounded_uint(self.diags, key, min).map(Dynamic::Literal),
        };
        let path = self
            .reference_path_field(f, ql, path_key)
            .map(Dynamic::Path);
        self.one_of(f, (key, literal), (path_key, path))
    }

    fn choice(&mut self, f: &mut Fields<'_>, ql: QueryLanguage, names: &ScopeNames) -> Choice {
        let io = self.io(f, ql, IoFields::INPUT_OUTPUT);
        let mut choices = Vec::new();
        let at = f.at.key("Choices");
        match f.take("Choices") {
            Some(Value::Array(items)) if !items.is_empty() => {
                for (i, item) in items.iter().enumerate() {
                    if let Some(b) = self.choice_branch(item, &at.index(i), ql, names) {
                        choices.push(b);
                    }
                }
            }
            Some(Value::Array(_)) => self
                .diags
                .schema(&at, "'Choices' must contain at least one rule"),
            Some(_) => self.diags.schema(&at, "Expected value of type Array"),
            None => self
                .diags
                .schema(&f.at, "These fields are required: [Choices]"),
        }
        let default = self.target(f, "Default", names).flatten();
        Choice {
            io,
            choices,
            default,
        }
    }

    fn choice_branch(
        &mut self,
        v: &Value,
        at: &JsonPointer,
        ql: QueryLanguage,
        names: &ScopeNames,
    ) -> Option<ChoiceBranch> {
        let Value::Object(obj) = v else {
            self.diags.schema(at, "Expected value of type Object");
            return None;
        };
        let next = match obj.get("Next") {
            Some(n) => self.resolve(n, &at.key("Next"), "Next", names),
            None => {
                self.diags.schema(at, "These fields are required: [Next]");
                None
            }
        };
        let assign = obj
            .get("Assign")
            .map(|a| self.assign_value(a, &at.key("Assign"), ql));
        let (condition, output) = match ql {
            QueryLanguage::JsonPath => {
                for k in ["Output", "Condition"] {
                    if obj.contains_key(k) {
                        self.diags.schema(
                            &at.key(k),
                            format!("Field '{k}' is not supported in JSONPath Choice rules"),
                        );
                    }
                }
                (Condition::JsonPath(Rule::compile(v, at, self.diags)), None)
            }
            QueryLanguage::Jsonata => {
                let mut f = Fields::new(obj, at);
                f.take("Next");
                f.take("Assign");
                f.string(self.diags, "Comment");
                let output = self.jsonata(&mut f, "Output");
                let condition = match f.take("Condition") {
                    Some(c @ (Value::Bool(_) | Value::String(_))) => {
                        if let Value::String(s) = c {
                            if !JsonataTemplate::is_expression(s) {
                                self.diags.schema(
                                    &at.key("Condition"),
                                    "Condition must be a boolean or a JSONata expression '{% ... %}'",
                                );
                            }
                        }
                        JsonataTemplate::compile(c, &at.key("Condition"), self.diags)
                    }
                    Some(_) => {
                        self.diags.schema(
                            &at.key("Condition"),
                            "Condition must be a boolean or a JSONata expression '{% ... %}'",
                        );
                        JsonataTemplate::compile(&Value::Bool(false), at, self.diags)
                    }
                    None => {
                        self.diags
                            .schema(at, "These fields are required: [Condition]");
                        JsonataTemplate::compile(&Value::Bool(false), at, self.diags)
                    }
                };
                f.finish(self.diags, ql, "JSONata Choice rules");
                (Condition::Jsonata(condition), output)
            }
        };
        Some(ChoiceBranch {
            condition,
            next: next.unwrap_or(StateId(0)),
            output,
            assign,
        })
    }

    fn wait(&mut self, f: &mut Fields<'_>, ql: QueryLanguage, names: &ScopeNames) -> Wait {
        let io = self.io(f, ql, IoFields::INPUT_OUTPUT);
        let present: Vec<&'static str> = ["Seconds", "SecondsPath", "Timestamp", "TimestampPath"]
            .into_iter()
            .filter(|k| f.peek(k).is_some())
            .collect();
        if present.len() != 1 {
            self.diags.schema(
                &f.at,
                format!(
                    "A Wait state must have exactly one of 'Seconds', 'SecondsPath', 'Timestamp' or 'TimestampPath'{}",
                    if present.is_empty() { String::new() } else { format!(" (found {})", present.join(", ")) }
                ),
            );
        }
        let seconds = self.seconds(f, ql, "Seconds", "SecondsPath", 0);
        let timestamp_at = f.at.key("Timestamp");
        let timestamp = match (ql, f.take("Timestamp")) {
            (_, None) => None,
            (QueryLanguage::Jsonata, Some(Value::String(s)))
                if JsonataTemplate::is_expression(s) =>
            {
                Some(Dynamic::Jsonata(JsonataTemplate::compile(
                    &Value::String(s.clone()),
                    &timestamp_at,
                    self.diags,
                )))
            }
            (_, Some(Value::String(s))) => match parse_timestamp(s) {
                Some(t) => Some(Dynamic::Literal(t)),
                None => {
                    self.diags
                        .schema(&timestamp_at, "String does not match RFC3339 timestamp");
                    None
                }
            },
            (_, Some(_)) => {
                self.diags
                    .schema(&timestamp_at, "Expected value of type String");
                None
            }
        };
        let timestamp = timestamp.or_else(|| {
            self.reference_path_field(f, ql, "TimestampPath")
                .map(Dynamic::Path)
        });
        let wait = match (seconds, timestamp) {
            (Some(s), _) => WaitFor::Seconds(s),
            (None, Some(t)) => WaitFor::Timestamp(t),
            (None, None) => WaitFor::Seconds(Dynamic::Literal(0)),
        };
        Wait {
            io,
            wait,
            transition: self.transition(f, names),
        }
    }

    fn fail(&mut self, f: &mut Fields<'_>, ql: QueryLanguage) -> Fail {
        Fail {
            error: self.fail_text(f, ql, "Error", "ErrorPath"),
            cause: self.fail_text(f, ql, "Cause", "CausePath"),
        }
    }

    fn fail_text(
        &mut self,
        f: &mut Fields<'_>,
        ql: QueryLanguage,
        key: &'static str,
        path_key: &'static str,
    ) -> Option<FailText> {
        let literal = match f.take(key) {
            None => None,
            Some(Value::String(s)) => match ql {
                QueryLanguage::Jsonata if JsonataTemplate::is_expression(s) => {
                    Some(FailText::Jsonata(JsonataTemplate::compile(
                        &Value::String(s.clone()),
                        &f.at.key(key),
                        self.diags,
                    )))
                }
                _ => {
                    if ql == QueryLanguage::JsonPath && looks_like_path(s) {
                        self.diags.warning(
                            Code::NoPath,
                            &f.at.key(key),
                            format!("The value of '{key}' looks like a path, but '{key}' is static: use '{path_key}' to read it from the input"),
                        );
                    }
                    Some(FailText::Literal(s.clone()))
                }
            },
            Some(_) => {
                self.diags
                    .schema(&f.at.key(key), "Expected value of type String");
                None
            }
        };
        let path = match (ql, f.take(path_key)) {
            (QueryLanguage::JsonPath, Some(Value::String(s))) => {
                let at = f.at.key(path_key);
                if Call::looks_like(s) {
                    match Call::parse(s) {
                        Ok(c) => Some(FailText::Intrinsic(c)),
                        Err(e) => {
                            self.diags.schema(
                                &at,
                                format!("The value for the field '{path_key}' must be a valid JSONPath or a valid intrinsic function call: {e}"),
                            );
                            None
                        }
                    }
                } else {
                    self.path(s, &at, path_key, true).map(FailText::Path)
                }
            }
            (QueryLanguage::JsonPath, Some(_)) => {
                self.diags
                    .schema(&f.at.key(path_key), "Expected value of type String");
                None
            }
            _ => None,
        };
        match (literal, path) {
            (Some(_), Some(_)) => {
                self.diags.schema(
                    &f.at.key(path_key),
                    format!("A Fail state may have '{key}' or '{path_key}', not both"),
                );
                None
            }
            (l, p) => l.or(p),
        }
    }

    fn parallel(&mut self, f: &mut Fields<'_>, ql: QueryLanguage, names: &ScopeNames) -> Parallel {
        let io = self.io(f, ql, IoFields::ALL);
        let mut branches = Vec::new();
        let at = f.at.key("Branches");
        match f.take("Branches") {
            Some(Value::Array(items)) if !items.is_empty() => {
                for (i, item) in items.iter().enumerate() {
                    if let Some(s) = self.nested_scope(item, &at.index(i), "a Parallel branch") {
                        branches.push(s);
                    }
                }
            }
            Some(Value::Array(_)) => self
                .diags
                .schema(&at, "'Branches' must contain at least one branch"),
            Some(_) => self.diags.schema(&at, "Expected value of type Array"),
            None => self
                .diags
                .schema(&f.at, "These fields are required: [Branches]"),
        }
        let errors = self.errors(f, ql, names);
        Parallel {
            io,
            branches,
            errors,
            transition: self.transition(f, names),
        }
    }

    /// A Parallel branch or a Map processor: its own scope. Inner states default to the
    /// machine's query language, not the enclosing state's (as AWS).
    fn nested_scope(&mut self, v: &Value, at: &JsonPointer, what: &str) -> Option<Scope> {
        let Value::Object(obj) = v else {
            self.diags.schema(at, "Expected value of type Object");
            return None;
        };
        let mut f = Fields::new(obj, at);
        f.string(self.diags, "Comment");
        let ql = f
            .query_language(self.diags)
            .unwrap_or(self.machine_language);
        if what == "a Map item processor" {
            f.take("ProcessorConfig");
        }
        let scope = self.scope_fields(&mut f, at, ql);
        f.finish(self.diags, ql, what);
        scope
    }

    fn map(&mut self, f: &mut Fields<'_>, ql: QueryLanguage, names: &ScopeNames) -> Map {
        let io = self.io(f, ql, IoFields::MAP);
        let (processor_key, processor) = match (f.peek("ItemProcessor"), f.peek("Iterator")) {
            (Some(_), Some(_)) => {
                self.diags.schema(
                    &f.at,
                    "A Map state may have 'ItemProcessor' or 'Iterator', not both",
                );
                // Reported once here; not again as an unsupported field.
                f.take("Iterator");
                ("ItemProcessor", f.take("ItemProcessor"))
            }
            (Some(_), None) => ("ItemProcessor", f.take("ItemProcessor")),
            (None, Some(_)) => ("Iterator", f.take("Iterator")),
            (None, None) => {
                self.diags
                    .schema(&f.at, "These fields are required: [ItemProcessor]");
                ("ItemProcessor", None)
            }
        };
        let processor_at = f.at.key(processor_key);
        let mode = processor
            .and_then(|p| p.get("ProcessorConfig"))
            .map(|c| self.processor_config(c, &processor_at.key("ProcessorConfig")))
            .unwrap_or_default();
        let processor =
            processor.and_then(|p| self.nested_scope(p, &processor_at, "a Map item processor"));
        let items_path = self.reference_path_field(f, ql, "ItemsPath");
        let items = match ql {
            QueryLanguage::Jsonata => self.jsonata(f, "Items"),
            QueryLanguage::JsonPath => None,
        };
        let item_selector = if f.peek("ItemSelector").is_some()
            && f.peek("Parameters").is_some()
            && ql == QueryLanguage::JsonPath
        {
            self.diags.schema(
                &f.at,
                "A Map state may have 'ItemSelector' or 'Parameters', not both",
            );
            // Reported once here; not again as unsupported fields.
            f.take("ItemSelector");
            f.take("Parameters");
            None
        } else if f.peek("ItemSelector").is_some() {
            match ql {
                QueryLanguage::JsonPath => {
                    self.template(f, "ItemSelector").map(ItemSelector::JsonPath)
                }
                QueryLanguage::Jsonata => {
                    self.jsonata(f, "ItemSelector").map(ItemSelector::Jsonata)
                }
            }
        } else if ql == QueryLanguage::JsonPath {
            // The legacy spelling of ItemSelector.
            self.template(f, "Parameters").map(ItemSelector::JsonPath)
        } else {
            None
        };
        let max_concurrency = self.seconds(f, ql, "MaxConcurrency", "MaxConcurrencyPath", 0);
        let tolerated_failure_count = self.seconds(
            f,
            ql,
            "ToleratedFailureCount",
            "ToleratedFailureCountPath",
            0,
        );
        let tolerated_failure_percentage = self.percentage(f, ql);
        let item_reader = f.take("ItemReader").cloned();
        let item_batcher = f.take("ItemBatcher").cloned();
        let result_writer = f.take("ResultWriter").cloned();
        let label = f.string(self.diags, "Label");
        let errors = self.errors(f, ql, names);
        let transition = self.transition(f, names);
        Map {
            io,
            processor: processor.unwrap_or_else(|| Scope {
                start_at: StateId(0),
                states: Vec::new(),
                names: HashMap::new(),
                pointer: processor_at,
            }),
            mode,
            items_path,
            items,
            item_selector,
            max_concurrency,
            tolerated_failure_count,
            tolerated_failure_percentage,
            item_reader,
            item_batcher,
            result_writer,
            label,
            errors,
            transition,
        }
    }

    fn processor_config(&mut self, v: &Value, at: &JsonPointer) -> ProcessorMode {
        let Value::Object(obj) = v else {
            self.diags.schema(at, "Expected value of type Object");
            return ProcessorMode::Inline;
        };
        let mut f = Fields::new(obj, at);
        let mode = match f.take("Mode") {
            None => ProcessorMode::Inline,
            Some(Value::String(s)) if s == "INLINE" => ProcessorMode::Inline,
            Some(Value::String(s)) if s == "DISTRIBUTED" => ProcessorMode::Distributed,
            Some(_) => {
                self.diags.schema(
                    &at.key("Mode"),
                    "Mode must be \"INLINE\" or \"DISTRIBUTED\"",
                );
                ProcessorMode::Inline
            }
        };
        match f.take("ExecutionType") {
            None if mode == ProcessorMode::Distributed => self.diags.schema(
                at,
                "These fields are required: [ExecutionType] (a DISTRIBUTED Map needs \"STANDARD\" or \"EXPRESS\")",
            ),
            None => {}
            Some(Value::String(s)) if s == "STANDARD" || s == "EXPRESS" => {}
            Some(_) => self.diags.schema(
                &at.key("ExecutionType"),
                "ExecutionType must be \"STANDARD\" or \"EXPRESS\"",
            ),
        }
        f.finish(self.diags, QueryLanguage::JsonPath, "ProcessorConfig");
        mode
    }

    fn percentage(&mut self, f: &mut Fields<'_>, ql: QueryLanguage) -> Option<Dynamic<f64>> {
        let key = "ToleratedFailurePercentage";
        let path_key = "ToleratedFailurePercentagePath";
        let literal = match f.take(key) {
            None => None,
            Some(Value::String(s))
                if ql == QueryLanguage::Jsonata && JsonataTemplate::is_expression(s) =>
            {
                Some(Dynamic::Jsonata(JsonataTemplate::compile(
                    &Value::String(s.clone()),
                    &f.at.key(key),
                    self.diags,
                )))
            }
            Some(v) => match v.as_f64() {
                Some(p) if (0.0..=100.0).contains(&p) => Some(Dynamic::Literal(p)),
                _ => {
                    self.diags.schema(
                        &f.at.key(key),
                        "ToleratedFailurePercentage must be a number between 0 and 100",
                    );
                    None
                }
            },
        };
        let path = self
            .reference_path_field(f, ql, path_key)
            .map(Dynamic::Path);
        self.one_of(f, (key, literal), (path_key, path))
    }
}

/// Which data-flow fields a state type has.
#[derive(Clone, Copy)]
struct IoFields {
    input_output: bool,
    parameters: bool,
    result_selector: bool,
    result_path: bool,
}

impl IoFields {
    const INPUT_OUTPUT: IoFields = IoFields {
        input_output: true,
        parameters: false,
        result_selector: false,
        result_path: false,
    };
    const PASS: IoFields = IoFields {
        input_output: true,
        parameters: true,
        result_selector: false,
        result_path: true,
    };
    const ALL: IoFields = IoFields {
        input_output: true,
        parameters: true,
        result_selector: true,
        result_path: true,
    };
    /// Map's `Parameters` is its legacy item selector, read separately.
    const MAP: IoFields = IoFields {
        input_output: true,
        parameters: false,
        result_selector: true,
        result_path: true,
    };
}

/// An object being read: remembers which keys were taken so the rest can be reported.
struct Fields<'a> {
    map: &'a JsonMap<String, Value>,
    at: JsonPointer,
    taken: HashSet<&'a str>,
}

impl<'a> Fields<'a> {
    fn new(map: &'a JsonMap<String, Value>, at: &JsonPointer) -> Self {
        Fields {
            map,
            at: at.clone(),
            taken: HashSet::new(),
        }
    }

    /// Looks at a field without taking it.
    fn peek(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    /// Takes a field.
    fn take(&mut self, key: &str) -> Option<&'a Value> {
        let (k, v) = self.map.get_key_value(key)?;
        self.taken.insert(k.as_str());
        Some(v)
    }

    fn string(&mut self, diags: &mut Diagnostics, key: &str) -> Option<String> {
        match self.take(key)? {
            Value::String(s) => Some(s.clone()),
            _ => {
                diags.schema(&self.at.key(key), "Expected value of type String");
                None
            }
        }
    }

    fn boolean(&mut self, diags: &mut Diagnostics, key: &str) -> Option<bool> {
        match self.take(key)? {
            Value::Bool(b) => Some(*b),
            _ => {
                diags.schema(&self.at.key(key), "Expected value of type Boolean");
                None
            }
        }
    }

    /// An integer in `min..=99999999`.
    fn bounded_uint(&mut self, diags: &mut Diagnostics, key: &str, min: u64) -> Option<u64> {
        let v = self.take(key)?;
        let at = self.at.key(key);
        match v.as_u64() {
            Some(n) if n < min => {
                diags.schema(&at, format!("'{key}' must be at least {min}, but is {n}"));
                None
            }
            Some(n) if n > MAX_SECONDS => {
                diags.schema(
                    &at,
                    format!("'{key}' must be at most {MAX_SECONDS}, but is {n}"),
                );
                None
            }
            Some(n) => Some(n),
            None if v.as_i64().is_some() => {
                diags.schema(&at, format!("'{key}' must be at least {min}, but is {v}"));
                None
            }
            None => {
                diags.schema(&at, "Expected value of type Integer");
                None
            }
        }
    }

    fn query_language(&mut self, diags: &mut Diagnostics) -> Option<QueryLanguage> {
        match self.take("QueryLanguage")? {
            Value::String(s) if s == "JSONPath" => Some(QueryLanguage::JsonPath),
            Value::String(s) if s == "JSONata" => Some(QueryLanguage::Jsonata),
            _ => {
                diags.schema(
                    &self.at.key("QueryLanguage"),
                    "QueryLanguage must be \"JSONPath\" or \"JSONata\"",
                );
                None
            }
        }
    }

    /// Reports every field nobody took, as AWS does ("Field 'X' is not supported"), saying why
    /// when the field belongs to the other query language.
    fn finish(self, diags: &mut Diagnostics, ql: QueryLanguage, what: &str) {
        for key in self.map.keys() {
            if self.taken.contains(key.as_str()) {
                continue;
            }
            let why = match ql {
                QueryLanguage::Jsonata if JSONPATH_ONLY.contains(&key.as_str()) => {
                    format!(" in {what} using JSONata (it is a JSONPath field; use 'Arguments', 'Output' or an expression instead)")
                }
                QueryLanguage::JsonPath if JSONATA_ONLY.contains(&key.as_str()) => {
                    format!(" in {what} using JSONPath (it is a JSONata field; set \"QueryLanguage\": \"JSONata\" to use it)")
                }
                // A field of the language in the wrong place needs no spelling advice.
                _ if KNOWN_FIELDS.contains(&key.as_str()) => format!(" in {what}"),
                _ => format!(
                    " in {what}{}",
                    crate::suggest::did_you_mean(key, KNOWN_FIELDS.iter().copied())
                ),
            };
            diags.schema(
                &self.at.key(key),
                format!("Field '{key}' is not supported{why}"),
            );
        }
    }
}

/// Every field name of the language, for "did you mean" on a field nobody took.
const KNOWN_FIELDS: &[&str] = &[
    "Arguments",
    "Assign",
    "BackoffRate",
    "Branches",
    "Catch",
    "Cause",
    "CausePath",
    "Choices",
    "Comment",
    "Condition",
    "Credentials",
    "Default",
    "End",
    "Error",
    "ErrorEquals",
    "ErrorPath",
    "HeartbeatSeconds",
    "HeartbeatSecondsPath",
    "InputPath",
    "IntervalSeconds",
    "ItemBatcher",
    "ItemProcessor",
    "ItemReader",
    "ItemSelector",
    "Items",
    "ItemsPath",
    "Iterator",
    "Label",
    "JitterStrategy",
    "MaxAttempts",
    "MaxConcurrency",
    "MaxConcurrencyPath",
    "MaxDelaySeconds",
    "Next",
    "Output",
    "OutputPath",
    "Parameters",
    "ProcessorConfig",
    "QueryLanguage",
    "Resource",
    "Result",
    "ResultPath",
    "ResultSelector",
    "ResultWriter",
    "Retry",
    "Seconds",
    "SecondsPath",
    "StartAt",
    "States",
    "TimeoutSeconds",
    "TimeoutSecondsPath",
    "Timestamp",
    "TimestampPath",
    "ToleratedFailureCount",
    "ToleratedFailureCountPath",
    "ToleratedFailurePercentage",
    "ToleratedFailurePercentagePath",
    "Type",
    "Variable",
    "Version",
];

/// Whether a state's own fields (not its nested branches or processor) mention `$$`.
/// Whether a JSONata string may read `$states.context`: any `$states` not followed by
/// `.input`, `.result` or `.errorOutput` counts, so `$states` passed whole is covered too.
fn reads_states_context(s: &str) -> bool {
    s.match_indices("$states").any(|(i, m)| {
        let rest = &s[i + m.len()..];
        ![".input", ".result", ".errorOutput"]
            .iter()
            .any(|field| rest.starts_with(field))
    })
}

fn mentions_context(state: &Value) -> bool {
    fn walk(v: &Value) -> bool {
        match v {
            Value::String(s) => s.contains("$$") || reads_states_context(s),
            Value::Array(a) => a.iter().any(walk),
            Value::Object(o) => o.values().any(walk),
            _ => false,
        }
    }
    match state {
        Value::Object(o) => o
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "Branches" | "ItemProcessor" | "Iterator"))
            .any(|(_, v)| walk(v)),
        _ => false,
    }
}

/// Every state name a raw state object transitions to.
fn raw_targets(state: &Value) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    out.extend(state.get("Next").and_then(Value::as_str));
    out.extend(state.get("Default").and_then(Value::as_str));
    for list in ["Choices", "Catch"] {
        if let Some(Value::Array(items)) = state.get(list) {
            out.extend(
                items
                    .iter()
                    .filter_map(|item| item.get("Next").and_then(Value::as_str)),
            );
        }
    }
    out
}

/// Whether the task's parameters or arguments hand the task token to the worker.
fn passes_task_token(io: &DataFlow) -> bool {
    if let Some(p) = &io.parameters {
        if p.references_task_token() {
            return true;
        }
    }
    fn mentions(v: &Value) -> bool {
        match v {
            Value::String(s) => s.contains("$states.context.Task.Token"),
            Value::Array(a) => a.iter().any(mentions),
            Value::Object(o) => o.values().any(mentions),
            _ => false,
        }
    }
    io.arguments.as_ref().is_some_and(|a| mentions(a.raw()))
}

/// Whether a string looks like a JSONPath or an intrinsic call (for AWS's warnings).
fn looks_like_path(s: &str) -> bool {
    s.starts_with("$.")
        || s.starts_with("$$.")
        || s == "$"
        || s.starts_with("$[")
        || Call::looks_like(s) && s.contains('(')
}

fn contains_path_like(v: &Value) -> bool {
    match v {
        Value::String(s) => looks_like_path(s),
        Value::Array(a) => a.iter().any(contains_path_like),
        Value::Object(o) => o.values().any(contains_path_like),
        _ => false,
    }
}

/// A variable name: an identifier (letter or `_` first), at most 80 characters.
fn is_variable_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
        && s.chars().count() <= 80
}

/// An RFC 3339 timestamp as AWS accepts it: uppercase `T`, and `Z` or a numeric offset.
pub fn parse_timestamp(s: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    let b = s.as_bytes();
    if b.len() < 20 || b[10] != b'T' {
        return None;
    }
    let tail = &s[19..];
    let zone_ok = tail.ends_with('Z')
        || (tail.len() >= 6 && matches!(tail.as_bytes()[tail.len() - 6], b'+' | b'-'));
    if !zone_ok {
        return None;
    }
    chrono::DateTime::parse_from_rfc3339(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_need_uppercase_t_and_a_zone() {
        assert!(parse_timestamp("2016-03-14T01:59:00Z").is_some());
        assert!(parse_timestamp("2016-03-14T01:59:00.123+02:00").is_some());
        assert!(parse_timestamp("2016-03-14T01:59:00").is_none());
        assert!(parse_timestamp("2016-03-14 01:59:00Z").is_none());
        assert!(parse_timestamp("2016-13-14T01:59:00Z").is_none());
    }

    #[test]
    fn variable_names_are_identifiers() {
        assert!(is_variable_name("x_1"));
        assert!(is_variable_name("été"));
        assert!(!is_variable_name("1x"));
        assert!(!is_variable_name("a-b"));
    }
}
