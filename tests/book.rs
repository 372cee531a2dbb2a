//! The book under `docs/` stays true to the program: its command reference is generated from the
//! clap definition (so it cannot drift), every relative link of the README, CONTRIBUTING and the
//! book resolves (file and `#anchor`), and `mdbook build` builds it.
//!
//! `UPDATE_DOCS=1 cargo test --test book` rewrites `docs/src/reference/commands.md` after a flag
//! or a help text changed.

mod common;

use clap::CommandFactory;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every command's long help, as `sfn-local COMMAND --help` prints it, one section a command.
fn commands_reference() -> String {
    let mut cli = sfn_local::cli::Cli::command().term_width(100);
    cli.build();
    let mut out = String::from(
        "# Commands and flags\n\n\
         Generated from the program's own definition of its command line (`tests/book.rs` fails when\n\
         this page and `sfn-local COMMAND --help` differ; `UPDATE_DOCS=1 cargo test --test book`\n\
         rewrites it). Every command also takes `-q`, `-v` and `--color`.\n\n",
    );
    let top = cli.render_long_help().to_string();
    out.push_str(&format!(
        "## sfn-local\n\n```text\n{}\n```\n\n",
        top.trim_end()
    ));
    for sub in cli.get_subcommands_mut() {
        let name = sub.get_name().to_owned();
        if name == "help" {
            continue;
        }
        let help = sub.render_long_help().to_string();
        out.push_str(&format!(
            "## {name}\n\n```text\n{}\n```\n\n",
            help.trim_end()
        ));
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

#[test]
fn the_command_reference_is_generated_from_clap() {
    let path = root().join("docs/src/reference/commands.md");
    let wanted = commands_reference();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &wanted).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == wanted,
        "{} is out of date with the command line: run `UPDATE_DOCS=1 cargo test --test book`",
        path.display()
    );
}

/// The markdown files whose links are checked.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("CONTRIBUTING.md")];
    let mut folders = vec![root().join("docs/src")];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files
}

/// mdBook's anchor for a heading: lowercase, spaces to dashes, other punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a markdown file's headings (outside code fences).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut fence = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
        } else if !fence && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// `(line, target)` of every inline link `[text](target)` outside code fences and code spans.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut fence = false;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join("");
        let mut rest = prose.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((n + 1, after[..end].to_owned()));
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut broken = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((target.as_str(), ""));
            let dest = if file.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(file)
            };
            let problem = if !dest.exists() {
                Some("no such file")
            } else if !anchor.is_empty()
                && dest.extension().is_some_and(|e| e == "md")
                && !anchors(&std::fs::read_to_string(&dest).unwrap()).contains(anchor)
            {
                Some("no such heading")
            } else {
                None
            };
            if let Some(why) = problem {
                broken.push(format!("{}:{line}: {target}: {why}", doc.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn mdbook_builds_the_book() {
    let mdbook = common::deps_dir().join("cargo/bin/mdbook");
    let out = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(&mdbook)
        .arg("build")
        .arg(root().join("docs"))
        .arg("--dest-dir")
        .arg(out.path())
        .status()
        .unwrap_or_else(|e| panic!("{}: {e} (run .ci/deps)", mdbook.display()));
    assert!(status.success(), "mdbook build failed");
    let summary = std::fs::read_to_string(root().join("docs/src/SUMMARY.md")).unwrap();
    for (_, chapter) in links(&summary) {
        let html = Path::new(&chapter).with_extension("html");
        assert!(
            out.path().join(&html).exists(),
            "{} was not built",
            html.display()
        );
    }
}
