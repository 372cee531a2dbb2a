//! Helpers shared by the integration tests: the corpora in `tests/corpora`, the
//! real binary and its worker scripts, and [`Sandbox`]: a temporary database to run the binary
//! against, with the reads most tests make of an execution.
#![allow(dead_code)]

use serde_json::Value;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `tests/corpora/conformance/cases`: AWS's recordings, copied into the repository with their
/// provenance (`scripts/refresh-corpora.sh` refreshes them), so a clone alone runs every case.
pub fn conformance_cases() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpora/conformance/cases")
}

/// `tests/corpora/realworld`: published definitions and SAM templates, copied likewise.
pub fn realworld_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpora/realworld")
}

/// Every definition or template file (`.json`, `.yaml`, `.yml`) under `dir`, sorted.
pub fn definition_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.to_string_lossy().into_owned();
            if path.is_dir() {
                stack.push(path);
            } else if [".json", ".yaml", ".yml"].iter().any(|e| name.ends_with(e)) {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The `graph` arguments of every machine a file holds: `[file]`, or for a template of several,
/// `[file, --state-machine, ID]` each; none for a file that holds no machine (metadata JSON).
pub fn graph_machines(sandbox: &Sandbox, file: &Path) -> Vec<Vec<String>> {
    let path = file.to_string_lossy().into_owned();
    let out = sandbox.run(&["graph", &path]);
    if out.code == 0 {
        return vec![vec![path]];
    }
    let Some((_, ids)) = out.stderr.split_once("#LogicalId): ") else {
        return Vec::new();
    };
    ids.trim()
        .split(", ")
        .map(|id| vec![path.clone(), "--state-machine".into(), id.to_owned()])
        .collect()
}

/// A PNG's width and height from its header, after checking its signature.
pub fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "not a PNG: {:?}",
        &png[..png.len().min(16)]
    );
    assert_eq!(&png[12..16], b"IHDR", "the PNG's first chunk is its header");
    let number = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (number(16), number(20))
}

/// An SVG picture's width and height, rounded up to whole pixels as a rasteriser does.
pub fn svg_size(svg: &str) -> (u32, u32) {
    let tag = &svg[..svg.find('>').unwrap()];
    let number = |name: &str| -> u32 {
        let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        let value: f64 = tag[at..at + tag[at..].find('"').unwrap()].parse().unwrap();
        value.ceil() as u32
    };
    (number("width"), number("height"))
}

/// Where `.ci/deps` installed the real clients and peers (AWS CLI, boto3, moto, the JavaScript
/// SDK): `$SFN_LOCAL_DEPS`, else `.deps/` in the repository. Tests of real clients need them;
/// missing is a failure with the command that installs them, never a skip.
pub fn deps_dir() -> PathBuf {
    let dir = std::env::var_os("SFN_LOCAL_DEPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".deps"));
    assert!(
        dir.join("venv/bin/python").exists() && dir.join("node/node_modules").is_dir(),
        "the test clients are missing at {}: run `.ci/deps` first (the README's test command does)",
        dir.display()
    );
    dir
}

/// A program from the Python virtualenv of [`deps_dir`]: `aws`, `python`, `moto_server`.
pub fn deps_python_bin(name: &str) -> PathBuf {
    deps_dir().join("venv/bin").join(name)
}

/// The `node_modules` folder of [`deps_dir`], for `NODE_PATH`.
pub fn deps_node_modules() -> PathBuf {
    deps_dir().join("node/node_modules")
}

/// Every `*.json` file in a folder, sorted by name.
pub fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// Reads and parses a JSON file.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The `sfn-local` binary built for this test run.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sfn-local"))
}

/// The case's definition as text, with the corpus's placeholders for AWS resources (an activity
/// created by the test, for instance) replaced by ARNs of the right shape, as the test did on AWS.
pub fn definition_text(case: &Value) -> Option<String> {
    if let Some(raw) = case.get("definition_raw").and_then(|v| v.as_str()) {
        return Some(raw.to_owned());
    }
    let def = case.get("definition")?;
    let text = serde_json::to_string_pretty(def).ok()?;
    Some(text.replace(
        "\"activity_arn\"",
        "\"arn:aws:states:us-east-1:111111111111:activity:activity_arn\"",
    ))
}

/// `tests/workers/NAME`: a worker script the tests start, as an absolute path.
pub fn worker(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/workers")
        .join(name)
        .display()
        .to_string()
}

/// Kills a child with SIGKILL (no chance to clean up) and reaps it.
pub fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// The event types of a history, in order.
pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().expect("event type").to_owned())
        .collect()
}

/// The text of a file, or of its first and last MiB when it is over 64 MiB.
fn head_and_tail(path: &Path) -> String {
    use std::io::{Read, Seek, SeekFrom};
    const MIB: u64 = 1024 * 1024;
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::new();
    if len <= 64 * MIB {
        let _ = file.read_to_end(&mut bytes);
        return String::from_utf8_lossy(&bytes).into_owned();
    }
    let _ = (&mut file).take(MIB).read_to_end(&mut bytes);
    let mut tail = Vec::new();
    let _ = file.seek(SeekFrom::End(-(MIB as i64)));
    let _ = file.read_to_end(&mut tail);
    format!(
        "{}\n[... {} bytes ...]\n{}",
        String::from_utf8_lossy(&bytes),
        len - 2 * MIB,
        String::from_utf8_lossy(&tail)
    )
}

