//! JSONPath as ASL uses it.
//!
//! A [`Path`] starts at `$` (the input), `$$` (the context object) or `$name` (a variable).
//! A *reference path* is definite (`$.a['b'][0]`) and selects at most one value; other paths
//! (`$.items[*].id`, filters) may select many and yield an array.
//!
//! Paths are compiled once. A definite path becomes a `Vec<Step>` walked directly over the
//! value, which is what nearly every real path is. Anything else (wildcards, deep scan, slices,
//! unions, filters) is handed to `jsonpath-rust`, compiled once into its `JpQuery`: AWS speaks
//! Jayway's dialect, which is close enough to RFC 9535 for these forms, and a second evaluator
//! of our own would buy nothing. Names in dot notation are re-rendered in bracket notation
//! first, so Jayway-style names such as `$.input-value` survive the stricter RFC grammar.

use crate::asl::error::{names, StatesError};
use crate::asl::eval::Env;
use jsonpath_rust::parser::model::JpQuery;
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// Which value a path starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathRoot {
    /// `$`: the input.
    Input,
    /// `$$`: the context object.
    Context,
    /// `$name`: a variable.
    Variable(String),
}

/// Why a path did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PathError {
    /// What is wrong, for a person.
    pub message: String,
}

impl PathError {
    fn new(message: impl Into<String>) -> Self {
        PathError {
            message: message.into(),
        }
    }
}

/// One step of a definite path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// `.name` or `['name']`: an object member.
    Name(String),
    /// `[n]`: an array element; negative counts from the end.
    Index(i64),
}

/// One segment as written, before we know whether the path is definite.
#[derive(Debug, Clone)]
enum Segment {
    Step(Step),
    /// `.*` or `[*]`.
    Wildcard,
    /// `..` followed by a name, `*` or a bracket.
    Descend(Box<Segment>),
    /// Bracket contents we do not interpret ourselves (slices, unions, filters).
    Raw(String),
}

/// How a compiled path finds its values.
#[derive(Debug, Clone)]
enum Query {
    /// Walk the steps; at most one value.
    Definite(Vec<Step>),
    /// Let `jsonpath-rust` find every match.
    Indefinite(Box<JpQuery>),
}

/// A compiled JSONPath.
#[derive(Debug, Clone)]
pub struct Path {
    text: String,
    root: PathRoot,
    query: Query,
}

impl Path {
    /// Parses any ASL path (`$`, `$$`, `$var` roots; definite or not).
    pub fn parse(text: &str) -> Result<Path, PathError> {
        let (root, rest) = split_root(text)?;
        let segments = parse_segments(rest)
            .map_err(|m| PathError::new(format!("'{text}' is not a valid JSONPath: {m}")))?;
        let query = if segments.iter().all(|s| matches!(s, Segment::Step(_))) {
            Query::Definite(
                segments
                    .into_iter()
                    .filter_map(|s| match s {
                        Segment::Step(step) => Some(step),
                        _ => None,
                    })
                    .collect(),
            )
        } else {
            let mut normal = String::from("$");
            for s in &segments {
                render_segment(&mut normal, s);
            }
            let compiled = jsonpath_rust::parser::parse_json_path(&normal)
                .map_err(|e| PathError::new(format!("'{text}' is not a valid JSONPath: {e}")))?;
            Query::Indefinite(Box::new(compiled))
        };
        Ok(Path {
            text: text.to_owned(),
            root,
            query,
        })
    }

    /// Parses a reference path: definite, selecting at most one value.
    pub fn parse_reference(text: &str) -> Result<Path, PathError> {
        let path = Path::parse(text)?;
        if path.is_definite() {
            Ok(path)
        } else {
            Err(PathError::new(format!(
                "'{text}' is not a valid reference path: it may select more than one value"
            )))
        }
    }

    /// The source text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The root it starts from.
    pub fn root(&self) -> &PathRoot {
        &self.root
    }

    /// Whether it selects at most one value.
    pub fn is_definite(&self) -> bool {
        matches!(self.query, Query::Definite(_))
    }

    /// The steps of a definite path (`None` for an indefinite one).
    pub fn steps(&self) -> Option<&[Step]> {
        match &self.query {
            Query::Definite(steps) => Some(steps),
            Query::Indefinite(_) => None,
        }
    }

    /// Whether this is exactly `$$.Task.Token`.
    pub fn is_task_token(&self) -> bool {
        self.root == PathRoot::Context
            && self
                .steps()
                .is_some_and(|s| s == [Step::Name("Task".into()), Step::Name("Token".into())])
    }

