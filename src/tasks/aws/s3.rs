//! S3 at an endpoint (`--endpoint s3=URL`): its REST-XML API, path-style (`URL/BUCKET/KEY`, as
//! moto and LocalStack serve it). Two users: a distributed Map's `ItemReader`/`ResultWriter`
//! (through [`S3Endpoint`], beside the `--s3-dir` folder) and `aws-sdk:s3:*` Tasks, whose
//! results carry the members of the SDK's output shape (`ETag`, `ContentType`, `Body` as text,
//! `Contents`...) and whose errors are the SDK v2's: `S3.NoSuchKeyException`, with the cause
//! `MESSAGE (Service: S3, Status Code: 404, Request ID: …, Extended Request ID: …)`.

use super::{urlencode, Http, Response};
use crate::asl::error::StatesError;
use serde_json::{json, Map, Value};

/// S3's errors that the SDK v2 has a class for (others are `S3Exception`).
const MODELED_ERRORS: &[&str] = &[
    "NoSuchKey",
    "NoSuchBucket",
    "NoSuchUpload",
    "BucketAlreadyExists",
    "BucketAlreadyOwnedByYou",
    "InvalidObjectState",
    "ObjectAlreadyInActiveTierError",
    "ObjectNotInActiveTierError",
    "TooManyParts",
    "EncryptionTypeMismatch",
    "InvalidRequest",
    "InvalidWriteOffset",
    "IdempotencyParameterMismatch",
];

/// How a response header's value becomes a member's.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    Number,
    Flag,
    Date,
}

/// Response headers and the output members they fill (GetObject, HeadObject, PutObject,
/// DeleteObject, CopyObject, CreateBucket), as S3's model binds them.
const HEADER_MEMBERS: &[(&str, &str, Kind)] = &[
    ("AcceptRanges", "accept-ranges", Kind::Text),
    ("CacheControl", "cache-control", Kind::Text),
    ("ChecksumCRC32", "x-amz-checksum-crc32", Kind::Text),
    ("ChecksumCRC32C", "x-amz-checksum-crc32c", Kind::Text),
    ("ChecksumSHA1", "x-amz-checksum-sha1", Kind::Text),
    ("ChecksumSHA256", "x-amz-checksum-sha256", Kind::Text),
    ("ChecksumType", "x-amz-checksum-type", Kind::Text),
    ("ContentDisposition", "content-disposition", Kind::Text),
    ("ContentEncoding", "content-encoding", Kind::Text),
    ("ContentLanguage", "content-language", Kind::Text),
    ("ContentLength", "content-length", Kind::Number),
    ("ContentType", "content-type", Kind::Text),
    ("DeleteMarker", "x-amz-delete-marker", Kind::Flag),
    ("ETag", "etag", Kind::Text),
    ("Expiration", "x-amz-expiration", Kind::Text),
    ("LastModified", "last-modified", Kind::Date),
    ("Location", "location", Kind::Text),
    (
        "ServerSideEncryption",
        "x-amz-server-side-encryption",
        Kind::Text,
    ),
    ("StorageClass", "x-amz-storage-class", Kind::Text),
    ("TagCount", "x-amz-tagging-count", Kind::Number),
    ("VersionId", "x-amz-version-id", Kind::Text),
];

/// Request members sent as headers (PutObject, CopyObject, CreateBucket).
const HEADER_PARAMETERS: &[(&str, &str)] = &[
    ("ACL", "x-amz-acl"),
    ("CacheControl", "cache-control"),
    ("ContentDisposition", "content-disposition"),
    ("ContentEncoding", "content-encoding"),
    ("ContentLanguage", "content-language"),
    ("ContentType", "content-type"),
    ("CopySource", "x-amz-copy-source"),
    ("ServerSideEncryption", "x-amz-server-side-encryption"),
    ("StorageClass", "x-amz-storage-class"),
    ("Tagging", "x-amz-tagging"),
];

/// XML elements that repeat, read as lists: flattened (`Contents`, `CommonPrefixes`) or
/// wrapped (`Buckets` around `Bucket`).
const FLATTENED_LISTS: &[&str] = &["Contents", "CommonPrefixes", "Version", "DeleteMarker"];
const WRAPPED_LISTS: &[&str] = &["Buckets"];
/// XML elements whose text is a number or a flag.
const NUMBERS: &[&str] = &["KeyCount", "MaxKeys", "Size", "MaxUploads"];
const FLAGS: &[&str] = &["IsTruncated", "IsLatest"];

