//! JSONPath as ASL uses it.
//!
//! A [`Path`] starts at `$` (the input), `$$` (the context object) or `$name` (a variable).
//! A *reference path* is definite (`$.a['b'][0]`) and selects at most one value; other paths
//! (`$.items[*].id`, filters) may select many and yield an array.
//!
//! Paths are compiled once. A definite path becomes a `Vec<Step>` walked directly over the
//! value, which is what nearly every real path is. Anything else is evaluated here too, in
//! Jayway JsonPath's dialect, because that is what AWS runs: `.[` is a bracket (`$.[0]`,
//! `$.a.[0].b`), several quoted names in one bracket (`$['a','b']`) make one object of those
//! members when they end the path, filters follow Jayway's grammar and value rules
//! ([`crate::asl::path_filter`]), slices are `[from:to]` without a step, and a member name in
//! brackets may hold escaped quotes (`['it\'s']`).

use crate::asl::error::{names, StatesError};
use crate::asl::eval::Env;
use crate::asl::path_filter::Filter;
use serde_json::{Map, Value};
use std::borrow::Cow;
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
    /// `[from:to]`, either end optional, negative counting from the end.
    Slice(Option<i64>, Option<i64>),
    /// `[0,2]`: several indexes.
    Indices(Vec<i64>),
    /// `['a','b']`: several names.
    Names(Vec<String>),
    /// `[?( ... )]`.
    Filter(Box<Filter>),
}

/// How a compiled path finds its values.
#[derive(Debug, Clone)]
enum Query {
    /// Walk the steps; at most one value.
    Definite(Vec<Step>),
    /// Evaluate the segments, Jayway's way.
    Indefinite(Vec<Segment>),
}

/// A compiled JSONPath.
#[derive(Debug, Clone)]
pub struct Path {
    text: String,
    root: PathRoot,
    query: Query,
}

/// How deep filters may nest (`$[?(@.a[?(@.b ...)])]`), each level being a path of its own.
/// Parsing rescans the text at each level: found by fuzzing, 3,000 nested filters took minutes
/// to validate (and deeper ones could overflow the stack). Jayway has no such limit, but no
/// real path comes near it.
pub const MAX_FILTER_NESTING: usize = 16;