    /// The value the path starts from, if there is one.
    fn start<'e>(&self, env: &Env<'e>) -> Option<&'e Value> {
        match &self.root {
            PathRoot::Input => Some(env.input),
            PathRoot::Context => Some(env.context),
            PathRoot::Variable(name) => env.variables.get(name),
        }
    }

    /// Selects from the environment. A definite path yields the value or `None` when nothing is
    /// there; an indefinite one yields `Some(array)` of every match (possibly empty).
    pub fn select(&self, env: &Env<'_>) -> Option<Value> {
        self.select_ref(env).map(|found| match found {
            Found::One(v) => v.clone(),
            Found::Many(vs) => Value::Array(vs.into_iter().cloned().collect()),
        })
    }

    /// Like [`Path::select`], borrowing when the path is definite.
    pub fn select_in<'v>(&self, value: &'v Value) -> Option<Found<'v>> {
        match &self.query {
            Query::Definite(steps) => walk(value, steps).map(Found::One),
            Query::Indefinite(q) => {
                let refs = jsonpath_rust::query::js_path_process(q, value).unwrap_or_default();
                Some(Found::Many(refs.into_iter().map(|r| r.val).collect()))
            }
        }
    }

    /// Like [`Path::select`], borrowing the match of a definite path.
    pub fn select_ref<'e>(&self, env: &Env<'e>) -> Option<Found<'e>> {
        self.select_in(self.start(env)?)
    }

    /// Writes `value` at this reference path inside `target` (ResultPath), creating intermediate
    /// objects. `$` replaces the whole target.
    ///
    /// Fails with `States.ResultPathMatchFailure` when an intermediate value (or the target) is
    /// not an object, or an index step does not land inside an array.
    pub fn set(&self, target: &mut Value, value: Value) -> Result<(), StatesError> {
        let Some(steps) = self.steps() else {
            return Err(self.result_path_failure(target));
        };
        if steps.is_empty() {
            *target = value;
            return Ok(());
        }
        // Check the whole walk first, so a failure leaves the target untouched and the cause
        // can quote the original input.
        if !settable(target, steps) {
            return Err(self.result_path_failure(target));
        }
        let mut here = target;
        for (i, step) in steps.iter().enumerate() {
            let last = i + 1 == steps.len();
            here = match (step, here) {
                (Step::Name(name), Value::Object(map)) => {
                    if last {
                        map.insert(name.clone(), value);
                        return Ok(());
                    }
                    map.entry(name.clone())
                        .or_insert_with(|| Value::Object(Map::new()))
                }
                (Step::Index(index), Value::Array(items)) => {
                    let Some(slot) =
                        resolve_index(*index, items.len()).and_then(|i| items.get_mut(i))
                    else {
                        break;
                    };
                    if last {
                        *slot = value;
                        return Ok(());
                    }
                    slot
                }
                _ => break,
            };
        }
        // `settable` said yes, so the loop returned; this is unreachable in practice.
        Err(StatesError::new(
            names::RESULT_PATH_MATCH_FAILURE,
            format!("Unable to apply ResultPath \"{}\"", self.text),
        ))
    }

    fn result_path_failure(&self, target: &Value) -> StatesError {
        StatesError::new(
            names::RESULT_PATH_MATCH_FAILURE,
            format!(
                "Unable to apply ResultPath \"{}\" to input {}",
                self.text,
                compact(target)
            ),
        )
    }

    /// The path in Jayway's normalised form, as AWS prints it in causes: `$['a'][0]`.
    pub fn normalized(&self) -> String {
        match &self.query {
            Query::Definite(steps) => normalize(steps),
            Query::Indefinite(_) => self.text.clone(),
        }
    }

    /// Why the path found nothing, in Jayway's words: `No results for path: $['x']` when the
    /// last step is missing, `Missing property in path $['a']` when an earlier one is.
    pub fn miss_detail(&self, env: &Env<'_>) -> String {
        let Some(steps) = self.steps() else {
            return format!("No results for path: {}", self.text);
        };
        let Some(mut here) = self.start(env) else {
            return format!("No results for path: {}", normalize(steps));
        };
        for (i, step) in steps.iter().enumerate() {
            let last = i + 1 == steps.len();
            match walk(here, std::slice::from_ref(step)) {
                Some(next) => here = next,
                None => {
                    return match (step, here) {
                        (Step::Name(name), v) if !v.is_object() => format!(
                            "Expected to find an object with property ['{name}'] in path {} but found '{}'. This is not a json object according to the JsonProvider: 'com.jayway.jsonpath.spi.json.JacksonJsonProvider'.",
                            normalize(&steps[..i]),
                            java_type(v)
                        ),
                        _ if last => format!("No results for path: {}", normalize(steps)),
                        _ => format!("Missing property in path {}", normalize(&steps[..=i])),
                    };
                }
            }
        }
        format!("No results for path: {}", normalize(steps))
    }

    /// AWS's cause for an InputPath/OutputPath (and similar) that found nothing:
    /// `Invalid path '$.x' : No results for path: $['x']`.
    pub fn invalid_path_cause(&self, env: &Env<'_>) -> String {
        format!("Invalid path '{}' : {}", self.text, self.miss_detail(env))
    }
}

