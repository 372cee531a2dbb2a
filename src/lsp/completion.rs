//! `textDocument/completion`: what may be written where the cursor is.
//!
//! - where a state is named (`StartAt`, `Next`, `Default`, a Choice rule's or a Catch's
//!   `Next`): exactly the states of that scope (a Parallel branch or Map processor names only
//!   its own states);
//! - a state's field names: those its type has, in its query language, not yet written;
//! - inside `ErrorEquals`: AWS's `States.*` error names;
//! - in a `.$` value: the intrinsic functions; in a Task's `Resource`: the optimized
//!   integrations' ARNs with each pattern AWS supports.
//!
//! A key being typed (`"Ti` or `"Ti"` alone on its line, `Ti` in YAML) leaves the text
//! unparsable; the tree is then read from the text with that key completed (`: null`).

use crate::asl::{JsonPointer, SourceFormat};
use crate::lsp::documents::{self, Documents, Kind};
use crate::lsp::fields;
use crate::lsp::text::LineIndex;
use crate::lsp::tree::{Spot, Tree};
use crate::lsp::Opened;
use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionParams, CompletionResponse, CompletionTextEdit,
    TextEdit,
};
use serde_json::Value;

/// Maps a span of the tree's text to the document's range (`None`: no edit can be offered).
type Ranges<'a> = &'a dyn Fn(std::ops::Range<usize>) -> Option<lsp_types::Range>;

/// The completions at the cursor.
pub fn completion(docs: &Documents, params: CompletionParams) -> Option<CompletionResponse> {
    let at = params.text_document_position;
    let uri = &at.text_document.uri;
    if let Some(opened) = Opened::at(docs, uri, at.position).filter(Opened::is_embedded) {
        return in_string(&opened, at.position);
    }
    let doc = docs.get(uri)?;
    let (format, template) = match documents::kind(&documents::file_name(uri), &doc.text) {
        Kind::Definition(format) => (format, false),
        Kind::Template(format) => (format, true),
        Kind::Other => return None,
    };
    let read = |text| match template {
        true => Tree::template(text, format),
        false => Tree::new(text, format),
    };
    let lines = LineIndex::new(&doc.text);
    let offset = lines.offset(at.position);
    let repaired = match read(&doc.text) {
        Some(_) => None,
        None => Some(repair(&doc.text, offset, format)?),
    };
    let tree = read(repaired.as_deref().unwrap_or(&doc.text))?;
    let items = items_at(&tree, offset, &|span| Some(lines.range(span)), format)?;
    Some(CompletionResponse::Array(items))
}

/// Completions inside a definition written in a template's string: the same, on the built
/// text, each edit mapped into the string and its text escaped for it (none where no one
/// literal of the template holds the place).
fn in_string(opened: &Opened<'_>, position: lsp_types::Position) -> Option<CompletionResponse> {
    let offset = opened.offset(position)?;
    let items = items_at(
        &opened.tree,
        offset,
        &|span| opened.range(span),
        SourceFormat::Json,
    )?;
    let escaped = items.into_iter().filter_map(|mut i| {
        match &mut i.text_edit {
            Some(CompletionTextEdit::Edit(e)) => e.new_text = opened.written(&e.new_text),
            _ => return None,
        }
        Some(i)
    });
    Some(CompletionResponse::Array(escaped.collect()))
}

/// The completions at byte `offset` of the tree's text.
fn items_at(
    tree: &Tree<'_>,
    offset: usize,
    ranges: Ranges<'_>,
    format: SourceFormat,
) -> Option<Vec<CompletionItem>> {
    match tree.spot(offset)? {
        Spot::Value(p) => value_items(tree, ranges, &p, format),
        Spot::Key(p) => {
            let holder = p.parent();
            let replace = ranges(tree.inner(tree.key_span(&p)?))?;
            let items = field_items(tree, &holder)?;
            Some(items.into_iter().map(|i| edit(i, replace)).collect())
        }
    }
}

