//! How a state machine is named on every door: a path, and after `#` the state machine of a
//! template or cloud assembly (`LogicalId`, or `Stack/LogicalId` in a `cdk.out` with several
//! stacks). `file://` (the AWS CLI's spelling) is undone.

use std::fmt;
use std::path::{Path, PathBuf};

/// The forms a state machine is given in, for messages.
pub const FORMS: &str = "FILE (a JSON or YAML definition), TEMPLATE, TEMPLATE#LogicalId, cdk.out, cdk.out#LogicalId or cdk.out#Stack/LogicalId";

/// A state machine of a template or cloud assembly, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineName {
    /// The stack, in a cloud assembly (`Stack/LogicalId`).
    pub stack: Option<String>,
    /// The state machine's logical ID.
    pub logical_id: String,
}

impl MachineName {
    /// `LogicalId` or `Stack/LogicalId`.
    pub fn parse(given: &str) -> Self {
        match given.rsplit_once('/') {
            Some((stack, id)) if !stack.is_empty() && !id.is_empty() => MachineName {
                stack: Some(stack.to_owned()),
                logical_id: id.to_owned(),
            },
            _ => MachineName {
                stack: None,
                logical_id: given.to_owned(),
            },
        }
    }
}

impl fmt::Display for MachineName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.stack {
            Some(stack) => write!(f, "{stack}/{}", self.logical_id),
            None => f.write_str(&self.logical_id),
        }
    }
}

/// What a definition argument names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The file or folder.
    pub path: PathBuf,
    /// The state machine chosen after `#`.
    pub machine: Option<MachineName>,
}

impl Reference {
    /// Reads `FILE`, `FILE#ID`, `DIR#STACK/ID`, with `file://` undone. `#` splits only when
    /// the whole is no file and the part before it is one (a file may have `#` in its name).
    pub fn parse(given: &Path) -> Self {
        let text = given.to_string_lossy();
        let path = match text.strip_prefix("file://") {
            Some(stripped) => PathBuf::from(stripped),
            None => given.to_path_buf(),
        };
        if !path.exists() {
            let whole = path.to_string_lossy().into_owned();
            if let Some((file, id)) = whole.rsplit_once('#') {
                if !id.is_empty() && Path::new(file).exists() {
                    return Reference {
                        path: PathBuf::from(file),
                        machine: Some(MachineName::parse(id)),
                    };
                }
            }
        }
        Reference {
            path,
            machine: None,
        }
    }

    /// `path` and a state machine named apart (`--template T --state-machine ID`).
    pub fn with_machine(path: &Path, machine: Option<&str>) -> Self {
        Reference {
            machine: machine.map(MachineName::parse),
            ..Reference::parse(path)
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        match &self.machine {
            Some(m) => write!(f, "#{m}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_splits_only_after_a_file_that_exists() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t.yaml");
        std::fs::write(&t, "x").unwrap();
        let r = Reference::parse(&PathBuf::from(format!("{}#Stack/Id", t.display())));
        assert_eq!(r.path, t);
        assert_eq!(r.machine.unwrap().to_string(), "Stack/Id");
        let r = Reference::parse(&dir.path().join("none.yaml#Id"));
        assert_eq!(r.machine, None);
        let r = Reference::parse(&PathBuf::from(format!("file://{}", t.display())));
        assert_eq!(r.path, t);
    }
}