/// What a path selected, borrowed from the value it walked.
#[derive(Debug)]
pub enum Found<'v> {
    /// A definite path's single match.
    One(&'v Value),
    /// Every match of an indefinite path (possibly none).
    Many(Vec<&'v Value>),
}

/// Compact JSON text, as AWS quotes values in causes.
pub(crate) fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn java_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "java.lang.Boolean",
        Value::Number(n) if n.is_f64() => "java.lang.Double",
        Value::Number(_) => "java.lang.Integer",
        Value::String(_) => "java.lang.String",
        Value::Array(_) => "java.util.ArrayList",
        Value::Object(_) => "java.util.LinkedHashMap",
    }
}

fn normalize(steps: &[Step]) -> String {
    let mut s = String::from("$");
    for step in steps {
        match step {
            Step::Name(n) => {
                let _ = write!(s, "['{n}']");
            }
            Step::Index(i) => {
                let _ = write!(s, "[{i}]");
            }
        }
    }
    s
}

fn resolve_index(index: i64, len: usize) -> Option<usize> {
    if index >= 0 {
        usize::try_from(index).ok().filter(|&i| i < len)
    } else {
        let back = usize::try_from(index.unsigned_abs()).ok()?;
        len.checked_sub(back)
    }
}

fn walk<'v>(mut here: &'v Value, steps: &[Step]) -> Option<&'v Value> {
    for step in steps {
        here = match (step, here) {
            (Step::Name(name), Value::Object(map)) => map.get(name)?,
            (Step::Index(i), Value::Array(items)) => items.get(resolve_index(*i, items.len())?)?,
            _ => return None,
        };
    }
    Some(here)
}

/// Whether `set` can write along `steps` inside `target` (missing names get created).
fn settable(mut here: &Value, steps: &[Step]) -> bool {
    for step in steps {
        match (step, here) {
            (Step::Name(name), Value::Object(map)) => match map.get(name) {
                Some(next) => here = next,
                None => return true,
            },
            (Step::Index(i), Value::Array(items)) => {
                match resolve_index(*i, items.len()).and_then(|i| items.get(i)) {
                    Some(next) => here = next,
                    None => return false,
                }
            }
            _ => return false,
        }
    }
    true
}

fn split_root(text: &str) -> Result<(PathRoot, &str), PathError> {
    let Some(after) = text.strip_prefix('$') else {
        return Err(PathError::new(format!(
            "'{text}' is not a valid JSONPath: a path must start with '$'"
        )));
    };
    if let Some(rest) = after.strip_prefix('$') {
        return Ok((PathRoot::Context, rest));
    }
    let end = after.find(['.', '[']).unwrap_or(after.len());
    if end == 0 {
        return Ok((PathRoot::Input, after));
    }
    let name = &after[..end];
    if !name.chars().all(|c| c.is_alphanumeric() || c == '_')
        || name.starts_with(|c: char| c.is_ascii_digit())
    {
        return Err(PathError::new(format!(
            "'{text}' is not a valid JSONPath: '{name}' is not a valid variable name"
        )));
    }
    Ok((PathRoot::Variable(name.to_owned()), &after[end..]))
}

fn parse_segments(mut rest: &str) -> Result<Vec<Segment>, String> {
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (seg, tail) = if let Some(after) = rest.strip_prefix("..") {
            let (inner, tail) = parse_after_dot(after, true)?;
            (Segment::Descend(Box::new(inner)), tail)
        } else if let Some(after) = rest.strip_prefix('.') {
            parse_after_dot(after, false)?
        } else if rest.starts_with('[') {
            parse_bracket(rest)?
        } else {
            return Err(format!("unexpected '{rest}'"));
        };
        out.push(seg);
        rest = tail;
    }
    Ok(out)
}

