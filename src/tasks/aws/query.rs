//! `aws-sdk:SERVICE:ACTION` for services spoken to with AWS's query protocol (SNS): the
//! `Parameters` flattened into a form (`Action=…&Version=…&Name=…`, lists as `Key.member.N`,
//! maps as `Key.entry.N.key`/`.value`), the XML answer's `<ActionResult>` read back as JSON
//! (lists from `member` elements, maps from `entry` elements; values as the text the service
//! wrote). Without the service's model, an object is a map when its name says
//! so (`Attributes`, `MessageAttributes`, …) and a structure otherwise.

use super::{pascal, Http, Protocol};
use crate::asl::error::StatesError;
use serde_json::{Map, Value};

/// The API version each query-protocol service expects.
fn version(service: &str) -> Option<&'static str> {
    match service {
        "sns" => Some("2010-03-31"),
        _ => None,
    }
}

/// Whether an object parameter is a map (entries) rather than a structure.
fn is_map(name: &str) -> bool {
    name.ends_with("Attributes")
}

/// Flattens `value` under `prefix` into form fields.
fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Null => {}
        Value::String(s) => out.push((prefix.to_owned(), s.clone())),
        Value::Bool(_) | Value::Number(_) => out.push((prefix.to_owned(), value.to_string())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                flatten(&format!("{prefix}.member.{}", i + 1), item, out);
            }
        }
        Value::Object(m) => {
            let last = prefix.rsplit('.').next().unwrap_or(prefix);
            if is_map(last) {
                for (i, (k, v)) in m.iter().enumerate() {
                    let entry = format!("{prefix}.entry.{}", i + 1);
                    out.push((format!("{entry}.key"), k.clone()));
                    flatten(&format!("{entry}.value"), v, out);
                }
            } else {
                for (k, v) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    flatten(&key, v, out);
                }
            }
        }
    }
}

/// An XML element as JSON: `member` children make a list, `entry` children (`key`, `value`) a
/// map, other children an object; a leaf is its text.
fn element_json(node: roxmltree::Node) -> Value {
    let children: Vec<roxmltree::Node> = node.children().filter(|n| n.is_element()).collect();
    if children.is_empty() {
        return Value::String(node.text().unwrap_or_default().to_owned());
    }
    if children.iter().all(|c| c.tag_name().name() == "member") {
        return Value::Array(children.into_iter().map(element_json).collect());
    }
    if children.iter().all(|c| c.tag_name().name() == "entry") {
        let mut map = Map::new();
        for entry in children {
            let field = |name: &str| entry.children().find(|n| n.tag_name().name() == name);
            if let Some(k) = field("key").and_then(|k| k.text()) {
                let v = field("value").map(element_json).unwrap_or(Value::Null);
                map.insert(k.to_owned(), v);
            }
        }
        return Value::Object(map);
    }
    let mut out = Map::new();
    for child in children {
        out.insert(child.tag_name().name().to_owned(), element_json(child));
    }
    Value::Object(out)
}

impl Http {
    /// `aws-sdk:SERVICE:ACTION` over the query protocol.
    pub(super) async fn query_sdk(
        &self,
        action: &str,
        params: &Value,
    ) -> Result<Value, StatesError> {
        debug_assert_eq!(self.svc.protocol, Protocol::Query);
        let Some(version) = version(self.svc.key) else {
            return Err(StatesError::runtime(format!(
                "sfn-local does not know the API version of {}",
                self.svc.key
            )));
        };
        let name = pascal(action);
        let mut form = vec![
            ("Action".to_owned(), name.clone()),
            ("Version".to_owned(), version.to_owned()),
        ];
        flatten("", params, &mut form);
        let body = form
            .iter()
            .map(|(k, v)| format!("{}={}", super::urlencode(k), super::urlencode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let headers = vec![(
            "content-type".to_owned(),
            "application/x-www-form-urlencoded; charset=utf-8".to_owned(),
        )];
        let r = self.send("POST", "/", headers, body.into_bytes()).await?;
        if r.status >= 300 {
            return Err(self.v2_error(&r));
        }
        let text = String::from_utf8_lossy(&r.body).into_owned();
        let doc = roxmltree::Document::parse(&text).map_err(|e| {
            StatesError::runtime(format!(
                "{} answered {name} with XML that does not parse: {e}",
                self.svc.key
            ))
        })?;
        let result = doc
            .root_element()
            .children()
            .find(|n| n.tag_name().name() == format!("{name}Result"));
        Ok(match result.map(element_json) {
            Some(v @ Value::Object(_)) => v,
            _ => Value::Object(Map::new()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parameters_flatten_into_query_fields() {
        let mut out = Vec::new();
        flatten(
            "",
            &json!({"Name": "t", "Attributes": {"DisplayName": "d"}, "Tags": [{"Key": "k", "Value": "v"}], "N": 2}),
            &mut out,
        );
        let text: Vec<String> = out.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(
            text,
            [
                "Name=t",
                "Attributes.entry.1.key=DisplayName",
                "Attributes.entry.1.value=d",
                "Tags.member.1.Key=k",
                "Tags.member.1.Value=v",
                "N=2"
            ]
        );
    }

    #[test]
    fn results_read_lists_and_maps() {
        let xml = "<R><Topics><member><TopicArn>a</TopicArn></member></Topics><Attributes><entry><key>k</key><value>v</value></entry></Attributes><NextToken>n</NextToken></R>";
        let doc = roxmltree::Document::parse(xml).unwrap();
        assert_eq!(
            element_json(doc.root_element()),
            json!({"Topics": [{"TopicArn": "a"}], "Attributes": {"k": "v"}, "NextToken": "n"})
        );
    }
}
