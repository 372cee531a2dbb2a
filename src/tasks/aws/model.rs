//! `aws-sdk:SERVICE:ACTION` built from AWS's service models, for services spoken to over
//! rest-json (Lambda), rest-xml (Route 53), ec2 and query (IAM, CloudWatch, SNS, STS).
//!
//! The binary embeds a compact table (`sdk_models.json.gz`, written by
//! `scripts/sdk_protocols.py` from botocore's models): per operation its HTTP method, request
//! URI and shapes; per shape what serialization reads (members and where each goes - URI,
//! query string, header, body - with its wire name, list and map element names). Whole models
//! would cost megabytes; the table costs ~150 KB. Requests are built as AWS's SDKs build them;
//! answers become the SDK v2's output, members named as in the model.

use super::{urlencode, Http, Protocol};
use crate::asl::error::StatesError;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::OnceLock;

/// One service of the table.
#[derive(Debug, Deserialize)]
pub(super) struct ServiceModel {
    protocol: String,
    version: String,
    /// Wire error codes -> the modeled error shape (the SDK v2's exception class).
    errors: HashMap<String, String>,
    ops: HashMap<String, Operation>,
    shapes: HashMap<String, Shape>,
}

/// `[method, requestUri, input, output, resultWrapper, input root element, xmlns]`.
#[derive(Debug, Deserialize)]
struct Operation(
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// `[name, shape, location, locationName, queryName, flattened]`.
#[derive(Debug, Deserialize)]
struct Member(
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    bool,
);

/// A shape as serialization reads it (`t`: `s`tructure, `l`ist, `m`ap, `S`tring, `i`nteger,
/// `f`loat, `b`oolean, `T`imestamp, `B`lob).
#[derive(Debug, Deserialize)]
struct Shape {
    t: char,
    #[serde(default)]
    m: Vec<Member>,
    p: Option<String>,
    e: Option<String>,
    n: Option<String>,
    #[serde(default)]
    f: bool,
    kn: Option<String>,
    vn: Option<String>,
    v: Option<String>,
}

static TABLE: &[u8] = include_bytes!("sdk_models.json.gz");

/// The table, read once.
fn table() -> &'static HashMap<String, ServiceModel> {
    static CELL: OnceLock<HashMap<String, ServiceModel>> = OnceLock::new();
    CELL.get_or_init(|| {
        let mut text = String::new();
        let read =
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(TABLE), &mut text);
        // The table is generated and tested; a broken one is a build defect, so it is empty.
        read.ok()
            .and_then(|_| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    })
}

/// The model of a service (`lambda`, `ec2`, …), when the table has it.
pub(super) fn model(service: &str) -> Option<&'static ServiceModel> {
    table().get(service)
}

impl ServiceModel {
    fn shape(&self, name: &str) -> Option<&Shape> {
        self.shapes.get(name)
    }

    /// The SDK v2's exception class of a wire error code, when the model has it.
    pub(super) fn error_class(&self, code: &str) -> Option<String> {
        let shape = self.errors.get(code)?;
        Some(if shape.ends_with("Exception") {
            shape.clone()
        } else {
            format!("{shape}Exception")
        })
    }
}

/// A request as the service's protocol wants it.
struct Request {
    method: String,
    path_and_query: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// A parameter's member of a structure: by its name, or with the initial's case changed (Step
/// Functions takes members with capital initials).
fn member<'a>(shape: &'a Shape, key: &str) -> Option<&'a Member> {
    shape
        .m
        .iter()
        .find(|m| m.0 == key)
        .or_else(|| shape.m.iter().find(|m| m.0.eq_ignore_ascii_case(key)))
}