/// After `.` (or `..`): a name, `*`, or (after `..` only) a bracket.
fn parse_after_dot(s: &str, descend: bool) -> Result<(Segment, &str), String> {
    if let Some(tail) = s.strip_prefix('*') {
        return Ok((Segment::Wildcard, tail));
    }
    if descend && s.starts_with('[') {
        return parse_bracket(s);
    }
    let end = s.find(['.', '[']).unwrap_or(s.len());
    let name = &s[..end];
    if name.is_empty() {
        return Err("empty name after '.'".into());
    }
    if name.contains([']', '\'', '"']) || name.chars().any(char::is_whitespace) {
        return Err(format!("invalid character in name '{name}'"));
    }
    Ok((Segment::Step(Step::Name(name.to_owned())), &s[end..]))
}

/// A `[...]` segment, `s` starting at `[`.
fn parse_bracket(s: &str) -> Result<(Segment, &str), String> {
    let close = matching_bracket(s).ok_or("unclosed '['")?;
    let inner = s[1..close].trim();
    let tail = &s[close + 1..];
    if inner.is_empty() {
        return Err("empty '[]'".into());
    }
    if inner == "*" {
        return Ok((Segment::Wildcard, tail));
    }
    if let Some(name) = single_quoted(inner) {
        return Ok((Segment::Step(Step::Name(name)), tail));
    }
    let digits = inner.strip_prefix('-').unwrap_or(inner);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        let index = inner.parse::<i64>().map_err(|e| e.to_string())?;
        return Ok((Segment::Step(Step::Index(index)), tail));
    }
    Ok((Segment::Raw(inner.to_owned()), tail))
}

/// The index of the `]` that closes the `[` at 0, skipping quoted text and nested brackets.
fn matching_bracket(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '[' => depth += 1,
            ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `'name'` or `"name"` as the whole bracket content (with `\'`-style escapes).
fn single_quoted(inner: &str) -> Option<String> {
    let q = inner.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let body = inner.strip_prefix(q)?.strip_suffix(q)?;
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            c if c == q => return None, // a union such as 'a','b'
            c => out.push(c),
        }
    }
    Some(out)
}

