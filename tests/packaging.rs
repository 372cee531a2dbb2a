//! sfn-local without Rust, as the user installs it: the packages are built from this checkout
//! with `scripts/dist.sh` around the binary cargo already built (no second build), installed
//! into fresh places with no registry, and used as a user would: the wheel's pytest plugin runs
//! the example suite (python/example), the npm packages run the example Jest test
//! (npm/example), pre-commit runs the hooks with `try-repo`, and the GitHub Action's script
//! installs a release archive (checksum verified) and annotates. Also serve's fixture-friendly
//! start: `--port 0`, the endpoint line on stdout and `--ready-file`.

mod common;

use common::{bin, copy_dir, deps_node_modules, deps_python_bin, Output};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs a command to its end; panics with its output when it fails and `ok` is asked.
fn run(command: &mut Command) -> Output {
    command.stdin(Stdio::null());
    let out: Output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"))
        .into();
    out
}

#[track_caller]
fn ok(command: &mut Command) -> Output {
    let out = run(command);
    assert_eq!(
        out.code, 0,
        "{command:?} failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    out
}

fn dist(args: &[&str]) -> Command {
    let mut c = Command::new("bash");
    c.arg(root().join("scripts/dist.sh")).args(args);
    c
}

/// The Rust target of this machine, for the names of archives and npm packages.
fn host_target() -> &'static str {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "x86_64-unknown-linux-gnu",
        ("linux", "aarch64") => "aarch64-unknown-linux-gnu",
        ("macos", "x86_64") => "x86_64-apple-darwin",
        ("macos", "aarch64") => "aarch64-apple-darwin",
        other => panic!("no packaging test for {other:?}"),
    }
}

/// `sfn-local serve --port 0 --ready-file ...`, killed when dropped.
struct Serve {
    child: Child,
    ready_file: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        common::kill(&mut self.child);
    }
}

fn serve_port_0(extra: &[&str]) -> Serve {
    let dir = tempfile::tempdir().unwrap();
    let ready_file = dir.path().join("ready.json");
    let child = Command::new(bin())
        .args(["serve", "--port", "0", "--db"])
        .arg(dir.path().join("db.sqlite"))
        .arg("--ready-file")
        .arg(&ready_file)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    Serve {
        child,
        ready_file,
        _dir: dir,
    }
}

/// A raw AWS JSON 1.0 call; returns the HTTP status line and body.
fn call(endpoint: &str, operation: &str, body: &str) -> String {
    let authority = endpoint.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(authority).expect("connect to the endpoint");
    write!(
        stream,
        "POST / HTTP/1.1\r\nHost: {authority}\r\nX-Amz-Target: AWSStepFunctions.{operation}\r\n\
         Content-Type: application/x-amz-json-1.0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn serve_on_port_0_prints_its_endpoint_writes_the_ready_file_and_removes_it_on_stop() {
    let mut served = serve_port_0(&[]);
    // The endpoint line comes once the server listens, alone on its line.
    let mut stdout = BufReader::new(served.child.stdout.take().unwrap());
    // Step Functions Local's ready line (`Starting server on port N ...`) may come first.
    let mut line = String::new();
    while !line.starts_with("SFN_LOCAL_ENDPOINT=") {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "no endpoint line");
    }
    let endpoint = line
        .trim_end()
        .strip_prefix("SFN_LOCAL_ENDPOINT=")
        .unwrap_or_else(|| panic!("not the endpoint line: {line:?}"))
        .to_owned();
    let port: u16 = endpoint.rsplit_once(':').unwrap().1.parse().unwrap();
    assert!(
        endpoint.starts_with("http://127.0.0.1:") && port != 0,
        "{endpoint}"
    );
    // The ready file was written before the line: whole, and naming the same server.
    let ready: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&served.ready_file).unwrap()).unwrap();
    assert_eq!(ready["endpoint"], endpoint.as_str());
    assert_eq!(ready["port"], port);
    assert_eq!(ready["host"], "127.0.0.1");
    assert_eq!(ready["pid"], served.child.id());
    assert!(ready["database"].as_str().unwrap().ends_with("db.sqlite"));
    let answer = call(&endpoint, "ListStateMachines", "{}");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // SIGTERM: a clean stop removes the ready file, so no waiter takes it for a live server.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(served.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = served.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!served.ready_file.exists());
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(!rest.contains("SFN_LOCAL_ENDPOINT"), "{rest}");
}