/// What a finished process left behind.
pub struct Output {
    /// Exit status code; -1 when the process was killed by a signal.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Output {
    /// Waits for a spawned child (its stdout and stderr piped) and collects what it left.
    pub fn of(child: Child) -> Output {
        child.wait_with_output().expect("wait for sfn-local").into()
    }

    /// Asserts that the process exited with `code` and said `message` (a part of it) on
    /// standard error.
    #[track_caller]
    pub fn assert_error(&self, code: i32, message: &str) {
        assert_eq!(self.code, code, "{}", self.stderr);
        assert!(self.stderr.contains(message), "{}", self.stderr);
    }

    /// Standard output parsed as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

impl From<std::process::Output> for Output {
    fn from(out: std::process::Output) -> Self {
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// What a finished process printed: its stdout, then its stderr.
pub fn said(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Copies the folder `from` to `to`, but for `__pycache__` and `node_modules` folders.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() != "__pycache__" && entry.file_name() != "node_modules" {
                copy_dir(&entry.path(), &to.join(entry.file_name()));
            }
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// A temporary folder with its own database, for running the binary; what else the binary's
/// environment holds depends on how the sandbox was made ([`Sandbox::new`],
/// [`Sandbox::with_workers`], [`Sandbox::env`]).
pub struct Sandbox {
    /// The folder (removed when dropped).
    pub dir: tempfile::TempDir,
    /// Changes to the environment of every command run here, in order: `Some` sets the
    /// variable, `None` removes it.
    env: Vec<(String, Option<OsString>)>,
}

impl Sandbox {
    /// A sandbox for testing the CLI: the binary does not see the caller's `SFN_MOCK_CONFIG`,
    /// `AWS_REGION` or `AWS_DEFAULT_REGION`, so it runs with its defaults.
    pub fn new() -> Self {
        Sandbox {
            dir: tempfile::tempdir().expect("temp dir"),
            env: ["SFN_MOCK_CONFIG", "AWS_REGION", "AWS_DEFAULT_REGION"]
                .into_iter()
                .map(|key| (key.to_owned(), None))
                .collect(),
        }
    }

    /// A sandbox holding a copy of the app `tests/NAME`, run there as a user runs it in their
    /// repository (Python writes no bytecode into it).
    pub fn of_app(name: &str) -> Self {
        let sb = Sandbox::new().env("PYTHONDONTWRITEBYTECODE", "1");
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join(name);
        copy_dir(&from, sb.dir.path());
        sb
    }

    /// A sandbox for runs with worker processes: as [`Sandbox::new`], and `SFN_LOCAL` names
    /// the binary under test, so the worker scripts (`tests/workers/`) that `run` starts call
    /// it back.
    pub fn with_workers() -> Self {
        Sandbox::new().env("SFN_LOCAL", bin())
    }

    /// Sets `key` to `value` for every command run in this sandbox.
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Runner leases of `ms` milliseconds (`SFN_LOCAL_LEASE_MS`): the executions of a killed
    /// runner can be resumed that soon.
    pub fn lease_ms(self, ms: u64) -> Self {
        self.env("SFN_LOCAL_LEASE_MS", ms.to_string())
    }

    /// A file in the sandbox (which need not exist).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The sandbox's database.
    pub fn db(&self) -> PathBuf {
        self.path("sfn-local.db")
    }

    /// Writes a file into the sandbox and returns its path.
    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, contents).expect("write file");
        p
    }

    /// `sfn-local` from the repository root with this sandbox's database (`SFN_LOCAL_DB`) and
    /// environment; stdin closed, stdout and stderr piped.
    pub fn command(&self) -> Command {
        let mut c = Command::new(bin());
        c.current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("SFN_LOCAL_DB", self.db());
        for (key, value) in &self.env {
            match value {
                Some(value) => c.env(key, value),
                None => c.env_remove(key),
            };
        }
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Starts `sfn-local ARGS` (see [`Sandbox::command`]); [`Output::of`] collects it.
    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command().args(args).spawn().expect("spawn sfn-local")
    }

    /// Runs `sfn-local ARGS` to the end (see [`Sandbox::command`]), with an empty stdin.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with_stdin(args, "")
    }

    /// `sfn-local run` of `definition` (written as `NAME.asl.json`) as execution `name`, with
    /// `extra` flags, to the end.
    pub fn run_definition(&self, definition: &Value, name: &str, extra: &[&str]) -> Output {
        let path = self.write(&format!("{name}.asl.json"), &definition.to_string());
        let mut args = vec!["run", path.to_str().unwrap(), "--name", name];
        args.extend(extra);
        self.run(&args)
    }

    /// Runs `sfn-local ARGS` to the end from the sandbox's own folder (relative paths are its
    /// files), as a user runs it in a project.
    pub fn run_in_sandbox(&self, args: &[&str]) -> Output {
        let child = self
            .command()
            .current_dir(self.dir.path())
            .args(args)
            .spawn()
            .expect("spawn sfn-local");
        Output::of(child)
    }

