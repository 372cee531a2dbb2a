//! Rendering the diagnostics of one or many definitions.
//!
//! Three audiences, three formats:
//!
//! - [`render_human`]: one miette report per diagnostic, with the offending key underlined in a
//!   source snippet and related places labelled, then a per-file summary line.
//! - [`render_json`]: AWS's `ValidateStateMachineDefinition` response shape, so scripts written
//!   against AWS work unchanged.
//! - [`render_github`]: GitHub Actions workflow commands, which become annotations on the diff.
//!
//! Diagnostics name places with JSON pointers; this module turns them into byte spans, lines and
//! columns with [`SpanIndex`], built once per file and only here, when there is something to show.

use crate::api::validation;
use crate::asl::diagnostic::{Diagnostic, Diagnostics, Location, Severity};
use crate::asl::source::{parse_json, split_aws_location, SpanIndex, SyntaxError};
use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError, MietteSpanContents,
    SourceCode, SourceSpan, SpanContents,
};
use serde_json::{json, Map, Value};
use std::fmt::{self, Write as _};
use std::ops::Range;

/// One definition file and what validation found in it.
#[derive(Debug, Clone, Copy)]
pub struct FileReport<'a> {
    /// The path of the file that holds the definition, as the user gave it; shown as is.
    pub path: &'a str,
    /// The logical ID, when the definition is a template's state machine.
    pub logical_id: Option<&'a str>,
    /// The template, when the definition is in a file of its own that a template names.
    pub template: Option<&'a str>,
    /// The file's text, exactly as read.
    pub text: &'a str,
    /// What validation found, in order.
    pub diagnostics: &'a Diagnostics,
}

/// The output formats of `sfn-local validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// miette reports with source snippets, for people.
    #[default]
    Human,
    /// AWS's `ValidateStateMachineDefinition` response shape.
    Json,
    /// GitHub Actions annotations.
    Github,
}

/// Renders `files` in `format`; `color` only matters for [`Format::Human`].
pub fn render(format: Format, files: &[FileReport<'_>], color: bool) -> String {
    match format {
        Format::Human => render_human(files, color),
        Format::Json => render_json(files),
        Format::Github => render_github(files),
    }
}

/// Whether human output should be colored: `--color`, and with `auto` only on a terminal, never
/// when `NO_COLOR` is set (<https://no-color.org>) or the terminal is `dumb`.
pub fn color_wanted(stream_is_terminal: bool) -> bool {
    crate::cli::ui::color(stream_is_terminal)
}

// ---------------------------------------------------------------------------------------------
// Places: from a diagnostic's location to a span, a line and a column.

/// Where one diagnostic lands in its file.
struct Place {
    span: Range<usize>,
    line: usize,
    column: usize,
    /// A better label than the message, when one is known (a syntax error's own words).
    label: Option<String>,
}

impl crate::loader::LoadedFile {
    /// Its report for `validate` and the other commands that show diagnostics.
    pub fn report(&self) -> FileReport<'_> {
        FileReport {
            path: &self.path,
            logical_id: self.logical_id.as_deref(),
            template: self.template.as_deref(),
            text: &self.text,
            diagnostics: &self.definition.diagnostics,
        }
    }

    /// Its report, then what its template gets wrong around it, placed in the template (when
    /// its definition is a file of its own and the template has problems).
    pub fn reports(&self) -> Vec<FileReport<'_>> {
        let mut out = vec![self.report()];
        if let Some(problems) = &self.template_problems {
            if !problems.diagnostics.is_empty() {
                out.push(FileReport {
                    logical_id: self.logical_id.as_deref(),
                    ..FileReport::new(&problems.path, &problems.text, &problems.diagnostics)
                });
            }
        }
        out
    }
}

impl<'a> FileReport<'a> {
    /// The report of a definition file of its own.
    pub fn new(path: &'a str, text: &'a str, diagnostics: &'a Diagnostics) -> Self {
        FileReport {
            path,
            logical_id: None,
            template: None,
            text,
            diagnostics,
        }
    }

    /// How people are shown it: `path`, or `path (LogicalId)` for a template's state machine.
    fn label(&self) -> String {
        match self.logical_id {
            Some(id) => format!("{} ({id})", self.path),
            None => self.path.to_owned(),
        }
    }
}

