//! JSONPath as ASL uses it. STUB: API contract; the implementation is being written.
//!
//! A [`Path`] starts at `$` (the input), `$$` (the context object) or `$name` (a variable).
//! A *reference path* is definite (`$.a['b'][0]`) and selects at most one value; other paths
//! (`$.items[*].id`, filters) may select many and yield an array.

use crate::asl::error::StatesError;
use crate::asl::eval::Env;
use serde_json::Value;

/// Which value a path starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathRoot {
    /// `$`: the input.
    Input,
    /// `$$`: the context object.
    Context,
    /// `$name`: a variable.
    Variable(String),
}

/// Why a path did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PathError {
    /// What is wrong, for a person.
    pub message: String,
}

/// A compiled JSONPath.
#[derive(Debug, Clone)]
pub struct Path {
    text: String,
}

impl Path {
    /// Parses any ASL path (`$`, `$$`, `$var` roots; definite or not).
    pub fn parse(text: &str) -> Result<Path, PathError> {
        let _ = text;
        todo!()
    }

    /// Parses a reference path: definite, selecting at most one value.
    pub fn parse_reference(text: &str) -> Result<Path, PathError> {
        let _ = text;
        todo!()
    }

    /// The source text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The root it starts from.
    pub fn root(&self) -> &PathRoot {
        todo!()
    }

    /// Whether it selects at most one value.
    pub fn is_definite(&self) -> bool {
        todo!()
    }

    /// Selects from the environment. A definite path yields the value or `None` when nothing is
    /// there; an indefinite one yields `Some(array)` of every match (possibly empty).
    pub fn select(&self, env: &Env<'_>) -> Option<Value> {
        let _ = env;
        todo!()
    }

    /// Writes `value` at this reference path inside `target` (ResultPath), creating intermediate
    /// objects. `$` replaces the whole target.
    pub fn set(&self, target: &mut Value, value: Value) -> Result<(), StatesError> {
        let _ = (target, value);
        todo!()
    }
}
