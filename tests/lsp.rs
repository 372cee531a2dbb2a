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

/// Definitions written inside a template's strings (CDK's `Fn::Join` pieces): a quick fix is
/// mapped through the string's escapes and leaves a template that validates (it once replaced
/// 2,835 characters of it); go to definition, completion and rename work inside; a `fromFile`
/// asset is checked in its stack's context as `validate` checks it; a template that no longer
/// parses gets `validate`'s syntax error (it got nothing).
#[test]
fn edits_inside_definition_strings_keep_templates_whole() {
    pytest("test_strings.py");
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

/// `sfn-local lsp` over raw stdio, as an editor's bytes reach it: frames are written as given
/// (malformed ones included), and a thread reads what it answers into a channel.
struct RawLsp {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    answers: std::sync::mpsc::Receiver<serde_json::Value>,
}

impl RawLsp {
    fn start() -> RawLsp {
        use std::process::Stdio;
        let mut child = Command::new(common::bin())
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start sfn-local lsp");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let (sink, answers) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            while let Some(message) = read_frame(&mut stdout) {
                if sink.send(message).is_err() {
                    return;
                }
            }
        });
        let mut lsp = RawLsp {
            child,
            stdin,
            answers,
        };
        let params = serde_json::json!({"processId": null, "rootUri": null, "capabilities": {}});
        lsp.request(1, "initialize", params);
        assert!(lsp.answer(1)["result"]["capabilities"].is_object());
        lsp.notify("initialized", serde_json::json!({}));
        lsp
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    fn send(&mut self, message: serde_json::Value) {
        let body = message.to_string();
        self.send_raw(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    }

    fn request(&mut self, id: i64, method: &str, params: serde_json::Value) {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
    }

    fn notify(&mut self, method: &str, params: serde_json::Value) {
        self.send(serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next message that is not a notification: an answer.
    fn next_answer(&self) -> serde_json::Value {
        loop {
            let message = self
                .answers
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("sfn-local lsp answered nothing within 60 s (or it exited)");
            if message.get("method").is_none() {
                return message;
            }
        }
    }

    /// The answer to request `id` (answers to others are skipped).
    fn answer(&self, id: i64) -> serde_json::Value {
        loop {
            let message = self.next_answer();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// The next notification `method` published.
    fn notification(&self, method: &str) -> serde_json::Value {
        loop {
            let message = self
                .answers
                .recv_timeout(std::time::Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no {method} within 60 s"));
            if message["method"] == method {
                return message;
            }
        }
    }

    /// A hover on the first character of `uri` is answered (whatever it says).
    fn hover_is_answered(&mut self, id: i64, uri: &str) {
        let position = serde_json::json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 1}});
        self.request(id, "textDocument/hover", position);
        let answer = self.answer(id);
        assert!(answer.get("error").is_none(), "{answer}");
        assert!(
            self.child.try_wait().unwrap().is_none(),
            "the server exited"
        );
    }

    /// The process's peak resident memory (VmHWM), in MiB.
    fn peak_mib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kib / 1024
    }
}

impl Drop for RawLsp {
    fn drop(&mut self) {
        common::kill(&mut self.child);
    }
}

/// One framed message from `input`; `None` at its end.
fn read_frame(input: &mut impl std::io::BufRead) -> Option<serde_json::Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            length = n.parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    input.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

const PASS_URI: &str = "file:///work/pass.asl.json";

fn open_pass(lsp: &mut RawLsp) {
    let text = r#"{"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}"#;
    lsp.notify(
        "textDocument/didOpen",
        serde_json::json!({"textDocument": {"uri": PASS_URI, "languageId": "json", "version": 1, "text": text}}),
    );
}

/// Regression (#47): a body that is not JSON ended the server (exit 1). It gets JSON-RPC's
/// ParseError (-32700, id null), as does a header that is not LSP's, and the server answers
/// what comes after.
#[test]
fn a_message_that_is_not_json_gets_a_parse_error_and_the_server_goes_on() {
    let mut lsp = RawLsp::start();
    open_pass(&mut lsp);
    lsp.send_raw(b"Content-Length: 8\r\n\r\nnot json");
    let error = lsp.next_answer();
    assert_eq!(error["id"], serde_json::Value::Null, "{error}");
    assert_eq!(error["error"]["code"], -32700, "{error}");
    lsp.hover_is_answered(2, PASS_URI);
    lsp.send_raw(b"Content-Length: ten\r\n\r\n{\"jsonrpc\": \"2.0\"}");
    assert_eq!(lsp.next_answer()["error"]["code"], -32700);
    lsp.hover_is_answered(3, PASS_URI);
}

/// Regression (#47): `Content-Length: 1000000000000000` aborted the server (allocation
/// failure) and `Content-Length: 3000000000` made it allocate 2.9 GB before any body came.
/// Each is refused at once with an error answer, nothing allocated; the claimed body is
/// skipped (here the next header ends it: the client sent none), and the server answers what
/// comes after with its memory small.
#[test]
fn content_lengths_over_the_limit_are_refused_unallocated_and_the_server_goes_on() {
    let mut lsp = RawLsp::start();
    open_pass(&mut lsp);
    for (id, claim) in [(2, "1000000000000000"), (3, "3000000000")] {
        lsp.send_raw(format!("Content-Length: {claim}\r\n\r\n").as_bytes());
        let error = lsp.next_answer();
        assert_eq!(error["id"], serde_json::Value::Null, "{error}");
        assert_eq!(error["error"]["code"], -32600, "{error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("67108864-byte limit"), "{message}");
        lsp.hover_is_answered(id, PASS_URI);
    }
    let peak = lsp.peak_mib();
    assert!(peak < 200, "peak resident memory {peak} MiB");
}

/// Regression (#47): a 78 MB document took 4.2 GB. A document over 4 MiB (what `validate`
/// reads of a definition or template file) is not kept or parsed: a diagnostic on it says
/// so, and the server answers what comes after.
#[test]
fn a_document_over_the_limit_is_refused_and_the_server_goes_on() {
    let mut lsp = RawLsp::start();
    let big_uri = "file:///work/big.asl.json";
    let padding = "x".repeat(5 * 1024 * 1024);
    let text = format!(
        r#"{{"Comment": "{padding}", "StartAt": "P", "States": {{"P": {{"Type": "Pass", "End": true}}}}}}"#
    );
    lsp.notify(
        "textDocument/didOpen",
        serde_json::json!({"textDocument": {"uri": big_uri, "languageId": "json", "version": 1, "text": text}}),
    );
    let published = lsp.notification("textDocument/publishDiagnostics");
    assert_eq!(published["params"]["uri"], big_uri, "{published}");
    let message = published["params"]["diagnostics"][0]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("at most 4194304 bytes"), "{published}");
    lsp.hover_is_answered(2, big_uri);
    open_pass(&mut lsp);
    lsp.hover_is_answered(3, PASS_URI);
}