#[test]
fn a_ready_file_in_a_missing_folder_is_refused_before_the_server_starts() {
    let out = run(Command::new(bin()).args([
        "serve",
        "--port",
        "0",
        "--db",
        "/nonexistent-sfn-local/db",
        "--ready-file",
        "/nonexistent-sfn-local/ready.json",
    ]));
    out.assert_error(2, "--ready-file /nonexistent-sfn-local/ready.json: the folder /nonexistent-sfn-local does not exist");
    assert!(!out.stdout.contains("SFN_LOCAL_ENDPOINT"), "{}", out.stdout);
}

#[test]
fn a_stale_ready_file_is_removed_before_a_server_that_cannot_bind_gives_up() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let ready_file = dir.path().join("ready.json");
    std::fs::write(&ready_file, r#"{"endpoint":"http://127.0.0.1:1"}"#).unwrap();
    let out = run(Command::new(bin())
        .args(["serve", "--port", &port, "--db"])
        .arg(dir.path().join("db"))
        .arg("--ready-file")
        .arg(&ready_file));
    out.assert_error(2, "cannot listen on 127.0.0.1:");
    assert!(!ready_file.exists());
}

/// A fresh virtualenv (pip from the standard library's ensurepip, no registry) that also sees
/// the test dependencies of .deps (pytest, boto3) through a `.pth` file, as a project's own
/// environment would have them.
fn fresh_venv(dir: &Path) -> PathBuf {
    let venv = dir.join("venv");
    ok(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    let python = venv.join("bin/python");
    let site = ok(Command::new(&python).args([
        "-c",
        "import sysconfig; print(sysconfig.get_paths()['purelib'])",
    ]));
    let deps_site = ok(Command::new(deps_python_bin("python")).args([
        "-c",
        "import sysconfig; print(sysconfig.get_paths()['purelib'])",
    ]));
    std::fs::write(
        Path::new(site.stdout.trim()).join("sfn_local_test_deps.pth"),
        deps_site.stdout.trim(),
    )
    .unwrap();
    python
}

#[test]
fn the_wheel_installs_into_a_fresh_venv_and_its_pytest_plugin_runs_the_example_suite() {
    let dir = tempfile::tempdir().unwrap();
    // maturin writes the metadata from pyproject.toml; the binary is the one cargo built.
    let wheels = dir.path().join("wheels");
    ok(dist(&[
        "wheel-from-binary",
        bin().to_str().unwrap(),
        wheels.to_str().unwrap(),
    ])
    .env("MATURIN", deps_python_bin("maturin"))
    .env("SFN_LOCAL_WHEEL_COMPAT", "linux")
    .env("CARGO_NET_OFFLINE", "true"));
    let wheel = std::fs::read_dir(&wheels)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("a wheel");
    let python = fresh_venv(dir.path());
    ok(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--no-index",
            "--no-deps",
            "--disable-pip-version-check",
            "--quiet",
        ])
        .arg(&wheel));
    // The binary is on the venv's PATH and is this checkout's.
    let venv_bin = python.parent().unwrap();
    let version = ok(Command::new(venv_bin.join("sfn-local")).arg("--version"));
    assert!(
        version.stdout.contains(env!("CARGO_PKG_VERSION")),
        "{}",
        version.stdout
    );
    // The example suite, copied away from the checkout: only the installed package helps it.
    let example = dir.path().join("example");
    copy_dir(&root().join("python/example"), &example);
    let suite = run(Command::new(&python)
        .args([
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-v",
            "--sfn-local-lcov",
        ])
        .arg(dir.path().join("coverage.lcov"))
        .current_dir(&example)
        .env_remove("SFN_LOCAL_BIN")
        .env("PATH", path_with(venv_bin)));
    assert_eq!(suite.code, 0, "{}\n{}", suite.stdout, suite.stderr);
    assert!(suite.stdout.contains("9 passed"), "{}", suite.stdout);
    // The session's coverage, as LCOV: both definition files the suite's server was given, and
    // the template's machine, found with the substitution it was created with.
    let lcov = std::fs::read_to_string(dir.path().join("coverage.lcov")).unwrap();
    assert!(
        lcov.contains("orders.asl.json") && lcov.contains("approval.asl.json"),
        "{lcov}"
    );
    let template = lcov
        .split("end_of_record")
        .find(|record| record.contains("template.yaml"))
        .unwrap_or_else(|| panic!("no record of template.yaml: {lcov}"));
    // Its one state entered, its one branch (End) taken.
    assert!(
        template.contains("LH:1\n") && template.contains("BRH:1\n"),
        "{template}"
    );
    assert!(lcov.contains("end_of_record"), "{lcov}");
    // A failing test gets the server's log in its report.
    std::fs::write(
        example.join("test_example.py"),
        "def test_fails(sfn_client):\n    sfn_client.describe_execution(executionArn='arn:aws:states:us-east-1:123456789012:execution:Nope:x')\n",
    )
    .unwrap();
    let failing = run(Command::new(&python)
        .args(["-m", "pytest", "-p", "no:cacheprovider"])
        .current_dir(&example)
        .env("PATH", path_with(venv_bin)));
    assert_eq!(failing.code, 1, "{}\n{}", failing.stdout, failing.stderr);
    assert!(
        failing
            .stdout
            .contains("sfn-local serve log (http://127.0.0.1:"),
        "{}",
        failing.stdout
    );
    assert!(
        failing.stdout.contains("listening on"),
        "{}",
        failing.stdout
    );
}

