//! A definition as navigation sees it: its value, its source map, and its scopes (the top
//! level, each Parallel branch, each Map processor), each with its states and the places that
//! name a state of it (`StartAt`, `Next`, `Default`, a Choice rule's or a Catch's `Next`).
//!
//! Built from the value the validator reads and the same source map (JSON or YAML), not from
//! the compiled machine: navigation must work on a definition with errors, which never
//! compiles. Rebuilt for each request, from the document as it stands. A template's inline
//! definitions are indexed the same way, each at its place in the template.

use crate::asl::source::SpanIndex;
use crate::asl::{JsonPointer, SourceFormat};
use serde_json::Value;
use std::ops::Range;

/// A state of a scope.
#[derive(Debug, Clone)]
pub struct StateRef {
    /// Its name (the key under `States`).
    pub name: String,
    /// Its pointer (`/States/NAME`).
    pub at: JsonPointer,
}

/// A place that names a state of a scope by its name.
#[derive(Debug, Clone)]
pub struct Target {
    /// The name it gives.
    pub name: String,
    /// The string value's pointer (`/States/A/Next`).
    pub at: JsonPointer,
    /// The scope it names a state of (an index into [`Tree::scopes`]).
    pub scope: usize,
}

/// A scope: an object with `StartAt` and `States`.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The object's pointer (the root, `/States/P/Branches/0`, `/States/M/ItemProcessor`).
    pub at: JsonPointer,
    /// Its states, in the order written.
    pub states: Vec<StateRef>,
}

/// What a position is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spot {
    /// The key of the member at the pointer.
    Key(JsonPointer),
    /// The value at the pointer (inside a string, or on a scalar).
    Value(JsonPointer),
}

/// One definition, indexed for navigation.
pub struct Tree<'t> {
    /// The definition's value.
    pub value: Value,
    /// Its source map.
    pub index: SpanIndex<'t>,
    /// Its scopes, each top level before the scopes inside it.
    pub scopes: Vec<Scope>,
    /// The top levels among [`Tree::scopes`]: the definition's, or each inline definition's of
    /// a template.
    pub roots: Vec<usize>,
    /// Every place that names a state.
    pub targets: Vec<Target>,
}

impl<'t> Tree<'t> {
    /// Indexes a definition's text; `None` while it does not parse.
    pub fn new(text: &'t str, format: SourceFormat) -> Option<Self> {
        let mut tree = Self::read(text, format)?;
        let value = std::mem::take(&mut tree.value);
        tree.add_root(&value, JsonPointer::root());
        tree.value = value;
        Some(tree)
    }

    /// Indexes a SAM/CloudFormation template's text: each inline `Definition` is a root scope
    /// of its own, at its place in the template.
    pub fn template(text: &'t str, format: SourceFormat) -> Option<Self> {
        let mut tree = Self::read(text, format)?;
        let value = std::mem::take(&mut tree.value);
        for machine in crate::asl::cfn::state_machines(&value) {
            if let crate::asl::cfn::DefinitionSource::Inline { pointer, .. } = machine.source {
                if let Some(definition) = value.pointer(pointer.as_str()) {
                    tree.add_root(definition, pointer);
                }
            }
        }
        tree.value = value;
        Some(tree)
    }

    fn add_root(&mut self, definition: &Value, at: JsonPointer) {
        self.roots.push(self.scopes.len());
        self.add_scope(definition, at);
    }

    /// The root scope that holds the place at `at` (the definition's top level).
    pub fn root_of(&self, at: &JsonPointer) -> Option<&Scope> {
        self.roots
            .iter()
            .map(|&i| &self.scopes[i])
            .filter(|s| at.as_str().starts_with(s.at.as_str()))
            .max_by_key(|s| s.at.as_str().len())
    }

    fn read(text: &'t str, format: SourceFormat) -> Option<Self> {
        let (value, index) = match format {
            SourceFormat::Json => (
                crate::asl::source::parse_json(text).ok()?,
                SpanIndex::new(text),
            ),
            SourceFormat::Yaml => (
                crate::asl::yaml::parse(text).ok()?.value,
                SpanIndex::new_yaml(text),
            ),
        };
        Some(Tree {
            value,
            index,
            scopes: Vec::new(),
            roots: Vec::new(),
            targets: Vec::new(),
        })
    }

    fn add_scope(&mut self, scope: &Value, at: JsonPointer) {
        let id = self.scopes.len();
        self.scopes.push(Scope {
            at: at.clone(),
            states: Vec::new(),
        });
        if let Some(name) = scope.get("StartAt").and_then(Value::as_str) {
            self.target(name, at.key("StartAt"), id);
        }
        let Some(states) = scope.get("States").and_then(Value::as_object) else {
            return;
        };
        for (name, state) in states {
            let state_at = at.key("States").key(name);
            self.scopes[id].states.push(StateRef {
                name: name.clone(),
                at: state_at.clone(),
            });
            self.add_state(state, &state_at, id);
        }
    }

