//! Every `sfn-local` command line in the README's and the book's shell blocks (```` ```sh ````)
//! parses: a renamed or removed flag, subcommand or value fails here, even where the example
//! cannot run as a test (it needs a server, a token or a file of the reader's). The examples
//! that can run are checked with their output by `tests/doc_examples.rs`.
//!
//! Read the way a person reads them: `[--flag VALUE]` as given, `a|b` as `a`; a line with `…`
//! (elided) is skipped; a comment, a pipe or a redirection ends the command.

use clap::Parser as _;
use std::path::{Path, PathBuf};

/// The markdown files with examples: the README and the book (not the generated reference).
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    let mut folders = vec![root.join("docs/src")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md")
                && !path.ends_with("reference/commands.md")
            {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// The lines of the page's shell blocks, continuations joined, with their line numbers.
fn shell_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut in_shell = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match fence {
            Some(lang) if !in_shell => in_shell = matches!(lang.trim(), "sh" | "bash" | "shell"),
            Some(_) => in_shell = false,
            None if in_shell => {
                let (start, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
                joined.push_str(line.trim());
                match joined.strip_suffix('\\') {
                    Some(open) => pending = Some((start, format!("{open} "))),
                    None => lines.push((start, joined)),
                }
            }
            None => {}
        }
    }
    lines
}

/// The `sfn-local` command a shell line runs, as argv, read as a person reads the example; `None`
/// when the line runs something else or elides part of it.
fn command(line: &str) -> Option<Vec<String>> {
    if line.contains('…') || line.contains("$(") {
        return None;
    }
    let words = shell_words::split(line).ok()?;
    let mut words = words.into_iter().skip_while(|w| is_assignment(w));
    let first = words.next()?;
    if first != "sfn-local" {
        return None;
    }
    let mut argv = vec![first];
    for word in words {
        if word.starts_with('#')
            || ["|", "||", "&&", ";", "&", ">", "2>", "<"].contains(&word.as_str())
        {
            break;
        }
        // `[--port 8080]` as given, `auto|manual` as its first choice.
        let word = word.trim_start_matches('[').trim_end_matches(']');
        let word = match word.split_once('|') {
            Some((first, _)) if !word.contains(' ') && !word.starts_with('$') => first,
            _ => word,
        };
        if !word.is_empty() {
            argv.push(word.to_owned());
        }
    }
    Some(argv)
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
    })
}

#[test]
fn every_command_line_of_the_readme_and_the_book_parses() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (line_number, line) in shell_lines(&text) {
            let Some(argv) = command(&line) else { continue };
            checked += 1;
            if let Err(e) = sfn_local::cli::Cli::try_parse_from(&argv) {
                let shown = page
                    .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                    .unwrap_or(&page);
                failures.push(format!(
                    "{}:{line_number}: {line}\n  {}",
                    shown.display(),
                    e.kind()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} example command lines do not parse:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The pages hold about forty; far fewer means the reading above broke.
    assert!(checked >= 30, "only {checked} command lines found");
}

#[test]
fn the_reading_catches_a_renamed_flag_and_skips_what_is_not_sfn_local() {
    let parse =
        |line: &str| command(line).map(|argv| sfn_local::cli::Cli::try_parse_from(argv).is_ok());
    assert_eq!(
        parse("sfn-local run m.json --input-file in.json   # a comment"),
        Some(true)
    );
    assert_eq!(
        parse("sfn-local run m.json --input-fil in.json"),
        Some(false)
    );
    assert_eq!(
        parse("SFN_LOCAL_DB=x sfn-local list-executions [--status-filter FAILED] | jq ."),
        Some(true)
    );
    assert_eq!(parse("aws stepfunctions list-state-machines"), None);
    assert_eq!(parse("sfn-local run … --state-machine-name x"), None);
}