/// How a report's text is written.
fn source_format(file: &FileReport<'_>) -> crate::asl::SourceFormat {
    crate::asl::SourceFormat::detect(Some(file.path), file.text)
}

/// Resolves locations in one file; the index and the syntax error are computed once.
struct Resolver<'a> {
    index: SpanIndex<'a>,
    /// The text's own syntax error, to underline the offending token of a text location.
    syntax: Option<SyntaxError>,
}

impl<'a> Resolver<'a> {
    fn new(file: &FileReport<'a>) -> Self {
        let needs_syntax = file
            .diagnostics
            .iter()
            .any(|d| matches!(d.location, Location::Text { .. } | Location::None));
        Resolver {
            index: match source_format(file) {
                crate::asl::SourceFormat::Yaml => SpanIndex::new_yaml(file.text),
                crate::asl::SourceFormat::Json => SpanIndex::new(file.text),
            },
            syntax: if needs_syntax && source_format(file) == crate::asl::SourceFormat::Json {
                parse_json(file.text).err()
            } else {
                None
            },
        }
    }

    fn place(&self, location: &Location) -> Place {
        match location {
            Location::Pointer(pointer) => self.place_span(self.index.span(pointer), None),
            Location::Field { pointer, key } => {
                self.place_span(self.index.span(&pointer.key(key)), None)
            }
            Location::InString { pointer, offset } => {
                match self.index.string_offset(pointer, *offset) {
                    Some(at) => {
                        let end = at + char_len_at(self.index.text(), at).max(1);
                        self.place_span(at..end, None)
                    }
                    None => self.place_span(self.index.span(pointer), None),
                }
            }
            Location::Text { line, column } => match &self.syntax {
                Some(error) if (error.line, error.column) == (*line, *column) => {
                    self.place_span(error.span.clone(), Some(error.message.clone()))
                }
                _ => {
                    let offset = self.index.offset(*line, *column);
                    let end = offset + char_len_at(self.index.text(), offset);
                    Place {
                        span: offset..end,
                        line: *line,
                        column: *column,
                        label: None,
                    }
                }
            },
            // AWS gives no location for an empty or non-object definition; a person still
            // wants to see the file, so show its start with the syntax error's own words.
            Location::None => match &self.syntax {
                Some(error) => Place {
                    span: error.span.clone(),
                    line: 1,
                    column: 1,
                    label: Some(error.message.clone()),
                },
                None => Place {
                    span: 0..0,
                    line: 1,
                    column: 1,
                    label: None,
                },
            },
        }
    }

    fn place_span(&self, span: Range<usize>, label: Option<String>) -> Place {
        let (line, column) = self.index.line_col(span.start);
        Place {
            span,
            line,
            column,
            label,
        }
    }
}

fn char_len_at(text: &str, offset: usize) -> usize {
    text.get(offset..)
        .and_then(|rest| rest.chars().next())
        .map_or(0, char::len_utf8)
}

/// The message without a Jackson `[Source: …]` suffix, which quotes up to 500 characters of the
/// file: the snippet and the line/column already say where.
fn short_message(diagnostic: &Diagnostic) -> &str {
    split_aws_location(&diagnostic.message).0
}

fn severity_word(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// Error and warning counts of one file.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    errors: usize,
    warnings: usize,
}

impl Counts {
    fn of(diagnostics: &Diagnostics) -> Self {
        let errors = diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        Counts {
            errors,
            warnings: diagnostics.len() - errors,
        }
    }

