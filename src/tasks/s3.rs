//! S3 for a distributed Map's `ItemReader` and `ResultWriter` ([`S3Store`]): a local folder
//! where the object `s3://BUCKET/KEY` is the file `DIR/BUCKET/KEY` (`--s3-dir DIR` or
//! `SFN_LOCAL_S3_DIR`), or S3 itself at an endpoint (`--endpoint s3=URL`: moto, LocalStack;
//! see `crate::tasks::aws`). Reading the items (`s3:getObject` as JSON, JSONL or CSV,
//! `s3:listObjectsV2`) and writing a Map run's results (`manifest.json` and
//! `SUCCEEDED_0.json`/`FAILED_0.json` under `Prefix/<map run id>/`) happen here; every failure
//! is a `States.ItemReaderFailed` / `States.ResultWriterFailed` error.

use crate::asl::error::{names, StatesError};
use md5::{Digest, Md5};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// The environment variable naming the local S3 folder when `--s3-dir` is not given.
pub const S3_DIR_ENV: &str = "SFN_LOCAL_S3_DIR";

/// What an ItemReader asks for, its `Parameters`/`Arguments` and `ReaderConfig` resolved.
#[derive(Debug, Clone, Default)]
pub struct ReaderRequest {
    /// `arn:aws:states:::s3:getObject` or `arn:aws:states:::s3:listObjectsV2`.
    pub resource: String,
    /// The evaluated `Parameters`/`Arguments` (`Bucket`, `Key`, `Prefix`).
    pub arguments: Value,
    /// `ReaderConfig.InputType`: `JSON`, `JSONL`, `CSV` or `MANIFEST` (an S3 inventory).
    pub input_type: Option<String>,
    /// `ReaderConfig.CSVDelimiter`: `COMMA` (default), `PIPE`, `SEMICOLON`, `SPACE` or `TAB`.
    pub csv_delimiter: Option<String>,
    /// `ReaderConfig.CSVHeaderLocation`: `FIRST_ROW` (default) or `GIVEN`.
    pub csv_header_location: Option<String>,
    /// `ReaderConfig.CSVHeaders` (with `GIVEN`).
    pub csv_headers: Option<Vec<String>>,
    /// `ReaderConfig.MaxItems`/`MaxItemsPath`, resolved; 0 or absent reads everything.
    pub max_items: Option<i64>,
    /// `ReaderConfig.ItemsPointer`: where the items are in a JSON body (a JSON Pointer).
    pub items_pointer: Option<String>,
}

fn reader_failed(cause: impl Into<String>) -> StatesError {
    StatesError::new(names::ITEM_READER_FAILED, cause)
}

fn writer_failed(cause: impl Into<String>) -> StatesError {
    StatesError::new(names::RESULT_WRITER_FAILED, cause)
}

/// Where a distributed Map's objects are.
#[derive(Debug, Clone)]
pub enum S3Store {
    /// A local folder (`--s3-dir`).
    Folder(LocalS3),
    /// S3 at an endpoint (`--endpoint s3=URL`).
    Endpoint(crate::tasks::aws::S3Endpoint),
}

impl S3Store {
    /// The store configured for this run, else an error (of `error` kind) that says how to
    /// provide one.
    pub fn configured<'a>(
        store: Option<&'a S3Store>,
        error: &str,
    ) -> Result<&'a S3Store, StatesError> {
        store.ok_or_else(|| {
            StatesError::new(
                error,
                format!(
                    "no S3 is configured: give the folder holding the objects with --s3-dir DIR (or {S3_DIR_ENV}; s3://BUCKET/KEY is the file DIR/BUCKET/KEY), or S3's endpoint with --endpoint s3=URL"
                ),
            )
        })
    }

    /// The body of `s3://bucket/key`; a failure is S3's cause.
    pub async fn get_object(&self, bucket: &str, key: &str) -> Result<Vec<u8>, String> {
        match self {
            S3Store::Folder(f) => f.get_object(bucket, key),
            S3Store::Endpoint(e) => e.get_object(bucket, key).await,
        }
    }

    /// Writes `body` to `s3://bucket/key`.
    pub async fn put_object(&self, bucket: &str, key: &str, body: &[u8]) -> Result<(), String> {
        match self {
            S3Store::Folder(f) => f.put_object(bucket, key, body),
            S3Store::Endpoint(e) => e.put_object(bucket, key, body).await,
        }
    }

    /// Writes the file `body` (`size` bytes, read from its start) to `s3://bucket/key`
    /// without holding it whole (a multipart upload at an endpoint).
    pub async fn put_file(
        &self,
        bucket: &str,
        key: &str,
        body: std::fs::File,
        size: u64,
    ) -> Result<(), String> {
        match self {
            S3Store::Folder(f) => f.put_file(bucket, key, body),
            S3Store::Endpoint(e) => e.put_file(bucket, key, body, size).await,
        }
    }

    /// The objects of `bucket` under `prefix`, in key order, as a Map's items.
    pub async fn list_objects_v2(&self, bucket: &str, prefix: &str) -> Result<Vec<Value>, String> {
        match self {
            S3Store::Folder(f) => f.list_objects_v2(bucket, prefix),
            S3Store::Endpoint(e) => e.list_objects_v2(bucket, prefix).await,
        }
    }
}

/// The local S3 folder.
#[derive(Debug, Clone)]
pub struct LocalS3 {
    root: PathBuf,
}