thread_local! {
    /// Paths being parsed on this thread: the current filter nesting.
    static NESTING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts one level of nesting while it lives.
struct NestingGuard;

impl NestingGuard {
    fn enter(text: &str) -> Result<NestingGuard, PathError> {
        let depth = NESTING.with(|n| {
            n.set(n.get() + 1);
            n.get()
        });
        let guard = NestingGuard;
        if depth > MAX_FILTER_NESTING + 1 {
            return Err(PathError::new(format!(
                "'{text}' is not a valid JSONPath: its filters nest more than {MAX_FILTER_NESTING} deep (sfn-local's limit)"
            )));
        }
        Ok(guard)
    }
}

impl Drop for NestingGuard {
    fn drop(&mut self) {
        NESTING.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

impl Path {
    /// Parses any ASL path (`$`, `$$`, `$var` roots; definite or not).
    pub fn parse(text: &str) -> Result<Path, PathError> {
        let _nesting = NestingGuard::enter(text)?;
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
            Query::Indefinite(segments)
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
        self.select_ref(env).map(Found::into_value)
    }

    /// Like [`Path::select`], borrowing when the path is definite.
    pub fn select_in<'v>(&self, value: &'v Value) -> Option<Found<'v>> {
        self.select_with_root(value, value)
    }

    /// Selects from `value`, with `root` as what `$` means inside filters.
    fn select_with_root<'v>(&self, value: &'v Value, root: &'v Value) -> Option<Found<'v>> {
        match &self.query {
            Query::Definite(steps) => walk(value, steps).map(Found::One),
            Query::Indefinite(segments) => {
                if let Some((Segment::Names(names), before)) = segments.split_last() {
                    // Jayway: names merged at the end of an otherwise definite path give one
                    // object, not a list.
                    if before.iter().all(|s| matches!(s, Segment::Step(_))) {
                        let steps: Vec<Step> = before
                            .iter()
                            .filter_map(|s| match s {
                                Segment::Step(st) => Some(st.clone()),
                                _ => None,
                            })
                            .collect();
                        let at = walk(value, &steps)?;
                        return merge_names(at, names).map(Found::Owned);
                    }
                }
                let mut out = Vec::new();
                apply(segments, value, root, &mut out);
                Some(Found::Many(out))
            }
        }
    }

    /// What the path selects starting at `start` (with `root` as `$` in filters), owned.
    pub(crate) fn select_from(&self, start: &Value, root: &Value) -> Option<Value> {
        self.select_with_root(start, root).map(Found::into_value)
    }

    /// Where sfn-local reads this path differently from Jayway JsonPath (validate reports
    /// them as WARNINGs).
    pub fn dialect_notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Query::Indefinite(segments) = &self.query {
            collect_notes(segments, &mut out);
        }
        out
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
        // Each step may build one level: past the depth budget the result could not be kept.
        if steps.len() > crate::depth::VALUE_DEPTH {
            return Err(StatesError::runtime(format!(
                "The ResultPath \"{}\" has {} steps; {}",
                self.text,
                steps.len(),
                crate::depth::TooDeep
            )));
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

/// What a path selected, borrowed from the value it walked where it can be.
#[derive(Debug)]
pub enum Found<'v> {
    /// A definite path's single match.
    One(&'v Value),
    /// Every match of an indefinite path (possibly none).
    Many(Vec<Cow<'v, Value>>),
    /// A value the path made: Jayway's object of several names (`$.a['b','c']`).
    Owned(Value),
}

impl Found<'_> {
    /// The selection as one value: a list for [`Found::Many`].
    pub fn into_value(self) -> Value {
        match self {
            Found::One(v) => v.clone(),
            Found::Many(vs) => Value::Array(vs.into_iter().map(Cow::into_owned).collect()),
            Found::Owned(v) => v,
        }
    }
}

/// Jayway's object of several members: those present, in the order asked.
fn merge_names(at: &Value, names: &[String]) -> Option<Value> {
    let map = at.as_object()?;
    let mut out = Map::new();
    for n in names {
        if let Some(v) = map.get(n) {
            out.insert(n.clone(), v.clone());
        }
    }
    Some(Value::Object(out))
}

fn collect_notes(segments: &[Segment], out: &mut Vec<String>) {
    for s in segments {
        match s {
            Segment::Filter(f) => out.extend(f.notes().iter().cloned()),
            Segment::Descend(inner) => collect_notes(std::slice::from_ref(inner), out),
            _ => {}
        }
    }
}

/// Applies `segments` to `here`, pushing every match (Jayway's indefinite evaluation: members
/// that are missing are passed over, not errors).
fn apply<'v>(
    segments: &[Segment],
    here: &'v Value,
    root: &'v Value,
    out: &mut Vec<Cow<'v, Value>>,
) {
    let Some((first, rest)) = segments.split_first() else {
        out.push(Cow::Borrowed(here));
        return;
    };
    match first {
        Segment::Names(names) if rest.is_empty() => {
            if let Some(v) = merge_names(here, names) {
                out.push(Cow::Owned(v));
            }
        }
        Segment::Names(names) => {
            if let Value::Object(map) = here {
                for n in names {
                    if let Some(v) = map.get(n) {
                        apply(rest, v, root, out);
                    }
                }
            }
        }
        Segment::Descend(inner) => descend(inner, rest, here, root, out),
        seg => {
            for next in step_into(seg, here, root) {
                apply(rest, next, root, out);
            }
        }
    }
}

/// `..x`: applies `x` (then `rest`) at `here` and at every value below it, parents first.
fn descend<'v>(
    inner: &Segment,
    rest: &[Segment],
    here: &'v Value,
    root: &'v Value,
    out: &mut Vec<Cow<'v, Value>>,
) {
    match inner {
        Segment::Wildcard => {
            // `..*`: every value below `here`.
            for child in children(here) {
                apply(rest, child, root, out);
                descend(inner, rest, child, root, out);
            }
        }
        _ => {
            let mut chain = vec![inner.clone()];
            chain.extend(rest.iter().cloned());
            apply(&chain, here, root, out);
            for child in children(here) {
                if child.is_object() || child.is_array() {
                    descend(inner, rest, child, root, out);
                }
            }
        }
    }
}

fn children(v: &Value) -> Vec<&Value> {
    match v {
        Value::Object(map) => map.values().collect(),
        Value::Array(items) => items.iter().collect(),
        _ => Vec::new(),
    }
}

/// The values one segment leads to from `here`.
fn step_into<'v>(seg: &Segment, here: &'v Value, root: &'v Value) -> Vec<&'v Value> {
    match (seg, here) {
        (Segment::Step(step), _) => walk(here, std::slice::from_ref(step)).into_iter().collect(),
        (Segment::Wildcard, _) => children(here),
        (Segment::Indices(ix), Value::Array(items)) => ix
            .iter()
            .filter_map(|i| resolve_index(*i, items.len()).and_then(|i| items.get(i)))
            .collect(),
        (Segment::Slice(from, to), Value::Array(items)) => {
            let len = items.len() as i64;
            let clamp = |i: i64| if i < 0 { (len + i).max(0) } else { i.min(len) };
            let start = from.map_or(0, clamp);
            let end = to.map_or(len, clamp);
            if start >= end {
                Vec::new()
            } else {
                items[start as usize..end as usize].iter().collect()
            }
        }
        // Jayway tests an object against a filter itself, and an array's elements each.
        (Segment::Filter(f), Value::Array(items)) => {
            items.iter().filter(|i| f.matches(i, root)).collect()
        }
        (Segment::Filter(f), Value::Object(_)) => {
            if f.matches(here, root) {
                vec![here]
            } else {
                Vec::new()
            }
        }
        _ => Vec::new(),
    }
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
            let (inner, tail) = parse_after_dot(after)?;
            (Segment::Descend(Box::new(inner)), tail)
        } else if let Some(after) = rest.strip_prefix('.') {
            parse_after_dot(after)?
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

/// After `.` (or `..`): a name, `*`, or a bracket.
fn parse_after_dot(s: &str) -> Result<(Segment, &str), String> {
    if let Some(tail) = s.strip_prefix('*') {
        return Ok((Segment::Wildcard, tail));
    }
    // Jayway reads `.[` as `[` (`$.[0]`, `$.a.[0].b`), after `.` as after `..`.
    if s.starts_with('[') {
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
    if let Some(filter) = inner.strip_prefix('?') {
        let f = Filter::parse(filter)?;
        return Ok((Segment::Filter(Box::new(f)), tail));
    }
    if inner.starts_with(['\'', '"']) {
        let mut names = quoted_names(inner)?;
        return Ok(if names.len() == 1 {
            (Segment::Step(Step::Name(names.remove(0))), tail)
        } else {
            (Segment::Names(names), tail)
        });
    }
    if inner.contains(':') {
        let parts: Vec<&str> = inner.split(':').map(str::trim).collect();
        let [from, to] = parts[..] else {
            return Err(format!(
                "'[{inner}]': a slice is [from:to] (Jayway has no step)"
            ));
        };
        let bound = |t: &str| -> Result<Option<i64>, String> {
            if t.is_empty() {
                Ok(None)
            } else {
                t.parse::<i64>()
                    .map(Some)
                    .map_err(|_| format!("'[{inner}]': '{t}' is not an index"))
            }
        };
        return Ok((Segment::Slice(bound(from)?, bound(to)?), tail));
    }
    let mut indices = Vec::new();
    for part in inner.split(',').map(str::trim) {
        let digits = part.strip_prefix('-').unwrap_or(part);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "'[{inner}]' is not an index, a slice, quoted names, '*' or a filter"
            ));
        }
        indices.push(part.parse::<i64>().map_err(|e| e.to_string())?);
    }
    Ok(if indices.len() == 1 {
        (Segment::Step(Step::Index(indices[0])), tail)
    } else {
        (Segment::Indices(indices), tail)
    })
}

