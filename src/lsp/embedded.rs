//! Definitions written inside a JSON template's strings (`DefinitionString` as a string, an
//! `Fn::Sub` string or the pieces of an `Fn::Join`, as CDK synthesizes them): the definition's
//! text as the loader builds it, and where each of its bytes is written in the template,
//! through the string's JSON escapes.
//!
//! Navigation and edits run on the built text like on any definition, and their places are
//! mapped back: an edit is offered only when every byte it replaces comes from one literal of
//! the template (never across an intrinsic, a `Fn::Join` delimiter or two pieces), and its new
//! text is escaped for the string it lands in, so applying it leaves a template that parses.
//! YAML templates' strings (plain, quoted, block scalars) are not mapped: no edits there.

use crate::asl::source::SpanIndex;
use crate::asl::JsonPointer;
use serde_json::Value;
use std::ops::Range;

/// One string-encoded definition of a template.
#[derive(Debug, Clone)]
pub struct Embedded {
    /// The definition's text, exactly as the loader builds it.
    pub text: String,
    /// The template's `DefinitionString` field.
    pub field: JsonPointer,
    /// Per byte of `text`, the template bytes that wrote it (an escape for `\"`); `None` for
    /// bytes no single literal wrote (a delimiter, an intrinsic's placeholder).
    written_at: Vec<Option<Range<usize>>>,
}

impl Embedded {
    /// Every string-encoded definition of the JSON template `text` (parsed as `value`) whose
    /// built text the loader would read the same.
    pub fn of_template(text: &str, value: &Value) -> Vec<Embedded> {
        let index = SpanIndex::new(text);
        crate::asl::cfn::state_machines(value)
            .into_iter()
            .filter_map(|m| match m.source {
                crate::asl::cfn::DefinitionSource::Text {
                    text: built,
                    pointer,
                } => {
                    let embedded = Self::build(&index, value.pointer(pointer.as_str())?, pointer)?;
                    (embedded.text == built).then_some(embedded)
                }
                _ => None,
            })
            .collect()
    }

    fn build(index: &SpanIndex<'_>, field: &Value, at: JsonPointer) -> Option<Embedded> {
        let mut out = Embedded {
            text: String::new(),
            field: at.clone(),
            written_at: Vec::new(),
        };
        match field {
            Value::String(_) => out.literal(index, &at)?,
            Value::Object(map) if map.len() == 1 => match map.iter().next()? {
                (name, Value::String(_)) if name == "Fn::Sub" => {
                    out.literal(index, &at.key("Fn::Sub"))?
                }
                (name, Value::Array(_)) if name == "Fn::Sub" => {
                    out.literal(index, &at.key("Fn::Sub").index(0))?
                }
                (name, Value::Array(items)) if name == "Fn::Join" => {
                    out.join(index, items, &at.key("Fn::Join"))?
                }
                _ => return None,
            },
            _ => return None,
        }
        Some(out)
    }

    fn join(&mut self, index: &SpanIndex<'_>, items: &[Value], at: &JsonPointer) -> Option<()> {
        let delimiter = items.first()?.as_str()?;
        for (i, part) in items.get(1)?.as_array()?.iter().enumerate() {
            if i > 0 {
                self.unmapped(delimiter);
            }
            match part {
                Value::String(_) => self.literal(index, &at.index(1).index(i))?,
                other => {
                    let name = crate::asl::cfn::join_part_name(other, i);
                    self.unmapped(&format!("${{{name}}}"));
                }
            }
        }
        Some(())
    }

    fn unmapped(&mut self, text: &str) {
        self.text.push_str(text);
        self.written_at
            .extend(std::iter::repeat_n(None, text.len()));
    }