/// A scalar as text on the wire.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl ServiceModel {
    /// Form fields of `value` (shape `shape`) under `prefix`, by the query protocol's rules (lists
    /// as `Name.member.N`, maps as `Name.entry.N.key`) or EC2's (lists as `Name.N`).
    fn form(&self, prefix: &str, shape: &str, value: &Value, out: &mut Vec<(String, String)>) {
        let ec2 = self.protocol == "ec2";
        let Some(s) = self.shape(shape) else {
            return out.push((prefix.to_owned(), text(value)));
        };
        let join = |k: &str| match prefix {
            "" => k.to_owned(),
            p => format!("{p}.{k}"),
        };
        match (s.t, value) {
            ('s', Value::Object(fields)) => {
                for (k, v) in fields {
                    let Some(m) = member(s, k) else { continue };
                    let name = if ec2 {
                        m.4.clone().or_else(|| m.3.as_deref().map(super::pascal))
                    } else {
                        m.3.clone()
                    };
                    let name = name.unwrap_or_else(|| m.0.clone());
                    let flat = m.5 || s.f;
                    match self.shape(&m.1) {
                        Some(l) if l.t == 'l' && (ec2 || flat || l.f) => {
                            let Value::Array(items) = v else { continue };
                            let el = l.e.as_deref().unwrap_or("String");
                            for (i, item) in items.iter().enumerate() {
                                self.form(&join(&format!("{name}.{}", i + 1)), el, item, out);
                            }
                        }
                        _ => self.form(&join(&name), &m.1, v, out),
                    }
                }
            }
            ('l', Value::Array(items)) => {
                let el = s.e.as_deref().unwrap_or("String");
                let wrap = s.n.as_deref().unwrap_or("member");
                for (i, item) in items.iter().enumerate() {
                    self.form(&format!("{prefix}.{wrap}.{}", i + 1), el, item, out);
                }
            }
            ('m', Value::Object(entries)) => {
                let (kn, vn) = (
                    s.kn.as_deref().unwrap_or("key"),
                    s.vn.as_deref().unwrap_or("value"),
                );
                let vs = s.v.as_deref().unwrap_or("String");
                for (i, (k, v)) in entries.iter().enumerate() {
                    let entry = if s.f {
                        format!("{prefix}.{}", i + 1)
                    } else {
                        format!("{prefix}.entry.{}", i + 1)
                    };
                    out.push((format!("{entry}.{kn}"), k.clone()));
                    self.form(&format!("{entry}.{vn}"), vs, v, out);
                }
            }
            (_, Value::Null) => {}
            _ => out.push((prefix.to_owned(), text(value))),
        }
    }

    /// `value` as the XML element `name` (shape `shape`), as rest-xml bodies hold it.
    fn xml(&self, name: &str, shape: &str, value: &Value, out: &mut String) {
        let s = self.shape(shape);
        out.push_str(&format!("<{name}>"));
        match (s.map(|s| s.t), value) {
            (Some('s'), Value::Object(fields)) => {
                let s = s.expect("matched");
                for (k, v) in fields {
                    let Some(m) = member(s, k) else { continue };
                    let el = m.3.clone().unwrap_or_else(|| m.0.clone());
                    self.xml_member(&el, &m.1, v, out);
                }
            }
            (Some('l'), Value::Array(items)) => {
                let s = s.expect("matched");
                let el = s.n.as_deref().unwrap_or("member");
                for item in items {
                    self.xml(el, s.e.as_deref().unwrap_or("String"), item, out);
                }
            }
            _ => out.push_str(&xml_escape(&text(value))),
        }
        out.push_str(&format!("</{name}>"));
    }

    /// A structure's member: a flattened list repeats its element, others nest.
    fn xml_member(&self, el: &str, shape: &str, v: &Value, out: &mut String) {
        match (self.shape(shape), v) {
            (Some(l), Value::Array(items)) if l.t == 'l' && l.f => {
                for item in items {
                    self.xml(el, l.e.as_deref().unwrap_or("String"), item, out);
                }
            }
            _ => self.xml(el, shape, v, out),
        }
    }
}

impl ServiceModel {
    /// The request of `op` with `params`, by the service's protocol.
    fn request(&self, action: &str, op: &Operation, params: &Value) -> Request {
        let empty = Map::new();
        let fields = params.as_object().unwrap_or(&empty);
        match self.protocol.as_str() {
            "query" | "ec2" => {
                let mut form = vec![
                    ("Action".to_owned(), action.to_owned()),
                    ("Version".to_owned(), self.version.clone()),
                ];
                if let Some(input) = &op.2 {
                    self.form("", input, params, &mut form);
                }
                let body = form
                    .iter()
                    .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
                    .collect::<Vec<_>>()
                    .join("&");
                Request {
                    method: "POST".into(),
                    path_and_query: "/".into(),
                    headers: vec![(
                        "content-type".into(),
                        "application/x-www-form-urlencoded; charset=utf-8".into(),
                    )],
                    body: body.into_bytes(),
                }
            }
            _ => self.rest_request(op, fields),
        }
    }

