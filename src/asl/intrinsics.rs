//! The intrinsic functions: `States.Format(...)` and the other 17.
//!
//! A call is parsed once into a [`Call`]: a [`Function`] and its [`Arg`]s, each a literal, a
//! compiled [`Path`] or a nested call. Names and arities are checked at parse time, so
//! `validate` reports them; argument types can only be checked when the call runs, and fail
//! with `States.IntrinsicFailure`.
//!
//! Where AWS's behaviour is visible in the recorded corpus we follow it: `States.Format` renders
//! objects and arrays the way Java's `Map.toString` does (`{a=1, b=[]}`), `States.MathAdd`
//! rounds its arguments half-up like `Math.round`, `States.StringSplit` splits on any of the
//! delimiter's characters and drops empty tokens (`java.util.StringTokenizer`), and
//! `States.StringToJson` of a blank string is `null`.

use crate::asl::error::{names, StatesError};
use crate::asl::eval::Env;
use crate::asl::path::{compact, Found, Path};
use base64::Engine as _;
use serde_json::{Map, Value};
use std::borrow::{Borrow, Cow};
use std::collections::HashMap;
use std::fmt::Write as _;

/// Why an intrinsic call did not parse or is malformed (unknown name, wrong arity).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct IntrinsicError {
    /// What is wrong, for a person.
    pub message: String,
}

/// AWS allows this many nested calls in one field.
const MAX_NESTING: usize = 10;

/// The longest string `Base64Encode`, `Base64Decode` and `Hash` accept.
const MAX_INPUT_CHARS: usize = 10_000;

/// The most items `ArrayRange` may produce.
const MAX_RANGE_ITEMS: i64 = 1000;

// `Call::evaluate` turns borrowed arguments into owned ones in place, which needs this.
const _: () = assert!(std::mem::size_of::<Cow<'static, Value>>() == std::mem::size_of::<Value>());

/// The intrinsic functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// `States.Format(template, args...)`.
    Format,
    /// `States.StringToJson(string)`.
    StringToJson,
    /// `States.JsonToString(value)`.
    JsonToString,
    /// `States.Array(values...)`.
    Array,
    /// `States.ArrayPartition(array, size)`.
    ArrayPartition,
    /// `States.ArrayContains(array, value)`.
    ArrayContains,
    /// `States.ArrayRange(start, end, step)`.
    ArrayRange,
    /// `States.ArrayGetItem(array, index)`.
    ArrayGetItem,
    /// `States.ArrayLength(array)`.
    ArrayLength,
    /// `States.ArrayUnique(array)`.
    ArrayUnique,
    /// `States.Base64Encode(string)`.
    Base64Encode,
    /// `States.Base64Decode(string)`.
    Base64Decode,
    /// `States.Hash(data, algorithm)`.
    Hash,
    /// `States.JsonMerge(object, object, deep)`.
    JsonMerge,
    /// `States.MathRandom(start, end[, seed])`.
    MathRandom,
    /// `States.MathAdd(a, b)`.
    MathAdd,
    /// `States.StringSplit(string, delimiters)`.
    StringSplit,
    /// `States.UUID()`.
    Uuid,
}

impl Function {
    /// Every function with its name after `States.`.
    const ALL: [(&'static str, Function); 18] = [
        ("Format", Function::Format),
        ("StringToJson", Function::StringToJson),
        ("JsonToString", Function::JsonToString),
        ("Array", Function::Array),
        ("ArrayPartition", Function::ArrayPartition),
        ("ArrayContains", Function::ArrayContains),
        ("ArrayRange", Function::ArrayRange),
        ("ArrayGetItem", Function::ArrayGetItem),
        ("ArrayLength", Function::ArrayLength),
        ("ArrayUnique", Function::ArrayUnique),
        ("Base64Encode", Function::Base64Encode),
        ("Base64Decode", Function::Base64Decode),
        ("Hash", Function::Hash),
        ("JsonMerge", Function::JsonMerge),
        ("MathRandom", Function::MathRandom),
        ("MathAdd", Function::MathAdd),
        ("StringSplit", Function::StringSplit),
        ("UUID", Function::Uuid),
    ];

    /// Every function's name after `States.` (`Format`, ...), for an editor's completion.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Self::ALL.iter().map(|(n, _)| *n)
    }

    fn from_name(name: &str) -> Option<Function> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }

    /// The full name, `States.Format` and so on.
    pub fn name(self) -> String {
        let short = Self::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("", |(n, _)| n);
        format!("States.{short}")
    }

    /// How many arguments it takes: at least, at most.
    fn arity(self) -> (usize, usize) {
        use Function::*;
        match self {
            Format => (1, usize::MAX),
            Array => (0, usize::MAX),
            Uuid => (0, 0),
            StringToJson | JsonToString | ArrayLength | ArrayUnique | Base64Encode
            | Base64Decode => (1, 1),
            ArrayPartition | ArrayContains | ArrayGetItem | Hash | MathAdd | StringSplit => (2, 2),
            ArrayRange | JsonMerge => (3, 3),
            MathRandom => (2, 3),
        }
    }
}

