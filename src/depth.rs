//! Depth budgets: how deep any recursion that outside input drives may go, and the stack that
//! holds it.
//!
//! A stack overflow is not a panic: it aborts the whole process, every execution and request
//! with it, and an execution that caused one would cause it again when resumed. So no input may
//! reach one. Every recursive path from input to result has a budget here, checked before it
//! recurses:
//!
//! - JSON and YAML text: [`VALUE_DEPTH`] (serde_json's own recursion limit; the definition
//!   scanner and the YAML reader say `TOO_DEEPLY_NESTED` past theirs);
//! - values an execution builds (a state's input and output, a Task's parameters, assigned
//!   variables): [`VALUE_DEPTH`], checked while they are serialized for the history
//!   ([`to_json_vec`]), so a value that every reader of the history can read back; a deeper one
//!   fails its execution with `States.Runtime`, nothing else;
//! - ResultPath, which builds one level per step: at most [`VALUE_DEPTH`] steps;
//! - JSONPath filters: [`FILTER_DEPTH`] parentheses and negations, and
//!   [`crate::asl::path::MAX_FILTER_NESTING`] filters inside filters;
//! - intrinsic functions: AWS's 10 nested calls; JSONata: its own 1,000 levels.
//!
//! Within one state a value grows by a bounded amount over its input (a template is a definition
//! value, itself within [`VALUE_DEPTH`]), so every thread that evaluates runs with
//! [`THREAD_STACK_BYTES`] of stack, which the tests show holds the deepest case in a debug build.

use serde_json::Value;
use std::io;

/// How deep arrays and objects may nest in any JSON value sfn-local reads or builds: as deep as
/// serde_json reads (its recursion limit of 128 admits 127 nested containers), so whatever
/// sfn-local writes it can read back. AWS documents no limit (its
/// parser, Jackson, allows 1,000 by default).
pub const VALUE_DEPTH: usize = 127;

/// How deep parentheses and `!` may nest in one JSONPath filter (`[?((((@.a))))]`). Jayway
/// has no limit of its own (deep enough, it overflows its stack); no real filter comes near.
pub const FILTER_DEPTH: usize = 64;

/// The stack of every thread that parses or evaluates what users hand over (execution threads,
/// the HTTP server's, JSONata's, the language server's). Only touched pages cost memory.
pub const THREAD_STACK_BYTES: usize = 16 * 1024 * 1024;

/// A value nested deeper than [`VALUE_DEPTH`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a value is nested more than {VALUE_DEPTH} levels deep (sfn-local's limit)")]
pub struct TooDeep;

/// Serializes `value` as compact JSON text, refusing one nested more than [`VALUE_DEPTH`]
/// levels deep before the serializer recurses past the limit.
pub fn to_json_vec(value: &Value) -> Result<Vec<u8>, TooDeep> {
    let mut out = Vec::with_capacity(128);
    write_json(value, &mut out)?;
    Ok(out)
}

/// Appends `value` as compact JSON text to `out` (see [`to_json_vec`]); on [`TooDeep`], `out`
/// holds part of the text.
pub fn write_json(value: &Value, out: &mut Vec<u8>) -> Result<(), TooDeep> {
    let mut serializer = serde_json::Serializer::with_formatter(out, Bounded::default());
    serde::Serialize::serialize(value, &mut serializer).map_err(|_| TooDeep)
}

/// Serializes `value` as compact JSON text (see [`to_json_vec`]).
pub fn to_json_string(value: &Value) -> Result<String, TooDeep> {
    // serde_json writes valid UTF-8.
    to_json_vec(value).map(|bytes| String::from_utf8(bytes).unwrap_or_default())
}

/// Whether `value` nests within [`VALUE_DEPTH`], found without recursing past it.
pub fn check(value: &Value) -> Result<(), TooDeep> {
    fn within(value: &Value, left: usize) -> bool {
        match value {
            Value::Array(items) => left > 0 && items.iter().all(|v| within(v, left - 1)),
            Value::Object(map) => left > 0 && map.values().all(|v| within(v, left - 1)),
            _ => true,
        }
    }
    within(value, VALUE_DEPTH).then_some(()).ok_or(TooDeep)
}