    fn add(self, other: Counts) -> Counts {
        Counts {
            errors: self.errors + other.errors,
            warnings: self.warnings + other.warnings,
        }
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.errors == 0 && self.warnings == 0 {
            return f.write_str("ok");
        }
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        write!(
            f,
            "{} error{}, {} warning{}",
            self.errors,
            plural(self.errors),
            self.warnings,
            plural(self.warnings)
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Human: miette.

/// Renders every diagnostic as a miette report, each file followed by a summary line
/// (`definitions/a.json: 2 errors, 1 warning`), and a total line when there are several files.
pub fn render_human(files: &[FileReport<'_>], color: bool) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_links(false)
        .with_width(100);
    let mut out = String::new();
    let mut total = Counts::default();
    for (i, file) in files.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if !file.diagnostics.is_empty() {
            let resolver = Resolver::new(file);
            for diagnostic in file.diagnostics.iter() {
                let report = HumanReport::new(file, &resolver, diagnostic);
                let mut rendered = String::new();
                // miette panics on a highlight past column 65,535 (a minified one-line
                // definition: found by fuzzing), and such a line is no snippet to read anyway.
                let fits = report.labels.iter().all(|l| {
                    longest_line(file.text, l.offset()..l.offset() + l.len()) <= MAX_SNIPPET_LINE
                });
                let result = if fits {
                    handler.render_report(&mut rendered, &report)
                } else {
                    Err(fmt::Error)
                };
                match result {
                    Ok(()) => out.push_str(&rendered),
                    // No snippet (or miette refused): still say what and where, plainly.
                    Err(fmt::Error) => {
                        let place = resolver.place(&diagnostic.location);
                        let _ = writeln!(
                            out,
                            "{}[{}]: {}\n  --> {}:{}:{}",
                            severity_word(diagnostic.severity),
                            diagnostic.code,
                            short_message(diagnostic),
                            file.path,
                            place.line,
                            place.column
                        );
                    }
                }
                out.push('\n');
            }
        }
        let counts = Counts::of(file.diagnostics);
        total = total.add(counts);
        let _ = writeln!(out, "{}: {counts}", file.label());
    }
    if files.len() > 1 {
        let _ = writeln!(out, "{}: {total}", totals_line(files));
    }
    out
}

/// `3 files`, or for templates `2 files, 3 state machines`: every file read (a template and
/// the definition files it names), and every state machine checked.
fn totals_line(files: &[FileReport<'_>]) -> String {
    let mut read: Vec<&str> = files
        .iter()
        .flat_map(|f| std::iter::once(f.path).chain(f.template))
        .collect();
    read.sort_unstable();
    read.dedup();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let in_templates = files.iter().any(|f| f.logical_id.is_some());
    if in_templates {
        // A machine's template problems are a report of their own, in its template, with
        // its logical ID: count the machine once.
        let mut machines: Vec<(&str, Option<&str>)> = files
            .iter()
            .map(|f| (f.template.unwrap_or(f.path), f.logical_id))
            .collect();
        machines.sort_unstable();
        machines.dedup();
        let machines = machines.len();
        format!(
            "{} file{}, {machines} state machine{}",
            read.len(),
            plural(read.len()),
            plural(machines)
        )
    } else {
        format!("{} file{}", read.len(), plural(read.len()))
    }
}

/// The longest line a snippet shows; past it, a diagnostic is shown without one.
const MAX_SNIPPET_LINE: usize = 4096;

/// The length in bytes of the longest line that `span` touches.
fn longest_line(text: &str, span: Range<usize>) -> usize {
    // Bytes, not `str` slices: a span need not fall on a character boundary.
    let bytes = text.as_bytes();
    let start = span.start.min(bytes.len());
    let end = span.end.clamp(start, bytes.len());
    let from = bytes[..start]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let to = bytes[end..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |i| end + i);
    bytes[from..to]
        .split(|&b| b == b'\n')
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0)
}

/// One diagnostic as miette sees it, borrowing the file's text.
struct HumanReport<'a> {
    message: String,
    /// `error[CODE]` / `warning[CODE]`, rustc-style, shown as miette's code line.
    code: String,
    severity: miette::Severity,
    labels: Vec<LabeledSpan>,
    source: NamedText<'a>,
}

impl<'a> HumanReport<'a> {
    fn new(file: &FileReport<'a>, resolver: &Resolver<'a>, diagnostic: &Diagnostic) -> Self {
        let text_len = file.text.len();
        let message = short_message(diagnostic).to_owned();
        let place = resolver.place(&diagnostic.location);
        let primary_label = place.label.unwrap_or_else(|| message.clone());
        let mut labels = vec![LabeledSpan::new_primary_with_span(
            Some(primary_label),
            source_span(place.span, text_len),
        )];
        for (pointer, label) in &diagnostic.related {
            labels.push(LabeledSpan::new_with_span(
                Some(label.clone()),
                source_span(resolver.index.span(pointer), text_len),
            ));
        }
        HumanReport {
            message,
            code: format!(
                "{}[{}]",
                severity_word(diagnostic.severity),
                diagnostic.code
            ),
            severity: match diagnostic.severity {
                Severity::Error => miette::Severity::Error,
                Severity::Warning => miette::Severity::Warning,
            },
            labels,
            source: NamedText {
                name: file.path,
                text: file.text,
            },
        }
    }
}

/// A span miette can always read: clamped to the text.
fn source_span(span: Range<usize>, text_len: usize) -> SourceSpan {
    let start = span.start.min(text_len);
    let end = span.end.clamp(start, text_len);
    SourceSpan::from(start..end)
}

impl fmt::Debug for HumanReport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HumanReport")
            .field("code", &self.code)
            .field("message", &self.message)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for HumanReport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HumanReport<'_> {}

impl miette::Diagnostic for HumanReport<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(&self.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(self.severity)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        Some(Box::new(self.labels.iter().cloned()))
    }
}

/// A file's text with its name, borrowed (miette's `NamedSource` wants to own it, and a
/// definition can be a megabyte with many diagnostics).
struct NamedText<'a> {
    name: &'a str,
    text: &'a str,
}