/// PATH with `first` in front.
fn path_with(first: &Path) -> std::ffi::OsString {
    let mut paths = vec![first.to_owned()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap()
}

#[test]
fn the_npm_packages_install_offline_and_the_jest_global_setup_serves_the_example_test() {
    let dir = tempfile::tempdir().unwrap();
    let packed = dir.path().join("packed");
    let packed_str = packed.to_str().unwrap();
    ok(&mut dist(&[
        "npm",
        host_target(),
        bin().to_str().unwrap(),
        packed_str,
    ]));
    ok(&mut dist(&["npm-launcher", packed_str]));
    let mut tarballs: Vec<PathBuf> = std::fs::read_dir(&packed)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    tarballs.sort();
    assert_eq!(tarballs.len(), 2, "{tarballs:?}");
    // A fresh project with the example test; the packages come from the tarballs alone (the
    // launcher's other platforms are optional and skipped offline).
    let project = dir.path().join("project");
    copy_dir(&root().join("npm/example"), &project);
    std::fs::write(project.join("package.json"), r#"{"private": true}"#).unwrap();
    ok(Command::new("npm")
        .args([
            "install",
            "--offline",
            "--no-audit",
            "--no-fund",
            "--silent",
        ])
        .args(&tarballs)
        .current_dir(&project));
    let version = ok(Command::new("npx")
        .args(["--offline", "sfn-local", "--version"])
        .current_dir(&project));
    assert!(
        version.stdout.contains(env!("CARGO_PKG_VERSION")),
        "{}",
        version.stdout
    );
    // Jest and the AWS SDK as the project's dev dependencies would give them (from .deps).
    let jest = run_in(&project, "jest/bin/jest.js", &["--ci", "--colors=false"]);
    assert_eq!(jest.code, 0, "{}\n{}", jest.stdout, jest.stderr);
    assert!(
        jest.stderr.contains("Tests:       8 passed, 8 total"),
        "{}",
        jest.stderr
    );
    // The teardown wrote the coverage of approval.asl.json and of the template's machine,
    // named as the project names them.
    lcov_of_the_example(&project.join("coverage/sfn-local.lcov"));
    // The same example under Vitest, through its own global setup.
    let vitest = run_in(&project, "vitest/vitest.mjs", &["run"]);
    assert_eq!(vitest.code, 0, "{}\n{}", vitest.stdout, vitest.stderr);
    assert!(
        vitest.stdout.contains("Tests  8 passed (8)"),
        "{}",
        vitest.stdout
    );
    lcov_of_the_example(&project.join("coverage/sfn-local-vitest.lcov"));
}

/// Runs a test runner of .deps (`jest/bin/jest.js`, ...) in `project`, its modules (and the AWS
/// SDK) found as a project's dev dependencies would be, the binary from the installed package.
fn run_in(project: &Path, runner: &str, args: &[&str]) -> Output {
    run(Command::new("node")
        .arg(deps_node_modules().join(runner))
        .args(args)
        .current_dir(project)
        .env("NODE_PATH", deps_node_modules())
        .env("CI", "1")
        .env("NO_COLOR", "1")
        .env_remove("SFN_LOCAL_BIN"))
}

/// An LCOV tracefile of the example's machines that Debian's `lcov` reads: every state of
/// approval.asl.json and of template.yaml's machine reached by the example's tests.
fn lcov_of_the_example(tracefile: &Path) {
    let text = std::fs::read_to_string(tracefile)
        .unwrap_or_else(|e| panic!("{}: {e}", tracefile.display()));
    assert!(text.contains("SF:approval.asl.json\n"), "{text}");
    assert!(text.contains("SF:template.yaml\n"), "{text}");
    let summary = run(Command::new("lcov")
        .args(["--summary", tracefile.to_str().unwrap()])
        .env("LC_ALL", "C"));
    assert_eq!(summary.code, 0, "{}", summary.stderr);
    assert!(
        summary.stdout.contains("lines......: 100.0%")
            || summary.stderr.contains("lines......: 100.0%"),
        "{}{}",
        summary.stdout,
        summary.stderr
    );
}

/// A git repository with one valid and one broken state machine, and a template.
fn sample_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("sample");
    std::fs::create_dir_all(repo.join("statemachines")).unwrap();
    std::fs::write(
        repo.join("statemachines/ok.asl.json"),
        r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#,
    )
    .unwrap();
    std::fs::write(
        repo.join("statemachines/broken.asl.yaml"),
        "StartAt: P\nStates:\n  P:\n    Type: Pass\n    Next: Nowhere\n",
    )
    .unwrap();
    std::fs::write(repo.join("notes.json"), r#"{"not": "a state machine"}"#).unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "."],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "sample",
        ],
    ] {
        ok(Command::new("git").args(args).current_dir(&repo));
    }
    repo
}