impl LocalS3 {
    /// The S3 held in `root` (`root/BUCKET/KEY`).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        LocalS3 { root: root.into() }
    }

    /// The file of `s3://bucket/key`; keys that would leave the bucket's folder are refused.
    fn file(&self, bucket: &str, key: &str) -> Result<PathBuf, String> {
        let safe = |s: &str| {
            !s.is_empty()
                && Path::new(s)
                    .components()
                    .all(|c| matches!(c, Component::Normal(_)))
        };
        if !safe(bucket) || bucket.contains('/') {
            return Err(format!("invalid bucket name '{bucket}'"));
        }
        if !safe(key) {
            return Err(format!("invalid object key '{key}'"));
        }
        Ok(self.root.join(bucket).join(key))
    }

    /// The body of `s3://bucket/key`.
    /// A missing bucket or key fails with S3's own message, as AWS reports it.
    pub fn get_object(&self, bucket: &str, key: &str) -> Result<Vec<u8>, String> {
        let file = self.file(bucket, key)?;
        if !self.root.join(bucket).is_dir() {
            return Err(s3_not_found("The specified bucket does not exist"));
        }
        std::fs::read(&file).map_err(|_| s3_not_found("The specified key does not exist."))
    }

    /// Writes `body` to `s3://bucket/key`, creating the folders.
    pub fn put_object(&self, bucket: &str, key: &str, body: &[u8]) -> Result<(), String> {
        self.put_file(bucket, key, body)
    }

    /// Copies what `body` reads to `s3://bucket/key`, creating the folders.
    pub fn put_file(&self, bucket: &str, key: &str, mut body: impl Read) -> Result<(), String> {
        let file = self.file(bucket, key)?;
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        std::fs::File::create(&file)
            .and_then(|mut out| std::io::copy(&mut body, &mut out))
            .map(drop)
            .map_err(|e| format!("cannot write {}: {e}", file.display()))
    }

    /// The objects of `bucket` whose key starts with `prefix`, in key order, as a distributed
    /// Map's items: `Etag`, `Key`, `LastModified` (epoch seconds), `Size`, `StorageClass`.
    pub fn list_objects_v2(&self, bucket: &str, prefix: &str) -> Result<Vec<Value>, String> {
        let dir = self.file(bucket, "x")?;
        let dir = dir.parent().unwrap_or(&self.root).to_path_buf();
        if !dir.is_dir() {
            return Err(s3_not_found("The specified bucket does not exist"));
        }
        let mut found = Vec::new();
        walk(&dir, "", &mut found)?;
        found.sort_by(|a, b| a.0.cmp(&b.0));
        let mut items = Vec::new();
        for (key, path) in found {
            if !key.starts_with(prefix) {
                continue;
            }
            let (etag, size) =
                file_etag(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let modified = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_secs())
                .unwrap_or(0);
            items.push(json!({
                "Etag": etag,
                "Key": key,
                "LastModified": modified,
                "Size": size,
                "StorageClass": "STANDARD",
            }));
        }
        Ok(items)
    }
}

/// S3's 404 as AWS's SDK words it in a cause: `MESSAGE (Service: S3, Status Code: 404, Request
/// ID: …, Extended Request ID: …)`, with ids made up here as S3 makes up its own.
fn s3_not_found(message: &str) -> String {
    let request_id = crate::random::uuid().simple().to_string().to_uppercase();
    let extended = crate::random::uuid().simple().to_string();
    format!(
        "{message} (Service: S3, Status Code: 404, Request ID: {}, Extended Request ID: {extended})",
        &request_id[..16]
    )
}

/// S3's ETag of a single-part object (the quoted MD5 of its body) of the file at `path`, and
/// its size: read a buffer at a time, so listing gigabyte objects holds none of them.
fn file_etag(path: &Path) -> std::io::Result<(String, u64)> {
    let mut md5 = Md5::new();
    let size = std::io::copy(&mut std::fs::File::open(path)?, &mut md5)?;
    let hex: String = md5.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok((format!("\"{hex}\""), size))
}

/// Collects the files under `dir` as (key, path), keys joined with `/`.
fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, PathBuf)>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let key = format!("{prefix}{name}");
        let path = entry.path();
        if path.is_dir() {
            walk(&path, &format!("{key}/"), out)?;
        } else {
            out.push((key, path));
        }
    }
    Ok(())
}

fn string_argument<'a>(args: &'a Value, name: &str) -> Result<&'a str, StatesError> {
    args.get(name).and_then(Value::as_str).ok_or_else(|| {
        reader_failed(format!(
            "The ItemReader's Parameters/Arguments need a string field '{name}', got {args}"
        ))
    })
}