/// The size of each part of a multipart upload (S3 asks at least 5 MiB of all but the last),
/// and the largest object written in one PutObject.
pub const PART_BYTES: usize = 8 << 20;

/// The next part of `file`: up to [`PART_BYTES`], empty at its end.
fn read_part(file: &mut std::fs::File) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut part = Vec::new();
    file.take(PART_BYTES as u64)
        .read_to_end(&mut part)
        .map_err(|e| format!("cannot read the result file: {e}"))?;
    Ok(part)
}

/// S3's answer, or its failure's cause.
fn answered(sent: Result<Result<Response, S3Failure>, StatesError>) -> Result<Response, String> {
    match sent {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(f)) => Err(f.cause),
        Err(e) => Err(e.cause.unwrap_or_default()),
    }
}

/// The path of a bucket or an object, path-style, each key segment percent-encoded once.
fn path_of(bucket: &str, key: Option<&str>) -> String {
    let mut path = format!("/{}", urlencode(bucket));
    if let Some(key) = key {
        path.push('/');
        let segments: Vec<String> = key.split('/').map(urlencode).collect();
        path.push_str(&segments.join("/"));
    }
    path
}

/// `a=1&b=2`, sorted by name as SigV4 wants the query.
fn query(pairs: &mut [(String, String)]) -> String {
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Text of a parameter sent as-is: strings unchanged, anything else as its JSON text (as AWS
/// writes a JSON `Body`).
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A failed S3 call: its error code and its cause as the SDK v2 words it.
struct S3Failure {
    code: String,
    cause: String,
}

impl S3Failure {
    fn of(r: &Response) -> S3Failure {
        let body = String::from_utf8_lossy(&r.body).into_owned();
        let doc = roxmltree::Document::parse(&body).ok();
        let field = |name: &str| {
            doc.as_ref().and_then(|d| {
                d.root_element()
                    .children()
                    .find(|n| n.tag_name().name() == name)
                    .and_then(|n| n.text())
                    .map(str::to_owned)
            })
        };
        // HEAD answers have no body: the status says what happened.
        let code = field("Code").unwrap_or_else(|| match r.status {
            404 => "NotFound".to_owned(),
            403 => "Forbidden".to_owned(),
            other => format!("Http{other}"),
        });
        let message = field("Message").unwrap_or_else(|| "null".to_owned());
        let request_id = r
            .header("x-amz-request-id")
            .map(str::to_owned)
            .or_else(|| field("RequestId"))
            .unwrap_or_else(|| r.request_id());
        let extended = r
            .header("x-amz-id-2")
            .map(str::to_owned)
            .or_else(|| field("HostId"))
            .unwrap_or_default();
        S3Failure {
            cause: format!(
                "{message} (Service: S3, Status Code: {}, Request ID: {request_id}, Extended Request ID: {extended})",
                r.status
            ),
            code,
        }
    }

    /// As an `aws-sdk:s3` Task's error: `S3.NoSuchKeyException`, or `S3.S3Exception` for
    /// errors S3's model does not name.
    fn sdk_error(self) -> StatesError {
        let class = if MODELED_ERRORS.contains(&self.code.as_str()) {
            format!("{}Exception", self.code.trim_end_matches("Error"))
        } else {
            "S3Exception".to_owned()
        };
        StatesError::new(format!("S3.{class}"), self.cause)
    }
}

/// An XML element as JSON: text for a leaf, an object of its children otherwise (lists and
/// typed leaves by the tables above).
fn element_json(node: roxmltree::Node) -> Value {
    let children: Vec<roxmltree::Node> = node.children().filter(|n| n.is_element()).collect();
    let name = node.tag_name().name();
    if WRAPPED_LISTS.contains(&name) {
        return Value::Array(children.into_iter().map(element_json).collect());
    }
    if children.is_empty() {
        let text = node.text().unwrap_or_default();
        if NUMBERS.contains(&name) {
            if let Ok(n) = text.trim().parse::<i64>() {
                return json!(n);
            }
        }
        if FLAGS.contains(&name) {
            return json!(text.trim() == "true");
        }
        return json!(text);
    }
    let mut out = Map::new();
    for child in children {
        let key = child.tag_name().name().to_owned();
        let value = element_json(child);
        if FLATTENED_LISTS.contains(&key.as_str()) {
            match out.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
                Value::Array(items) => items.push(value),
                other => *other = Value::Array(vec![value]),
            }
        } else {
            out.insert(key, value);
        }
    }
    Value::Object(out)
}

/// The members a response's headers carry, and `Metadata` from `x-amz-meta-*`.
fn header_members(r: &Response, out: &mut Map<String, Value>) {
    for (member, header, kind) in HEADER_MEMBERS {
        let Some(v) = r.header(header) else { continue };
        let value = match kind {
            Kind::Text => json!(v),
            Kind::Number => v.parse::<i64>().map(|n| json!(n)).unwrap_or(json!(v)),
            Kind::Flag => json!(v == "true"),
            // S3 sends RFC 1123 dates; the SDK hands them over as ISO 8601.
            Kind::Date => chrono::DateTime::parse_from_rfc2822(v)
                .map(|d| {
                    let utc = d.with_timezone(&chrono::Utc);
                    json!(utc.format("%Y-%m-%dT%H:%M:%SZ").to_string())
                })
                .unwrap_or(json!(v)),
        };
        out.insert((*member).to_owned(), value);
    }
    let metadata: Map<String, Value> = r
        .headers
        .iter()
        .filter_map(|(k, v)| {
            let k = k.to_ascii_lowercase();
            k.strip_prefix("x-amz-meta-")
                .map(|name| (name.to_owned(), json!(v)))
        })
        .collect();
    if !metadata.is_empty() {
        out.insert("Metadata".into(), Value::Object(metadata));
    }
}

/// A string parameter an operation needs.
fn required<'a>(params: &'a Value, name: &str, action: &str) -> Result<&'a str, StatesError> {
    params[name].as_str().ok_or_else(|| {
        StatesError::new(
            "S3.SdkClientException",
            format!("aws-sdk:s3:{action} needs a string parameter '{name}'"),
        )
    })
}

