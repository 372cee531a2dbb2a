//! The AWS CLI's parameter files: `file://PATH` gives a parameter the text of a file and
//! `fileb://PATH` its bytes (which must be UTF-8 here, as every parameter that takes them is
//! text or JSON), wherever the AWS CLI takes them (`--input`, `--task-output`, `--cause`, ...).

/// A parameter's value: its text, or the contents of the file `file://`/`fileb://` names.
pub fn text_or_file(value: &str) -> Result<String, String> {
    let (path, binary) = if let Some(p) = value.strip_prefix("file://") {
        (p, false)
    } else if let Some(p) = value.strip_prefix("fileb://") {
        (p, true)
    } else {
        return Ok(value.to_owned());
    };
    // No parameter is longer than a definition: a larger file is refused unread.
    let bytes = crate::limits::read_capped(
        std::path::Path::new(path),
        crate::limits::PARAMETER_FILE_BYTES,
    )
    .map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| {
        format!(
            "{path} is not UTF-8 text{}",
            if binary {
                ""
            } else {
                " (fileb:// reads it the same way)"
            }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_give_their_text() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("in.json");
        std::fs::write(&p, "{\"a\":1}").unwrap();
        assert_eq!(
            text_or_file(&format!("file://{}", p.display())).unwrap(),
            "{\"a\":1}"
        );
        assert_eq!(
            text_or_file(&format!("fileb://{}", p.display())).unwrap(),
            "{\"a\":1}"
        );
        assert_eq!(text_or_file("{}").unwrap(), "{}");
        assert!(text_or_file("file:///no/such/file")
            .unwrap_err()
            .contains("/no/such/file"));
    }
}