/// One argument of a call.
#[derive(Debug, Clone)]
pub enum Arg {
    /// A `'string'`; `placeholders` are the byte offsets of unescaped `{}` in it (an escaped
    /// `\{\}` is literal text, not a `States.Format` placeholder).
    Str {
        /// The string with escapes resolved.
        value: String,
        /// Where its unescaped `{}` pairs start.
        placeholders: Vec<usize>,
    },
    /// A number, `null`, `true` or `false`.
    Literal(Value),
    /// A path into the input, context or a variable.
    Path(Path),
    /// A nested call.
    Call(Box<Call>),
}

/// A parsed intrinsic function call.
#[derive(Debug, Clone)]
pub struct Call {
    text: String,
    function: Function,
    args: Vec<Arg>,
}

impl Call {
    /// Whether a string looks like an intrinsic call (`States.Name(`...).
    pub fn looks_like(text: &str) -> bool {
        text.trim_start().starts_with("States.")
    }

    /// Parses a call and checks names and arities.
    pub fn parse(text: &str) -> Result<Call, IntrinsicError> {
        let mut p = Parser { src: text, pos: 0 };
        p.skip_ws();
        let call = p.call(0)?;
        p.skip_ws();
        if p.pos != text.len() {
            return Err(p.error("unexpected text after the closing ')'"));
        }
        Ok(Call {
            text: text.to_owned(),
            ..call
        })
    }

    /// The source text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Which function it calls.
    pub fn function(&self) -> Function {
        self.function
    }

    /// Its arguments.
    pub fn args(&self) -> &[Arg] {
        &self.args
    }