fn render_segment(out: &mut String, seg: &Segment) {
    match seg {
        Segment::Step(Step::Name(n)) => {
            out.push_str("['");
            for c in n.chars() {
                if c == '\'' || c == '\\' {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push_str("']");
        }
        Segment::Step(Step::Index(i)) => {
            let _ = write!(out, "[{i}]");
        }
        Segment::Wildcard => out.push_str("[*]"),
        Segment::Descend(inner) => {
            out.push_str("..");
            render_segment(out, inner);
        }
        Segment::Raw(r) => {
            out.push('[');
            out.push_str(r);
            out.push(']');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asl::eval::NoVariables;
    use serde_json::json;

    fn env<'a>(input: &'a Value, context: &'a Value, vars: &'a Map<String, Value>) -> Env<'a> {
        Env {
            input,
            context,
            variables: vars,
        }
    }

    #[test]
    fn parses_roots_and_definiteness() {
        let table: &[(&str, PathRoot, bool)] = &[
            ("$", PathRoot::Input, true),
            ("$.a.b", PathRoot::Input, true),
            ("$['a b'][0]", PathRoot::Input, true),
            ("$[\"a\"]", PathRoot::Input, true),
            ("$.input-value", PathRoot::Input, true),
            ("$$", PathRoot::Context, true),
            ("$$.Task.Token", PathRoot::Context, true),
            ("$x", PathRoot::Variable("x".into()), true),
            ("$my_var.a[1]", PathRoot::Variable("my_var".into()), true),
            ("$.a[*]", PathRoot::Input, false),
            ("$.a.*", PathRoot::Input, false),
            ("$..a", PathRoot::Input, false),
            ("$.a[0,1]", PathRoot::Input, false),
            ("$.a[1:3]", PathRoot::Input, false),
            ("$.a[?(@.p < 10)]", PathRoot::Input, false),
            ("$v[*]", PathRoot::Variable("v".into()), false),
        ];
        for (text, root, definite) in table {
            let p = Path::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(p.root(), root, "{text}");
            assert_eq!(p.is_definite(), *definite, "{text}");
        }
    }

    #[test]
    fn rejects_bad_paths() {
        for text in [
            "",
            "a",
            ".a",
            "$.",
            "$a-b",
            "$.a[",
            "$.a[]",
            "$..",
            "$.a]",
            "$x y",
            "$.a b",
            "$ .a",
            "$.a[?(@.p <)]",
        ] {
            assert!(Path::parse(text).is_err(), "{text} should not parse");
        }
        for text in ["$.a[*]", "$..a", "$.a[1:2]"] {
            let e = Path::parse_reference(text).unwrap_err();
            assert!(e.message.contains("is not a valid reference path"), "{e}");
        }
        assert!(Path::parse_reference("$.a['b'][0]").is_ok());
    }

    #[test]
    fn selects_definite_and_indefinite() {
        let input = json!({"a": {"b": [1, 2, 3]}, "items": [{"id": 1, "p": 5}, {"id": 2, "p": 20}, {"x": 0}], "k-y": 7});
        let ctx = json!({"Task": {"Token": "tok"}});
        let mut vars = Map::new();
        vars.insert("v".into(), json!({"n": [10, 20]}));
        let e = env(&input, &ctx, &vars);
        let table: &[(&str, Option<Value>)] = &[
            ("$", Some(input.clone())),
            ("$.a.b[1]", Some(json!(2))),
            ("$.a.b[-1]", Some(json!(3))),
            ("$.a.b[3]", None),
            ("$.a.c", None),
            ("$.a.b.c", None),
            ("$['k-y']", Some(json!(7))),
            ("$.k-y", Some(json!(7))),
            ("$$.Task.Token", Some(json!("tok"))),
            ("$v.n[0]", Some(json!(10))),
            ("$w", None),
            ("$w[*]", None),
            ("$.items[*].id", Some(json!([1, 2]))),
            ("$.items[?(@.p < 10)].id", Some(json!([1]))),
            ("$.nothing[*]", Some(json!([]))),
            ("$..id", Some(json!([1, 2]))),
            ("$.a.b[0:2]", Some(json!([1, 2]))),
            ("$.a.b[0,2]", Some(json!([1, 3]))),
            ("$v.n[*]", Some(json!([10, 20]))),
        ];
        for (text, want) in table {
            let p = Path::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(&p.select(&e), want, "{text}");
        }
    }

    #[test]
    fn set_follows_result_path_rules() {
        let table: &[(&str, Value, Value, Result<Value, &str>)] = &[
            ("$", json!({"a": 1}), json!(5), Ok(json!(5))),
            (
                "$.r",
                json!({"a": 1}),
                json!(5),
                Ok(json!({"a": 1, "r": 5})),
            ),
            (
                "$.x.y",
                json!({"a": 1}),
                json!(5),
                Ok(json!({"a": 1, "x": {"y": 5}})),
            ),
            ("$.a", json!({"a": 1}), json!(5), Ok(json!({"a": 5}))),
            (
                "$.l[1]",
                json!({"l": [0, 0]}),
                json!(5),
                Ok(json!({"l": [0, 5]})),
            ),
            (
                "$.x",
                json!("foo"),
                json!(5),
                Err("Unable to apply ResultPath \"$.x\" to input \"foo\""),
            ),
            (
                "$.a.b",
                json!({"a": 1}),
                json!(5),
                Err("Unable to apply ResultPath \"$.a.b\" to input {\"a\":1}"),
            ),
            (
                "$.l[5]",
                json!({"l": []}),
                json!(5),
                Err("Unable to apply ResultPath \"$.l[5]\" to input {\"l\":[]}"),
            ),
        ];
        for (text, target, value, want) in table {
            let p = Path::parse_reference(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let mut t = target.clone();
            match (p.set(&mut t, value.clone()), want) {
                (Ok(()), Ok(w)) => assert_eq!(&t, w, "{text}"),
                (Err(e), Err(cause)) => {
                    assert_eq!(e.name(), names::RESULT_PATH_MATCH_FAILURE);
                    assert_eq!(e.cause.as_deref(), Some(*cause), "{text}");
                    assert_eq!(&t, target, "target untouched");
                }
                (got, _) => panic!("{text}: got {got:?}"),
            }
        }
    }

    #[test]
    fn miss_details_match_aws() {
        let input = json!({"int-literal": 0, "s": "x"});
        let ctx = json!({});
        let e = Env {
            input: &input,
            context: &ctx,
            variables: &NoVariables,
        };
        let cause = |t: &str| {
            Path::parse(t)
                .map(|p| p.invalid_path_cause(&e))
                .unwrap_or_default()
        };
        assert_eq!(
            cause("$.NoSuchInputPath"),
            "Invalid path '$.NoSuchInputPath' : No results for path: $['NoSuchInputPath']"
        );
        assert_eq!(
            cause("$.no.such.result.path"),
            "Invalid path '$.no.such.result.path' : Missing property in path $['no']"
        );
        assert!(cause("$.s.t")
            .contains("Expected to find an object with property ['t'] in path $['s']"));
        assert!(Path::parse("$.a").map(|p| p.is_task_token()) == Ok(false));
        assert!(Path::parse("$$.Task.Token").map(|p| p.is_task_token()) == Ok(true));
    }
}
