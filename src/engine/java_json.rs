//! JSON text as AWS Step Functions Local (a Java program) writes it into its histories, for
//! `serve --compat stepfunctions-local`: numbers with a fraction or an exponent in the form of
//! Java's `Double.toString` (`1.2647535E-4`, `1.0E7`, `100.0`), integers as written, and the
//! members of every object in the order a `java.util.HashMap` created with the default
//! capacity iterates them after the members were put in document order.
//!
//! Both rules come from the JDK's specification, not from Step Functions Local's (closed)
//! source:
//!
//! - `Double.toString(d)`: for 10⁻³ ≤ |d| < 10⁷ the plain decimal form, with at least one digit
//!   after the point; otherwise computerized scientific notation, `d.dddE±n`, again with at
//!   least one digit after the point. The digits are the fewest that identify the double
//!   (the JDK's specification since Java 19; Rust's shortest formatting gives the same).
//! - `HashMap`: a key's bucket is `(n - 1) & (h ^ (h >>> 16))` where `h` is `String.hashCode`
//!   (`s[0]·31^(k-1) + … + s[k-1]` over UTF-16 code units, wrapping) and `n` the table size: 16
//!   at first, doubled when the size exceeds three quarters of it, and doubled as well when a
//!   bucket reaches 9 entries while the table is smaller than 64 (instead of turning the
//!   bucket into a tree). Iteration walks the buckets in index order, each bucket's entries in
//!   the order they were put (a resize splits a bucket keeping that order). A bucket turned
//!   into a tree (9 colliding keys in a table of 64 or more) is walked in insertion order
//!   here, which Java does not promise; no JSON seen in practice gets there.
//!
//! `tests/compat_sfl.rs` checks both against the JDK itself (`java`/`javac` when installed),
//! and against hand-computed orders otherwise.

use serde_json::{Map, Value};

/// Java's `String.hashCode`.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// `HashMap.hash`: the hash code with its high half folded into the low half.
fn spread(h: i32) -> u32 {
    let h = h as u32;
    h ^ (h >> 16)
}

/// The order in which a `HashMap<String, _>` built with `new HashMap<>()` and filled with
/// `keys` (distinct, in this order) iterates them: indices into `keys`.
pub fn hashmap_order<S: AsRef<str>>(keys: &[S]) -> Vec<usize> {
    const TREEIFY_THRESHOLD: usize = 8;
    const MIN_TREEIFY_CAPACITY: usize = 64;
    let hashes: Vec<u32> = keys
        .iter()
        .map(|k| spread(java_string_hash(k.as_ref())))
        .collect();
    let mut capacity = 16usize;
    let mut table: Vec<Vec<usize>> = vec![Vec::new(); capacity];
    let resize = |table: &mut Vec<Vec<usize>>, capacity: &mut usize| {
        let old = *capacity;
        *capacity = old * 2;
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); *capacity];
        for (j, bucket) in table.iter().enumerate() {
            for &i in bucket {
                // Entries keep their order: the low list stays at j, the high one moves to
                // j + old.
                let to = if hashes[i] as usize & old == 0 {
                    j
                } else {
                    j + old
                };
                next[to].push(i);
            }
        }
        *table = next;
    };
    for (i, &hash) in hashes.iter().enumerate() {
        let b = hash as usize & (capacity - 1);
        let before = table[b].len();
        table[b].push(i);
        // putVal: a chain that had TREEIFY_THRESHOLD entries gets treeified, or the table
        // resized while it is small.
        if before >= TREEIFY_THRESHOLD && capacity < MIN_TREEIFY_CAPACITY {
            resize(&mut table, &mut capacity);
        }
        // ++size > threshold (0.75 of the capacity).
        if i + 1 > capacity / 4 * 3 {
            resize(&mut table, &mut capacity);
        }
    }
    table.into_iter().flatten().collect()
}

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
    let keys: Vec<&String> = members.keys().collect();
    out.push('{');
    for (n, i) in hashmap_order(&keys).into_iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(keys[i].clone()).to_string());
        out.push(':');
        write(&members[keys[i].as_str()], out);
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
    fn string_hash_codes_are_java_s() {
        // "Aa" and "BB" collide in Java (2112); "" hashes to 0.
        assert_eq!(java_string_hash("Aa"), 2112);
        assert_eq!(java_string_hash("BB"), 2112);
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("hello"), 99162322);
        // Wrapping: "polygenelubricants" hashes to i32::MIN.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
    }

    #[test]
    fn small_maps_iterate_by_bucket() {
        // "a".."e" hash to 97..101: buckets 1..5 of 16, whatever the insertion order.
        let keys = ["e", "c", "a", "d", "b"];
        let order: Vec<&str> = hashmap_order(&keys).iter().map(|&i| keys[i]).collect();
        assert_eq!(order, ["a", "b", "c", "d", "e"]);
        // Colliding keys keep their insertion order within the bucket.
        let keys = ["BB", "Aa"];
        let order: Vec<&str> = hashmap_order(&keys).iter().map(|&i| keys[i]).collect();
        assert_eq!(order, ["BB", "Aa"]);
    }

    #[test]
    fn integers_stay_and_objects_follow_the_hashmap() {
        let v: Value = serde_json::from_str(r#"{"z": 1, "a": 1.0E7, "m": [0.5, 3]}"#).unwrap();
        // "z" = 122 -> bucket 10, "a" = 97 -> 1, "m" = 109 -> 13.
        assert_eq!(to_java_json(&v), r#"{"a":1.0E7,"z":1,"m":[0.5,3]}"#);
    }
}