    /// Every path among its arguments, nested calls included.
    pub fn paths(&self) -> Vec<&Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut out);
        out
    }

    fn collect_paths<'a>(&'a self, out: &mut Vec<&'a Path>) {
        for a in &self.args {
            match a {
                Arg::Path(p) => out.push(p),
                Arg::Call(c) => c.collect_paths(out),
                _ => {}
            }
        }
    }

    /// Evaluates the call.
    pub fn evaluate(&self, env: &Env<'_>) -> Result<Value, StatesError> {
        let args = self.args_of(env)?;
        match self.function {
            // It only reads its arguments: formatted borrowed (copying each path's value was
            // an allocation per argument).
            Function::Format => self.format(&args),
            // Owned in place: a `Cow<Value>` has a `Value`'s size (checked below).
            _ => self.apply(args.into_iter().map(Cow::into_owned).collect()),
        }
    }

    /// The arguments, borrowed where they can be. States.Format's literal first argument is
    /// left as `null`: [`Call::format`] reads its template from the call itself.
    fn args_of<'e>(&'e self, env: &Env<'e>) -> Result<Vec<Cow<'e, Value>>, StatesError> {
        let mut values = Vec::with_capacity(self.args.len());
        for (i, a) in self.args.iter().enumerate() {
            values.push(match a {
                Arg::Str { .. } if i == 0 && self.function == Function::Format => {
                    Cow::Owned(Value::Null)
                }
                Arg::Str { value, .. } => Cow::Owned(Value::String(value.clone())),
                Arg::Literal(v) => Cow::Borrowed(v),
                Arg::Path(p) => match p.select_ref(env) {
                    Some(Found::One(v)) => Cow::Borrowed(v),
                    Some(found) => Cow::Owned(found.into_value()),
                    None => return Err(StatesError::runtime(p.invalid_path_cause(env))),
                },
                Arg::Call(c) => Cow::Owned(c.evaluate(env)?),
            });
        }
        Ok(values)
    }

    fn fail(&self, why: impl AsRef<str>) -> StatesError {
        let why = why.as_ref();
        let mut cause = format!("Invalid arguments in {}", self.function.name());
        if !why.is_empty() {
            let _ = write!(cause, ": {why}");
        }
        StatesError::new(names::INTRINSIC_FAILURE, cause)
    }

    /// The function on its arguments' values ([`Call::evaluate`] gives States.Format its
    /// arguments borrowed instead).
    fn apply(&self, mut v: Vec<Value>) -> Result<Value, StatesError> {
        use Function::*;
        match self.function {
            Format => self.format(&v),
            StringToJson => {
                let s = self.string(&v[0], "the argument must be a string")?;
                if s.trim().is_empty() {
                    return Ok(Value::Null);
                }
                let parsed: Value = serde_json::from_str(s)
                    .map_err(|e| self.fail(format!("not valid JSON: {e}")))?;
                // serde reads `-0` as the float -0.0; Jackson reads it as the integer 0.
                if s.trim() == "-0" {
                    return Ok(Value::from(0));
                }
                Ok(parsed)
            }
            JsonToString => Ok(Value::String(compact(&v[0]))),
            Array => Ok(Value::Array(v)),
            ArrayPartition => {
                let items = self.array(&v[0])?;
                let size = self.integer(&v[1])?;
                if size <= 0 {
                    return Err(self.fail("the chunk size must be a positive integer"));
                }
                let size = usize::try_from(size).unwrap_or(usize::MAX);
                Ok(Value::Array(
                    items
                        .chunks(size)
                        .map(|c| Value::Array(c.to_vec()))
                        .collect(),
                ))
            }
            ArrayContains => {
                let items = self.array(&v[0])?;
                Ok(Value::Bool(items.iter().any(|x| json_eq(x, &v[1]))))
            }
            ArrayRange => {
                let (start, end, step) = (
                    self.integer(&v[0])?,
                    self.integer(&v[1])?,
                    self.integer(&v[2])?,
                );
                if step == 0 {
                    return Err(self.fail("the step must not be 0"));
                }
                let span = i128::from(end) - i128::from(start);
                let count = if (span >= 0) == (step > 0) || span == 0 {
                    span / i128::from(step) + 1
                } else {
                    0
                };
                if count > i128::from(MAX_RANGE_ITEMS) {
                    return Err(self.fail(format!(
                        "the range may hold at most {MAX_RANGE_ITEMS} items"
                    )));
                }
                // In i128: `i * step` may overflow i64 even where the item lies between start
                // and end, and so fits (fuzzing found `States.ArrayRange(-9223372036854775808,
                // 9223372036854775807, 9223372036854775807)` panicking on it).
                Ok(Value::Array(
                    (0..count)
                        .map(|i| Value::from((i128::from(start) + i * i128::from(step)) as i64))
                        .collect(),
                ))
            }
            ArrayGetItem => {
                let items = self.array(&v[0])?;
                let index = self.integer(&v[1])?;
                usize::try_from(index)
                    .ok()
                    .and_then(|i| items.get(i))
                    .cloned()
                    .ok_or_else(|| self.fail("the index is out of bounds"))
            }
            ArrayLength => Ok(Value::from(self.array(&v[0])?.len())),
            ArrayUnique => Ok(Value::Array(unique(self.array(&v[0])?))),
            Base64Encode => {
                let s = self.bounded_string(&v[0])?;
                Ok(Value::String(
                    base64::engine::general_purpose::STANDARD.encode(s.as_bytes()),
                ))
            }
            Base64Decode => {
                let s = self.bounded_string(&v[0])?;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(s.as_bytes())
                    .map_err(|e| self.fail(format!("not valid Base64: {e}")))?;
                String::from_utf8(bytes)
                    .map(Value::String)
                    .map_err(|_| self.fail("the decoded data is not UTF-8 text"))
            }
            Hash => {
                let data = match &v[0] {
                    Value::String(s) => s.clone(),
                    other => compact(other),
                };
                if data.chars().count() > MAX_INPUT_CHARS {
                    return Err(self.fail(format!(
                        "the data may be at most {MAX_INPUT_CHARS} characters"
                    )));
                }
                let alg = self.string(&v[1], "the algorithm must be a string")?;
                hash(alg, data.as_bytes())
                    .map(Value::String)
                    .ok_or_else(|| {
                        self.fail(format!(
                            "unsupported algorithm '{alg}' (MD5, SHA-1, SHA-256, SHA-384, SHA-512)"
                        ))
                    })
            }
            JsonMerge => {
                let deep = match &v[2] {
                    Value::Bool(b) => *b,
                    _ => return Err(self.fail("the third argument must be a boolean")),
                };
                let right = v.swap_remove(1);
                let left = v.swap_remove(0);
                match (left, right) {
                    (Value::Object(mut l), Value::Object(r)) => {
                        merge(&mut l, r, deep);
                        Ok(Value::Object(l))
                    }
                    _ => Err(self.fail("the first two arguments must be objects")),
                }
            }
            MathRandom => {
                let start = self.rounded_i32(&v[0])?;
                let end = self.rounded_i32(&v[1])?;
                if start > end {
                    return Err(self.fail("the start must not be greater than the end"));
                }
                let span = u64::try_from(i64::from(end) - i64::from(start) + 1).unwrap_or(1);
                let offset = match v.get(2) {
                    Some(seed) => {
                        let seed = self.integer(seed)?;
                        JavaRandom::new(seed).next_bounded(span)
                    }
                    None => random_u64() % span,
                };
                Ok(Value::from(i64::from(start) + offset as i64))
            }
            MathAdd => {
                let a = self.rounded_i32(&v[0])?;
                let b = self.rounded_i32(&v[1])?;
                Ok(Value::from(i64::from(a) + i64::from(b)))
            }
            StringSplit => {
                let s = self.string(&v[0], "the first argument must be a string")?;
                let delims = self.string(&v[1], "the delimiter must be a string")?;
                Ok(Value::Array(
                    s.split(|c| delims.contains(c))
                        .filter(|t| !t.is_empty())
                        .map(|t| Value::String(t.to_owned()))
                        .collect(),
                ))
            }
            Uuid => Ok(Value::String(crate::random::uuid().to_string())),
        }
    }

    fn format<V: Borrow<Value>>(&self, v: &[V]) -> Result<Value, StatesError> {
        // A literal template knows which `{}` were escaped; a template from a path does not.
        // The literal is read where it is: [`Call::evaluate`] does not copy it.
        let found: Vec<usize>;
        let (template, placeholders) = match self.args.first() {
            Some(Arg::Str {
                value,
                placeholders,
            }) => (value.as_str(), placeholders.as_slice()),
            _ => {
                let template = self.string(v[0].borrow(), "the first argument must be a string")?;
                found = template.match_indices("{}").map(|(i, _)| i).collect();
                (template, found.as_slice())
            }
        };
        if placeholders.len() != v.len() - 1 {
            return Err(self.fail(format!(
                "the template has {} placeholder(s) but {} argument(s) follow it",
                placeholders.len(),
                v.len() - 1
            )));
        }
        let mut out = String::with_capacity(template.len() + 16 * placeholders.len());
        let mut from = 0;
        for (at, value) in placeholders.iter().zip(&v[1..]) {
            out.push_str(template.get(from..*at).unwrap_or(""));
            java_to_string(&mut out, value.borrow());
            from = at + 2;
        }
        out.push_str(template.get(from..).unwrap_or(""));
        Ok(Value::String(out))
    }

    fn string<'v>(&self, v: &'v Value, why: &str) -> Result<&'v str, StatesError> {
        v.as_str().ok_or_else(|| self.fail(why))
    }

    fn bounded_string<'v>(&self, v: &'v Value) -> Result<&'v str, StatesError> {
        let s = self.string(v, "the argument must be a string")?;
        if s.chars().count() > MAX_INPUT_CHARS {
            return Err(self.fail(format!(
                "the string may be at most {MAX_INPUT_CHARS} characters"
            )));
        }
        Ok(s)
    }

    fn array<'v>(&self, v: &'v Value) -> Result<&'v Vec<Value>, StatesError> {
        v.as_array()
            .ok_or_else(|| self.fail("expected an array argument"))
    }

    /// An integral number (`2` or `2.0`).
    fn integer(&self, v: &Value) -> Result<i64, StatesError> {
        if let Some(i) = v.as_i64() {
            return Ok(i);
        }
        match v.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(f as i64),
            _ => Err(self.fail("expected an integer argument")),
        }
    }

    /// A number rounded half-up (Java's `Math.round`), in the 32-bit signed range.
    fn rounded_i32(&self, v: &Value) -> Result<i32, StatesError> {
        let n = match v {
            Value::Number(n) => match n.as_i64() {
                Some(i) => i,
                None => {
                    let f = n.as_f64().unwrap_or(f64::NAN);
                    if !f.is_finite() {
                        return Err(self.fail("expected a number argument"));
                    }
                    (f + 0.5).floor() as i64
                }
            },
            _ => return Err(self.fail("expected a number argument")),
        };
        i32::try_from(n)
            .map_err(|_| self.fail("the numbers must be between -2147483648 and 2147483647"))
    }
}