impl SourceCode for NamedText<'_> {
    fn read_span<'b>(
        &'b self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'b> + 'b>, MietteError> {
        let inner = self
            .text
            .read_span(span, context_lines_before, context_lines_after)?;
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.to_owned(),
            inner.data(),
            *inner.span(),
            inner.line(),
            inner.column(),
            inner.line_count(),
        )))
    }
}

// ---------------------------------------------------------------------------------------------
// JSON: AWS's response shape.

/// AWS's `ValidateStateMachineDefinition` response for each file: `{"result", "diagnostics",
/// "truncated"}` with diagnostics keyed `severity, code, message, location` (AWS's documented
/// order; `location` omitted when there is none). One file gives that object; several give an
/// array of them, each with a leading `"file"`. `result` is `FAIL` exactly when there is an
/// ERROR. Messages are AWS's, verbatim, Jackson location included.
pub fn render_json(files: &[FileReport<'_>]) -> String {
    render_json_as(files, false)
}

/// Like [`render_json`]; with `array`, an array (each object with its `"file"`) even for one
/// file, so a script sees one shape whatever a folder holds.
pub fn render_json_as(files: &[FileReport<'_>], array: bool) -> String {
    let value = match files {
        [one] if !array => Value::Object(file_json(one, false)),
        many => Value::Array(
            many.iter()
                .map(|file| Value::Object(file_json(file, true)))
                .collect(),
        ),
    };
    let mut out = serde_json::to_string_pretty(&value).unwrap_or_else(|_| "null".to_owned());
    out.push('\n');
    out
}

fn file_json(file: &FileReport<'_>, with_path: bool) -> Map<String, Value> {
    let mut object = Map::new();
    if with_path {
        object.insert("file".to_owned(), json!(file.path));
    }
    // A template's state machine: which one, and the template when the definition is a file
    // of its own (`file` stays a path either way).
    if let Some(id) = file.logical_id {
        object.insert("logicalId".to_owned(), json!(id));
    }
    if let Some(template) = file.template {
        object.insert("template".to_owned(), json!(template));
    }
    object.insert(
        "result".to_owned(),
        json!(validation::result(file.diagnostics)),
    );
    object.insert(
        "diagnostics".to_owned(),
        Value::Array(
            file.diagnostics
                .iter()
                .map(validation::diagnostic_json)
                .collect(),
        ),
    );
    object.insert("truncated".to_owned(), json!(false));
    object
}

// ---------------------------------------------------------------------------------------------
// GitHub Actions workflow commands.

/// One `::error file=F,line=L,col=C,title=CODE::message` line per diagnostic (`::warning` for
/// warnings), escaped per GitHub's rules. Related places follow the message on their own lines.
pub fn render_github(files: &[FileReport<'_>]) -> String {
    let mut out = String::new();
    for file in files {
        if file.diagnostics.is_empty() {
            continue;
        }
        let resolver = Resolver::new(file);
        for diagnostic in file.diagnostics.iter() {
            let place = resolver.place(&diagnostic.location);
            let mut message = short_message(diagnostic).to_owned();
            for (pointer, label) in &diagnostic.related {
                let (line, column) = resolver.index.line_col(resolver.index.span(pointer).start);
                let _ = write!(message, "\n{label} (line {line}, column {column})");
            }
            // `file=` must be a path GitHub finds in the repository; which state machine goes
            // into the title.
            let title = match file.logical_id {
                Some(id) => format!("{} in {id}", diagnostic.code),
                None => diagnostic.code.to_string(),
            };
            let _ = writeln!(
                out,
                "::{} file={},line={},col={},title={}::{}",
                severity_word(diagnostic.severity),
                escape_property(&repository_path(file.path)),
                place.line,
                place.column,
                escape_property(&title),
                escape_data(&message)
            );
        }
    }
    out
}

/// A path as GitHub names files: relative to the working directory (the repository's root in
/// a workflow) when it is under it, without `./`.
fn repository_path(path: &str) -> String {
    let p = std::path::Path::new(path);
    let relative = match std::env::current_dir() {
        Ok(cwd) if p.is_absolute() => p.strip_prefix(&cwd).unwrap_or(p),
        _ => p,
    };
    let shown = relative.display().to_string();
    shown.strip_prefix("./").map(str::to_owned).unwrap_or(shown)
}

/// GitHub's escaping of a command's message.
fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// GitHub's escaping of a command property value.
fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asl::diagnostic::{Code, JsonPointer};
    use crate::asl::source::syntax_diagnostic;

    const TASK: &str = r#"{
  "StartAt": "A",
  "States": {
    "A": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {"FunctionName": "$.fn"},
      "TimeoutSeconds": 30,
      "HeartbeatSeconds": 60
    }
  }
}
"#;

    const BROKEN: &str = "{\n  \"StartAt\": \"A\",\n  \"States\": {\n    \"A\": {\"Type\": \"Pass\", \"End\": true},\n  }\n}\n";

    fn a() -> JsonPointer {
        JsonPointer::root().key("States").key("A")
    }

    fn task_diagnostics() -> Diagnostics {
        let mut diags = Diagnostics::default();
        diags.push(
            Diagnostic::error(
                Code::SchemaValidationFailed,
                &a().key("HeartbeatSeconds"),
                "HeartbeatSeconds (60) must be below TimeoutSeconds (30)",
            )
            .with_related(a().key("TimeoutSeconds"), "TimeoutSeconds is here"),
        );
        diags.schema(&a(), "These fields are required: [Next or End]");
        diags.warning(
            Code::NoDollar,
            &a().key("Parameters").key("FunctionName"),
            "The value \"$.fn\" looks like a path; did you mean the key \"FunctionName.$\"?",
        );
        diags
    }

    fn syntax_diagnostics(text: &str) -> Diagnostics {
        let error = parse_json(text).expect_err("broken on purpose");
        Diagnostics(vec![syntax_diagnostic(text, &error)])
    }

    #[test]
    fn human_single_file() {
        let diags = task_diagnostics();
        let out = render_human(
            &[FileReport::new("definitions/a.json", TASK, &diags)],
            false,
        );
        assert!(out.ends_with("definitions/a.json: 2 errors, 1 warning\n"));
        insta::assert_snapshot!("human_single_file", out);
    }

    #[test]
    fn human_two_files_with_a_syntax_error() {
        let task = task_diagnostics();
        let broken = syntax_diagnostics(BROKEN);
        let not_json = syntax_diagnostics("not a definition");
        let ok = Diagnostics::default();
        let out = render_human(
            &[
                FileReport::new("broken.json", BROKEN, &broken),
                FileReport::new("words.json", "not a definition", &not_json),
                FileReport::new("good.json", "{}", &ok),
                FileReport::new("a.json", TASK, &task),
            ],
            false,
        );
        insta::assert_snapshot!("human_many_files", out);
    }

    #[test]
    fn json_single_file_is_aws_shape() {
        let diags = task_diagnostics();
        let out = render_json(&[FileReport::new("a.json", TASK, &diags)]);
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["result"], "FAIL");
        assert_eq!(value["truncated"], false);
        let first = value["diagnostics"][0].as_object().unwrap();
        assert_eq!(
            first.keys().collect::<Vec<_>>(),
            ["severity", "code", "message", "location"]
        );
        insta::assert_snapshot!("json_single_file", out);
    }

    #[test]
    fn json_matches_aws_recorded_responses() {
        // test_sfn_api_validation NOT_A_DEF and EMPTY_STRING, compared as AWS recorded them.
        for (text, expected) in [
            (
                "not a definition",
                json!({"result": "FAIL", "diagnostics": [{
                    "severity": "ERROR",
                    "code": "INVALID_JSON_DESCRIPTION",
                    "message": "Unrecognized token 'not': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')\n at [Source: (String)\"not a definition\"; line: 1, column: 4]",
                    "location": "[Source: (String)\"not a definition\"; line: 1, column: 4]",
                }], "truncated": false}),
            ),
            (
                " ",
                json!({"result": "FAIL", "diagnostics": [{
                    "severity": "ERROR",
                    "code": "SCHEMA_VALIDATION_FAILED",
                    "message": "Definition must be a valid JSON object",
                }], "truncated": false}),
            ),
        ] {
            let diags = syntax_diagnostics(text);
            let out = render_json(&[FileReport::new("x.json", text, &diags)]);
            assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), expected);
        }
        // A root pointer is AWS's "/"; no diagnostics is OK; warnings alone are OK.
        let mut diags = Diagnostics::default();
        let ok = render_json(&[FileReport::new("x.json", "{}", &diags)]);
        assert_eq!(
            serde_json::from_str::<Value>(&ok).unwrap(),
            json!({"result": "OK", "diagnostics": [], "truncated": false})
        );
        diags.warning(Code::NoPath, &JsonPointer::root(), "w");
        let warned: Value =
            serde_json::from_str(&render_json(&[FileReport::new("x.json", "{}", &diags)])).unwrap();
        assert_eq!(warned["result"], "OK");
        assert_eq!(warned["diagnostics"][0]["location"], "/");
    }

    #[test]
    fn json_many_files_is_an_array_with_file_first() {
        let task = task_diagnostics();
        let broken = syntax_diagnostics(BROKEN);
        let out = render_json(&[
            FileReport::new("a.json", TASK, &task),
            FileReport::new("broken.json", BROKEN, &broken),
        ]);
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            value[1].as_object().unwrap().keys().collect::<Vec<_>>(),
            ["file", "result", "diagnostics", "truncated"]
        );
        insta::assert_snapshot!("json_many_files", out);
    }

    #[test]
    fn github_annotations() {
        let task = task_diagnostics();
        let broken = syntax_diagnostics(BROKEN);
        let out = render_github(&[
            FileReport::new("definitions/a.json", TASK, &task),
            FileReport::new("C:\\defs\\b,c.json", BROKEN, &broken),
        ]);
        insta::assert_snapshot!("github", out);
    }

    #[test]
    fn github_escaping() {
        assert_eq!(escape_data("100%\r\na:b,c"), "100%25%0D%0Aa:b,c");
        assert_eq!(escape_property("100%\r\na:b,c"), "100%25%0D%0Aa%3Ab%2Cc");
    }

    #[test]
    fn locations_fall_back_sensibly() {
        let mut diags = Diagnostics::default();
        diags.schema(
            &JsonPointer::root(),
            "These fields are required: [States, StartAt]",
        );
        diags.schema(
            &JsonPointer::root().key("Nope").index(3),
            "somewhere that does not exist",
        );
        diags.push(Diagnostic {
            location: Location::None,
            ..Diagnostic::error(Code::MissingDescription, &JsonPointer::root(), "nowhere")
        });
        diags.push(Diagnostic {
            location: Location::Text { line: 2, column: 2 },
            ..Diagnostic::error(Code::InvalidJsonDescription, &JsonPointer::root(), "there")
        });
        let text = "  {\n  \"a\": 1}";
        let out = render_github(&[FileReport::new("x.json", text, &diags)]);
        let positions: Vec<&str> = out
            .lines()
            .map(|l| {
                l.split(",title")
                    .next()
                    .unwrap()
                    .split("x.json,")
                    .nth(1)
                    .unwrap()
            })
            .collect();
        assert_eq!(
            positions,
            [
                "line=1,col=3",
                "line=1,col=3",
                "line=1,col=1",
                "line=2,col=2"
            ]
        );
        // And miette copes with every one of them, and with text that is not there at all.
        let human = render_human(&[FileReport::new("x.json", text, &diags)], true);
        assert!(human.contains("x.json: 4 errors, 0 warnings"));
        for text in ["", "\u{feff}", "[]", "{\"a\": [1, 2]}", "é😀"] {
            let _ = render_human(&[FileReport::new("y.json", text, &diags)], false);
            let _ = render_github(&[FileReport::new("y.json", text, &diags)]);
        }
    }

    #[test]
    fn empty_input_renders_as_an_empty_array() {
        assert_eq!(render_json(&[]), "[]\n");
        assert_eq!(render_github(&[]), "");
        assert_eq!(render_human(&[], false), "");
    }
}