    /// A rest-json or rest-xml request: members to the URI, query string, headers and body.
    fn rest_request(&self, op: &Operation, fields: &Map<String, Value>) -> Request {
        let (path, fixed_query) = op.1.split_once('?').unwrap_or((&op.1, ""));
        let mut path = path.to_owned();
        let mut query: Vec<String> = fixed_query
            .split('&')
            .filter(|q| !q.is_empty())
            .map(str::to_owned)
            .collect();
        let mut headers = Vec::new();
        let mut body_fields = Map::new();
        let mut payload = None;
        let shape = op.2.as_deref().and_then(|i| self.shape(i));
        for (k, v) in fields {
            let Some(m) = shape.and_then(|s| member(s, k)) else {
                body_fields.insert(k.clone(), v.clone());
                continue;
            };
            let wire = m.3.clone().unwrap_or_else(|| m.0.clone());
            match m.2.as_deref() {
                Some("uri") => {
                    let greedy = format!("{{{wire}+}}");
                    let encoded = urlencode(&text(v));
                    path = path
                        .replace(&greedy, &encoded.replace("%2F", "/"))
                        .replace(&format!("{{{wire}}}"), &encoded);
                }
                Some("querystring") => match v {
                    Value::Array(items) => query.extend(
                        items
                            .iter()
                            .map(|i| format!("{}={}", urlencode(&wire), urlencode(&text(i)))),
                    ),
                    Value::Object(map) => query.extend(
                        map.iter()
                            .map(|(k, i)| format!("{}={}", urlencode(k), urlencode(&text(i)))),
                    ),
                    _ => query.push(format!("{}={}", urlencode(&wire), urlencode(&text(v)))),
                },
                Some("header") => headers.push((wire.to_ascii_lowercase(), text(v))),
                Some("headers") => {
                    for (k, i) in v.as_object().into_iter().flatten() {
                        headers.push((format!("{wire}{k}").to_ascii_lowercase(), text(i)));
                    }
                }
                _ if shape.and_then(|s| s.p.as_deref()) == Some(m.0.as_str()) => {
                    payload = Some((m, wire, v))
                }
                _ => {
                    body_fields.insert(wire, v.clone());
                }
            }
        }
        let xml = self.protocol == "rest-xml";
        let body = match payload {
            Some((m, wire, v)) => match self.shape(&m.1).map(|s| s.t) {
                Some('s') if xml => {
                    let mut out = String::new();
                    self.xml(&wire, &m.1, v, &mut out);
                    out.into_bytes()
                }
                Some('s') => v.to_string().into_bytes(),
                _ => text(v).into_bytes(),
            },
            None if body_fields.is_empty() => Vec::new(),
            None if xml => {
                let root = op.5.clone().or_else(|| op.2.clone()).unwrap_or_default();
                let mut out = String::new();
                self.xml(
                    &root,
                    op.2.as_deref().unwrap_or(""),
                    &Value::Object(body_fields),
                    &mut out,
                );
                if let Some(ns) = &op.6 {
                    out =
                        out.replacen(&format!("<{root}>"), &format!("<{root} xmlns=\"{ns}\">"), 1);
                }
                out.into_bytes()
            }
            None => Value::Object(body_fields).to_string().into_bytes(),
        };
        if !body.is_empty() {
            let kind = if xml {
                "application/xml"
            } else {
                "application/json"
            };
            headers.push(("content-type".into(), kind.into()));
        }
        let mut path_and_query = path;
        if !query.is_empty() {
            path_and_query.push('?');
            path_and_query.push_str(&query.join("&"));
        }
        Request {
            method: op.0.clone(),
            path_and_query,
            headers,
            body,
        }
    }
}

/// A scalar read from XML, typed by its shape.
fn scalar(t: char, s: &str) -> Value {
    match t {
        'i' => s
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or(Value::String(s.into())),
        'f' => s
            .parse::<f64>()
            .map(Value::from)
            .unwrap_or(Value::String(s.into())),
        'b' => Value::Bool(s == "true"),
        _ => Value::String(s.to_owned()),
    }
}