/// JSON equality where `1` and `1.0` are the same number.
/// The items without repeats (by [`json_eq`]), first occurrences in order. Items are grouped by
/// a hash that equal items share, so a 256 KiB array of distinct numbers takes milliseconds
/// (comparing each item with every one kept took 3 s for 38,000, holding the thread).
fn unique(items: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(items.len());
    let mut kept: HashMap<u64, Vec<usize>> = HashMap::with_capacity(items.len());
    for x in items {
        let same_hash = kept.entry(json_hash(x)).or_default();
        if !same_hash.iter().any(|&i| json_eq(x, &out[i])) {
            same_hash.push(out.len());
            out.push(x.clone());
        }
    }
    out
}

/// A hash equal for values [`json_eq`] finds equal: numbers by their value as a float (zero's
/// sign aside), object members in any order.
fn json_hash(v: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    match v {
        Value::Null => 0u8.hash(&mut h),
        Value::Bool(b) => (1u8, b).hash(&mut h),
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            (2u8, if f == 0.0 { 0 } else { f.to_bits() }).hash(&mut h)
        }
        Value::String(s) => (3u8, s).hash(&mut h),
        Value::Array(items) => {
            4u8.hash(&mut h);
            items.iter().for_each(|i| json_hash(i).hash(&mut h));
        }
        Value::Object(members) => {
            // Summed: the same members in another order hash the same.
            let sum = members.iter().fold(0u64, |sum, (k, v)| {
                let mut m = std::collections::hash_map::DefaultHasher::new();
                (k, json_hash(v)).hash(&mut m);
                sum.wrapping_add(m.finish())
            });
            (5u8, sum).hash(&mut h);
        }
    }
    h.finish()
}

fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Right wins; with `deep`, objects on both sides are merged recursively.
fn merge(left: &mut Map<String, Value>, right: Map<String, Value>, deep: bool) {
    for (k, r) in right {
        match (left.get_mut(&k), r) {
            (Some(Value::Object(l)), Value::Object(r)) if deep => merge(l, r, true),
            (_, r) => {
                left.insert(k, r);
            }
        }
    }
}

/// How `States.Format` renders a value: strings bare, scalars as JSON, containers the way
/// Java's collections print themselves.
fn java_to_string(out: &mut String, v: &Value) {
    match v {
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                java_to_string(out, x);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, x)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(k);
                out.push('=');
                java_to_string(out, x);
            }
            out.push('}');
        }
        // Display writes the same compact JSON, without a String of its own.
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// The hex digest of `data` with one of AWS's algorithm names (shared with JSONata's `$hash`).
pub(crate) fn hash(alg: &str, data: &[u8]) -> Option<String> {
    use sha2::Digest;
    fn hex(bytes: &[u8]) -> String {
        bytes
            .iter()
            .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            })
    }
    Some(match alg {
        "MD5" => hex(&md5::Md5::digest(data)),
        "SHA-1" => hex(&sha1::Sha1::digest(data)),
        "SHA-256" => hex(&sha2::Sha256::digest(data)),
        "SHA-384" => hex(&sha2::Sha384::digest(data)),
        "SHA-512" => hex(&sha2::Sha512::digest(data)),
        _ => return None,
    })
}