/// Reads a distributed Map's items from `store`.
pub async fn read_items(
    store: Option<&S3Store>,
    request: &ReaderRequest,
) -> Result<Vec<Value>, StatesError> {
    let limit = match request.max_items {
        Some(n) if n < 0 => return Err(reader_failed("field MaxItems must be positive")),
        Some(0) | None => usize::MAX,
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
    };
    let s3 = S3Store::configured(store, names::ITEM_READER_FAILED)?;
    let args = &request.arguments;
    let bucket = string_argument(args, "Bucket")?;
    let action = request
        .resource
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_owned();
    let mut items = match action.as_str() {
        "listObjectsV2" => {
            let prefix = args.get("Prefix").and_then(Value::as_str).unwrap_or("");
            s3.list_objects_v2(bucket, prefix)
                .await
                .map_err(reader_failed)?
        }
        "getObject" => {
            let key = string_argument(args, "Key")?;
            let body = s3.get_object(bucket, key).await.map_err(reader_failed)?;
            let text = String::from_utf8_lossy(&body);
            let input_type = request.input_type.as_deref().unwrap_or("JSON");
            match input_type {
                "JSON" => match &request.items_pointer {
                    Some(pointer) => match serde_json::from_str::<Value>(&text) {
                        Ok(body) => items_at_pointer(body, pointer)?,
                        Err(e) => {
                            return Err(reader_failed(format!("The object is not valid JSON: {e}")))
                        }
                    },
                    None => parse_json(&text)?,
                },
                "JSONL" => parse_jsonl(&text)?,
                "CSV" => {
                    let given = match request.csv_header_location.as_deref() {
                        Some("GIVEN") => Some(request.csv_headers.clone().unwrap_or_default()),
                        _ => None,
                    };
                    let delimiter = csv_delimiter(request.csv_delimiter.as_deref())?;
                    parse_csv_with(&text, given, delimiter)?
                }
                "MANIFEST" => read_inventory(s3, &text).await?,
                other => {
                    return Err(reader_failed(format!(
                        "ReaderConfig InputType {other} is not supported by the local S3 (JSON, JSONL, CSV and MANIFEST are)"
                    )))
                }
            }
        }
        _ => {
            return Err(reader_failed(format!(
                "ItemReader resource {} is not supported (arn:aws:states:::s3:getObject and arn:aws:states:::s3:listObjectsV2 are)",
                request.resource
            )))
        }
    };
    items.truncate(limit);
    Ok(items)
}

/// The items of a JSON body at `ReaderConfig.ItemsPointer`, a JSON Pointer (RFC 6901: `""`
/// is the whole body, `/orders/0/lines` a member path): it must name an array.
pub fn items_at_pointer(body: Value, pointer: &str) -> Result<Vec<Value>, StatesError> {
    if !(pointer.is_empty() || pointer.starts_with('/')) {
        return Err(reader_failed(format!(
            "ItemsPointer '{pointer}' is not a JSON Pointer: it must be empty or start with '/'"
        )));
    }
    let mut body = body;
    match body.pointer_mut(pointer).map(Value::take) {
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(reader_failed(format!(
            "ItemsPointer '{pointer}' must point to an array, not {}",
            crate::asl::jsonata::type_name(&other)
        ))),
        None => Err(reader_failed(format!(
            "ItemsPointer '{pointer}' points to nothing in the JSON object"
        ))),
    }
}

/// A JSON object body must hold an array: its elements are the items. Anything else is
/// AWS's `States.ItemReaderFailed` "Attempting to map over non-iterable node." (its words).
fn parse_json(text: &str) -> Result<Vec<Value>, StatesError> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => Ok(items),
        Ok(_) => Err(reader_failed("Attempting to map over non-iterable node.")),
        Err(e) => Err(reader_failed(format!("The object is not valid JSON: {e}"))),
    }
}

/// One JSON value per non-empty line.
fn parse_jsonl(text: &str) -> Result<Vec<Value>, StatesError> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| reader_failed(format!("Line {} is not valid JSON: {e}", i + 1)))
        })
        .collect()
}

/// `ReaderConfig.CSVDelimiter` as the character it names (AWS: `COMMA`, `PIPE`, `SEMICOLON`,
/// `SPACE`, `TAB`; `COMMA` when absent).
fn csv_delimiter(name: Option<&str>) -> Result<char, StatesError> {
    match name {
        None | Some("COMMA") => Ok(','),
        Some("PIPE") => Ok('|'),
        Some("SEMICOLON") => Ok(';'),
        Some("SPACE") => Ok(' '),
        Some("TAB") => Ok('\t'),
        Some(other) => Err(reader_failed(format!(
            "ReaderConfig CSVDelimiter {other} is not one of COMMA, PIPE, SEMICOLON, SPACE, TAB"
        ))),
    }
}

/// The items of an S3 inventory (`InputType: MANIFEST`): `manifest` is the inventory's
/// `manifest.json`; each of its `files` (CSV, gzip-compressed when the key ends `.gz`, in the
/// manifest's `destinationBucket`) holds one row per object, whose columns `fileSchema` names.
/// Each row is an item, an object of strings keyed by those names, as AWS reads it.
async fn read_inventory(s3: &S3Store, manifest: &str) -> Result<Vec<Value>, StatesError> {
    let manifest: Value = serde_json::from_str(manifest)
        .map_err(|e| reader_failed(format!("The manifest is not valid JSON: {e}")))?;
    let field = |name: &str| {
        manifest.get(name).ok_or_else(|| {
            reader_failed(format!("The S3 inventory manifest has no '{name}' field"))
        })
    };
    let format = field("fileFormat")?.as_str().unwrap_or_default();
    if !format.eq_ignore_ascii_case("CSV") {
        return Err(reader_failed(format!(
            "S3 inventory file format {format} is not supported: only CSV is"
        )));
    }
    let schema: Vec<String> = field("fileSchema")?
        .as_str()
        .unwrap_or_default()
        .split(',')
        .map(|c| c.trim().to_owned())
        .collect();
    let destination = field("destinationBucket")?.as_str().unwrap_or_default();
    // `arn:aws:s3:::bucket`, or a bare bucket name.
    let bucket = destination.rsplit(':').next().unwrap_or(destination);
    let files = field("files")?.as_array().cloned().unwrap_or_default();
    let mut items = Vec::new();
    for file in files {
        let key = file
            .get("key")
            .and_then(Value::as_str)
            .ok_or_else(|| reader_failed("An S3 inventory manifest file entry has no 'key'"))?;
        let body = s3.get_object(bucket, key).await.map_err(reader_failed)?;
        let text = if key.ends_with(".gz") {
            let mut out = String::new();
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&body[..]), &mut out)
                .map_err(|e| {
                    reader_failed(format!("The inventory file {key} is not gzip CSV: {e}"))
                })?;
            out
        } else {
            String::from_utf8_lossy(&body).into_owned()
        };
        items.extend(parse_csv_with(&text, Some(schema.clone()), ',')?);
    }
    Ok(items)
}