/// Completions inside a value: a name, an error, an intrinsic, an ARN, or a new field.
fn value_items(
    tree: &Tree<'_>,
    ranges: Ranges<'_>,
    p: &JsonPointer,
    format: SourceFormat,
) -> Option<Vec<CompletionItem>> {
    let field = p.tokens().last().unwrap_or_default();
    let parent = p.parent().tokens().last().unwrap_or_default();
    let replace = || ranges(tree.inner(tree.value_span(p)?));
    let named = |names: Vec<(String, String)>, kind| {
        let replace = replace()?;
        Some(
            names
                .into_iter()
                .map(|(label, detail)| edit(item(label, detail, kind), replace))
                .collect(),
        )
    };
    if ["Next", "Default", "StartAt"].contains(&field.as_str()) {
        return named(
            state_names(tree, tree.scope_of_target(p)?),
            CompletionItemKind::REFERENCE,
        );
    }
    if parent == "ErrorEquals" {
        let errors = crate::asl::error::names::PREDEFINED.iter();
        let names = errors
            .map(|e| (e.to_string(), "error AWS raises".to_owned()))
            .collect();
        return named(names, CompletionItemKind::CONSTANT);
    }
    if field == "Resource" {
        let arns = crate::asl::resource::optimized_resources().into_iter();
        let names = arns
            .map(|a| (a, "optimized integration".to_owned()))
            .collect();
        return named(names, CompletionItemKind::VALUE);
    }
    if field.ends_with(".$") {
        let functions = crate::asl::intrinsics::Function::names();
        let names = functions
            .map(|f| (format!("States.{f}()"), "intrinsic function".to_owned()))
            .collect();
        return named(names, CompletionItemKind::FUNCTION);
    }
    new_fields(tree, p, format)
}

/// On the blank space of an object: a new field, written whole (`"Name": ` or `Name: `).
fn new_fields(
    tree: &Tree<'_>,
    p: &JsonPointer,
    format: SourceFormat,
) -> Option<Vec<CompletionItem>> {
    let items = field_items(tree, p)?;
    Some(
        items
            .into_iter()
            .map(|mut i| {
                i.insert_text = Some(match format {
                    SourceFormat::Json => format!("\"{}\": ", i.label),
                    SourceFormat::Yaml => format!("{}: ", i.label),
                });
                i
            })
            .collect(),
    )
}

/// The fields an object may still take: a state's by its type and query language, or the
/// top level's.
fn field_items(tree: &Tree<'_>, holder: &JsonPointer) -> Option<Vec<CompletionItem>> {
    let object = tree.value.pointer(holder.as_str())?.as_object()?;
    let top_level = tree.roots.iter().any(|&i| &tree.scopes[i].at == holder);
    let candidates: Vec<&str> = if top_level {
        TOP.to_vec()
    } else if tree
        .scopes
        .iter()
        .any(|s| s.states.iter().any(|st| &st.at == holder))
    {
        let ty = object.get("Type").and_then(Value::as_str);
        let jsonata = query_language(tree, holder, object) == "JSONata";
        state_fields(ty)
            .into_iter()
            .filter(|f| match jsonata {
                true => !crate::asl::parse::JSONPATH_ONLY.contains(f),
                false => !crate::asl::parse::JSONATA_ONLY.contains(f),
            })
            .collect()
    } else {
        return None;
    };
    let items = candidates
        .into_iter()
        .filter(|f| !object.contains_key(*f))
        .map(|f| {
            let mut i = item(f.to_owned(), "field".to_owned(), CompletionItemKind::FIELD);
            i.documentation = fields::explain(f).map(|text| {
                lsp_types::Documentation::MarkupContent(lsp_types::MarkupContent {
                    kind: lsp_types::MarkupKind::Markdown,
                    value: text,
                })
            });
            i
        })
        .collect();
    Some(items)
}

/// The state's query language: its own `QueryLanguage`, else the machine's, else JSONPath.
fn query_language<'v>(
    tree: &'v Tree<'_>,
    at: &JsonPointer,
    state: &'v serde_json::Map<String, Value>,
) -> &'v str {
    let own = state.get("QueryLanguage").and_then(Value::as_str);
    let root = tree
        .root_of(at)
        .and_then(|r| tree.value.pointer(r.at.as_str()));
    let top = root
        .and_then(|r| r.get("QueryLanguage"))
        .and_then(Value::as_str);
    own.or(top).unwrap_or("JSONPath")
}

