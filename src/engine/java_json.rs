//! JSON text as AWS Step Functions Local (a Java program) writes it into its histories, for
//! `serve --compat stepfunctions-local`: numbers with a fraction or an exponent in the form of
//! Java's `Double.toString` (`1.2647535E-4`, `1.0E7`, `100.0`), integers as written, and the
//! members of every object in the order they already have. The emulator's histories keep the
//! order of the text a value came from (issue #50, rule 1: an input's `street, city, state,
//! zip`, a mock's `StatusCode, Payload`), so this writer reorders nothing; the one place Java's
//! `HashMap` order shows is where `Parameters` and `ResultSelector` build their `.$` members
//! (`asl::java_hashmap`, applied when the template is compiled).
//!
//! `Double.toString(d)`, from the JDK's specification: for 10⁻³ ≤ |d| < 10⁷ the plain decimal
//! form, with at least one digit after the point; otherwise computerized scientific notation,
//! `d.dddE±n`, again with at least one digit after the point. The digits are the fewest that
//! identify the double (the JDK's specification since Java 19; Rust's shortest formatting
//! gives the same). `tests/compat_sfl.rs` checks it against the JDK itself (`java`/`javac` when
//! installed), and against the JDK's committed answers otherwise.

use serde_json::{Map, Value};

/// Java's `Double.toString(d)` for a finite double.
pub fn java_double(d: f64) -> String {
    if d == 0.0 {
        return if d.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    // Rust's shortest round-trip digits: `d.ddde±n`.
    let sci = format!("{:e}", d.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if d < 0.0 { "-" } else { "" };
    let abs = d.abs();
    if (1e-3..1e7).contains(&abs) {
        let (int, frac) = if exp >= 0 {
            let cut = exp as usize + 1;
            let mut int = digits.chars().take(cut).collect::<String>();
            while int.len() < cut {
                int.push('0');
            }
            (int, digits.chars().skip(cut).collect::<String>())
        } else {
            let zeros = "0".repeat((-exp - 1) as usize);
            ("0".to_owned(), format!("{zeros}{digits}"))
        };
        let frac = if frac.is_empty() {
            "0".to_owned()
        } else {
            frac
        };
        format!("{sign}{int}.{frac}")
    } else {
        let (first, rest) = digits.split_at(1);
        let rest = if rest.is_empty() { "0" } else { rest };
        format!("{sign}{first}.{rest}E{exp}")
    }
}

/// `value` as JSON text written the Java way (see the module's overview).
pub fn to_java_json(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(d) if d.is_finite() => out.push_str(&java_double(d)),
            _ => out.push_str(&n.to_string()),
        },
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => write_object(members, out),
        other => out.push_str(&other.to_string()),
    }
}

fn write_object(members: &Map<String, Value>, out: &mut String) {
    out.push('{');
    for (n, (key, value)) in members.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(key.clone()).to_string());
        out.push(':');
        write(value, out);
    }
    out.push('}');
}

/// JSON text rewritten the Java way; text that is not JSON is returned as it is.
pub fn java_json_text(text: &str) -> Option<String> {
    let value: Value = serde_json::from_str(text).ok()?;
    Some(to_java_json(&value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_java_prints_them() {
        // The JDK's own output (JavaRef in tests/compat_sfl checks the same on a JDK).
        for (d, java) in [
            (1.2647535E-4, "1.2647535E-4"),
            (1.0E7, "1.0E7"),
            (100.0, "100.0"),
            (0.001, "0.001"),
            (9999999.0, "9999999.0"),
            (123.456, "123.456"),
            (-0.5, "-0.5"),
            (0.0, "0.0"),
            (1.5e300, "1.5E300"),
            (3.0e-10, "3.0E-10"),
            (12345678.9, "1.23456789E7"),
            (0.1, "0.1"),
            (2.5, "2.5"),
        ] {
            assert_eq!(java_double(d), java, "{d}");
        }
    }

    #[test]
    fn integers_stay_and_objects_keep_their_order() {
        let v: Value = serde_json::from_str(r#"{"z": 1, "a": 1.0E7, "m": [0.5, 3]}"#).unwrap();
        assert_eq!(to_java_json(&v), r#"{"z":1,"a":1.0E7,"m":[0.5,3]}"#);
    }
}