/// CSV rows as objects keyed by the header, every value a string: missing fields are `""`,
/// fields past the header are dropped. `given` headers, else the first row.
pub fn parse_csv(text: &str, given: Option<Vec<String>>) -> Result<Vec<Value>, StatesError> {
    parse_csv_with(text, given, ',')
}

/// [`parse_csv`] with fields separated by `delimiter`.
pub fn parse_csv_with(
    text: &str,
    given: Option<Vec<String>>,
    delimiter: char,
) -> Result<Vec<Value>, StatesError> {
    let mut rows = csv_rows(text, delimiter).into_iter();
    let headers = match given {
        Some(h) => h,
        None => rows.next().unwrap_or_default(),
    };
    let mut seen = HashSet::new();
    if !headers.iter().all(|h| seen.insert(h.as_str())) {
        return Err(reader_failed("CSV headers cannot contain duplicates."));
    }
    Ok(rows
        .map(|row| {
            let mut item = Map::new();
            for (i, h) in headers.iter().enumerate() {
                let v = row.get(i).cloned().unwrap_or_default();
                item.insert(h.clone(), Value::String(v));
            }
            Value::Object(item)
        })
        .collect())
}

/// Splits CSV text into rows of fields (RFC 4180: `"` quotes, `""` escapes, `\n` or `\r\n`).
/// A trailing line break does not start a row.
fn csv_rows(text: &str, delimiter: char) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row: Vec<String> = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    let mut row_started = false;
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' => {
                quoted = true;
                row_started = true;
            }
            c if c == delimiter => {
                row.push(std::mem::take(&mut field));
                row_started = true;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
                row_started = false;
            }
            c => {
                field.push(c);
                row_started = true;
            }
        }
    }
    if row_started {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// What a ResultWriter asks for: its evaluated `Parameters`/`Arguments` (`Bucket`, `Prefix`)
/// and its `WriterConfig`.
#[derive(Debug, Clone, Default)]
pub struct WriterRequest {
    /// The evaluated `Parameters`/`Arguments`.
    pub arguments: Value,
    /// `Resource` (`arn:aws:states:::s3:putObject`); `None` with only a `WriterConfig`, which
    /// previews the formatted results as the state's result and writes nothing.
    pub resource: Option<String>,
    /// `WriterConfig.Transformation`: `NONE` (the default), `COMPACT` or `FLATTEN`.
    pub transformation: Option<String>,
    /// `WriterConfig.OutputType`: `JSON` (the default) or `JSONL`.
    pub output_type: Option<String>,
}

/// One child's entry in the results, as `WriterConfig.Transformation` shapes it: `NONE` keeps
/// the execution's metadata (`entry`), `COMPACT` only its output, `FLATTEN` its output with an
/// array's elements spliced in. A failed child keeps its metadata whatever the transformation
/// (AWS: "equivalent to NONE").
fn transformed(
    transformation: &str,
    child: &ChildResult,
    entry: Value,
    out: &mut Vec<Value>,
) -> Result<(), StatesError> {
    match (transformation, &child.result) {
        ("NONE", _) | (_, Err(_)) => out.push(entry),
        ("COMPACT", Ok(output)) => out.push(output.clone()),
        ("FLATTEN", Ok(Value::Array(items))) => out.extend(items.iter().cloned()),
        ("FLATTEN", Ok(output)) => out.push(output.clone()),
        (other, _) => {
            return Err(writer_failed(format!(
                "WriterConfig Transformation {other} is not one of NONE, COMPACT, FLATTEN"
            )))
        }
    }
    Ok(())
}

/// One child execution of a Map run, for the result files.
#[derive(Debug, Clone)]
pub struct ChildResult {
    /// The child execution's ARN.
    pub execution_arn: String,
    /// Its name.
    pub name: String,
    /// Its input.
    pub input: Value,
    /// Its output, or its error and cause.
    pub result: Result<Value, StatesError>,
    /// Start and stop, milliseconds since the epoch.
    pub start: i64,
    /// See `start`.
    pub stop: i64,
}

/// A child execution as the result files list it (`Transformation: NONE`).
fn entry_of(c: &ChildResult, state_machine_arn: &str) -> Value {
    let date = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .map(|d| d.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
            .unwrap_or_default()
    };
    let mut entry = json!({
        "ExecutionArn": c.execution_arn,
        "Input": c.input.to_string(),
        "InputDetails": {"Included": true},
        "Name": c.name,
        "RedriveCount": 0,
        "RedriveStatus": "NOT_REDRIVABLE",
        "StartDate": date(c.start),
        "StateMachineArn": state_machine_arn,
        "StopDate": date(c.stop),
    });
    if let Value::Object(e) = &mut entry {
        match &c.result {
            Ok(output) => {
                e.insert("Output".into(), Value::String(output.to_string()));
                e.insert("OutputDetails".into(), json!({"Included": true}));
                e.insert("Status".into(), json!("SUCCEEDED"));
            }
            Err(error) => {
                e.insert("Error".into(), json!(error.error));
                e.insert("Cause".into(), json!(error.cause));
                e.insert("Status".into(), json!("FAILED"));
            }
        }
    }
    entry
}

/// Writes a Map run's result files (`Prefix/<run id>/manifest.json`, `SUCCEEDED_0.json`,
/// `FAILED_0.json`) and returns the Map state's result: `MapRunArn` and `ResultWriterDetails`.
/// The children come one at a time, in item order, and go to the files as they come: a run
/// of a million holds one child here, not a million.
pub async fn write_results(
    store: Option<&S3Store>,
    request: &WriterRequest,
    map_run_arn: &str,
    run_id: &str,
    state_machine_arn: &str,
    children: impl IntoIterator<Item = Result<ChildResult, StatesError>>,
) -> Result<Value, StatesError> {
    let transformation = request.transformation.as_deref().unwrap_or("NONE");
    let jsonl = writes_json_lines(request)?;
    let args = &request.arguments;
    if request.resource.is_none() {
        // WriterConfig alone: the formatted results are the state's result; nothing is written.
        let mut preview = Vec::new();
        for c in children {
            let c = c?;
            transformed(
                transformation,
                &c,
                entry_of(&c, state_machine_arn),
                &mut preview,
            )?;
        }
        return Ok(Value::Array(preview));
    }
    let bucket = args.get("Bucket").and_then(Value::as_str).ok_or_else(|| {
        writer_failed(format!(
            "The ResultWriter's Parameters/Arguments need a string field 'Bucket', got {args}"
        ))
    })?;
    let prefix = args.get("Prefix").and_then(Value::as_str).unwrap_or("");
    let s3 = S3Store::configured(store, names::RESULT_WRITER_FAILED)?;
    let base = if prefix.is_empty() {
        run_id.to_owned()
    } else {
        format!("{}/{run_id}", prefix.trim_end_matches('/'))
    };
    let spools = spool_results(transformation, jsonl, state_machine_arn, children).await?;
    let files = put_result_files(s3, bucket, &base, jsonl, spools).await?;
    let manifest_key = format!("{base}/manifest.json");
    let manifest = json!({
        "DestinationBucket": bucket,
        "MapRunArn": map_run_arn,
        "ResultFiles": files,
    });
    s3.put_object(bucket, &manifest_key, manifest.to_string().as_bytes())
        .await
        .map_err(writer_failed)?;
    Ok(json!({
        "MapRunArn": map_run_arn,
        "ResultWriterDetails": {"Bucket": bucket, "Key": manifest_key},
    }))
}

/// Whether `WriterConfig.OutputType` asks for JSON lines (`JSONL`) rather than a JSON array.
fn writes_json_lines(request: &WriterRequest) -> Result<bool, StatesError> {
    match request.output_type.as_deref() {
        None | Some("JSON") => Ok(false),
        Some("JSONL") => Ok(true),
        Some(other) => Err(writer_failed(format!(
            "WriterConfig OutputType {other} is not one of JSON, JSONL"
        ))),
    }
}

/// Puts the spooled files (those with entries) under `base` and returns the manifest's
/// `ResultFiles`.
async fn put_result_files(
    s3: &S3Store,
    bucket: &str,
    base: &str,
    jsonl: bool,
    (succeeded, failed): (Spool, Spool),
) -> Result<Map<String, Value>, StatesError> {
    let mut files = Map::new();
    for (status, spool) in [("SUCCEEDED", succeeded), ("FAILED", failed)] {
        let mut listed = Vec::new();
        if let Some((file, size)) = spool.finish().map_err(writer_failed)? {
            let extension = if jsonl { "jsonl" } else { "json" };
            let key = format!("{base}/{status}_0.{extension}");
            s3.put_file(bucket, &key, file, size)
                .await
                .map_err(writer_failed)?;
            listed.push(json!({"Key": key, "Size": size}));
        }
        files.insert(status.into(), Value::Array(listed));
    }
    files.insert("PENDING".into(), json!([]));
    Ok(files)
}

/// The children's entries, spooled to the succeeded and the failed result file as they come.
async fn spool_results(
    transformation: &str,
    jsonl: bool,
    state_machine_arn: &str,
    children: impl IntoIterator<Item = Result<ChildResult, StatesError>>,
) -> Result<(Spool, Spool), StatesError> {
    let mut succeeded = Spool::new(jsonl).map_err(writer_failed)?;
    let mut failed = Spool::new(jsonl).map_err(writer_failed)?;
    for (n, child) in children.into_iter().enumerate() {
        let spools = (&mut succeeded, &mut failed);
        spool_result(transformation, state_machine_arn, child?, spools)?;
        if n % YIELD_EVERY == YIELD_EVERY - 1 {
            // A million entries take seconds: the executions sharing this thread go on meanwhile.
            crate::clock::yield_now().await;
        }
    }
    Ok((succeeded, failed))
}

/// How many children's entries are spooled between two turns given to other executions.
const YIELD_EVERY: usize = 256;

/// A child's entries, spooled to the succeeded or the failed result file.
fn spool_result(
    transformation: &str,
    state_machine_arn: &str,
    child: ChildResult,
    (succeeded, failed): (&mut Spool, &mut Spool),
) -> Result<(), StatesError> {
    let entry = entry_of(&child, state_machine_arn);
    if child.result.is_err() {
        return failed.push(&entry).map_err(writer_failed);
    }
    let mut entries = Vec::new();
    transformed(transformation, &child, entry, &mut entries)?;
    entries
        .iter()
        .try_for_each(|entry| succeeded.push(entry))
        .map_err(writer_failed)
}

/// One result file under way, in a temporary file: a JSON array (`[e1,e2]`, as
/// `Value::Array(..).to_string()` writes it) or JSON lines.
struct Spool {
    file: std::io::BufWriter<std::fs::File>,
    entries: usize,
    jsonl: bool,
}

impl Spool {
    fn new(jsonl: bool) -> Result<Self, String> {
        let file = tempfile::tempfile()
            .map_err(|e| format!("cannot create a temporary file for the results: {e}"))?;
        Ok(Spool {
            file: std::io::BufWriter::new(file),
            entries: 0,
            jsonl,
        })
    }

    fn push(&mut self, entry: &Value) -> Result<(), String> {
        use std::io::Write;
        let opening: &[u8] = match (self.jsonl, self.entries) {
            (true, _) => b"",
            (false, 0) => b"[",
            (false, _) => b",",
        };
        let written = self
            .file
            .write_all(opening)
            .and_then(|()| serde_json::to_writer(&mut self.file, entry).map_err(Into::into))
            .and_then(|()| match self.jsonl {
                true => self.file.write_all(b"\n"),
                false => Ok(()),
            });
        self.entries += 1;
        written.map_err(|e| format!("cannot write the results to a temporary file: {e}"))
    }

    /// The file, read from its start, and its size; `None` when it has no entries.
    fn finish(mut self) -> Result<Option<(std::fs::File, u64)>, String> {
        use std::io::{Seek, Write};
        if self.entries == 0 {
            return Ok(None);
        }
        let closing: &[u8] = if self.jsonl { b"" } else { b"]" };
        let failed =
            |e: std::io::Error| format!("cannot write the results to a temporary file: {e}");
        self.file.write_all(closing).map_err(failed)?;
        let mut file = self.file.into_inner().map_err(|e| failed(e.into_error()))?;
        let size = file.stream_position().map_err(failed)?;
        file.rewind().map_err(failed)?;
        Ok(Some((file, size)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    /// [`read_items`] from the folder `dir`, if any.
    fn read(dir: Option<&Path>, request: &ReaderRequest) -> Result<Vec<Value>, StatesError> {
        let store = dir.map(|d| S3Store::Folder(LocalS3::new(d)));
        block(read_items(store.as_ref(), request))
    }

    /// [`write_results`] to the folder `dir`, if any.
    fn write(
        dir: Option<&Path>,
        request: &WriterRequest,
        map_run_arn: &str,
        run_id: &str,
        state_machine_arn: &str,
        children: &[ChildResult],
    ) -> Result<Value, StatesError> {
        let store = dir.map(|d| S3Store::Folder(LocalS3::new(d)));
        block(write_results(
            store.as_ref(),
            request,
            map_run_arn,
            run_id,
            state_machine_arn,
            children.iter().cloned().map(Ok),
        ))
    }

    fn strings(v: &[Value]) -> String {
        Value::Array(v.to_vec()).to_string()
    }

    #[test]
    fn csv_given_headers_pad_missing_fields_and_drop_extra_ones() {
        let text = "Value1,Value2,Value3\n,,,\n   \n";
        let items = parse_csv(text, Some(vec!["H1".into(), "H2".into(), "H3".into()])).unwrap();
        assert_eq!(
            strings(&items),
            r#"[{"H1":"Value1","H2":"Value2","H3":"Value3"},{"H1":"","H2":"","H3":""},{"H1":"   ","H2":"","H3":""}]"#
        );
    }

    #[test]
    fn csv_first_row_is_the_header_and_quotes_are_unwrapped() {
        let items = parse_csv("a,b\r\n\"x,\"\"y\",2\n", None).unwrap();
        assert_eq!(strings(&items), r#"[{"a":"x,\"y","b":"2"}]"#);
        let items = parse_csv("H1,\nV4,V5,V6\n", None).unwrap();
        assert_eq!(strings(&items), r#"[{"H1":"V4","":"V5"}]"#);
    }

    #[test]
    fn csv_duplicate_headers_fail() {
        let e = parse_csv("1,2\n", Some(vec!["H".into(), "H".into()])).unwrap_err();
        assert_eq!(e.error.as_deref(), Some(names::ITEM_READER_FAILED));
        assert_eq!(
            e.cause.as_deref(),
            Some("CSV headers cannot contain duplicates.")
        );
    }

    fn s3_with(objects: &[(&str, &str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let s3 = LocalS3::new(dir.path());
        for (b, k, body) in objects {
            s3.put_object(b, k, body.as_bytes()).unwrap();
        }
        dir
    }

    fn get(bucket: &str, key: &str, input_type: &str, max: Option<i64>) -> ReaderRequest {
        ReaderRequest {
            resource: "arn:aws:states:::s3:getObject".into(),
            arguments: json!({"Bucket": bucket, "Key": key}),
            input_type: Some(input_type.into()),
            max_items: max,
            ..ReaderRequest::default()
        }
    }

    #[test]
    fn json_objects_are_read_and_capped_by_max_items() {
        let dir = s3_with(&[
            ("b", "f.json", "[1,2,3]"),
            ("b", "l.jsonl", "{\"a\":1}\n\n2\n"),
        ]);
        let all = read(Some(dir.path()), &get("b", "f.json", "JSON", Some(0))).unwrap();
        assert_eq!(strings(&all), "[1,2,3]");
        let two = read(Some(dir.path()), &get("b", "f.json", "JSON", Some(2))).unwrap();
        assert_eq!(strings(&two), "[1,2]");
        let lines = read(Some(dir.path()), &get("b", "l.jsonl", "JSONL", None)).unwrap();
        assert_eq!(strings(&lines), r#"[{"a":1},2]"#);
        let e = read(Some(dir.path()), &get("b", "f.json", "JSON", Some(-1))).unwrap_err();
        assert_eq!(e.cause.as_deref(), Some("field MaxItems must be positive"));
    }

    #[test]
    fn a_json_object_that_is_not_an_array_is_not_iterable_as_aws_words_it() {
        let dir = s3_with(&[("b", "o.json", r#"{"a": [1]}"#), ("b", "n.json", "3")]);
        for key in ["o.json", "n.json"] {
            let e = read(Some(dir.path()), &get("b", key, "JSON", None)).unwrap_err();
            assert_eq!(e.error.as_deref(), Some(names::ITEM_READER_FAILED));
            let cause = e.cause.as_deref();
            assert_eq!(cause, Some("Attempting to map over non-iterable node."));
        }
    }

    #[test]
    fn items_pointer_picks_the_array_out_of_a_json_object() {
        let dir = s3_with(&[("b", "o.json", r#"{"data": {"orders": [1, 2]}, "n": 2}"#)]);
        let mut request = get("b", "o.json", "JSON", None);
        request.items_pointer = Some("/data/orders".into());
        let items = read(Some(dir.path()), &request).unwrap();
        assert_eq!(strings(&items), "[1,2]");
        for (pointer, why) in [
            ("/n", "must point to an array, not number"),
            ("/data/missing", "points to nothing"),
            ("data", "is not a JSON Pointer"),
        ] {
            request.items_pointer = Some(pointer.into());
            let e = read(Some(dir.path()), &request).unwrap_err();
            assert_eq!(e.error.as_deref(), Some(names::ITEM_READER_FAILED));
            assert!(e.cause.unwrap_or_default().contains(why), "{pointer}");
        }
    }

    #[test]
    fn missing_objects_and_missing_configuration_are_reader_failures() {
        let dir = s3_with(&[]);
        let e = read(Some(dir.path()), &get("b", "nope.json", "JSON", None)).unwrap_err();
        assert_eq!(e.error.as_deref(), Some(names::ITEM_READER_FAILED));
        let e = read(None, &get("b", "f.json", "JSON", None)).unwrap_err();
        assert!(e.cause.unwrap_or_default().contains("--s3-dir"));
        let e = read(Some(dir.path()), &get("b", "../x", "JSON", None)).unwrap_err();
        assert!(e.cause.unwrap_or_default().contains("invalid object key"));
    }

    #[test]
    fn list_objects_v2_lists_keys_in_order_with_metadata() {
        let dir = s3_with(&[
            ("b", "z/1.txt", "hello"),
            ("b", "a.txt", ""),
            ("c", "x", ""),
        ]);
        let request = ReaderRequest {
            resource: "arn:aws:states:::s3:listObjectsV2".into(),
            arguments: json!({"Bucket": "b"}),
            ..ReaderRequest::default()
        };
        let items = read(Some(dir.path()), &request).unwrap();
        let keys: Vec<_> = items.iter().map(|i| i["Key"].clone()).collect();
        assert_eq!(keys, vec![json!("a.txt"), json!("z/1.txt")]);
        assert_eq!(items[1]["Size"], json!(5));
        assert_eq!(
            items[1]["Etag"],
            json!("\"5d41402abc4b2a76b9719d911017c592\"")
        );
        assert_eq!(items[1]["StorageClass"], json!("STANDARD"));
    }

    #[test]
    fn result_writer_writes_the_manifest_and_result_files() {
        let dir = s3_with(&[]);
        let children = vec![ChildResult {
            execution_arn: "arn:e".into(),
            name: "n".into(),
            input: json!("Hello"),
            result: Ok(json!("Hello")),
            start: 0,
            stop: 1,
        }];
        let request = WriterRequest {
            arguments: json!({"Bucket": "out", "Prefix": "jobs"}),
            resource: Some("arn:aws:states:::s3:putObject".into()),
            ..Default::default()
        };
        let out = write(
            Some(dir.path()),
            &request,
            "arn:run",
            "r1",
            "arn:sm",
            &children,
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"MapRunArn": "arn:run", "ResultWriterDetails": {"Bucket": "out", "Key": "jobs/r1/manifest.json"}})
        );
        let s3 = LocalS3::new(dir.path());
        let manifest: Value =
            serde_json::from_slice(&s3.get_object("out", "jobs/r1/manifest.json").unwrap())
                .unwrap();
        assert_eq!(
            manifest["ResultFiles"]["SUCCEEDED"][0]["Key"],
            json!("jobs/r1/SUCCEEDED_0.json")
        );
        let results: Value =
            serde_json::from_slice(&s3.get_object("out", "jobs/r1/SUCCEEDED_0.json").unwrap())
                .unwrap();
        assert_eq!(results[0]["Output"], json!("\"Hello\""));
    }

    #[test]
    fn a_missing_bucket_or_key_fails_in_s3s_words() {
        let dir = s3_with(&[("b", "k.json", "[]")]);
        let e = read(Some(dir.path()), &get("b", "nope.json", "JSON", None)).unwrap_err();
        assert_eq!(e.error.as_deref(), Some(names::ITEM_READER_FAILED));
        let cause = e.cause.unwrap_or_default();
        assert!(
            cause.starts_with(
                "The specified key does not exist. (Service: S3, Status Code: 404, Request ID: "
            ),
            "{cause}"
        );
        assert!(cause.contains(", Extended Request ID: ") && cause.ends_with(')'));
        let e = read(Some(dir.path()), &get("nob", "k.json", "JSON", None)).unwrap_err();
        assert!(e
            .cause
            .unwrap_or_default()
            .starts_with("The specified bucket does not exist (Service: S3, Status Code: 404"));
    }

    #[test]
    fn csv_delimiters_are_awss_five() {
        let dir = s3_with(&[
            ("b", "p.csv", "a|b\n1|\"x|y\"\n"),
            ("b", "t.csv", "a\tb\n1\t2\n"),
        ]);
        let mut request = get("b", "p.csv", "CSV", None);
        request.csv_delimiter = Some("PIPE".into());
        let items = read(Some(dir.path()), &request).unwrap();
        assert_eq!(strings(&items), r#"[{"a":"1","b":"x|y"}]"#);
        let mut request = get("b", "t.csv", "CSV", None);
        request.csv_delimiter = Some("TAB".into());
        let items = read(Some(dir.path()), &request).unwrap();
        assert_eq!(strings(&items), r#"[{"a":"1","b":"2"}]"#);
        request.csv_delimiter = Some("COLON".into());
        let e = read(Some(dir.path()), &request).unwrap_err();
        assert_eq!(e.error.as_deref(), Some(names::ITEM_READER_FAILED));
    }

    #[test]
    fn an_s3_inventory_manifest_lists_gzip_csv_files_of_objects() {
        use std::io::Write as _;
        let dir = s3_with(&[]);
        let s3 = LocalS3::new(dir.path());
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"\"src\",\"a.csv\",\"10\"\n\"src\",\"b.csv\",\"20\"\n")
            .unwrap();
        s3.put_object("inv", "data/one.csv.gz", &gz.finish().unwrap())
            .unwrap();
        s3.put_object("inv", "data/two.csv", b"src,c.csv,30\n")
            .unwrap();
        let manifest = json!({
            "sourceBucket": "src",
            "destinationBucket": "arn:aws:s3:::inv",
            "fileFormat": "CSV",
            "fileSchema": "Bucket, Key, Size",
            "files": [{"key": "data/one.csv.gz"}, {"key": "data/two.csv"}]
        });
        s3.put_object("inv", "manifest.json", manifest.to_string().as_bytes())
            .unwrap();
        let items = read(
            Some(dir.path()),
            &get("inv", "manifest.json", "MANIFEST", None),
        )
        .unwrap();
        assert_eq!(
            strings(&items),
            r#"[{"Bucket":"src","Key":"a.csv","Size":"10"},{"Bucket":"src","Key":"b.csv","Size":"20"},{"Bucket":"src","Key":"c.csv","Size":"30"}]"#
        );
    }

    fn child(name: &str, result: Result<Value, StatesError>) -> ChildResult {
        ChildResult {
            execution_arn: format!("arn:e:{name}"),
            name: name.into(),
            input: json!({}),
            result,
            start: 0,
            stop: 1,
        }
    }

    #[test]
    fn writer_config_compacts_flattens_and_writes_json_lines() {
        let children = vec![
            child("a", Ok(json!([1, 2]))),
            child("b", Ok(json!({"x": 1}))),
            child("c", Err(StatesError::new("Boom", "bad"))),
        ];
        let preview = |transformation: &str| {
            let request = WriterRequest {
                transformation: Some(transformation.into()),
                ..Default::default()
            };
            write(None, &request, "arn:run", "r1", "arn:sm", &children).unwrap()
        };
        let compact = preview("COMPACT");
        assert_eq!(compact[0], json!([1, 2]));
        assert_eq!(compact[1], json!({"x": 1}));
        assert_eq!(
            compact[2]["Status"],
            json!("FAILED"),
            "failures keep their metadata"
        );
        let flat = preview("FLATTEN");
        assert_eq!(flat.as_array().map(Vec::len), Some(4));
        assert_eq!(
            (&flat[0], &flat[1], &flat[2]),
            (&json!(1), &json!(2), &json!({"x": 1}))
        );
        assert_eq!(preview("NONE")[0]["Output"], json!("[1,2]"));

        let dir = s3_with(&[]);
        let request = WriterRequest {
            arguments: json!({"Bucket": "out"}),
            resource: Some("arn:aws:states:::s3:putObject".into()),
            transformation: Some("COMPACT".into()),
            output_type: Some("JSONL".into()),
        };
        write(
            Some(dir.path()),
            &request,
            "arn:run",
            "r1",
            "arn:sm",
            &children,
        )
        .unwrap();
        let s3 = LocalS3::new(dir.path());
        let body = s3.get_object("out", "r1/SUCCEEDED_0.jsonl").unwrap();
        assert_eq!(String::from_utf8_lossy(&body), "[1,2]\n{\"x\":1}\n");
        let failed = s3.get_object("out", "r1/FAILED_0.jsonl").unwrap();
        assert!(String::from_utf8_lossy(&failed).contains("\"Status\":\"FAILED\""));
    }
}