impl Http {
    async fn s3_send(
        &self,
        method: &str,
        path: &str,
        query_pairs: &mut [(String, String)],
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> Result<Result<Response, S3Failure>, StatesError> {
        let q = query(query_pairs);
        let target = if q.is_empty() {
            path.to_owned()
        } else {
            format!("{path}?{q}")
        };
        let r = self.send(method, &target, headers, body).await?;
        if r.status >= 300 {
            return Ok(Err(S3Failure::of(&r)));
        }
        Ok(Ok(r))
    }

    /// `aws-sdk:s3:ACTION`: the object and bucket operations workflows use.
    pub(super) async fn s3_sdk(&self, action: &str, params: &Value) -> Result<Value, StatesError> {
        let bucket = || required(params, "Bucket", action);
        let key = || required(params, "Key", action);
        let mut headers: Vec<(String, String)> = Vec::new();
        for (member, header) in HEADER_PARAMETERS {
            if let Some(v) = params.get(*member).filter(|v| !v.is_null()) {
                headers.push(((*header).to_owned(), text(v)));
            }
        }
        if let Some(meta) = params["Metadata"].as_object() {
            for (k, v) in meta {
                headers.push((format!("x-amz-meta-{k}"), text(v)));
            }
        }
        let mut q: Vec<(String, String)> = Vec::new();
        let string_query = |q: &mut Vec<(String, String)>, pairs: &[(&str, &str)]| {
            for (member, name) in pairs {
                if let Some(v) = params.get(*member).filter(|v| !v.is_null()) {
                    q.push(((*name).to_owned(), text(v)));
                }
            }
        };
        let (method, path, body) = match action {
            "getObject" | "headObject" => {
                string_query(&mut q, &[("VersionId", "versionId")]);
                let method = if action == "getObject" { "GET" } else { "HEAD" };
                (method, path_of(bucket()?, Some(key()?)), Vec::new())
            }
            "putObject" => {
                let body = params.get("Body").map(text).unwrap_or_default();
                (
                    "PUT",
                    path_of(bucket()?, Some(key()?)),
                    body.into_bytes(),
                )
            }
            "copyObject" => ("PUT", path_of(bucket()?, Some(key()?)), Vec::new()),
            "deleteObject" => {
                string_query(&mut q, &[("VersionId", "versionId")]);
                ("DELETE", path_of(bucket()?, Some(key()?)), Vec::new())
            }
            "listObjectsV2" | "listObjects" => {
                if action == "listObjectsV2" {
                    q.push(("list-type".into(), "2".into()));
                }
                string_query(
                    &mut q,
                    &[
                        ("Prefix", "prefix"),
                        ("Delimiter", "delimiter"),
                        ("MaxKeys", "max-keys"),
                        ("ContinuationToken", "continuation-token"),
                        ("StartAfter", "start-after"),
                        ("Marker", "marker"),
                        ("EncodingType", "encoding-type"),
                    ],
                );
                ("GET", path_of(bucket()?, None), Vec::new())
            }
            "listBuckets" => ("GET", "/".to_owned(), Vec::new()),
            "createBucket" => ("PUT", path_of(bucket()?, None), Vec::new()),
            "deleteBucket" => ("DELETE", path_of(bucket()?, None), Vec::new()),
            other => {
                return Err(StatesError::runtime(format!(
                    "sfn-local does not call aws-sdk:s3:{other} yet (it calls getObject, headObject, putObject, copyObject, deleteObject, listObjects, listObjectsV2, listBuckets, createBucket and deleteBucket); use --task or a mock"
                )))
            }
        };
        let r = match self.s3_send(method, &path, &mut q, headers, body).await? {
            Ok(r) => r,
            Err(failure) => return Err(failure.sdk_error()),
        };
        let mut out = Map::new();
        header_members(&r, &mut out);
        match action {
            "getObject" => {
                out.insert(
                    "Body".into(),
                    json!(String::from_utf8_lossy(&r.body).into_owned()),
                );
            }
            "putObject" | "deleteObject" | "headObject" | "createBucket" | "deleteBucket" => {
                // Headers only: the SDK's output has no body members for these.
                for transport in ["ContentLength", "ContentType", "AcceptRanges"] {
                    if action != "headObject" {
                        out.remove(transport);
                    }
                }
            }
            _ => {
                out.remove("ContentLength");
                out.remove("ContentType");
                let text = String::from_utf8_lossy(&r.body).into_owned();
                if let Ok(doc) = roxmltree::Document::parse(&text) {
                    if let Value::Object(m) = element_json(doc.root_element()) {
                        out.extend(m);
                    }
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// S3 at an endpoint, for a distributed Map's `ItemReader` and `ResultWriter`: failures are
/// the SDK's causes (`The specified key does not exist. (Service: S3, Status Code: 404, …)`).
#[derive(Debug, Clone)]
pub struct S3Endpoint {
    pub(super) http: Http,
}

impl S3Endpoint {
    /// The body of `s3://bucket/key`.
    pub async fn get_object(&self, bucket: &str, key: &str) -> Result<Vec<u8>, String> {
        let path = path_of(bucket, Some(key));
        let sent = self
            .http
            .s3_send("GET", &path, &mut [], Vec::new(), Vec::new())
            .await;
        answered(sent).map(|r| r.body)
    }

    /// Writes `body` to `s3://bucket/key`.
    pub async fn put_object(&self, bucket: &str, key: &str, body: &[u8]) -> Result<(), String> {
        self.put_owned(bucket, key, body.to_vec()).await
    }

    async fn put_owned(&self, bucket: &str, key: &str, body: Vec<u8>) -> Result<(), String> {
        let path = path_of(bucket, Some(key));
        let sent = self
            .http
            .s3_send("PUT", &path, &mut [], Vec::new(), body)
            .await;
        answered(sent).map(drop)
    }

    /// Writes the file `body` (`size` bytes, read from its start) to `s3://bucket/key`: in one
    /// PutObject up to [`PART_BYTES`], else as a multipart upload of parts that size, so no
    /// more than one part is in memory however large the file.
    pub async fn put_file(
        &self,
        bucket: &str,
        key: &str,
        mut body: std::fs::File,
        size: u64,
    ) -> Result<(), String> {
        if size <= PART_BYTES as u64 {
            return self.put_owned(bucket, key, read_part(&mut body)?).await;
        }
        let path = path_of(bucket, Some(key));
        let mut q = [("uploads".to_owned(), String::new())];
        let created = answered(
            self.http
                .s3_send("POST", &path, &mut q, Vec::new(), Vec::new())
                .await,
        )?;
        let text = String::from_utf8_lossy(&created.body).into_owned();
        let upload_id = roxmltree::Document::parse(&text)
            .ok()
            .and_then(|d| {
                element_json(d.root_element())["UploadId"]
                    .as_str()
                    .map(str::to_owned)
            })
            .ok_or_else(|| {
                format!("S3 answered CreateMultipartUpload without an UploadId: {text}")
            })?;
        let uploaded = self.upload_parts(&path, &upload_id, &mut body).await;
        if uploaded.is_err() {
            // Best effort: S3 would otherwise keep the parts (and bill them) until a lifecycle rule.
            let mut q = [("uploadId".to_owned(), upload_id.clone())];
            let _ = self
                .http
                .s3_send("DELETE", &path, &mut q, Vec::new(), Vec::new())
                .await;
        }
        uploaded
    }

    /// Uploads `body` as the parts of upload `upload_id`, then completes it.
    async fn upload_parts(
        &self,
        path: &str,
        upload_id: &str,
        body: &mut std::fs::File,
    ) -> Result<(), String> {
        let mut listed = String::new();
        for number in 1.. {
            let part = read_part(body)?;
            if part.is_empty() {
                break;
            }
            let mut q = [
                ("partNumber".to_owned(), number.to_string()),
                ("uploadId".to_owned(), upload_id.to_owned()),
            ];
            let r = answered(
                self.http
                    .s3_send("PUT", path, &mut q, Vec::new(), part)
                    .await,
            )?;
            let etag = r.header("ETag").unwrap_or_default();
            listed.push_str(&format!(
                "<Part><PartNumber>{number}</PartNumber><ETag>{etag}</ETag></Part>"
            ));
        }
        let xml = format!(
            "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{listed}</CompleteMultipartUpload>"
        );
        let mut q = [("uploadId".to_owned(), upload_id.to_owned())];
        let done = answered(
            self.http
                .s3_send("POST", path, &mut q, Vec::new(), xml.into_bytes())
                .await,
        )?;
        // S3 may answer 200 and still fail the completion, in the body.
        let text = String::from_utf8_lossy(&done.body);
        match text.contains("<Error>") {
            true => Err(format!("S3 did not complete the upload: {text}")),
            false => Ok(()),
        }
    }

    /// Every object of `bucket` under `prefix` (all pages), as a distributed Map's items:
    /// `Etag`, `Key`, `LastModified` (epoch seconds), `Size`, `StorageClass`.
    pub async fn list_objects_v2(&self, bucket: &str, prefix: &str) -> Result<Vec<Value>, String> {
        let path = path_of(bucket, None);
        let mut items = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut q = vec![("list-type".to_owned(), "2".to_owned())];
            if !prefix.is_empty() {
                q.push(("prefix".into(), prefix.into()));
            }
            if let Some(t) = &token {
                q.push(("continuation-token".into(), t.clone()));
            }
            let sent = self
                .http
                .s3_send("GET", &path, &mut q, Vec::new(), Vec::new())
                .await;
            let r = answered(sent)?;
            let text = String::from_utf8_lossy(&r.body).into_owned();
            let doc = roxmltree::Document::parse(&text).map_err(|e| {
                format!("S3 answered ListObjectsV2 with XML that does not parse: {e}")
            })?;
            let listing = element_json(doc.root_element());
            for object in listing["Contents"].as_array().into_iter().flatten() {
                let modified = object["LastModified"]
                    .as_str()
                    .and_then(|d| chrono::DateTime::parse_from_rfc3339(d).ok())
                    .map(|d| d.timestamp())
                    .unwrap_or(0);
                items.push(json!({
                    "Etag": object["ETag"],
                    "Key": object["Key"],
                    "LastModified": modified,
                    "Size": object["Size"],
                    "StorageClass": object["StorageClass"],
                }));
            }
            token = listing["NextContinuationToken"]
                .as_str()
                .filter(|_| listing["IsTruncated"] == json!(true))
                .map(str::to_owned);
            if token.is_none() {
                return Ok(items);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_become_json_with_lists_numbers_and_flags() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix></Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated><Contents><Key>a &amp; b.json</Key><ETag>&quot;x&quot;</ETag><Size>5</Size></Contents></ListBucketResult>"#;
        let doc = roxmltree::Document::parse(xml).unwrap();
        assert_eq!(
            element_json(doc.root_element()),
            json!({"Name": "b", "Prefix": "", "KeyCount": 1, "MaxKeys": 1000, "IsTruncated": false,
                   "Contents": [{"Key": "a & b.json", "ETag": "\"x\"", "Size": 5}]})
        );
        let xml = "<ListAllMyBucketsResult><Buckets><Bucket><Name>a</Name></Bucket><Bucket><Name>b</Name></Bucket></Buckets></ListAllMyBucketsResult>";
        let doc = roxmltree::Document::parse(xml).unwrap();
        assert_eq!(
            element_json(doc.root_element()),
            json!({"Buckets": [{"Name": "a"}, {"Name": "b"}]})
        );
    }

    #[test]
    fn keys_keep_their_slashes_and_queries_sort() {
        assert_eq!(path_of("b", Some("dir/a b.json")), "/b/dir/a%20b.json");
        let mut q = vec![
            ("prefix".to_owned(), "x/".to_owned()),
            ("list-type".to_owned(), "2".to_owned()),
        ];
        assert_eq!(query(&mut q), "list-type=2&prefix=x%2F");
    }
}