/// `'a'`, `'a', "b"`: quoted names separated by commas, with `\'`-style escapes.
fn quoted_names(inner: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let q = match chars.next() {
            Some(q @ ('\'' | '"')) => q,
            _ => return Err(format!("'[{inner}]': names in brackets must be quoted")),
        };
        let mut name = String::new();
        loop {
            match chars.next() {
                None => return Err(format!("'[{inner}]': unclosed quote")),
                // A backslash escapes the name's own quote and itself; before anything else
                // it is kept: AWS reads the path `$['Test\""Name"']` as the member `Test\""Name"`.
                Some('\\') => match chars.next() {
                    Some(c) if c == q || c == '\\' => name.push(c),
                    Some(c) => {
                        name.push('\\');
                        name.push(c);
                    }
                    None => return Err(format!("'[{inner}]': unclosed quote")),
                },
                Some(c) if c == q => break,
                Some(c) => name.push(c),
            }
        }
        names.push(name);
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        match chars.next() {
            None => return Ok(names),
            Some(',') => {}
            Some(c) => return Err(format!("'[{inner}]': unexpected '{c}' after a name")),
        }
    }
}

/// Quoted text met while scanning a path for where it ends: a quote opens it, the same quote
/// closes it, and a backslash inside escapes the next character, so a bracketed name may hold
/// its own quote (`$['it\'s']`, `$["a\"b"]`), as Jayway reads it. Every scanner of paths
/// (brackets here, intrinsic arguments, filters) shares it, so they all end a path alike.
#[derive(Debug, Default)]
pub(crate) struct Quoted {
    open: Option<char>,
    escaped: bool,
}