const TOP: &[&str] = &[
    "Comment",
    "StartAt",
    "States",
    "TimeoutSeconds",
    "Version",
    "QueryLanguage",
];

/// Each state type's own fields (beside the common ones [`state_fields`] adds).
const OWN_FIELDS: &[(&str, &[&str])] = &[
    ("Pass", &["Result", "ResultPath", "Parameters"]),
    (
        "Task",
        &[
            "Resource",
            "Parameters",
            "Arguments",
            "TimeoutSeconds",
            "TimeoutSecondsPath",
            "HeartbeatSeconds",
            "HeartbeatSecondsPath",
            "Credentials",
        ],
    ),
    (
        "Choice",
        &[
            "Choices",
            "Default",
            "InputPath",
            "OutputPath",
            "Output",
            "Assign",
        ],
    ),
    (
        "Wait",
        &["Seconds", "Timestamp", "SecondsPath", "TimestampPath"],
    ),
    ("Succeed", &["InputPath", "OutputPath", "Output"]),
    ("Fail", &["Error", "Cause", "ErrorPath", "CausePath"]),
    ("Parallel", &["Branches", "Parameters", "Arguments"]),
    (
        "Map",
        &[
            "ItemProcessor",
            "Iterator",
            "ItemsPath",
            "Items",
            "ItemSelector",
            "Parameters",
            "ItemReader",
            "ItemBatcher",
            "ResultWriter",
            "MaxConcurrency",
            "ToleratedFailurePercentage",
            "ToleratedFailureCount",
            "Label",
        ],
    ),
];

/// The fields a state of type `ty` has (every type's common ones when it has no type yet).
fn state_fields(ty: Option<&str>) -> Vec<&'static str> {
    let flow = ["Next", "End", "InputPath", "OutputPath", "Output", "Assign"];
    let results = ["ResultPath", "ResultSelector", "Retry", "Catch"];
    let mut out = vec!["Type", "Comment", "QueryLanguage"];
    if !matches!(ty, Some("Choice" | "Succeed" | "Fail")) {
        out.extend(flow);
    }
    if matches!(ty, Some("Task" | "Parallel" | "Map")) {
        out.extend(results);
    }
    let own = OWN_FIELDS.iter().find(|(t, _)| Some(*t) == ty);
    out.extend(own.map_or(&[][..], |(_, fields)| fields));
    let mut seen = std::collections::HashSet::new();
    out.retain(|f| seen.insert(*f));
    out
}

/// The states of scope `scope`, each with its type.
fn state_names(tree: &Tree<'_>, scope: usize) -> Vec<(String, String)> {
    tree.scopes[scope]
        .states
        .iter()
        .map(|s| {
            let value = tree.value.pointer(s.at.as_str());
            let ty = value.and_then(|v| v.get("Type")).and_then(Value::as_str);
            (s.name.clone(), format!("{} state", ty.unwrap_or("a")))
        })
        .collect()
}

fn item(label: String, detail: String, kind: CompletionItemKind) -> CompletionItem {
    CompletionItem {
        label,
        kind: Some(kind),
        detail: Some(detail),
        ..Default::default()
    }
}

/// `item` replacing `range` with its label.
fn edit(mut item: CompletionItem, range: lsp_types::Range) -> CompletionItem {
    item.text_edit = Some(CompletionTextEdit::Edit(TextEdit::new(
        range,
        item.label.clone(),
    )));
    item
}

/// The text with the key being typed on the cursor's line completed, so that it parses; the
/// key keeps its offsets.
fn repair(text: &str, offset: usize, format: SourceFormat) -> Option<String> {
    let start = text[..offset.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let line = &text[start..end];
    let word = line.trim().trim_end_matches(',');
    let lead = start + (line.len() - line.trim_start().len());
    let name = match format {
        SourceFormat::Json => word.strip_prefix('"').map(|w| w.trim_end_matches('"'))?,
        SourceFormat::Yaml => word,
    };
    if !name.chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let completed = match format {
        SourceFormat::Json => {
            let more = text[end..].trim_start().starts_with('"');
            format!("\"{name}\": null{}", if more { "," } else { "" })
        }
        SourceFormat::Yaml => format!("{name}:"),
    };
    Some(format!("{}{completed}{}", &text[..lead], &text[end..]))
}
