//! The open documents: their text as the editor last sent it (full-document sync), and what
//! kind of file each one is.
//!
//! The store is the only state of the server; every request reads it as it stands between two
//! messages, so each answer is a pure function of a snapshot of the documents.

use crate::asl::SourceFormat;
use lsp_types::Uri;
use std::collections::HashMap;

/// One open document.
#[derive(Debug, Clone)]
pub struct Document {
    /// The text, as of the last change.
    pub text: String,
    /// The editor's version of it.
    pub version: i32,
    /// The definitions written inside its strings, when it is a JSON template (CDK's
    /// `DefinitionString`s): what navigation and edits inside them run on.
    pub embedded: Vec<crate::lsp::embedded::Embedded>,
}

/// What a document is to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A state machine definition (`*.asl.json`, `*.asl.yaml`, or JSON/YAML with top-level
    /// `States` and `StartAt`).
    Definition(SourceFormat),
    /// A SAM or CloudFormation template with state machines (`cdk.out` templates included).
    Template(SourceFormat),
    /// Anything else: the server says nothing about it.
    Other,
}

/// The open documents, by URI.
#[derive(Debug, Default)]
pub struct Documents {
    open: HashMap<Uri, Document>,
}

impl Documents {
    /// Records an opened document, or a new version of one.
    pub fn set(&mut self, uri: Uri, text: String, version: i32) {
        let embedded = match kind(&file_name(&uri), &text) {
            Kind::Template(SourceFormat::Json) => crate::asl::source::parse_json(&text)
                .map(|value| crate::lsp::embedded::Embedded::of_template(&text, &value))
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        self.open.insert(
            uri,
            Document {
                text,
                version,
                embedded,
            },
        );
    }

    /// Forgets a closed document.
    pub fn close(&mut self, uri: &Uri) {
        self.open.remove(uri);
    }

    /// The document at `uri`, when it is open.
    pub fn get(&self, uri: &Uri) -> Option<&Document> {
        self.open.get(uri)
    }

    /// Every open document.
    pub fn iter(&self) -> impl Iterator<Item = (&Uri, &Document)> {
        self.open.iter()
    }
}

/// The file name of a URI's path (percent-decoded), for deciding what a document is.
pub fn file_name(uri: &Uri) -> String {
    let path = decode(uri.path().as_str());
    path.rsplit('/').next().unwrap_or_default().to_owned()
}

/// The local path of a `file:` URI.
pub fn file_path(uri: &Uri) -> Option<std::path::PathBuf> {
    let scheme = uri.scheme()?.as_str();
    scheme
        .eq_ignore_ascii_case("file")
        .then(|| decode(uri.path().as_str()).into())
}

/// The `file:` URI of a local path, as editors write them (`%` escapes for what is not
/// plain).
pub fn file_uri(path: &std::path::Path) -> Option<Uri> {
    let mut out = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.parse().ok()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What the document named `name` with `text` is: by its name first (`*.asl.*` is always a
/// definition), else by what its top level holds.
pub fn kind(name: &str, text: &str) -> Kind {
    let lower = name.to_ascii_lowercase();
    let format = SourceFormat::detect(Some(&lower), text);
    if [".asl.json", ".asl.yaml", ".asl.yml"]
        .iter()
        .any(|s| lower.ends_with(s))
    {
        return Kind::Definition(format);
    }
    let is_data = lower.ends_with(".json") || crate::asl::yaml::is_yaml_name(&lower);
    if !is_data {
        return Kind::Other;
    }
    let value = match format {
        SourceFormat::Yaml => crate::asl::yaml::parse(text).ok().map(|d| d.value),
        SourceFormat::Json => crate::asl::source::parse_json(text).ok(),
    };
    match value {
        Some(v) if crate::asl::cfn::is_template_with_machines(&v) => Kind::Template(format),
        Some(v) if v.get("States").is_some() && v.get("StartAt").is_some() => {
            Kind::Definition(format)
        }
        // Mid-edit, a template or a definition may not parse: keep checking what it looks like.
        None if crate::loader::looks_like_template(text) => Kind::Template(format),
        None if text.contains("\"StartAt\"") || text.contains("StartAt:") => {
            Kind::Definition(format)
        }
        _ => Kind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_and_paths_round_trip_through_percent_escapes() {
        let path = std::path::Path::new("/tmp/my machines/a#b.asl.json");
        let uri = file_uri(path).unwrap();
        assert_eq!(uri.as_str(), "file:///tmp/my%20machines/a%23b.asl.json");
        assert_eq!(file_path(&uri).unwrap(), path);
        assert_eq!(file_name(&uri), "a#b.asl.json");
    }

    #[test]
    fn kinds_by_name_then_content() {
        let machine = r#"{"StartAt":"A","States":{"A":{"Type":"Succeed"}}}"#;
        assert_eq!(
            kind("x.asl.json", "{"),
            Kind::Definition(SourceFormat::Json)
        );
        assert_eq!(
            kind("x.json", machine),
            Kind::Definition(SourceFormat::Json)
        );
        assert_eq!(kind("package.json", "{}"), Kind::Other);
        assert_eq!(kind("x.asl.yml", ""), Kind::Definition(SourceFormat::Yaml));
    }
}
