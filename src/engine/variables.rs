//! Variables at run time: one [`Frame`] per running scope (the top level, each Parallel branch,
//! each Map iteration), chained to the frame of the scope around it.
//!
//! AWS's rules, and how the frames give them:
//! - inner scopes read outer variables: a lookup walks the chain outwards;
//! - outer scopes never see inner assignments: a state writes only its own frame, and the frame
//!   of a branch or iteration is dropped when it ends;
//! - an inner scope may not assign a name of an outer one: checked when the definition is parsed
//!   (AWS rejects it at create time), so writes never shadow;
//! - every read in a state sees the values from the state's entry: a state's assignments are
//!   collected while it runs and committed by the state loop only once it is done.
//!
//! The frames are `RefCell`s: an execution runs on one thread and no borrow lives across an
//! await (evaluation is synchronous; commits happen between states).

use crate::asl::error::{names, StatesError};
use crate::asl::eval::Variables;
use serde_json::{Map, Value};
use std::cell::{Cell, Ref, RefCell};
use std::rc::Rc;

/// AWS's limit on one variable, and on everything one `Assign` sets: 256 KiB of JSON text.
pub const MAX_VARIABLE_BYTES: usize = 262_144;
/// AWS's limit on all the variables an execution stores at once: 10 MiB.
pub const MAX_TOTAL_VARIABLE_BYTES: usize = 10 * 1024 * 1024;

/// The variables of one running scope.
#[derive(Debug, Default)]
pub(crate) struct Frame {
    vars: RefCell<Map<String, Value>>,
    /// The JSON size of the variables in this frame (for the execution-wide limit).
    bytes: Cell<usize>,
    parent: Option<Rc<Frame>>,
}

/// A read view over a frame and every frame around it, innermost first.
pub(crate) struct Chain<'a> {
    layers: Vec<Ref<'a, Map<String, Value>>>,
}

impl Variables for Chain<'_> {
    fn get(&self, name: &str) -> Option<&Value> {
        self.layers.iter().find_map(|m| m.get(name))
    }
}

impl Frame {
    /// The frame of the top-level scope (or of a distributed Map's child execution, which
    /// cannot see the parent's variables).
    pub(crate) fn root() -> Rc<Frame> {
        Rc::new(Frame::default())
    }

    /// The frame of a branch or iteration inside the scope of `parent`.
    pub(crate) fn child(parent: &Rc<Frame>) -> Rc<Frame> {
        Rc::new(Frame {
            parent: Some(parent.clone()),
            ..Frame::default()
        })
    }

    /// Every variable visible here.
    pub(crate) fn read(&self) -> Chain<'_> {
        let mut layers = Vec::new();
        let mut frame = Some(self);
        while let Some(f) = frame {
            // Empty frames hold nothing to find: skipped, a machine without variables
            // evaluates its templates without allocating the list (three times per Map
            // iteration of three Pass states).
            let vars = f.vars.borrow();
            if !vars.is_empty() {
                layers.push(vars);
            }
            frame = f.parent.as_deref();
        }
        Chain { layers }
    }

    fn total_bytes(&self) -> usize {
        let mut total = 0;
        let mut frame = Some(self);
        while let Some(f) = frame {
            total += f.bytes.get();
            frame = f.parent.as_deref();
        }
        total
    }

    /// Stores a state's assignments, enforcing AWS's size limits. Returns the values as AWS
    /// lists them in `assignedVariables` (name → JSON text).
    pub(crate) fn commit(
        &self,
        assigned: Map<String, Value>,
    ) -> Result<Map<String, Value>, StatesError> {
        let mut texts = Map::with_capacity(assigned.len());
        let mut assign_bytes = 0usize;
        for (name, value) in &assigned {
            let text = crate::depth::to_json_string(value).map_err(|too_deep| {
                StatesError::new(names::RUNTIME, format!("The variable '{name}': {too_deep}"))
            })?;
            if text.len() > MAX_VARIABLE_BYTES {
                return Err(StatesError::new(
                    names::RUNTIME,
                    format!(
                        "The variable '{name}' is {} bytes, more than the {MAX_VARIABLE_BYTES} bytes a variable may hold",
                        text.len()
                    ),
                ));
            }
            assign_bytes += text.len();
            texts.insert(name.clone(), Value::String(text));
        }
        if assign_bytes > MAX_VARIABLE_BYTES {
            return Err(StatesError::new(
                names::RUNTIME,
                format!(
                    "The variables assigned by one Assign are {assign_bytes} bytes, more than the {MAX_VARIABLE_BYTES} bytes allowed"
                ),
            ));
        }
        let mut vars = self.vars.borrow_mut();
        let replaced: usize = assigned
            .keys()
            .filter_map(|k| vars.get(k))
            .map(|v| v.to_string().len())
            .sum();
        let own = self.bytes.get() - replaced.min(self.bytes.get()) + assign_bytes;
        let outer = self.parent.as_deref().map_or(0, Frame::total_bytes);
        if own + outer > MAX_TOTAL_VARIABLE_BYTES {
            return Err(StatesError::new(
                names::RUNTIME,
                format!(
                    "The variables of the execution would take {} bytes, more than the {MAX_TOTAL_VARIABLE_BYTES} bytes allowed",
                    own + outer
                ),
            ));
        }
        self.bytes.set(own);
        for (name, value) in assigned {
            vars.insert(name, value);
        }
        Ok(texts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn inner_frames_read_outer_ones_and_outer_frames_never_see_inner_ones() {
        let root = Frame::root();
        root.commit(map(json!({"x": 1}))).unwrap();
        let inner = Frame::child(&root);
        inner.commit(map(json!({"y": 2}))).unwrap();
        assert_eq!(inner.read().get("x"), Some(&json!(1)));
        assert_eq!(inner.read().get("y"), Some(&json!(2)));
        assert_eq!(root.read().get("y"), None);
    }

    #[test]
    fn commit_reports_json_texts_and_enforces_the_size_limits() {
        let root = Frame::root();
        let texts = root.commit(map(json!({"s": "a", "n": 42}))).unwrap();
        assert_eq!(texts, map(json!({"s": "\"a\"", "n": "42"})));
        let big = "x".repeat(MAX_VARIABLE_BYTES);
        let e = root.commit(map(json!({ "big": big }))).unwrap_err();
        assert_eq!(e.name(), names::RUNTIME);
        // Replacing a variable frees its old size.
        let half = "y".repeat(MAX_VARIABLE_BYTES / 2);
        for _ in 0..100 {
            root.commit(map(json!({ "h": half }))).unwrap();
        }
    }
}
