//! `sfn-local lsp` end to end, through a real LSP client: pytest-lsp (from .ci/deps) starts
//! the built binary as an editor does and runs the suite in `tests/lsp/`, one file per
//! subject. Each test here runs one file and fails on any failure or skip.

mod common;

use common::deps_python_bin;
use std::path::Path;
use std::process::Command;

/// Runs `tests/lsp/FILE` with pytest and returns its summary line; panics with pytest's
/// output unless every test passed and none was skipped.
fn pytest(file: &str) -> String {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lsp");
    let out = Command::new(deps_python_bin("python"))
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", file])
        .current_dir(&suite)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("SFN_LOCAL_BIN", common::bin())
        .output()
        .expect("run pytest");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let summary = said.lines().last().unwrap_or_default().to_owned();
    assert!(
        out.status.success() && !summary.contains("skipped") && summary.contains("passed"),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{file}: {summary}");
    summary
}

/// Every definition AWS rejected in the validation corpus gets `validate`'s codes, messages
/// and places; every one AWS accepted (validation, pure and aws_task corpora) gets no error;
/// the near-name, misspelt-field and heartbeat fixes apply; YAML lands on its lines; closing
/// clears.
#[test]
fn diagnostics_are_validates() {
    pytest("test_diagnostics.py");
}

/// Go to definition from every kind of target, references, rename kept to a scope (Parallel
/// branch, Map processor), the outline nested under branches and processors, completion in an
/// empty `"Next": ""` offering exactly the states of its scope, in JSON and YAML; hover on a
/// state and on a field.
#[test]
fn navigation_and_edits_keep_to_a_scope() {
    pytest("test_navigation.py");
}

/// A SAM template whose DefinitionUri file and inline YAML Definition both set
/// HeartbeatSeconds >= TimeoutSeconds: one diagnostic in the file at its line, one in the
/// template at its line, as `validate` reports the template; the file's unsaved text is what
/// is checked; a cdk.out template's DefinitionString; a missing DefinitionUri file; the file
/// edited beside its open template is checked with the template's substitutions; go to
/// definition, rename and the outline inside an inline Definition.
#[test]
fn templates_report_in_the_template_and_in_their_definition_files() {
    pytest("test_templates.py");
}

/// The VS Code extension (`editors/vscode`) packages to a `.vsix` with `@vscode/vsce`, offline:
/// its dependencies come from `.ci/deps` (`.deps/vscode`), and the package holds the client,
/// its manifest and vscode-languageclient.
#[test]
fn the_vscode_extension_packages_to_a_vsix() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = tempfile::tempdir().unwrap();
    let ext = work.path().join("vscode");
    std::fs::create_dir(&ext).unwrap();
    for entry in std::fs::read_dir(root.join("editors/vscode")).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), ext.join(entry.file_name())).unwrap();
        }
    }
    let modules = common::deps_dir().join("vscode/node_modules");
    let copied = Command::new("cp")
        .arg("-R")
        .arg(&modules)
        .arg(ext.join("node_modules"))
        .status()
        .expect("cp");
    assert!(copied.success(), "copy {}", modules.display());
    let vsce = common::deps_node_modules().join("@vscode/vsce/vsce");
    let out = Command::new("node")
        .arg(&vsce)
        .args(["package", "--skip-license", "--allow-missing-repository"])
        .args(["--out", "sfn-local.vsix"])
        .current_dir(&ext)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run vsce");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let list = Command::new(deps_python_bin("python"))
        .args([
            "-c",
            "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))",
        ])
        .arg(ext.join("sfn-local.vsix"))
        .output()
        .expect("list the vsix");
    let names = String::from_utf8_lossy(&list.stdout);
    for want in [
        "extension/extension.js",
        "extension/package.json",
        "extension/node_modules/vscode-languageclient/node.js",
    ] {
        assert!(names.lines().any(|n| n == want), "{want} not in:\n{names}");
    }
}

/// Completion of a state's fields by type and query language (also while a key is half
/// typed, in JSON and YAML), of `States.*` error names, intrinsic functions and optimized
/// integrations' resource ARNs.
#[test]
fn completion_knows_fields_errors_intrinsics_and_resources() {
    pytest("test_completion.py");
}