impl ServiceModel {
    /// An XML element as the SDK's output of shape `shape`: members by their model names.
    fn read_xml(&self, node: roxmltree::Node, shape: &str) -> Value {
        let Some(s) = self.shape(shape) else {
            return Value::String(node.text().unwrap_or_default().to_owned());
        };
        let elements = || node.children().filter(|n| n.is_element());
        match s.t {
            's' => {
                let mut out = Map::new();
                for m in &s.m {
                    // Headers and the status are read from the answer, not its body.
                    if m.2.is_some() {
                        continue;
                    }
                    let el = m.3.clone().unwrap_or_else(|| m.0.clone());
                    let flat = self.shape(&m.1).filter(|l| l.t == 'l' && (l.f || m.5));
                    if let Some(l) = flat {
                        let ty = l.e.as_deref().unwrap_or("String");
                        let items: Vec<Value> = elements()
                            .filter(|n| n.tag_name().name() == el)
                            .map(|n| self.read_xml(n, ty))
                            .collect();
                        if !items.is_empty() {
                            out.insert(m.0.clone(), Value::Array(items));
                        }
                    } else if let Some(n) = elements().find(|n| n.tag_name().name() == el) {
                        out.insert(m.0.clone(), self.read_xml(n, &m.1));
                    }
                }
                Value::Object(out)
            }
            'l' => {
                let ty = s.e.as_deref().unwrap_or("String");
                Value::Array(elements().map(|n| self.read_xml(n, ty)).collect())
            }
            'm' => {
                let (kn, vn) = (
                    s.kn.as_deref().unwrap_or("key"),
                    s.vn.as_deref().unwrap_or("value"),
                );
                let vs = s.v.as_deref().unwrap_or("String");
                let mut out = Map::new();
                for entry in elements() {
                    let field = |name: &str| entry.children().find(|n| n.tag_name().name() == name);
                    if let Some(k) = field(kn).and_then(|k| k.text()) {
                        let v = field(vn)
                            .map(|v| self.read_xml(v, vs))
                            .unwrap_or(Value::Null);
                        out.insert(k.to_owned(), v);
                    }
                }
                Value::Object(out)
            }
            t => scalar(t, node.text().unwrap_or_default()),
        }
    }

    /// The SDK's output of `op` from the answer's body and headers.
    fn output(&self, op: &Operation, r: &super::Response) -> Result<Value, String> {
        let Some(out_shape) = op.3.as_deref() else {
            return Ok(Value::Object(Map::new()));
        };
        let text = String::from_utf8_lossy(&r.body).into_owned();
        let xml_doc = || roxmltree::Document::parse(&text).map_err(|e| e.to_string());
        let mut out = match self.protocol.as_str() {
            "query" => {
                let doc = xml_doc()?;
                let wrapper = op.4.as_deref().unwrap_or_default();
                match doc
                    .root_element()
                    .children()
                    .find(|n| n.tag_name().name() == wrapper)
                {
                    Some(n) => self.read_xml(n, out_shape),
                    None => Value::Object(Map::new()),
                }
            }
            "ec2" => self.read_xml(xml_doc()?.root_element(), out_shape),
            _ => self.rest_body(out_shape, r, &text)?,
        };
        // Members the answer's headers and status carry.
        if let (Some(s), Value::Object(fields)) = (self.shape(out_shape), &mut out) {
            for m in &s.m {
                let t = self.shape(&m.1).map(|s| s.t).unwrap_or('S');
                let wire = m.3.as_deref().unwrap_or(&m.0);
                match m.2.as_deref() {
                    Some("header") => {
                        if let Some(h) = r.header(wire) {
                            fields.insert(m.0.clone(), scalar(t, h));
                        }
                    }
                    Some("statusCode") => {
                        fields.insert(m.0.clone(), Value::from(r.status));
                    }
                    _ => {}
                }
            }
        }
        Ok(out)
    }