/// A random seed from the OS (shared with JSONata's `$random`).
pub(crate) fn random_u64() -> u64 {
    let mut buf = [0u8; 8];
    if crate::random::fill(&mut buf).is_err() {
        // No OS randomness: fall back on the clock, which is fine for a non-crypto function.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        return u64::from(nanos);
    }
    u64::from_le_bytes(buf)
}

/// `java.util.Random`, so a seeded `States.MathRandom` is deterministic (and matches a JVM
/// implementation that draws `start + nextInt(end - start + 1)`; AWS's exact formula is not
/// recorded in the corpus).
pub(crate) struct JavaRandom(u64);

impl JavaRandom {
    const MULTIPLIER: u64 = 0x5_DEEC_E66D;
    const MASK: u64 = (1 << 48) - 1;

    pub(crate) fn new(seed: i64) -> Self {
        JavaRandom((seed as u64 ^ Self::MULTIPLIER) & Self::MASK)
    }

    fn next(&mut self, bits: u32) -> i32 {
        self.0 = (self.0.wrapping_mul(Self::MULTIPLIER).wrapping_add(0xB)) & Self::MASK;
        (self.0 >> (48 - bits)) as i32
    }

    /// `nextDouble()`: uniform in `[0, 1)`.
    pub(crate) fn next_double(&mut self) -> f64 {
        let hi = i64::from(self.next(26)) << 27;
        let lo = i64::from(self.next(27));
        (hi + lo) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `nextInt(bound)` for `bound` in `1..=2^31`; a larger span falls back on `nextLong`.
    fn next_bounded(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            return 0;
        }
        if bound > i32::MAX as u64 {
            let hi = i64::from(self.next(32)) << 32;
            let lo = i64::from(self.next(32));
            return (hi.wrapping_add(lo) as u64) % bound;
        }
        let bound = bound as i32;
        if bound & -bound == bound {
            return ((i64::from(bound) * i64::from(self.next(31))) >> 31) as u64;
        }
        loop {
            let bits = self.next(31);
            let val = bits % bound;
            if bits.wrapping_sub(val).wrapping_add(bound - 1) >= 0 {
                return val as u64;
            }
        }
    }
}

/// A recursive-descent parser over the call text.
struct Parser<'s> {
    src: &'s str,
    pos: usize,
}

impl<'s> Parser<'s> {
    fn rest(&self) -> &'s str {
        self.src.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn error(&self, what: &str) -> IntrinsicError {
        IntrinsicError {
            message: format!(
                "'{}' is not a valid intrinsic function call: {what} at offset {}",
                self.src, self.pos
            ),
        }
    }

    fn call(&mut self, depth: usize) -> Result<Call, IntrinsicError> {
        if depth >= MAX_NESTING {
            return Err(self.error(&format!("more than {MAX_NESTING} nested calls")));
        }
        let start = self.pos;
        let Some(after) = self.rest().strip_prefix("States.") else {
            return Err(self.error("expected 'States.'"));
        };
        let name_len = after
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(after.len());
        let name = &after[..name_len];
        let function = Function::from_name(name).ok_or_else(|| {
            let known = Function::ALL.iter().map(|(n, _)| *n);
            let hint = crate::suggest::closest(name, known)
                .map(|n| format!(" (did you mean 'States.{n}'?)"))
                .unwrap_or_default();
            self.error(&format!("unknown function 'States.{name}'{hint}"))
        })?;
        self.pos += "States.".len() + name_len;
        self.skip_ws();
        if self.peek() != Some('(') {
            return Err(self.error("expected '('"));
        }
        self.pos += 1;
        let mut args = Vec::new();
        self.skip_ws();
        if self.peek() == Some(')') {
            self.pos += 1;
        } else {
            loop {
                self.skip_ws();
                args.push(self.arg(depth)?);
                self.skip_ws();
                match self.peek() {
                    Some(',') => self.pos += 1,
                    Some(')') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.error("expected ',' or ')'")),
                }
            }
        }
        let (min, max) = function.arity();
        if args.len() < min || args.len() > max {
            let want = match (min, max) {
                (a, b) if a == b => format!("{a}"),
                (a, usize::MAX) => format!("at least {a}"),
                (a, b) => format!("{a} to {b}"),
            };
            return Err(IntrinsicError {
                message: format!(
                    "{} takes {want} argument(s) but was given {}",
                    function.name(),
                    args.len()
                ),
            });
        }
        Ok(Call {
            text: self.src.get(start..self.pos).unwrap_or("").to_owned(),
            function,
            args,
        })
    }

    fn arg(&mut self, depth: usize) -> Result<Arg, IntrinsicError> {
        let rest = self.rest();
        match self.peek() {
            Some('\'') => self.string(),
            Some('$') => {
                let len = path_len(rest);
                let text = rest[..len].trim_end();
                let path = Path::parse(text).map_err(|e| self.error(&e.message))?;
                self.pos += len;
                Ok(Arg::Path(path))
            }
            Some(c) if c == '-' || c.is_ascii_digit() => {
                let len = rest
                    .find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))
                    .unwrap_or(rest.len());
                let n: serde_json::Number = rest[..len]
                    .parse()
                    .map_err(|_| self.error("invalid number"))?;
                self.pos += len;
                Ok(Arg::Literal(Value::Number(n)))
            }
            _ if rest.starts_with("States.") => Ok(Arg::Call(Box::new(self.call(depth + 1)?))),
            _ => {
                for (word, value) in [
                    ("null", Value::Null),
                    ("true", Value::Bool(true)),
                    ("false", Value::Bool(false)),
                ] {
                    let after = rest.strip_prefix(word);
                    if after.is_some_and(|a| !a.starts_with(|c: char| c.is_alphanumeric())) {
                        self.pos += word.len();
                        return Ok(Arg::Literal(value));
                    }
                }
                Err(self.error("expected an argument"))
            }
        }
    }

    /// A `'...'` literal. Only `\'`, `\{`, `\}` and `\\` are escapes; AWS rejects any other.
    fn string(&mut self) -> Result<Arg, IntrinsicError> {
        self.pos += 1;
        let mut value = String::new();
        let mut placeholders = Vec::new();
        let mut chars = self.rest().char_indices();
        let mut last_open: Option<usize> = None; // offset in `value` of an unescaped `{`
        while let Some((i, c)) = chars.next() {
            match c {
                '\'' => {
                    self.pos += i + 1;
                    return Ok(Arg::Str {
                        value,
                        placeholders,
                    });
                }
                '\\' => match chars.next() {
                    Some((_, e @ ('\'' | '{' | '}' | '\\'))) => {
                        value.push(e);
                        last_open = None;
                    }
                    _ => {
                        self.pos += i;
                        return Err(self.error("illegal escape sequence in a string"));
                    }
                },
                '{' => {
                    last_open = Some(value.len());
                    value.push(c);
                }
                '}' => {
                    if let Some(open) = last_open.take() {
                        if open + 1 == value.len() {
                            placeholders.push(open);
                        }
                    }
                    value.push(c);
                }
                c => {
                    last_open = None;
                    value.push(c);
                }
            }
        }
        Err(self.error("unterminated string"))
    }
}