impl Quoted {
    /// Takes the next character; `true` when it belongs to quoted text (its quotes included).
    /// A quote opens text only where `may_open` says quotes are read.
    pub(crate) fn take(&mut self, c: char, may_open: bool) -> bool {
        if let Some(q) = self.open {
            if self.escaped {
                self.escaped = false;
            } else if c == '\\' {
                self.escaped = true;
            } else if c == q {
                self.open = None;
            }
            return true;
        }
        if may_open && (c == '\'' || c == '"') {
            self.open = Some(c);
            return true;
        }
        false
    }
}

/// The index of the `]` that closes the `[` at 0, skipping quoted text and nested brackets.
fn matching_bracket(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quoted = Quoted::default();
    for (i, c) in s.char_indices() {
        if quoted.take(c, true) {
            continue;
        }
        match c {
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

    /// Jayway JsonPath's README: its document and its example paths with their results.
    fn jayway_store() -> Value {
        json!({
            "store": {
                "book": [
                    {"category": "reference", "author": "Nigel Rees", "title": "Sayings of the Century", "price": 8.95},
                    {"category": "fiction", "author": "Evelyn Waugh", "title": "Sword of Honour", "price": 12.99},
                    {"category": "fiction", "author": "Herman Melville", "title": "Moby Dick", "isbn": "0-553-21311-3", "price": 8.99},
                    {"category": "fiction", "author": "J. R. R. Tolkien", "title": "The Lord of the Rings", "isbn": "0-395-19395-8", "price": 22.99}
                ],
                "bicycle": {"color": "red", "price": 19.95}
            },
            "expensive": 10
        })
    }

    fn titles(v: Option<Value>) -> Vec<String> {
        v.and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|b| b["title"].as_str().unwrap_or("?").to_owned())
            .collect()
    }

    #[test]
    fn jayway_readme_examples() {
        let doc = jayway_store();
        let sel = |t: &str| {
            Path::parse(t)
                .unwrap_or_else(|e| panic!("{t}: {e}"))
                .select_from(&doc, &doc)
        };
        let authors = json!([
            "Nigel Rees",
            "Evelyn Waugh",
            "Herman Melville",
            "J. R. R. Tolkien"
        ]);
        assert_eq!(sel("$.store.book[*].author"), Some(authors.clone()));
        assert_eq!(sel("$..author"), Some(authors));
        assert_eq!(
            sel("$.store.*").unwrap().as_array().unwrap().len(),
            2,
            "the books and the bicycle"
        );
        assert_eq!(
            sel("$.store..price"),
            Some(json!([8.95, 12.99, 8.99, 22.99, 19.95]))
        );
        assert_eq!(titles(sel("$..book[2]")), ["Moby Dick"]);
        assert_eq!(titles(sel("$..book[-2]")), ["Moby Dick"]);
        assert_eq!(
            titles(sel("$..book[0,1]")),
            ["Sayings of the Century", "Sword of Honour"]
        );
        assert_eq!(
            titles(sel("$..book[:2]")),
            ["Sayings of the Century", "Sword of Honour"]
        );
        assert_eq!(titles(sel("$..book[1:2]")), ["Sword of Honour"]);
        assert_eq!(
            titles(sel("$..book[-2:]")),
            ["Moby Dick", "The Lord of the Rings"]
        );
        assert_eq!(
            titles(sel("$..book[2:]")),
            ["Moby Dick", "The Lord of the Rings"]
        );
        assert_eq!(
            titles(sel("$..book[?(@.isbn)]")),
            ["Moby Dick", "The Lord of the Rings"]
        );
        assert_eq!(
            titles(sel("$.store.book[?(@.price < 10)]")),
            ["Sayings of the Century", "Moby Dick"]
        );
        assert_eq!(
            titles(sel("$..book[?(@.price <= $['expensive'])]")),
            ["Sayings of the Century", "Moby Dick"]
        );
        assert_eq!(
            titles(sel("$..book[?(@.author =~ /.*REES/i)]")),
            ["Sayings of the Century"]
        );
        assert_eq!(
            titles(sel(
                "$.store.book[?(@.category == 'fiction' && @.price > 20)]"
            )),
            ["The Lord of the Rings"]
        );
        assert_eq!(
            titles(sel("$.store.book[?(!@.isbn)]")),
            ["Sayings of the Century", "Sword of Honour"]
        );
        assert_eq!(sel("$..*").unwrap().as_array().unwrap().len(), 28);
    }

    #[test]
    fn jayway_filter_operators() {
        let doc = json!([
            {"size": "S", "tags": ["a", "b"], "n": 1, "s": "1"},
            {"size": "M", "tags": [], "n": 2, "s": "two"},
            {"size": "L", "tags": ["c"], "n": 3}
        ]);
        let count = |t: &str| {
            Path::parse(t)
                .unwrap_or_else(|e| panic!("{t}: {e}"))
                .select_from(&doc, &doc)
                .and_then(|v| v.as_array().map(Vec::len))
                .unwrap_or(0)
        };
        assert_eq!(count("$[?(@.size in ['S', 'M'])]"), 2);
        assert_eq!(count("$[?(@.size nin ['S', 'M'])]"), 1);
        assert_eq!(count("$[?(@.tags subsetof ['a', 'b', 'c'])]"), 3);
        assert_eq!(count("$[?(@.tags anyof ['c', 'x'])]"), 1);
        assert_eq!(count("$[?(@.tags noneof ['a'])]"), 2);
        assert_eq!(count("$[?(@.tags size 2)]"), 1);
        assert_eq!(count("$[?(@.tags empty true)]"), 1);
        assert_eq!(count("$[?(@.tags contains 'c')]"), 1);
        // Jayway's value rules: a number equals a string of the same text; a missing member is
        // undefined, unequal to everything; ordering needs two numbers or two strings.
        assert_eq!(count("$[?(@.n == '1')]"), 1);
        assert_eq!(count("$[?(@.s == 1)]"), 1);
        assert_eq!(count("$[?(@.s != 'two')]"), 2);
        assert_eq!(count("$[?(@.n > '1')]"), 0);
        assert_eq!(count("$[?(@.n > 1 || @.size == 'S')]"), 3);
        assert_eq!(count("$[?((@.n > 1) && !(@.size == 'L'))]"), 1);
    }

    #[test]
    fn jayway_dialect_forms_aws_runs() {
        let input = json!([{"bucket": "b1", "key": "k1", "x": 0}, {"bucket": "b2", "key": "k2"}]);
        let p = |t: &str| Path::parse(t).unwrap_or_else(|e| panic!("{t}: {e}"));
        // `.[`: a bracket after a dot.
        assert!(p("$.[0]").is_definite());
        assert_eq!(
            p("$.[0]").select_from(&input, &input),
            Some(input[0].clone())
        );
        let snaps = json!({"Snapshots": [{"State": "completed"}]});
        assert_eq!(
            p("$.Snapshots.[0].State").select_from(&snaps, &snaps),
            Some(json!("completed"))
        );
        // Several names: one object each, of those members.
        assert_eq!(
            p("$.[*].['bucket', 'key']").select_from(&input, &input),
            Some(json!([{"bucket": "b1", "key": "k1"}, {"bucket": "b2", "key": "k2"}]))
        );
        assert_eq!(
            p("$[0]['bucket','key']").select_from(&input, &input),
            Some(json!({"bucket": "b1", "key": "k1"}))
        );
        // A filter on an array at the root, and a filter applied to an object.
        let ous = json!([{"OU": 0}, {"OU": 3}]);
        assert_eq!(
            p("$.[?(@.OU > 0)]").select_from(&ous, &ous),
            Some(json!([{"OU": 3}]))
        );
        // Escaped quotes inside a bracketed name.
        let odd = json!({"it's": 1, "say \"hi\"": 2});
        assert_eq!(p("$['it\\'s']").select_from(&odd, &odd), Some(json!(1)));
        assert_eq!(
            p("$[\"say \\\"hi\\\"\"]").select_from(&odd, &odd),
            Some(json!(2))
        );
        // A backslash before the other kind of quote is kept, as AWS reads it: the path
        // `$['Test\""Name"']` (`"$['Test\\\"\"Name\"']"` in the definition's text, as in
        // LocalStack's escape_sequences_jsonpath template) reads the member `Test\""Name"`.
        let aws = json!({"Test\\\"\"Name\"": "Value\"\\"});
        assert_eq!(
            p("$['Test\\\"\"Name\"']").select_from(&aws, &aws),
            Some(json!("Value\"\\"))
        );
        // ... also inside a filter's own paths, and beside a string literal holding one.
        let rows = json!([{"it's": 1}, {"it's": "x'y"}]);
        assert_eq!(
            p("$[?(@['it\\'s'] == 1)]").select_from(&rows, &rows),
            Some(json!([{"it's": 1}]))
        );
        assert_eq!(
            p("$[?(@['it\\'s'] == 'x\\'y')]").select_from(&rows, &rows),
            Some(json!([{"it's": "x'y"}]))
        );
        // An unquoted word: read as the string its author meant, with a note for validate.
        let labels = json!({"Labels": [{"Name": "Receipt"}, {"Name": "Other"}]});
        let unquoted = p("$.Labels[?(@.Name==Receipt)]");
        assert_eq!(
            unquoted.select_from(&labels, &labels),
            Some(json!([{"Name": "Receipt"}]))
        );
        assert_eq!(unquoted.dialect_notes().len(), 1);
        assert!(p("$.Labels[?(@.Name=='Receipt')]")
            .dialect_notes()
            .is_empty());
        // A filter may compare with the document root.
        let doc = json!({"agent_id": 2, "approaches": [{"workerId": 1, "approach": "a"}, {"workerId": 2, "approach": "b"}]});
        assert_eq!(
            p("$.approaches[?(@.workerId == $.agent_id)].approach").select_from(&doc, &doc),
            Some(json!(["b"]))
        );
        for bad in [
            "$[1:2:3]",
            "$[foo]",
            "$[?(@.a == )]",
            "$['a' 'b']",
            "$[?@.a]",
        ] {
            assert!(Path::parse(bad).is_err(), "{bad} should not parse");
        }
    }
}