    /// Appends the JSON string literal at `at`, decoded, each byte mapped to what wrote it.
    fn literal(&mut self, index: &SpanIndex<'_>, at: &JsonPointer) -> Option<()> {
        let span = index.value_span(at)?;
        let raw = index.text().get(span.clone())?;
        let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
        let base = span.start + 1;
        let mut i = 0;
        while i < inner.len() {
            let (c, len) = decode_one(&inner[i..])?;
            let mut buf = [0u8; 4];
            let bytes = c.encode_utf8(&mut buf);
            self.text.push_str(bytes);
            let wrote = base + i..base + i + len;
            self.written_at
                .extend(std::iter::repeat_n(Some(wrote), bytes.len()));
            i += len;
        }
        Some(())
    }

    /// The template span that wrote the built span `span`, when one literal wrote all of it
    /// in order (an empty span: where an insertion there lands).
    pub fn to_template(&self, span: Range<usize>) -> Option<Range<usize>> {
        if span.is_empty() {
            return match self.written_at.get(span.start) {
                Some(Some(at)) => Some(at.start..at.start),
                _ => self
                    .written_at
                    .get(span.start.checked_sub(1)?)?
                    .clone()
                    .map(|a| a.end..a.end),
            };
        }
        let parts = self.written_at.get(span.clone())?;
        let mut end = parts.first()?.as_ref()?.start;
        let start = end;
        for part in parts {
            let part = part.as_ref()?;
            // Bytes of one character share its escape; the next character starts where it ends.
            if part.start != end && part.end != end {
                return None;
            }
            end = part.end;
        }
        Some(start..end)
    }

    /// The built offset written at template offset `offset`, when a literal of this definition
    /// holds it (its end counts: a cursor just after a name is on it).
    pub fn to_built(&self, offset: usize) -> Option<usize> {
        let inside = self.written_at.iter().position(|w| {
            w.as_ref()
                .is_some_and(|w| w.start <= offset && offset < w.end)
        });
        inside.or_else(|| {
            let last = self
                .written_at
                .iter()
                .position(|w| w.as_ref().is_some_and(|w| w.end == offset))?;
            let len = self.text[last..].chars().next()?.len_utf8();
            Some(last + len)
        })
    }

    /// `text` as written inside the template's JSON string.
    pub fn escaped(text: &str) -> String {
        let quoted = serde_json::to_string(text).unwrap_or_default();
        quoted[1..quoted.len() - 1].to_owned()
    }
}

/// The first character of a JSON string's inner text and how many bytes wrote it.
fn decode_one(s: &str) -> Option<(char, usize)> {
    let mut chars = s.chars();
    let c = chars.next()?;
    if c != '\\' {
        return Some((c, c.len_utf8()));
    }
    match chars.next()? {
        'u' => decode_unicode(s),
        c => Some((crate::asl::source::simple_escape(c)?, 2)),
    }
}

