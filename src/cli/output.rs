//! How the read commands print: one `--format` vocabulary (`json` for scripts, `text` for
//! people, `table` for rows), and the AWS CLI's own spellings, `--output json|text|table` and
//! `--query JMESPATH`, so commands copied from AWS CLI habits work unchanged.

use clap::{Args, ValueEnum};
use serde_json::Value;

/// The output formats, the same words in every command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// AWS's response shape, as JSON.
    Json,
    /// For people: a readable summary.
    Text,
    /// One row per item, in aligned columns.
    Table,
}

/// The AWS CLI's `--output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AwsOutput {
    /// JSON, pretty-printed.
    Json,
    /// Tab-separated values, as the AWS CLI's text output.
    Text,
    /// An aligned table.
    Table,
}

/// `--format`, `--output`, `--query` of a read command.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// json (AWS's response), text (a summary for people) or table (one row per item).
    #[arg(long, value_enum, conflicts_with = "output")]
    pub format: Option<Format>,
    /// The AWS CLI's spelling: json, text (tab-separated) or table; applies after --query.
    #[arg(long, value_enum)]
    pub output: Option<AwsOutput>,
    /// A JMESPath expression applied to the response, as the AWS CLI's --query.
    #[arg(long, value_name = "JMESPATH")]
    pub query: Option<String>,
}

impl OutputArgs {
    /// Whether the response is printed as the AWS CLI would (JSON unless `--format` chose a
    /// view for people).
    pub fn wants_response(&self) -> bool {
        self.query.is_some()
            || self.output.is_some()
            || matches!(self.format, None | Some(Format::Json))
    }

    /// Prints an AWS response after `--query`, in `--output`'s form; a bad expression is an
    /// error that says why.
    pub fn print_response(&self, response: &Value) -> Result<(), String> {
        let value = match &self.query {
            None => response.clone(),
            Some(q) => query(q, response)?,
        };
        let text = match self.output.unwrap_or(AwsOutput::Json) {
            AwsOutput::Json => serde_json::to_string_pretty(&value).unwrap_or_default(),
            AwsOutput::Text => {
                let mut lines = Vec::new();
                text_lines(&value, &mut lines);
                lines.join("\n")
            }
            AwsOutput::Table => table(&value),
        };
        outln!("{text}");
        Ok(())
    }
}

/// Applies a JMESPath expression.
pub fn query(expression: &str, value: &Value) -> Result<Value, String> {
    let compiled = jmespath::compile(expression)
        .map_err(|e| format!("--query {expression:?} is not JMESPath: {e}"))?;
    let data = jmespath::Variable::try_from(value.clone()).map_err(|e| e.to_string())?;
    let result = compiled
        .search(data)
        .map_err(|e| format!("--query {expression:?}: {e}"))?;
    serde_json::to_value(&*result).map_err(|e| e.to_string())
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::Null => Some("None".into()),
        Value::String(s) => Some(s.clone()),
        Value::Bool(_) | Value::Number(_) => Some(v.to_string()),
        _ => None,
    }
}

/// The AWS CLI's text output: an object's scalars on one line (tab-separated), its nested
/// lists and objects on lines of their own; a list's scalars tab-separated, its objects one per
/// line.
fn text_lines(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            let scalars: Vec<String> = m.values().filter_map(scalar).collect();
            if !scalars.is_empty() {
                out.push(scalars.join("\t"));
            }
            for (k, nested) in m {
                if scalar(nested).is_none() {
                    let mut inner = Vec::new();
                    text_lines(nested, &mut inner);
                    for l in inner {
                        out.push(format!("{}\t{l}", k.to_uppercase()));
                    }
                }
            }
        }
        Value::Array(items) => {
            if items.iter().all(|i| scalar(i).is_some()) {
                out.push(
                    items
                        .iter()
                        .filter_map(scalar)
                        .collect::<Vec<_>>()
                        .join("\t"),
                );
            } else {
                for i in items {
                    text_lines(i, out);
                }
            }
        }
        other => out.extend(scalar(other)),
    }
}

/// An aligned table: a list of objects gets a column per key (of the first objects' keys), an
/// object a row per key; a response holding one list (`{"events": [...]}`) shows the list.
pub fn table(v: &Value) -> String {
    let v = match v {
        Value::Object(m) if m.len() == 1 && m.values().all(Value::is_array) => {
            m.values().next().unwrap_or(v)
        }
        _ => v,
    };
    let cell = |v: &Value| scalar(v).unwrap_or_else(|| v.to_string());
    let rows: Vec<Vec<String>> = match v {
        Value::Array(items) if items.iter().all(Value::is_object) => {
            let mut keys: Vec<&String> = Vec::new();
            for i in items {
                for k in i.as_object().into_iter().flat_map(|m| m.keys()) {
                    if !keys.contains(&k) {
                        keys.push(k);
                    }
                }
            }
            let mut rows = vec![keys.iter().map(|k| k.to_string()).collect::<Vec<_>>()];
            for i in items {
                rows.push(
                    keys.iter()
                        .map(|k| i.get(k.as_str()).map(cell).unwrap_or_default())
                        .collect(),
                );
            }
            rows
        }
        Value::Array(items) => items.iter().map(|i| vec![cell(i)]).collect(),
        Value::Object(m) => m.iter().map(|(k, v)| vec![k.clone(), cell(v)]).collect(),
        other => vec![vec![cell(other)]],
    };
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|r| {
            r.iter()
                .zip(&widths)
                .map(|(s, w)| format!("{s:<w$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn queries_and_text_output_read_like_the_aws_cli() {
        let v = json!({"executions": [{"name": "a", "status": "FAILED"}, {"name": "b", "status": "SUCCEEDED"}]});
        assert_eq!(
            query("executions[?status=='FAILED'].name", &v).unwrap(),
            json!(["a"])
        );
        assert!(query("executions[", &v).is_err());
        let mut lines = Vec::new();
        text_lines(&json!({"status": "FAILED", "name": "a"}), &mut lines);
        assert_eq!(lines, ["FAILED\ta"]);
        assert!(table(&v).starts_with("name  status\na     FAILED"));
    }
}