    /// Like [`Sandbox::run`], feeding `stdin`.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Output {
        self.run_full(args, stdin, &[])
    }

    /// Like [`Sandbox::run`], with more environment variables.
    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.run_full(args, "", env)
    }

    fn run_full(&self, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
        use std::io::Write;
        // Later settings of a key win: a test's own SFN_MOCK_CONFIG survives the sandbox's.
        let mut child = self
            .command()
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn sfn-local");
        if let Some(mut s) = child.stdin.take() {
            let _ = s.write_all(stdin.as_bytes());
        }
        Output::of(child)
    }

    /// Runs `sfn-local ARGS` to its end with stdout and stderr in files of the sandbox, and
    /// returns what it printed (a file over 64 MiB as its first and last MiB) and its peak
    /// resident memory in MiB (`wait4`'s rusage).
    ///
    /// Linux starts a child's peak at its parent's peak (the memory it was forked from), so
    /// the figure is the larger of this test process's peak and sfn-local's: an upper bound
    /// for sfn-local, as long as the tests in this binary stay small (keeping at most a few
    /// MiB of what they read is why big outputs are cut here).
    pub fn run_measured(&self, args: &[&str]) -> (Output, i64) {
        use std::os::unix::process::ExitStatusExt;
        let (out, err) = (self.path("measured.out"), self.path("measured.err"));
        let child = self
            .command()
            .args(args)
            .stdout(std::fs::File::create(&out).expect("stdout file"))
            .stderr(std::fs::File::create(&err).expect("stderr file"))
            .spawn()
            .expect("spawn sfn-local");
        let pid = child.id() as nix::libc::pid_t;
        let mut status = 0;
        // SAFETY: rusage is plain data; wait4 fills it and reaps our own child, which the
        // `Child` handle (dropped unwaited) never touches again.
        let mut usage: nix::libc::rusage = unsafe { std::mem::zeroed() };
        let reaped = unsafe { nix::libc::wait4(pid, &mut status, 0, &mut usage) };
        assert_eq!(reaped, pid, "wait4");
        drop(child);
        let status = std::process::ExitStatus::from_raw(status);
        let output = Output {
            code: status.code().unwrap_or(-1),
            stdout: head_and_tail(&out),
            stderr: head_and_tail(&err),
        };
        // Linux reports ru_maxrss in KiB.
        (output, usage.ru_maxrss / 1024)
    }

    /// The events of an execution's history (`get-execution-history`), which must succeed.
    pub fn history(&self, execution: &str) -> Vec<Value> {
        let out = self.run(&["get-execution-history", "--execution-arn", execution]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.json()["events"]
            .as_array()
            .cloned()
            .expect("history events")
    }

    /// `send-task-success` with `output`.
    pub fn send_success(&self, token: &str, output: &str) -> Output {
        self.run(&[
            "send-task-success",
            "--task-token",
            token,
            "--task-output",
            output,
        ])
    }

    /// `resume --execution-arn NAME`, waiting (up to 10 s) for the lease of a runner that died
    /// to lapse.
    pub fn resume(&self, name: &str) -> Output {
        self.resume_within(name, Duration::from_secs(10))
    }

    /// Like [`Sandbox::resume`], waiting up to `patience` for the lease.
    pub fn resume_within(&self, name: &str, patience: Duration) -> Output {
        let until = Instant::now() + patience;
        loop {
            let out = self.run(&["resume", "--execution-arn", name]);
            // A lease still held is refused with exit 2 at once.
            if out.code == 2 && out.stderr.contains("lease") && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            return out;
        }
    }
}

pub mod conformance;
pub mod http_api;
pub mod served;

/// A state's `<g>` start tag (its classes say its status) and its hover title, in an SVG
/// picture.
pub fn state_tag(svg: &str, name: &str) -> (String, String) {
    let at = svg
        .find(&format!("data-name=\"{name}\""))
        .unwrap_or_else(|| panic!("no state {name}"));
    let start = svg[..at].rfind("<g ").unwrap();
    let end = svg[start..].find("</g>").unwrap() + start;
    let g = &svg[start..end];
    let tag = g[..g.find('>').unwrap()].to_owned();
    let title = g
        .split("<title>")
        .nth(1)
        .and_then(|t| t.split("</title>").next())
        .unwrap_or_default()
        .to_owned();
    (tag, title)
}

/// Runs one of the Python checkers of pictures in `tests/tools` (`svg_check.py`,
/// `svg_crossings.py`) on an SVG file: its exit status and the first line it printed.
pub fn picture_check(script: &str, svg: &Path, extra: &[&str]) -> (bool, String) {
    let out = Command::new("python3")
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/tools")
                .join(script),
        )
        .arg(svg)
        .args(extra)
        .output()
        .expect("python3 runs the picture checkers");
    let text = String::from_utf8_lossy(&out.stdout);
    (
        out.status.success(),
        text.lines().next().unwrap_or_default().to_owned(),
    )
}