#[test]
fn the_pre_commit_hook_validates_state_machines_with_try_repo() {
    let dir = tempfile::tempdir().unwrap();
    let repo = sample_repo(dir.path());
    let bin_dir = bin().parent().unwrap().to_owned();
    let try_repo = |repo: &Path| {
        run(Command::new(deps_python_bin("pre-commit"))
            .arg("try-repo")
            .arg(root())
            .args([
                "sfn-local-validate-system",
                "--all-files",
                "--color",
                "never",
            ])
            .current_dir(repo)
            .env("PRE_COMMIT_HOME", dir.path().join("pre-commit-home"))
            .env("PATH", path_with(&bin_dir)))
    };
    let failed = try_repo(&repo);
    assert_eq!(failed.code, 1, "{}\n{}", failed.stdout, failed.stderr);
    assert!(
        failed.stdout.contains("broken.asl.yaml"),
        "{}",
        failed.stdout
    );
    assert!(failed.stdout.contains("Nowhere"), "{}", failed.stdout);
    // notes.json is not a state machine: the hook's pattern never hands it over.
    assert!(!failed.stdout.contains("notes.json"), "{}", failed.stdout);
    std::fs::write(
        repo.join("statemachines/broken.asl.yaml"),
        "StartAt: P\nStates:\n  P:\n    Type: Pass\n    End: true\n",
    )
    .unwrap();
    let passed = try_repo(&repo);
    assert_eq!(passed.code, 0, "{}\n{}", passed.stdout, passed.stderr);
    assert!(passed.stdout.contains("Passed"), "{}", passed.stdout);
    // Both hooks match the same files: the pip-built one differs only in how it installs.
    let hooks = std::fs::read_to_string(root().join(".pre-commit-hooks.yaml")).unwrap();
    assert_eq!(
        hooks
            .matches(
                "files: (\\.asl\\.(json|ya?ml)|(^|/)(template|[^/]*\\.template)\\.(json|ya?ml))$"
            )
            .count(),
        2
    );
}

