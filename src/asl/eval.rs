//! What evaluation reads: the state's input, the context object (`$$`) and the variables in scope.

use serde_json::Value;

/// Read access to the variables visible to a state (`$name` in paths and templates).
pub trait Variables {
    /// The value of a variable, if it is assigned.
    fn get(&self, name: &str) -> Option<&Value>;
}

impl Variables for serde_json::Map<String, Value> {
    fn get(&self, name: &str) -> Option<&Value> {
        serde_json::Map::get(self, name)
    }
}

/// No variables at all.
pub struct NoVariables;

impl Variables for NoVariables {
    fn get(&self, _: &str) -> Option<&Value> {
        None
    }
}

/// The three roots a path can start from: `$` (input), `$$` (context), `$name` (a variable).
#[derive(Clone, Copy)]
pub struct Env<'a> {
    /// What `$` means here (the state input, the task result, ...).
    pub input: &'a Value,
    /// The context object, `$$`.
    pub context: &'a Value,
    /// The variables in scope.
    pub variables: &'a dyn Variables,
}

impl<'a> Env<'a> {
    /// The same context and variables with another `$`.
    pub fn with_input(self, input: &'a Value) -> Env<'a> {
        Env { input, ..self }
    }
}
