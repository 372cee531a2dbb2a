//! JSONata values: any JSON in a JSONata state's fields, where strings of the form `{% expr %}`
//! are expressions. The expression engine arrives with the JSONata work; until then a value is
//! kept as written and recognised, so validation can place JSONata fields correctly.

use serde_json::Value;

/// A field value in a JSONata state: JSON with `{% ... %}` expressions anywhere inside.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonataTemplate {
    raw: Value,
}

impl JsonataTemplate {
    /// Keeps a value as written.
    pub fn new(raw: Value) -> Self {
        JsonataTemplate { raw }
    }

    /// The value as written.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// Whether a string is a whole JSONata expression, `{% ... %}`.
    pub fn is_expression(s: &str) -> bool {
        let t = s.trim();
        t.len() >= 4 && t.starts_with("{%") && t.ends_with("%}")
    }

    /// Whether the value holds any expression.
    pub fn has_expressions(&self) -> bool {
        fn walk(v: &Value) -> bool {
            match v {
                Value::String(s) => JsonataTemplate::is_expression(s),
                Value::Array(a) => a.iter().any(walk),
                Value::Object(o) => o.values().any(walk),
                _ => false,
            }
        }
        walk(&self.raw)
    }
}