#[test]
fn the_action_installs_a_release_archive_after_checking_its_checksum_and_annotates() {
    let dir = tempfile::tempdir().unwrap();
    // A release folder as the release workflow makes it, for this runner's archive name.
    let release = dir.path().join("release");
    let release_str = release.to_str().unwrap();
    ok(&mut dist(&[
        "archive",
        "x86_64-unknown-linux-musl",
        bin().to_str().unwrap(),
        release_str,
    ]));
    ok(&mut dist(&["checksums", release_str]));
    let sums = std::fs::read_to_string(release.join("SHA256SUMS")).unwrap();
    assert!(
        sums.contains("  sfn-local-x86_64-unknown-linux-musl.tar.gz"),
        "{sums}"
    );
    let repo = sample_repo(dir.path());
    let action = |step: &str, runner_temp: &Path, github_path: &Path| {
        let path = std::fs::read_to_string(github_path).unwrap_or_default();
        let mut c = Command::new("bash");
        c.arg(root().join("scripts/action.sh"))
            .arg(step)
            .current_dir(&repo)
            .env("RUNNER_OS", "Linux")
            .env("RUNNER_ARCH", "X64")
            .env("RUNNER_TEMP", runner_temp)
            .env("GITHUB_PATH", github_path)
            .env("SFN_LOCAL_RELEASE_URL", format!("file://{release_str}"))
            .env("SFN_LOCAL_PATHS", "statemachines")
            .env("PATH", format!("{}:/usr/bin:/bin", path.trim()));
        run(&mut c)
    };
    let temp = dir.path().join("runner-temp");
    std::fs::create_dir_all(&temp).unwrap();
    let github_path = dir.path().join("github-path");
    let installed = action("install", &temp, &github_path);
    assert_eq!(
        installed.code, 0,
        "{}\n{}",
        installed.stdout, installed.stderr
    );
    let added = std::fs::read_to_string(&github_path).unwrap();
    assert!(
        Path::new(added.trim()).join("sfn-local").is_file(),
        "{added}"
    );
    let validated = action("validate", &temp, &github_path);
    assert_eq!(
        validated.code, 1,
        "{}\n{}",
        validated.stdout, validated.stderr
    );
    assert!(
        validated
            .stdout
            .contains("::error file=statemachines/broken.asl.yaml,line=5"),
        "{}",
        validated.stdout
    );
    // A tampered archive is refused.
    let mut archive = std::fs::OpenOptions::new()
        .append(true)
        .open(release.join("sfn-local-x86_64-unknown-linux-musl.tar.gz"))
        .unwrap();
    archive.write_all(b"tampered").unwrap();
    let refused = action("install", &temp, &dir.path().join("github-path-2"));
    assert_eq!(refused.code, 1, "{}\n{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("does not match SHA256SUMS"),
        "{}",
        refused.stderr
    );
    assert!(!dir.path().join("github-path-2").exists());
}

#[test]
fn dist_refuses_a_missing_binary_and_an_unknown_platform() {
    let out = run(&mut dist(&[
        "archive",
        "x86_64-unknown-linux-musl",
        "/nonexistent/sfn-local",
        "/tmp/x",
    ]));
    out.assert_error(2, "no binary at /nonexistent/sfn-local");
    let out = run(&mut dist(&[
        "npm",
        "riscv64gc-unknown-linux-gnu",
        bin().to_str().unwrap(),
        "/tmp/x",
    ]));
    out.assert_error(2, "no npm cpu for target riscv64gc-unknown-linux-gnu");
}