/// `\uXXXX`, or a surrogate pair `\uD83D\uDE00`.
fn decode_unicode(s: &str) -> Option<(char, usize)> {
    let unit = |at: usize| u32::from_str_radix(s.get(at + 2..at + 6)?, 16).ok();
    let high = unit(0)?;
    if (0xD800..0xDC00).contains(&high) {
        let low = unit(6).filter(|l| (0xDC00..0xE000).contains(l) && s.get(6..8) == Some("\\u"))?;
        let c = char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))?;
        return Some((c, 12));
    }
    Some((char::from_u32(high)?, 6))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn embedded(template: &str) -> Embedded {
        let value: Value = serde_json::from_str(template).unwrap();
        Embedded::of_template(template, &value)
            .pop()
            .expect("one embedded definition")
    }

    const JOIN: &str = r#"{"Resources":{"M":{"Type":"AWS::StepFunctions::StateMachine","Properties":{"DefinitionString":{"Fn::Join":["",["{\"StartAt\":\"A\",\"States\":{\"A\":{\"Type\":\"Task\",\"Resource\":\"",{"Fn::GetAtt":["F","Arn"]},"\",\"Next\":\"Bé\"},\"Bé\":{\"Type\":\"Pass\",\"End\":true}}}"]]}}}}}"#;

    #[test]
    fn a_built_span_maps_back_through_escapes_within_one_piece() {
        let e = embedded(JOIN);
        let built = e.text.find("\"Bé\"}").unwrap();
        let span = built..built + "\"Bé\"".len();
        let raw = e.to_template(span).unwrap();
        assert_eq!(&JOIN[raw.clone()], "\\\"Bé\\\"");
        assert_eq!(e.to_built(raw.start + 2), Some(built + 1));
    }

    #[test]
    fn a_span_across_an_intrinsic_maps_to_nothing() {
        let e = embedded(JOIN);
        let at = e.text.find("${F.Arn}").unwrap();
        assert_eq!(e.to_template(at - 2..at + 3), None);
    }

    #[test]
    fn escapes_decode_to_what_serde_reads() {
        let template = r#"{"Resources":{"M":{"Type":"AWS::StepFunctions::StateMachine","Properties":{"DefinitionString":"{\"a\\u00e9\\ud83d\\ude00\\n\":1}"}}}}"#;
        let e = embedded(template);
        let value: Value = serde_json::from_str(template).unwrap();
        assert_eq!(
            e.text,
            value
                .pointer("/Resources/M/Properties/DefinitionString")
                .unwrap()
                .as_str()
                .unwrap()
        );
    }

    mod every_offered_edit {
        //! Property: on generated CDK-shaped templates (a definition split into `Fn::Join`
        //! pieces at random places, an intrinsic inside, names that need escapes, non-ASCII
        //! written as `\uXXXX` or not), every edit the server offers (the quick fix of a
        //! misspelt `Next`, a rename of any state) leaves a template that parses, whose
        //! definition still parses and says what the edit meant.
        use crate::asl::MachineType;
        use crate::lsp::documents::Documents;
        use crate::lsp::text::LineIndex;
        use lsp_types::{Position, Uri};
        use proptest::prelude::*;
        use serde_json::{json, Value};

        fn names() -> impl Strategy<Value = Vec<String>> {
            proptest::collection::btree_set("[A-Za-z][A-Za-z\"\\\\é😀 ]{2,8}", 2..5)
                .prop_map(|s| s.into_iter().collect())
        }

        /// The template: states chained by `Next` (the last one's `Next` misspelt when
        /// `typo`), a Task whose Resource is an intrinsic, the text split at `cuts`.
        fn template(names: &[String], cuts: &[usize], ascii: bool, typo: bool) -> (String, String) {
            let mut states = serde_json::Map::new();
            for (i, name) in names.iter().enumerate() {
                let mut next = names.get(i + 1).cloned().unwrap_or_else(|| "Task".into());
                if typo && i == 0 {
                    next = next.chars().skip(1).collect();
                }
                states.insert(name.clone(), json!({"Type": "Pass", "Next": next}));
            }
            states.insert(
                "Task".into(),
                json!({"Type": "Task", "Resource": "RES", "End": true}),
            );
            let definition = json!({"StartAt": names[0], "States": states}).to_string();
            let (before, after) = definition.split_once("RES").unwrap();
            let mut pieces: Vec<Value> = Vec::new();
            let mut at = 0;
            for &cut in cuts.iter().filter(|&&c| c < before.len()) {
                let cut = (cut..before.len())
                    .find(|&c| before.is_char_boundary(c))
                    .unwrap();
                if cut > at {
                    pieces.push(json!(before[at..cut]));
                    at = cut;
                }
            }
            pieces.push(json!(before[at..]));
            pieces.push(json!({"Fn::GetAtt": ["F", "Arn"]}));
            pieces.push(json!(after));
            let t = json!({"Resources": {"M": {"Type": "AWS::StepFunctions::StateMachine",
                "Properties": {"DefinitionString": {"Fn::Join": ["", pieces]}}}}});
            let text = serde_json::to_string_pretty(&t).unwrap();
            let text = match ascii {
                true => text
                    .chars()
                    .map(|c| match c.is_ascii() {
                        true => c.to_string(),
                        false => c
                            .encode_utf16(&mut [0; 2])
                            .iter()
                            .map(|u| format!("\\u{u:04x}"))
                            .collect(),
                    })
                    .collect(),
                false => text,
            };
            (text, definition)
        }

        /// The definition a template's Fn::Join builds, the intrinsic as `${F.Arn}`.
        fn built(template: &str) -> Value {
            let t: Value = serde_json::from_str(template).expect("the template parses");
            let pieces = t
                .pointer("/Resources/M/Properties/DefinitionString/Fn::Join/1")
                .unwrap();
            let text: String = pieces
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().map_or("${F.Arn}".to_owned(), str::to_owned))
                .collect();
            serde_json::from_str(&text).expect("the definition parses")
        }

        fn apply(text: &str, edits: &[(lsp_types::Range, String)]) -> String {
            let lines = LineIndex::new(text);
            let mut spans: Vec<_> = edits
                .iter()
                .map(|(r, t)| (lines.offset(r.start), lines.offset(r.end), t.clone()))
                .collect();
            spans.sort_by_key(|s| std::cmp::Reverse(s.0));
            let mut out = text.to_owned();
            for (a, b, t) in spans {
                out.replace_range(a..b, &t);
            }
            out
        }

        fn docs_with(text: &str) -> (Documents, Uri) {
            let uri: Uri = "file:///p/cdk.out/S.template.json".parse().unwrap();
            let mut docs = Documents::default();
            docs.set(uri.clone(), text.to_owned(), 1);
            (docs, uri)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]
            #[test]
            fn quick_fixes_and_renames_leave_templates_that_parse(
                names in names(),
                cuts in proptest::collection::vec(0usize..400, 0..6),
                ascii in any::<bool>(),
                which in 0usize..4,
                new_name in "[A-Za-z][A-Za-z\"\\\\é😀]{0,6}",
            ) {
                let (good, _) = template(&names, &cuts, ascii, false);
                // The misspelt Next: the second name's first character dropped where the
                // first state names it.
                let (text, _) = template(&names, &cuts, ascii, true);
                let wrong: String = names[1].chars().skip(1).collect();
                prop_assume!(!names.contains(&wrong) && wrong.len() > 1);
                let (docs, uri) = docs_with(&text);
                let doc = docs.get(&uri).unwrap();
                let published = crate::lsp::check::check(&docs, &uri, doc, MachineType::Standard);
                for (_, diagnostics) in &published {
                    for d in diagnostics {
                        let Some(data) = &d.data else { continue };
                        let range: lsp_types::Range = serde_json::from_value(data["range"].clone()).unwrap();
                        let fixed = apply(&text, &[(range, data["newText"].as_str().unwrap().to_owned())]);
                        let fixed = built(&fixed);
                        // The name it suggests (the nearest), which the machine has.
                        let next = fixed["States"][&names[0]]["Next"].as_str().unwrap();
                        prop_assert!(fixed["States"].get(next).is_some(), "{fixed}");
                    }
                }
                // A rename of any state, from its key.
                let name = &names[which % names.len()];
                let key = serde_json::to_string(name).unwrap();
                let escaped = serde_json::to_string(&key[..key.len()]).unwrap();
                let needle = format!("{}:", &escaped[1..escaped.len() - 1]);
                let (docs, uri) = docs_with(&good);
                let Some(at) = good.find(&needle) else { return Ok(()) };
                let position: Position = LineIndex::new(&good).position(at + 3);
                let params = lsp_types::RenameParams {
                    text_document_position: lsp_types::TextDocumentPositionParams {
                        text_document: lsp_types::TextDocumentIdentifier { uri: uri.clone() },
                        position,
                    },
                    new_name: new_name.clone(),
                    work_done_progress_params: Default::default(),
                };
                if let Some(edit) = crate::lsp::rename::rename(&docs, params) {
                    let edits: Vec<_> = edit.changes.unwrap().remove(&uri).unwrap()
                        .into_iter().map(|e| (e.range, e.new_text)).collect();
                    let renamed = built(&apply(&good, &edits));
                    prop_assert!(renamed["States"].get(&new_name).is_some(), "{renamed}");
                }
            }
        }
    }
}
