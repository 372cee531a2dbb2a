//! Reading a definition's text within AWS's limits, from the disk or from wherever a door
//! keeps it (the language server: the editor's unsaved text).

use std::path::Path;

/// Where the loader reads files from.
pub trait Reader {
    /// The text of the file at `path`, within [`crate::limits::DEFINITION_FILE_BYTES`], or why
    /// it cannot be read (the message names the file).
    fn read(&self, path: &Path) -> Result<String, String>;
}

/// The disk, as every command reads it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Disk;

impl Reader for Disk {
    fn read(&self, path: &Path) -> Result<String, String> {
        read_definition_text(path)
    }
}

/// Reads a definition file (or a template holding definitions) within AWS's limits, before
/// anything parses it: at most [`crate::limits::DEFINITION_FILE_BYTES`] bytes of UTF-8, and a
/// definition (a file that is not a template) at most 1,048,576 characters, refused with AWS's
/// wording.
pub fn read_definition_text(path: &Path) -> Result<String, String> {
    use crate::limits::{read_text_capped, too_long_message, DEFINITION_CHARS};
    // The AWS limit is only worth saying when the file is too large, not when it is missing.
    let text =
        read_text_capped(path, crate::limits::DEFINITION_FILE_BYTES).map_err(|e| match e {
            crate::limits::ReadError::TooLarge { .. } => {
                format!("{e} (AWS: a definition is at most {DEFINITION_CHARS} characters)")
            }
            crate::limits::ReadError::Unreadable { .. } => e.to_string(),
        })?;
    // A template holds other resources besides its definitions; its own definitions are
    // checked as they are loaded.
    if text.len() > DEFINITION_CHARS
        && !text.contains("Resources")
        && text.chars().count() > DEFINITION_CHARS
    {
        return Err(format!(
            "{}: {}",
            path.display(),
            too_long_message("definition", DEFINITION_CHARS)
        ));
    }
    Ok(text)
}
