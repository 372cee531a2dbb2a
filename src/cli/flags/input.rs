//! `--input JSON|file://PATH` and `--input-file FILE|-`: an execution's input, within AWS's
//! 256 KiB quota.

use super::FlagError;
use crate::engine::execution::MAX_PAYLOAD_BYTES;
use crate::limits;
use clap::Args;
use std::path::PathBuf;

/// The execution input.
#[derive(Debug, Clone, Args)]
pub struct InputArgs {
    /// The execution input, as JSON text (default `{}`), or `file://PATH`.
    #[arg(long, conflicts_with = "input_file", value_parser = crate::cli::param::text_or_file)]
    pub input: Option<String>,
    /// Read the input from a file (`-` for stdin).
    #[arg(long, value_name = "FILE")]
    pub input_file: Option<PathBuf>,
}

impl InputArgs {
    /// The input, read (no further than AWS's quota) and parsed: `{}` when none is given.
    pub fn lower(&self) -> Result<serde_json::Value, FlagError> {
        let text = self.text()?;
        if text.len() > MAX_PAYLOAD_BYTES {
            return Err(FlagError::Usage(format!(
                "the input is {} bytes; AWS accepts at most {MAX_PAYLOAD_BYTES} (256 KiB): {}",
                text.len(),
                limits::too_long_message("input", MAX_PAYLOAD_BYTES)
            )));
        }
        serde_json::from_str(&text)
            .map_err(|e| FlagError::Usage(format!("the input is not JSON: {e}")))
    }

    /// The input's text.
    fn text(&self) -> Result<String, String> {
        match (&self.input, &self.input_file) {
            (Some(text), _) => Ok(text.clone()),
            // Read no further than AWS's quota: a larger input is refused, however large.
            (None, Some(p)) if p.as_os_str() == "-" => {
                let bytes = limits::read_stream_capped(
                    std::io::stdin().lock(),
                    limits::PAYLOAD_BYTES,
                    "the input on stdin",
                )
                .map_err(too_large)?;
                String::from_utf8(bytes).map_err(|_| "the input on stdin is not UTF-8 text".into())
            }
            (None, Some(p)) => {
                limits::read_text_capped(p, limits::PAYLOAD_BYTES).map_err(too_large)
            }
            (None, None) => Ok("{}".into()),
        }
    }
}

/// A refused input file, with AWS's wording when it is too large.
fn too_large(e: limits::ReadError) -> String {
    match e {
        limits::ReadError::TooLarge { what, size, limit } => format!(
            "the input {what} is {}; AWS accepts at most {limit} (256 KiB): {}",
            size.map(|s| format!("{s} bytes"))
                .unwrap_or_else(|| format!("more than {limit} bytes")),
            limits::too_long_message("input", limit)
        ),
        other => other.to_string(),
    }
}
