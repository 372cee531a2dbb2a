//! A distributed Map's `ItemReader`, `ItemBatcher` and `ResultWriter`, as written in the
//! definition (kept raw on the model), resolved against the state's effective input. The
//! reading and writing itself is the local S3's (`crate::tasks::s3`).

use crate::asl::diagnostic::{Diagnostics, JsonPointer};
use crate::asl::error::names;
use crate::asl::jsonata::JsonataTemplate;
use crate::asl::model::{Map, QueryLanguage};
use crate::asl::path::Path;
use crate::asl::template::Template;
use crate::engine::execution::{Engine, Failed, StateCx, StatesData};
use crate::tasks::s3::{ReaderRequest, WriterRequest};
use serde_json::{json, Value};

/// AWS's default and largest batch size in bytes (256 KiB).
const MAX_BATCH_BYTES: usize = 256 * 1024;

/// How a distributed Map groups its items (`ItemBatcher`).
pub(crate) struct Batcher {
    max_items: usize,
    max_bytes: usize,
    batch_input: Option<Value>,
}

impl Batcher {
    /// Groups `items` into `{"BatchInput": …, "Items": […]}` batches.
    pub(crate) fn batch(&self, items: Vec<Value>) -> Vec<Value> {
        let mut batches = Vec::new();
        let mut current: Vec<Value> = Vec::new();
        let mut bytes = 2usize;
        let finish = |current: Vec<Value>| {
            let mut b = serde_json::Map::new();
            if let Some(bi) = &self.batch_input {
                b.insert("BatchInput".into(), bi.clone());
            }
            b.insert("Items".into(), Value::Array(current));
            Value::Object(b)
        };
        for item in items {
            let size = item.to_string().len() + 1;
            if !current.is_empty()
                && (current.len() >= self.max_items || bytes + size > self.max_bytes)
            {
                batches.push(finish(std::mem::take(&mut current)));
                bytes = 2;
            }
            bytes += size;
            current.push(item);
        }
        if !current.is_empty() {
            batches.push(finish(current));
        }
        batches
    }
}

impl Engine {
    /// `Parameters` (JSONPath) or `Arguments` (JSONata) of a reader or writer, evaluated.
    async fn s3_arguments(
        &self,
        cx: &StateCx<'_>,
        raw: &Value,
        effective: &Value,
    ) -> Result<Value, Failed> {
        let mut diags = Diagnostics::default();
        let at = JsonPointer::root();
        if cx.state.query_language == QueryLanguage::Jsonata {
            let Some(args) = raw.get("Arguments") else {
                return Ok(json!({}));
            };
            let t = JsonataTemplate::compile(args, &at, &mut diags);
            let data = StatesData::input(effective);
            return self.jsonata(cx, &t, "Arguments", data).await;
        }
        let Some(params) = raw.get("Parameters") else {
            return Ok(json!({}));
        };
        let t = Template::compile(params, &at, &mut diags);
        self.template(cx, &t, effective, "Parameters", |_| {})
    }

