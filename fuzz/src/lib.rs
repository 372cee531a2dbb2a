//! What the fuzz targets share: splitting one fuzz input into a text and a JSON value, and
//! building arbitrary JSON values when the bytes are not JSON text.
//!
//! Inputs of the evaluator targets are `TEXT \0 JSON`: the seeds (built by `fuzz/seeds.py` from
//! the conformance corpus and the fixtures) are real paths, expressions and documents, and
//! libFuzzer mutates both halves. When the second half is not JSON text its bytes drive
//! [`arbitrary_json`], so every input still reaches the evaluator with some document.

use arbitrary::Unstructured;
use serde_json::{Map, Value};
use sfn_local::asl::{
    load_text, LoadOptions, LoadedDefinition, MachineType, SourceFormat, Substitutions, Unresolved,
};

/// Deepest arbitrary value built: AWS's payloads are shallow, and the evaluators' own depth
/// limits are covered by the JSON text half.
const MAX_DEPTH: usize = 6;

/// Splits `data` at its first NUL: the first part as UTF-8 text (`None` when it is not), the
/// second as a JSON value (parsed, else built from its bytes).
pub fn text_and_value(data: &[u8]) -> Option<(&str, Value)> {
    let (head, tail) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let text = std::str::from_utf8(head).ok()?;
    Some((text, value_from(tail)))
}

/// Splits `data` at its first NUL into two JSON values (each parsed, else built).
pub fn two_values(data: &[u8]) -> (Value, Value) {
    let (head, tail) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    (value_from(head), value_from(tail))
}

/// The JSON text in `bytes`, else a value built from them.
pub fn value_from(bytes: &[u8]) -> Value {
    match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(_) => arbitrary_json(&mut Unstructured::new(bytes), 0).unwrap_or(Value::Null),
    }
}

/// A JSON value read from unstructured bytes, with the keys and strings that ASL documents use
/// often enough to be found.
pub fn arbitrary_json(u: &mut Unstructured<'_>, depth: usize) -> arbitrary::Result<Value> {
    const KEYS: &[&str] = &[
        "a", "b", "items", "Payload", "Variable", "input", "x", "0", "", "$", "id", "value",
    ];
    let kind = if depth >= MAX_DEPTH {
        u.int_in_range(0..=4)?
    } else {
        u.int_in_range(0..=6)?
    };
    Ok(match kind {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::from(u.arbitrary::<i64>()?),
        3 => serde_json::Number::from_f64(u.arbitrary()?)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        4 => Value::String(u.arbitrary()?),
        5 => {
            let n = u.int_in_range(0..=4)?;
            Value::Array(
                (0..n)
                    .map(|_| arbitrary_json(u, depth + 1))
                    .collect::<arbitrary::Result<_>>()?,
            )
        }
        _ => {
            let n = u.int_in_range(0..=4)?;
            let mut m = Map::new();
            for _ in 0..n {
                let key = if u.arbitrary()? {
                    KEYS[u.choose_index(KEYS.len())?].to_owned()
                } else {
                    u.arbitrary()?
                };
                m.insert(key, arbitrary_json(u, depth + 1)?);
            }
            Value::Object(m)
        }
    })
}

/// The context object (`$$`) of a running state, as the engine builds it.
pub fn context() -> Value {
    serde_json::json!({
        "Execution": {
            "Id": "arn:aws:states:us-east-1:123456789012:execution:M:e",
            "Input": {"a": 1},
            "Name": "e",
            "RoleArn": "arn:aws:iam::123456789012:role/r",
            "StartTime": "2024-01-01T00:00:00.000Z"
        },
        "State": {"EnteredTime": "2024-01-01T00:00:00.000Z", "Name": "S", "RetryCount": 0},
        "StateMachine": {"Id": "arn:aws:states:us-east-1:123456789012:stateMachine:M", "Name": "M"},
        "Task": {"Token": "tok"},
        "Map": {"Item": {"Index": 0, "Value": {"a": 1}}}
    })
}

/// Variables in scope, so `$name` paths and JSONata variables resolve.
pub fn variables(value: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("x".into(), value.clone());
    m.insert("n".into(), Value::from(3));
    m.insert("s".into(), Value::from("text"));
    m
}

/// A STANDARD definition loaded as `validate` loads a file: no substitutions given, placeholders
/// stood in for.
pub fn load_standard(text: &str, format: SourceFormat) -> LoadedDefinition {
    load_text(
        text,
        format,
        LoadOptions {
            machine_type: MachineType::Standard,
            substitutions: &Substitutions::new(),
            unresolved: Unresolved::StandIn,
        },
    )
}

/// The one execution the engine targets run: its ARN, names and start time.
pub fn execution_info() -> sfn_local::engine::context::ExecutionInfo {
    sfn_local::engine::context::ExecutionInfo::new(
        "us-east-1",
        "123456789012",
        "M",
        "e",
        None,
        1_700_000_000_000,
    )
}