/// How far a path argument runs: to a `,` or `)` outside brackets, parentheses and quotes
/// (with their escapes: `$['it\'s']`).
fn path_len(s: &str) -> usize {
    let mut depth = 0usize;
    let mut quoted = crate::asl::path::Quoted::default();
    for (i, c) in s.char_indices() {
        if quoted.take(c, true) {
            continue;
        }
        match c {
            '[' | '(' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ')' if depth == 0 => return i,
            ')' => depth -= 1,
            ',' if depth == 0 => return i,
            _ => {}
        }
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asl::eval::NoVariables;
    use serde_json::json;

    fn run(text: &str, input: Value) -> Result<Value, StatesError> {
        let ctx = json!({"Execution": {"Name": "exec"}});
        let env = Env {
            input: &input,
            context: &ctx,
            variables: &NoVariables,
        };
        Call::parse(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .evaluate(&env)
    }

    /// Regression: States.ArrayUnique compared each item with every one kept (3 s for 38,000
    /// distinct numbers, a 256 KiB input, on its execution's thread); now by hash, with the
    /// same equality: 1 and 1.0 are one, -0.0 and 0 are one, members in any order are one,
    /// integers past 2^53 that share a float stay two.
    #[test]
    fn array_unique_finds_repeats_by_value_in_linear_time() {
        let items = json!([1, 1.0, -0.0, 0, {"a": 1, "b": [2]}, {"b": [2.0], "a": 1},
            9007199254740993u64, 9007199254740992u64, "1", [1, 0], [1.0, -0.0]]);
        assert_eq!(
            Value::Array(unique(items.as_array().unwrap())),
            json!([1, -0.0, {"a": 1, "b": [2]}, 9007199254740993u64, 9007199254740992u64,
                "1", [1, 0]])
        );
        let distinct: Vec<Value> = (0..200_000).map(Value::from).collect();
        assert_eq!(unique(&distinct).len(), 200_000);
    }

    #[test]
    fn evaluates_like_aws() {
        let table: &[(&str, Value, Value)] = &[
            ("States.Array()", json!({}), json!([])),
            // A path argument whose bracketed names hold escaped quotes ends where they do.
            (
                "States.Array($['it\\'s'].x, $[\"a\\\"b\"], 'c,d')",
                json!({"it's": {"x": 1}, "a\"b": 2}),
                json!([1, 2, "c,d"]),
            ),
            (
                "States.Array($.a, 1, 'x', null, true)",
                json!({"a": {"b": []}}),
                json!([{"b": []}, 1, "x", null, true]),
            ),
            (
                "States.ArrayContains($.a, $.b)",
                json!({"a": [[1, 2, 3], 2], "b": [1, 2, 3]}),
                json!(true),
            ),
            (
                "States.ArrayContains($.a, $.b)",
                json!({"a": [], "b": null}),
                json!(false),
            ),
            (
                "States.ArrayGetItem($.a, 5)",
                json!({"a": [1, 2, 3, 4, 5, 6, 7]}),
                json!(6),
            ),
            ("States.ArrayLength($.a)", json!({"a": [1, 2, 3]}), json!(3)),
            (
                "States.ArrayPartition($.a, 3)",
                json!({"a": [0, 1, 2, 3]}),
                json!([[0, 1, 2], [3]]),
            ),
            ("States.ArrayPartition($.a, 2)", json!({"a": []}), json!([])),
            (
                "States.ArrayRange(0, 10, 3)",
                json!({}),
                json!([0, 3, 6, 9]),
            ),
            ("States.ArrayRange(1, 9, 9)", json!({}), json!([1])),
            ("States.ArrayRange(5, 1, -2)", json!({}), json!([5, 3, 1])),
            ("States.ArrayRange(5, 1, 2)", json!({}), json!([])),
            (
                "States.ArrayUnique($.a)",
                json!({"a": [1, 1, null, null, "a", [1], [1], {"x": 1}, {"x": 1}]}),
                json!([1, null, "a", [1], {"x": 1}]),
            ),
            (
                "States.Base64Encode('Data to encode')",
                json!({}),
                json!("RGF0YSB0byBlbmNvZGU="),
            ),
            (
                "States.Base64Decode('RGF0YSB0byBlbmNvZGU=')",
                json!({}),
                json!("Data to encode"),
            ),
            ("States.Base64Decode('')", json!({}), json!("")),
            (
                "States.Hash('input data', 'MD5')",
                json!({}),
                json!("812f45842bc6d66ee14572ce20db8e86"),
            ),
            (
                "States.Hash('input data', 'SHA-1')",
                json!({}),
                json!("aaff4a450a104cd177d28d18d74485e8cae074b7"),
            ),
            (
                "States.Hash('input data', 'SHA-256')",
                json!({}),
                json!("b4a697a057313163aee33cd8d40c66e9f0f177e00cac2de32475ffff6169c3e3"),
            ),
            (
                "States.JsonMerge($.a, $.b, false)",
                json!({"a": {"a": {"a1": 1}, "b": 2, "d": 3}, "b": {"a": {"a3": 1}, "c": 3, "d": 4}}),
                json!({"a": {"a3": 1}, "b": 2, "d": 4, "c": 3}),
            ),
            (
                "States.JsonMerge($.a, $.b, true)",
                json!({"a": {"a": {"a1": 1}}, "b": {"a": {"a3": 1}}}),
                json!({"a": {"a1": 1, "a3": 1}}),
            ),
            (
                "States.JsonToString($.a)",
                json!({"a": {"Arg1": 1, "Arg2": []}}),
                json!("{\"Arg1\":1,\"Arg2\":[]}"),
            ),
            (
                "States.JsonToString($.a)",
                json!({"a": "HelloWorld"}),
                json!("\"HelloWorld\""),
            ),
            ("States.JsonToString($.a)", json!({"a": 1.1}), json!("1.1")),
            ("States.StringToJson($.a)", json!({"a": " "}), json!(null)),
            ("States.StringToJson($.a)", json!({"a": "-0"}), json!(0)),
            (
                "States.StringToJson($.a)",
                json!({"a": "[1, 2, \"x\"]"}),
                json!([1, 2, "x"]),
            ),
            (
                "States.StringToJson('{\"a\": \"false\"}')",
                json!({}),
                json!({"a": "false"}),
            ),
            (
                "States.MathAdd($.a, $.b)",
                json!({"a": -9, "b": 3}),
                json!(-6),
            ),
            (
                "States.MathAdd($.a, $.b)",
                json!({"a": 1.49, "b": 1.5}),
                json!(3),
            ),
            ("States.MathAdd($.a, 0)", json!({"a": -1.5}), json!(-1)),
            ("States.MathAdd($.a, 0)", json!({"a": -1.51}), json!(-2)),
            ("States.MathAdd($.a, 0)", json!({"a": 0.5}), json!(1)),
            (
                "States.MathAdd(2147483647, 1)",
                json!({}),
                json!(2147483648_i64),
            ),
            (
                "States.StringSplit($.a, ',')",
                json!({"a": ", , ,"}),
                json!([" ", " "]),
            ),
            (
                "States.StringSplit($.a, ',')",
                json!({"a": ",,,,"}),
                json!([]),
            ),
            (
                "States.StringSplit($.a, $.d)",
                json!({"a": "split on T and \nnew line", "d": "T\n"}),
                json!(["split on ", " and ", "new line"]),
            ),
            (
                "States.StringSplit('Hello\nWorld', '\n')",
                json!({}),
                json!(["Hello", "World"]),
            ),
            (
                "States.Format('arg {}.', $.a)",
                json!({"a": null}),
                json!("arg null."),
            ),
            (
                "States.Format('arg {}.', $.a)",
                json!({"a": 1.1}),
                json!("arg 1.1."),
            ),
            (
                "States.Format('a={} b={}.', $.a, $.b)",
                json!({"a": {"Arg1": 1, "Arg2": []}, "b": "{\"x\": 1}"}),
                json!("a={Arg1=1, Arg2=[]} b={\"x\": 1}."),
            ),
            (
                "States.Format('n={}', $$.Execution.Name)",
                json!({}),
                json!("n=exec"),
            ),
            (
                "States.Format('lit \\{\\} {}', 'x')",
                json!({}),
                json!("lit {} x"),
            ),
            (
                "States.Format('it\\'s {}', true)",
                json!({}),
                json!("it's true"),
            ),
            (
                "States.Format($.t, $.n)",
                json!({"t": "Hello, {}.", "n": "Arnav"}),
                json!("Hello, Arnav."),
            ),
            (
                "States.Format('{}', States.ArrayLength(States.Array(1, 2)))",
                json!({}),
                json!("2"),
            ),
            ("States.MathRandom(7, 7)", json!({}), json!(7)),
            (
                "States.ArrayGetItem($.a[?(@.x > 1)], 0)",
                json!({"a": [{"x": 1}, {"x": 2}]}),
                json!({"x": 2}),
            ),
        ];
        for (text, input, want) in table {
            match run(text, input.clone()) {
                Ok(got) => assert_eq!(&got, want, "{text}"),
                Err(e) => panic!("{text}: {e}"),
            }
        }
    }

    #[test]
    fn fails_like_aws() {
        let table: &[(&str, Value, &str)] = &[
            (
                "States.MathAdd($.a, 1)",
                json!({"a": "1"}),
                "States.IntrinsicFailure",
            ),
            (
                "States.MathAdd(2147483648, 1)",
                json!({}),
                "States.IntrinsicFailure",
            ),
            (
                "States.ArrayGetItem($.a, 3)",
                json!({"a": [1]}),
                "States.IntrinsicFailure",
            ),
            (
                "States.ArrayGetItem($.a, -1)",
                json!({"a": [1]}),
                "States.IntrinsicFailure",
            ),
            (
                "States.ArrayPartition($.a, 0)",
                json!({"a": [1]}),
                "States.IntrinsicFailure",
            ),
            (
                "States.ArrayRange(0, 1000, 1)",
                json!({}),
                "States.IntrinsicFailure",
            ),
            (
                "States.ArrayRange(0, 10, 0)",
                json!({}),
                "States.IntrinsicFailure",
            ),
            (
                "States.ArrayRange(0, 1.5, 1)",
                json!({}),
                "States.IntrinsicFailure",
            ),
            (
                "States.Hash('x', 'SHA-3')",
                json!({}),
                "States.IntrinsicFailure",
            ),
            (
                "States.Base64Decode('***')",
                json!({}),
                "States.IntrinsicFailure",
            ),
            (
                "States.StringToJson('{')",
                json!({}),
                "States.IntrinsicFailure",
            ),
            (
                "States.JsonMerge($.a, 1, false)",
                json!({"a": {}}),
                "States.IntrinsicFailure",
            ),
            (
                "States.Format('{} {}', 1)",
                json!({}),
                "States.IntrinsicFailure",
            ),
            (
                "States.Format('{}', $.missing)",
                json!({}),
                "States.Runtime",
            ),
            (
                "States.ArrayLength($.a)",
                json!({"a": "x"}),
                "States.IntrinsicFailure",
            ),
        ];
        for (text, input, name) in table {
            match run(text, input.clone()) {
                Ok(v) => panic!("{text}: expected failure, got {v}"),
                Err(e) => assert_eq!(e.name(), *name, "{text}: {e}"),
            }
        }
        let e = run("States.MathAdd($.a, 1)", json!({"a": "1"})).unwrap_err();
        assert!(e
            .cause
            .unwrap_or_default()
            .starts_with("Invalid arguments in States.MathAdd"));
    }

    #[test]
    fn rejects_malformed_calls() {
        for text in [
            "States.Nope()",
            "States.Format()",
            "States.UUID(1)",
            "States.MathAdd(1)",
            "States.MathRandom(1, 2, 3, 4)",
            "States.Array(",
            "States.Array(1 2)",
            "States.Array('x)",
            "States.Array(1))",
            "States.Format('{}', foo)",
            "States.StringToJson('{\"text\":\"An \\\"escaped\\\" here\"}')",
            "States.Array($.a b)",
            "Format('x')",
            "States.Array(States.Array(States.Array(States.Array(States.Array(States.Array(States.Array(States.Array(States.Array(States.Array(States.Array())))))))))))",
        ] {
            assert!(Call::parse(text).is_err(), "{text} should not parse");
        }
        for text in [
            "States.UUID()",
            "States.Array( 1 , -2.5e3,'a' )",
            "States.MathRandom($.a, $.b, 3)",
            "States.Array($.a[?(@.x == 'a,b)')].y, $$.Execution.Id, $var.x)",
        ] {
            assert!(Call::parse(text).is_ok(), "{text} should parse");
        }
        // A misspelt function name says which one was meant.
        let e = Call::parse("States.Formatt('{}', $.a)").unwrap_err();
        assert!(
            e.to_string()
                .contains("unknown function 'States.Formatt' (did you mean 'States.Format'?)"),
            "{e}"
        );
        let e = Call::parse("States.Nope()").unwrap_err();
        assert!(!e.to_string().contains("did you mean"), "{e}");
    }

    #[test]
    fn java_random_matches_the_jvm() {
        // new java.util.Random(42).nextInt(10) == 0; new Random(0).nextInt(100) == 60.
        assert_eq!(JavaRandom::new(42).next_bounded(10), 0);
        assert_eq!(JavaRandom::new(0).next_bounded(100), 60);
        // Checked with jshell: new Random(1).nextInt(16) == 11, new Random(-5).nextInt(1000) == 411.
        assert_eq!(JavaRandom::new(1).next_bounded(16), 11);
        assert_eq!(JavaRandom::new(-5).next_bounded(1000), 411);
        let a = run("States.MathRandom(1, 1000, 7)", json!({})).ok();
        let b = run("States.MathRandom(1, 1000, 7)", json!({})).ok();
        assert_eq!(a, b);
        let uuid = run("States.UUID()", json!({})).ok();
        assert_eq!(
            uuid.as_ref().and_then(|u| u.as_str()).map(str::len),
            Some(36)
        );
    }
}
