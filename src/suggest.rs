//! "Did you mean": the closest known name to a misspelled one, and strict key checks for the
//! JSON files users write by hand (test specs, mock configs), so a typo is an error that names
//! the key instead of a setting silently ignored.

use serde_json::{Map, Value};

/// The candidate closest to `word`, when it is close enough to be a likely typo (a case
/// difference, or a small edit distance for the word's length).
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = word.to_lowercase();
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        if c == word {
            continue;
        }
        let score = if c.to_lowercase() == lower {
            1.0
        } else {
            strsim::jaro_winkler(&lower, &c.to_lowercase())
        };
        if score >= 0.8 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c)
}

/// ` (did you mean "X"?)`, or nothing when no candidate is close.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, candidates)
        .map(|c| format!(" (did you mean \"{c}\"?)"))
        .unwrap_or_default()
}

/// Refuses a key of `obj` that is not in `allowed`, naming the key, where it is (`place`, such
/// as `case "paid order"`), the closest allowed key and the allowed keys.
pub fn check_keys(obj: &Map<String, Value>, allowed: &[&str], place: &str) -> Result<(), String> {
    for key in obj.keys() {
        if !allowed.contains(&key.as_str()) {
            let hint = did_you_mean(key, allowed.iter().copied());
            return Err(format!(
                "{place}: unknown key \"{key}\"{hint}; the keys are {}",
                allowed
                    .iter()
                    .map(|k| format!("\"{k}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_names() {
        let keys = ["status", "output", "outputContains", "testCase", "cases"];
        assert_eq!(closest("Status", keys), Some("status"));
        assert_eq!(closest("outputcontains", keys), Some("outputContains"));
        assert_eq!(closest("testcase", keys), Some("testCase"));
        assert_eq!(closest("zebra", keys), None);
        assert_eq!(
            did_you_mean("Chrage", ["Charge", "Ship"]),
            " (did you mean \"Charge\"?)"
        );
    }
}