/// Starts a named thread with [`THREAD_STACK_BYTES`] of stack.
pub fn spawn<T: Send + 'static>(
    name: impl Into<String>,
    body: impl FnOnce() -> T + Send + 'static,
) -> io::Result<std::thread::JoinHandle<T>> {
    std::thread::Builder::new()
        .name(name.into())
        .stack_size(THREAD_STACK_BYTES)
        .spawn(body)
}

/// Appends `value` as compact JSON text already escaped as a JSON string literal (quotes
/// included) to `out`, in one pass: what escaping [`to_json_vec`]'s text gives, without the
/// second scan over it. Returns the length of the text before escaping (AWS's payload quota
/// counts that). On [`TooDeep`], `out` holds part of the text.
pub fn write_json_escaped(value: &Value, out: &mut Vec<u8>) -> Result<usize, TooDeep> {
    let start = out.len();
    out.push(b'"');
    let added = std::cell::Cell::new(0);
    let formatter = Escaped {
        bounded: Bounded::default(),
        added: &added,
    };
    let mut serializer = serde_json::Serializer::with_formatter(&mut *out, formatter);
    serde::Serialize::serialize(value, &mut serializer).map_err(|_| TooDeep)?;
    out.push(b'"');
    Ok(out.len() - start - 2 - added.get())
}

/// [`Bounded`], writing each string's quotes and escapes escaped once more: serde_json writes
/// a string's text between its escapes as fragments that need none (no quote, backslash or
/// control character), so only what the formatter itself writes changes.
struct Escaped<'a> {
    bounded: Bounded,
    /// Bytes written beyond the unescaped text.
    added: &'a std::cell::Cell<usize>,
}

impl Escaped<'_> {
    /// Writes `raw` as a JSON string's content (see [`escape_of`]).
    fn write_escaped<W: ?Sized + io::Write>(&self, writer: &mut W, raw: &[u8]) -> io::Result<()> {
        let mut added = 0;
        let mut buf = [0u8; 6];
        for &b in raw {
            if needs_escape(b) {
                let escape = escape_of(b, &mut buf);
                writer.write_all(escape.as_bytes())?;
                added += escape.len() - 1;
            } else {
                writer.write_all(&[b])?;
            }
        }
        self.added.set(self.added.get() + added);
        Ok(())
    }
}

/// Whether a JSON string must escape byte `b`: a quote, a backslash, a control character.
#[inline]
pub fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// How a JSON string written by sfn-local escapes byte `b` (one that [`needs_escape`]):
/// `\"`, `\\`, `\n`, `\r`, `\t`, else `\u00XX`, in `buf` when it takes it. The one rule for
/// the history's details, escaped after serializing or while serializing
/// ([`write_json_escaped`]).
pub fn escape_of(b: u8, buf: &mut [u8; 6]) -> &str {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => "\\\"",
        b'\\' => "\\\\",
        b'\n' => "\\n",
        b'\r' => "\\r",
        b'\t' => "\\t",
        _ => {
            *buf = [
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 0xf) as usize],
            ];
            // ASCII, always.
            std::str::from_utf8(buf).unwrap_or_default()
        }
    }
}

impl serde_json::ser::Formatter for Escaped<'_> {
    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.bounded.begin_array(writer)
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.bounded.end_array(writer)
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.bounded.begin_object(writer)
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.bounded.end_object(writer)
    }

    fn begin_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.write_escaped(writer, b"\"")
    }

    fn end_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.write_escaped(writer, b"\"")
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        char_escape: serde_json::ser::CharEscape,
    ) -> io::Result<()> {
        // At most `\u00XX`: the compact formatter's escape, escaped again.
        let mut raw = [0u8; 6];
        let mut cursor = &mut raw[..];
        serde_json::ser::CompactFormatter.write_char_escape(&mut cursor, char_escape)?;
        let len = 6 - cursor.len();
        self.write_escaped(writer, &raw[..len])
    }

    fn write_raw_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // Not written for a `Value` (no raw values in one); escaped whole if it ever is.
        self.write_escaped(writer, fragment.as_bytes())
    }
}

/// serde_json's compact formatter that counts open arrays and objects and refuses the one past
/// [`VALUE_DEPTH`].
#[derive(Default)]
struct Bounded {
    depth: usize,
}

impl Bounded {
    fn open(&mut self) -> io::Result<()> {
        self.depth += 1;
        if self.depth > VALUE_DEPTH {
            return Err(io::Error::other(TooDeep));
        }
        Ok(())
    }
}