    /// An integer field written as a literal, a JSONata expression or a `<name>Path`.
    async fn s3_integer(
        &self,
        cx: &StateCx<'_>,
        raw: &Value,
        name: &str,
        effective: &Value,
    ) -> Result<Option<i64>, Failed> {
        match raw.get(name) {
            Some(Value::String(s)) if JsonataTemplate::is_expression(s) => {
                let mut diags = Diagnostics::default();
                let t = JsonataTemplate::compile(&raw[name], &JsonPointer::root(), &mut diags);
                let n = self.jsonata_number(cx, &t, name, effective).await?;
                return Ok(Some(n as i64));
            }
            Some(v) => return Ok(v.as_i64()),
            None => {}
        }
        let path_field = format!("{name}Path");
        let Some(text) = raw.get(&path_field).and_then(Value::as_str) else {
            return Ok(None);
        };
        let path = Path::parse_reference(text).map_err(|e| {
            self.state_error(
                cx,
                names::RUNTIME,
                &format!("Invalid {path_field} '{text}': {e:?}"),
            )
        })?;
        let v = self.required_path(cx, &path, effective)?;
        let n = v
            .as_i64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()));
        match n {
            Some(n) => Ok(Some(n)),
            None => {
                let shown = match &v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                Err(self.state_error(
                    cx,
                    names::RUNTIME,
                    &format!(
                        "The {path_field} field refers to value \"{shown}\" which is not a valid integer: {text}"
                    ),
                ))
            }
        }
    }

    /// The Map's `ItemReader`, resolved; `None` without one.
    pub(crate) async fn reader_request(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        effective: &Value,
    ) -> Result<Option<ReaderRequest>, Failed> {
        let Some(raw) = &m.item_reader else {
            return Ok(None);
        };
        let config = raw.get("ReaderConfig").cloned().unwrap_or(json!({}));
        let text = |k: &str| config.get(k).and_then(Value::as_str).map(str::to_owned);
        let max_items = self.s3_integer(cx, &config, "MaxItems", effective).await?;
        Ok(Some(ReaderRequest {
            resource: raw
                .get("Resource")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            arguments: self.s3_arguments(cx, raw, effective).await?,
            input_type: text("InputType"),
            csv_delimiter: text("CSVDelimiter"),
            csv_header_location: text("CSVHeaderLocation"),
            csv_headers: config.get("CSVHeaders").and_then(Value::as_array).map(|a| {
                a.iter()
                    .map(|h| {
                        h.as_str()
                            .map(str::to_owned)
                            .unwrap_or_else(|| h.to_string())
                    })
                    .collect()
            }),
            max_items,
            items_pointer: text("ItemsPointer"),
        }))
    }

    /// The Map's `ResultWriter`, resolved; `None` without one.
    pub(crate) async fn writer_request(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        effective: &Value,
    ) -> Result<Option<WriterRequest>, Failed> {
        let Some(raw) = &m.result_writer else {
            return Ok(None);
        };
        let config = raw.get("WriterConfig").cloned().unwrap_or(json!({}));
        let text = |k: &str| config.get(k).and_then(Value::as_str).map(str::to_owned);
        Ok(Some(WriterRequest {
            arguments: self.s3_arguments(cx, raw, effective).await?,
            resource: raw
                .get("Resource")
                .and_then(Value::as_str)
                .map(str::to_owned),
            transformation: text("Transformation"),
            output_type: text("OutputType"),
        }))
    }

    /// The Map's `ItemBatcher`, resolved; `None` without one.
    pub(crate) async fn batcher(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        effective: &Value,
    ) -> Result<Option<Batcher>, Failed> {
        let Some(raw) = &m.item_batcher else {
            return Ok(None);
        };
        let positive = |n: Option<i64>| n.filter(|n| *n > 0).map(|n| n as usize);
        let max_items = positive(
            self.s3_integer(cx, raw, "MaxItemsPerBatch", effective)
                .await?,
        )
        .unwrap_or(usize::MAX);
        let max_bytes = positive(
            self.s3_integer(cx, raw, "MaxInputBytesPerBatch", effective)
                .await?,
        )
        .unwrap_or(MAX_BATCH_BYTES)
        .min(MAX_BATCH_BYTES);
        let batch_input = match raw.get("BatchInput") {
            None => None,
            Some(bi) => {
                let mut diags = Diagnostics::default();
                let at = JsonPointer::root();
                if cx.state.query_language == QueryLanguage::Jsonata {
                    let t = JsonataTemplate::compile(bi, &at, &mut diags);
                    let data = StatesData::input(effective);
                    Some(self.jsonata(cx, &t, "BatchInput", data).await?)
                } else {
                    let t = Template::compile(bi, &at, &mut diags);
                    Some(self.template(cx, &t, effective, "BatchInput", |_| {})?)
                }
            }
        };
        Ok(Some(Batcher {
            max_items,
            max_bytes,
            batch_input,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::Batcher;
    use serde_json::json;

    #[test]
    fn batches_respect_the_item_and_byte_limits() {
        let b = Batcher {
            max_items: 2,
            max_bytes: usize::MAX,
            batch_input: Some(json!({"k": 1})),
        };
        let out = b.batch(vec![json!(1), json!(2), json!(3)]);
        assert_eq!(
            json!(out),
            json!([{"BatchInput": {"k": 1}, "Items": [1, 2]}, {"BatchInput": {"k": 1}, "Items": [3]}])
        );
        let b = Batcher {
            max_items: usize::MAX,
            max_bytes: 8,
            batch_input: None,
        };
        let out = b.batch(vec![json!("aaa"), json!("bbb"), json!("c")]);
        assert_eq!(
            json!(out),
            json!([{"Items": ["aaa"]}, {"Items": ["bbb"]}, {"Items": ["c"]}])
        );
    }
}
