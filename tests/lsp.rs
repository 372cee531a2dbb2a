//! `sfn-local lsp` end to end, through a real LSP client: pytest-lsp (from .ci/deps) starts
//! the built binary as an editor does and runs the suite in `tests/lsp/`, one file per
//! subject. Each test here runs one file and fails on any failure or skip.

mod common;

use common::deps_python_bin;
use std::path::{Path, PathBuf};
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

/// The book's Neovim recipes, copied from docs/src/editors.md: the one for 0.7 to 0.10 in
/// Debian's Neovim (0.7, where the old recipe failed with `attempt to call field 'config'`),
/// the 0.11 one (and the 0.7 one) in Neovim 0.11 from PyPI, headless. With `sfn-local` only in
/// the project's `node_modules/.bin` (as `npm i -D` puts it), a definition with a misspelt
/// `Next` gets `validate`'s diagnostic at `validate`'s line and column.
#[test]
fn the_books_neovim_recipes_show_validates_diagnostics() {
    let debian = PathBuf::from("nvim");
    let wheel = deps_python_bin("nvim");
    for (nvim, recipe) in [
        (&debian, "### Neovim 0.7 to 0.10"),
        (&wheel, "### Neovim 0.11"),
        (&wheel, "### Neovim 0.7 to 0.10"),
    ] {
        let got = neovim_diagnostics(nvim, recipe);
        assert_eq!(
            got.trim(),
            "4:28:Missing 'Next' target: Chek (did you mean \"Check\"?)",
            "{} with the recipe under {recipe}",
            nvim.display()
        );
    }
}

/// The diagnostics `nvim`, set up by the book's recipe under `heading`, shows for a definition
/// with a misspelt `Next` (`LINE:COLUMN:MESSAGE`, 1-based), after checking `validate` puts it
/// at line 4, column 28.
fn neovim_diagnostics(nvim: &Path, heading: &str) -> String {
    let book =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/editors.md"))
            .unwrap();
    let section = &book[book.find(heading).expect("the recipe's heading")..];
    let recipe = section
        .split("```lua")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let project = tempfile::tempdir().unwrap();
    let at = |name: &str| project.path().join(name);
    std::fs::write(at("package.json"), "{}").unwrap();
    std::fs::create_dir_all(at("node_modules/.bin")).unwrap();
    std::os::unix::fs::symlink(common::bin(), at("node_modules/.bin/sfn-local")).unwrap();
    std::fs::write(at("recipe.lua"), recipe).unwrap();
    let machine = "{\n  \"StartAt\": \"A\",\n  \"States\": {\n    \"A\": { \"Type\": \"Pass\", \"Next\": \"Chek\" },\n    \"Check\": { \"Type\": \"Succeed\" }\n  }\n}\n";
    std::fs::write(at("bad.asl.json"), machine).unwrap();
    std::fs::write(at("probe.lua"), NEOVIM_PROBE).unwrap();
    let run = Command::new(nvim)
        .args([
            "--headless",
            "-u",
            "recipe.lua",
            "-i",
            "NONE",
            "-c",
            "luafile probe.lua",
        ])
        .arg("bad.asl.json")
        .current_dir(project.path())
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {} (.ci/deps installs it): {e}", nvim.display()));
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let validate = Command::new(common::bin())
        .args(["validate", "--format", "github", "bad.asl.json"])
        .current_dir(project.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&validate.stdout);
    assert!(said.contains("line=4,col=28"), "{said}");
    std::fs::read_to_string(at("diagnostics.txt")).expect("the probe wrote diagnostics")
}

/// Waits for the buffer's diagnostics and writes them as `LINE:COLUMN:MESSAGE`.
const NEOVIM_PROBE: &str = r#"vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 50)
local out = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(out, string.format("%d:%d:%s", d.lnum + 1, d.col + 1, d.message))
end
vim.fn.writefile(out, "diagnostics.txt")
vim.cmd("qa!")
"#;

/// The VS Code extension finds the `sfn-local` installed in the workspace by npm
/// (`node_modules/.bin`), in a project venv or the activated one, before `PATH`, and says where
/// it looked when there is none (it once ran `sfn-local` from `PATH` alone, and an editor
/// started from a launcher showed nothing).
#[test]
fn the_vscode_extension_finds_a_binary_installed_in_the_workspace() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = tempfile::tempdir().unwrap();
    let exe = |p: &Path| {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let npm = work.path().join("npm");
    exe(&npm.join("node_modules/.bin/sfn-local"));
    let venv = work.path().join("venv-active");
    exe(&venv.join("bin/sfn-local"));
    let empty = work.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let script = format!(
        r#"const {{ findServer, notFound }} = require({find:?});
const out = {{
  npm: findServer("", [{npm:?}], {{ PATH: "/nowhere" }}).command,
  venv: findServer(undefined, [{empty:?}], {{ VIRTUAL_ENV: {venv:?}, PATH: "" }}).command,
  setting: findServer("/opt/x/sfn-local", [{npm:?}], {{}}).command,
  none: findServer("", [{empty:?}], {{ PATH: "/nowhere" }}),
}};
out.message = notFound(out.none.looked);
console.log(JSON.stringify(out));"#,
        find = root.join("editors/vscode/find.js"),
    );
    let out = Command::new("node")
        .args(["-e", &script])
        .output()
        .expect("node");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        got["npm"],
        npm.join("node_modules/.bin/sfn-local")
            .display()
            .to_string()
    );
    assert_eq!(
        got["venv"],
        venv.join("bin/sfn-local").display().to_string()
    );
    assert_eq!(got["setting"], "/opt/x/sfn-local");
    assert!(got["none"]["command"].is_null());
    let message = got["message"].as_str().unwrap();
    assert!(
        message.contains("npm i -D sfn-local") && message.contains("/nowhere"),
        "{message}"
    );
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
        "extension/find.js",
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
