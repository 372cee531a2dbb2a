//! AWS's size limits, and reading what users hand over without holding more than a limit.
//!
//! Every input sfn-local reads from a file, a pipe or a program is bounded here, before it is
//! parsed: a file is read through [`read_capped`], which stops one byte past its limit, so a
//! 10 GB `--input-file` costs 256 KiB of memory and a clear refusal, not 10 GB and a slow
//! death. Errors and causes that sfn-local builds are cut to AWS's lengths with
//! [`bounded_error`], so a history never holds what AWS would not.

use crate::asl::error::StatesError;
use std::io::Read;
use std::path::Path;

/// AWS's payload quota (execution input, task result, state input and output, task output
/// sent with `SendTaskSuccess`): 256 KiB of UTF-8.
pub const PAYLOAD_BYTES: usize = 262_144;

/// AWS's longest definition (`definition` in CreateStateMachine: 1,048,576 characters).
pub const DEFINITION_CHARS: usize = 1_048_576;

/// The longest definition file read, in bytes: a definition of [`DEFINITION_CHARS`] characters
/// takes up to four bytes each; a SAM or CloudFormation template holds other resources besides.
pub const DEFINITION_FILE_BYTES: usize = 4 * DEFINITION_CHARS;

/// The longest mock configuration or test spec read. AWS sets no limit (Step Functions Local
/// reads the whole file); 16 MiB holds thousands of mocked responses at AWS's payload quota.
pub const MOCK_FILE_BYTES: usize = 16 * 1024 * 1024;

/// The longest parameter file (`file://PATH`) read: the largest parameter that takes one is a
/// definition.
pub const PARAMETER_FILE_BYTES: usize = DEFINITION_FILE_BYTES;

/// AWS's longest error name (`error` in every failure event and `SendTaskFailure`).
pub const ERROR_CHARS: usize = 256;

/// AWS's longest cause (`cause` in every failure event and `SendTaskFailure`).
pub const CAUSE_CHARS: usize = 32_768;

/// A file or a stream that holds more than its limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// Over the limit; `size` is the file's length when known.
    #[error("{what} is {} bytes; the most sfn-local reads is {limit} bytes", size.map(|s| s.to_string()).unwrap_or_else(|| format!("more than {limit}")))]
    TooLarge {
        /// What was read (a path, or a description).
        what: String,
        /// Its size, when the file system knows it.
        size: Option<u64>,
        /// The limit.
        limit: usize,
    },
    /// Not readable at all.
    #[error("cannot read {what}: {why}")]
    Unreadable {
        /// What was read.
        what: String,
        /// The system's reason.
        why: String,
    },
}

/// Reads at most `limit` bytes of `path`: a larger file is refused without reading it (or, for
/// a pipe or a device, after `limit + 1` bytes).
pub fn read_capped(path: &Path, limit: usize) -> Result<Vec<u8>, ReadError> {
    let what = path.display().to_string();
    let unreadable = |e: std::io::Error| ReadError::Unreadable {
        what: what.clone(),
        why: e.to_string(),
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    if meta.is_file() && meta.len() > limit as u64 {
        return Err(ReadError::TooLarge {
            what,
            size: Some(meta.len()),
            limit,
        });
    }
    read_stream_capped(file, limit, &what)
}

/// Reads a stream (stdin, a pipe) up to `limit` bytes; one byte more is an error.
pub fn read_stream_capped(
    stream: impl Read,
    limit: usize,
    what: &str,
) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    stream
        .take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::Unreadable {
            what: what.to_owned(),
            why: e.to_string(),
        })?;
    if bytes.len() > limit {
        return Err(ReadError::TooLarge {
            what: what.to_owned(),
            size: None,
            limit,
        });
    }
    Ok(bytes)
}

/// Reads a text file of at most `limit` bytes.
pub fn read_text_capped(path: &Path, limit: usize) -> Result<String, ReadError> {
    let bytes = read_capped(path, limit)?;
    String::from_utf8(bytes).map_err(|e| ReadError::Unreadable {
        what: path.display().to_string(),
        why: format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ),
    })
}

/// AWS's wording for a member over its length (the API's model validation), e.g.
/// `1 validation error detected: Value at 'input' failed to satisfy constraint: Member must
/// have length less than or equal to 262144`.
pub fn too_long_message(member: &str, max: usize) -> String {
    format!("1 validation error detected: Value at '{member}' failed to satisfy constraint: Member must have length less than or equal to {max}")
}

/// The first `max` characters of `text` (whole characters).
pub fn head_chars(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    match text.char_indices().nth(max) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}

/// The last `max` characters of `text` (whole characters).
pub fn tail_chars(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    if max == 0 {
        return "";
    }
    match text.char_indices().rev().nth(max - 1) {
        Some((cut, _)) => &text[cut..],
        None => text,
    }
}

/// An error within AWS's lengths: the name cut to 256 characters, the cause to 32,768 (its
/// beginning kept: causes name what failed first).
pub fn bounded_error(mut e: StatesError) -> StatesError {
    if let Some(error) = &mut e.error {
        if error.len() > ERROR_CHARS {
            let cut = head_chars(error, ERROR_CHARS).len();
            error.truncate(cut);
        }
    }
    if let Some(cause) = &mut e.cause {
        if cause.len() > CAUSE_CHARS {
            let cut = head_chars(cause, CAUSE_CHARS).len();
            cause.truncate(cut);
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_its_limit_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big");
        std::fs::write(&p, vec![b'x'; 11]).unwrap();
        assert_eq!(read_capped(&p, 11).unwrap().len(), 11);
        let e = read_capped(&p, 10).unwrap_err();
        assert!(e.to_string().contains("is 11 bytes"), "{e}");
        let e = read_stream_capped(&b"0123456789ab"[..], 10, "stdin").unwrap_err();
        assert!(e.to_string().contains("more than 10"), "{e}");
        assert!(read_capped(&dir.path().join("none"), 10).is_err());
    }

    #[test]
    fn errors_and_causes_are_cut_to_aws_lengths_on_character_boundaries() {
        let e = bounded_error(StatesError::new("é".repeat(300), "ü".repeat(40_000)));
        assert_eq!(e.error.as_deref().unwrap().chars().count(), ERROR_CHARS);
        assert_eq!(e.cause.as_deref().unwrap().chars().count(), CAUSE_CHARS);
        let short = StatesError::new("E", "c");
        assert_eq!(bounded_error(short.clone()), short);
        assert_eq!(tail_chars("abcdé", 2), "dé");
        assert_eq!(tail_chars("ab", 5), "ab");
        assert_eq!(head_chars("éab", 1), "é");
    }
}