impl serde_json::ser::Formatter for Bounded {
    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open()?;
        writer.write_all(b"[")
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.depth -= 1;
        writer.write_all(b"]")
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open()?;
        writer.write_all(b"{")
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.depth -= 1;
        writer.write_all(b"}")
    }
}

/// Takes `value` apart without recursion: dropping a value nested deeper than any budget (as a
/// hostile intermediate could be) must not overflow the stack either.
pub fn drop_flat(value: Value) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> Value {
        let mut v = Value::Null;
        for i in 0..levels {
            v = if i % 2 == 0 {
                Value::Array(vec![v])
            } else {
                // Not json!: it would copy `v` through the serializer, recursively.
                Value::Object(serde_json::Map::from_iter([("a".to_owned(), v)]))
            };
        }
        v
    }

    #[test]
    fn what_is_written_reads_back_and_the_next_level_is_refused_both_ways() {
        let deepest = to_json_string(&nested(VALUE_DEPTH)).unwrap();
        assert!(serde_json::from_str::<Value>(&deepest).is_ok());
        assert!(check(&nested(VALUE_DEPTH)).is_ok());
        let over = nested(VALUE_DEPTH + 1);
        assert_eq!(to_json_vec(&over), Err(TooDeep));
        assert_eq!(check(&over), Err(TooDeep));
        let text = format!(
            "{}null{}",
            "[".repeat(VALUE_DEPTH + 1),
            "]".repeat(VALUE_DEPTH + 1)
        );
        assert!(serde_json::from_str::<Value>(&text).is_err());
    }

    #[test]
    fn writes_what_serde_json_writes() {
        let v = serde_json::json!({"a": [1, 2.5, "x\"y", null, {"b": true}], "c": {}});
        assert_eq!(to_json_string(&v).unwrap(), v.to_string());
    }

    #[test]
    fn a_value_far_past_every_budget_is_refused_and_dropped_without_overflow() {
        // Built level by level: no recursion until something walks it.
        let v = nested(1_000_000);
        assert_eq!(to_json_vec(&v), Err(TooDeep));
        assert_eq!(check(&v), Err(TooDeep));
        drop_flat(v);
    }

    /// The deepest input each budget lets through, on a thread with an eighth of the stack
    /// sfn-local's threads have (and a quarter of a main thread's 8 MiB), in a debug build.
    #[test]
    fn every_budget_fits_an_eighth_of_the_stack() {
        let run = std::thread::Builder::new()
            .stack_size(THREAD_STACK_BYTES / 8)
            .spawn(deepest_inputs)
            .unwrap();
        run.join().expect("the deepest inputs fit the stack");
    }

    fn deepest_inputs() {
        // A definition at the nesting limit, a filter at its own, Choice rules nested inside.
        let filter = format!(
            "$.a[?({}@.b == 1{})]",
            "(".repeat(FILTER_DEPTH - 1),
            ")".repeat(FILTER_DEPTH - 1)
        );
        let mut rule = serde_json::json!({"Variable": "$.x", "IsPresent": true});
        for _ in 0..100 {
            rule = serde_json::json!({ "Not": rule });
        }
        let mut parameters = serde_json::json!({ "x.$": filter });
        for _ in 0..110 {
            parameters = serde_json::json!({ "a": parameters });
        }
        let definition = serde_json::json!({"StartAt": "P", "States": {
            "P": {"Type": "Pass", "Parameters": parameters, "Next": "C"},
            "C": {"Type": "Choice", "Choices": [{"And": [rule], "Next": "P"}], "Default": "E"},
            "E": {"Type": "Succeed"}}});
        let text = definition.to_string();
        let diagnostics = crate::asl::validate_text(&text, Default::default());
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        // YAML at the reader's limit is refused, not overflowed.
        let yaml = format!("a: {}{}", "[".repeat(300), "]".repeat(300));
        assert!(crate::asl::yaml::parse(&yaml).is_err());
        // Values three budgets deep (an input, a template and a ResultPath in one state).
        let value = nested(3 * VALUE_DEPTH);
        let copy = value.clone();
        assert_eq!(copy, value);
        assert!(!value.to_string().is_empty());
        drop((copy, value));
        // JSONata at its own limit.
        let expression = format!("{}1{}", "(".repeat(990), ")".repeat(990));
        assert!(crate::asl::jsonata::compile_query(&expression).is_ok());
    }
}