    fn add_state(&mut self, state: &Value, at: &JsonPointer, scope: usize) {
        for field in ["Next", "Default"] {
            if let Some(name) = state.get(field).and_then(Value::as_str) {
                self.target(name, at.key(field), scope);
            }
        }
        for list in ["Choices", "Catch"] {
            let items = state.get(list).and_then(Value::as_array);
            for (i, item) in items.into_iter().flatten().enumerate() {
                if let Some(name) = item.get("Next").and_then(Value::as_str) {
                    self.target(name, at.key(list).index(i).key("Next"), scope);
                }
            }
        }
        let branches = state.get("Branches").and_then(Value::as_array);
        for (i, branch) in branches.into_iter().flatten().enumerate() {
            self.add_scope(branch, at.key("Branches").index(i));
        }
        for processor in ["ItemProcessor", "Iterator"] {
            if let Some(inner) = state.get(processor).filter(|v| v.is_object()) {
                self.add_scope(inner, at.key(processor));
            }
        }
    }

    fn target(&mut self, name: &str, at: JsonPointer, scope: usize) {
        self.targets.push(Target {
            name: name.to_owned(),
            at,
            scope,
        });
    }

    /// What byte `offset` is on: the innermost key or value that holds it.
    pub fn spot(&self, offset: usize) -> Option<Spot> {
        let mut at = JsonPointer::root();
        let mut value = &self.value;
        'down: loop {
            let children: Vec<(JsonPointer, &Value)> = match value {
                Value::Object(map) => map.iter().map(|(k, v)| (at.key(k), v)).collect(),
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (at.index(i), v))
                    .collect(),
                _ => return Some(Spot::Value(at)),
            };
            for (child, v) in children {
                let Some(node) = self.index.node(&child) else {
                    continue;
                };
                if node.key.as_ref().is_some_and(|k| holds(k, offset)) {
                    return Some(Spot::Key(child));
                }
                if holds(&node.value, offset) {
                    at = child;
                    value = v;
                    continue 'down;
                }
            }
            return (!at.as_str().is_empty()).then_some(Spot::Value(at));
        }
    }

    /// The scope and name of the state a spot is about: a state's key, or a value naming one.
    pub fn state_at(&self, spot: &Spot) -> Option<(usize, String)> {
        match spot {
            Spot::Key(p) => self.scopes.iter().enumerate().find_map(|(i, s)| {
                let state = s.states.iter().find(|st| &st.at == p)?;
                Some((i, state.name.clone()))
            }),
            Spot::Value(p) => {
                let target = self.targets.iter().find(|t| &t.at == p)?;
                Some((target.scope, target.name.clone()))
            }
        }
    }

    /// The state named `name` in scope `scope`.
    pub fn state(&self, scope: usize, name: &str) -> Option<&StateRef> {
        self.scopes
            .get(scope)?
            .states
            .iter()
            .find(|s| s.name == name)
    }

    /// The scope whose states a place names: the target there, or the scope around a state
    /// field of that name (`Next`, `Default`, `StartAt`) that holds no string yet.
    pub fn scope_of_target(&self, at: &JsonPointer) -> Option<usize> {
        if let Some(t) = self.targets.iter().find(|t| &t.at == at) {
            return Some(t.scope);
        }
        self.scopes
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                let rest = &at.as_str()[s.at.as_str().len().min(at.as_str().len())..];
                at.as_str().starts_with(s.at.as_str())
                    && (rest == "/StartAt" || rest.starts_with("/States/"))
            })
            .max_by_key(|(_, s)| s.at.as_str().len())
            .map(|(i, _)| i)
    }

    /// The span of a key or string value without its quotes (as written: a YAML plain
    /// scalar has none).
    pub fn inner(&self, span: Range<usize>) -> Range<usize> {
        let text = self.index.text().get(span.clone()).unwrap_or_default();
        let quoted = text.len() >= 2
            && ((text.starts_with('"') && text.ends_with('"'))
                || (text.starts_with('\'') && text.ends_with('\'')));
        if quoted {
            span.start + 1..span.end - 1
        } else {
            span
        }
    }

    /// The span of a state's key (its name, quotes included as written).
    pub fn key_span(&self, at: &JsonPointer) -> Option<Range<usize>> {
        self.index.key_span(at)
    }

    /// The span of the value at a pointer.
    pub fn value_span(&self, at: &JsonPointer) -> Option<Range<usize>> {
        self.index.value_span(at)
    }
}

fn holds(span: &Range<usize>, offset: usize) -> bool {
    // The end counts: a cursor just after a name is still on it.
    span.start <= offset && offset <= span.end
}