    /// A rest-json or rest-xml answer's body: the payload member, or the members it holds.
    fn rest_body(&self, out_shape: &str, r: &super::Response, text: &str) -> Result<Value, String> {
        let s = self.shape(out_shape);
        let payload = s
            .and_then(|s| s.p.as_deref())
            .and_then(|p| s?.m.iter().find(|m| m.0 == p));
        let xml = self.protocol == "rest-xml";
        let parse_xml = |shape: &str| -> Result<Value, String> {
            if text.trim().is_empty() {
                return Ok(Value::Object(Map::new()));
            }
            let doc = roxmltree::Document::parse(text).map_err(|e| e.to_string())?;
            Ok(self.read_xml(doc.root_element(), shape))
        };
        match payload {
            Some(m) => {
                let value = match self.shape(&m.1).map(|s| s.t) {
                    Some('s') if xml => parse_xml(&m.1)?,
                    Some('s') => r.json(),
                    _ => Value::String(text.to_owned()),
                };
                let mut out = Map::new();
                out.insert(m.0.clone(), value);
                Ok(Value::Object(out))
            }
            None if xml => parse_xml(out_shape),
            None => Ok(match r.json() {
                Value::Object(m) => Value::Object(m),
                _ => Value::Object(Map::new()),
            }),
        }
    }
}

impl Http {
    /// `aws-sdk:SERVICE:ACTION` from the service's model; `None` when the table lacks it.
    pub(super) async fn model_sdk(
        &self,
        action: &str,
        params: &Value,
    ) -> Option<Result<Value, StatesError>> {
        let model = model(self.svc.key)?;
        let name = super::pascal(action);
        let Some(op) = model.ops.get(&name) else {
            return Some(Err(StatesError::runtime(format!(
                "aws-sdk:{}:{action}: {} has no operation {name} in its model",
                self.svc.key, self.svc.key
            ))));
        };
        if !["rest-json", "rest-xml", "ec2", "query"].contains(&model.protocol.as_str()) {
            return Some(Err(StatesError::runtime(format!(
                "aws-sdk:{}:{action}: sfn-local does not speak {}'s {} protocol",
                self.svc.key, self.svc.key, model.protocol
            ))));
        }
        let req = model.request(&name, op, params);
        Some(
            async {
                let r = self
                    .send(&req.method, &req.path_and_query, req.headers, req.body)
                    .await?;
                if r.status >= 300 {
                    return Err(self.v2_error(&r));
                }
                model.output(op, &r).map_err(|e| {
                    StatesError::runtime(format!(
                        "{} answered {name} with a body that does not parse: {e}",
                        self.svc.key
                    ))
                })
            }
            .await,
        )
    }
}

/// Whether a service's protocol is one the table builds requests for.
pub(super) fn speaks(p: Protocol) -> bool {
    matches!(p, Protocol::Lambda | Protocol::Query | Protocol::Model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_table_holds_every_protocol() {
        for (service, protocol) in [
            ("lambda", "rest-json"),
            ("route53", "rest-xml"),
            ("ec2", "ec2"),
            ("iam", "query"),
            ("cloudwatch", "query"),
            ("sns", "query"),
            ("sts", "query"),
        ] {
            assert_eq!(model(service).map(|m| m.protocol.as_str()), Some(protocol));
        }
    }

    #[test]
    fn members_go_where_the_model_says() {
        let lambda = model("lambda").unwrap();
        let op = &lambda.ops["GetFunction"];
        let r = lambda.request(
            "GetFunction",
            op,
            &json!({"FunctionName": "f/x", "Qualifier": "1"}),
        );
        assert_eq!(
            (r.method.as_str(), r.path_and_query.as_str()),
            ("GET", "/2015-03-31/functions/f%2Fx?Qualifier=1")
        );
        let ec2 = model("ec2").unwrap();
        let op = &ec2.ops["DescribeInstances"];
        let r = ec2.request(
            "DescribeInstances",
            op,
            &json!({"InstanceIds": ["i-1", "i-2"], "Filters": [{"Name": "n", "Values": ["v"]}]}),
        );
        assert_eq!(
            String::from_utf8(r.body).unwrap(),
            "Action=DescribeInstances&Version=2016-11-15&InstanceId.1=i-1&InstanceId.2=i-2&Filter.1.Name=n&Filter.1.Value.1=v"
        );
        let iam = model("iam").unwrap();
        let op = &iam.ops["CreateUser"];
        let r = iam.request(
            "CreateUser",
            op,
            &json!({"UserName": "a", "Tags": [{"Key": "k", "Value": "v"}]}),
        );
        assert_eq!(
            String::from_utf8(r.body).unwrap(),
            "Action=CreateUser&Version=2010-05-08&UserName=a&Tags.member.1.Key=k&Tags.member.1.Value=v"
        );
        assert_eq!(
            iam.error_class("NoSuchEntity").as_deref(),
            Some("NoSuchEntityException")
        );
    }
}
