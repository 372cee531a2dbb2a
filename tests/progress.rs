//! Progress on `run` while stderr is a terminal (a real pseudo-terminal from util-linux's
//! `script`), and none when it is not.

mod common;

use common::Sandbox;
use std::process::{Command, Stdio};

const MACHINE: &str = r#"{
  "StartAt": "Prepare",
  "States": {
    "Prepare": {"Type": "Pass", "Next": "Pause"},
    "Pause": {"Type": "Wait", "Seconds": 2, "Next": "Finish"},
    "Finish": {"Type": "Pass", "End": true}
  }
}"#;

/// Runs `sfn-local ARGS` on a pseudo-terminal and returns everything it drew there.
fn on_a_terminal(sandbox: &Sandbox, args: &[&str]) -> String {
    let mut line = shell_words::join(
        std::iter::once(common::bin().to_str().unwrap()).chain(args.iter().copied()),
    );
    line.push_str(" </dev/null");
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("SFN_LOCAL_DB", sandbox.db())
        .env("TERM", "xterm")
        .env("COLUMNS", "200")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .expect("util-linux script");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn run_on_a_terminal_shows_the_running_state_and_with_v_each_finished_one() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("m.asl.json", MACHINE);
    let screen = on_a_terminal(&sandbox, &["run", file.to_str().unwrap(), "-v"]);
    assert!(screen.contains("running Pause"), "{screen}");
    assert!(screen.contains("events"), "{screen}");
    assert!(screen.contains("✓ Prepare"), "{screen}");
    assert!(screen.contains("✓ Pause"), "{screen}");
    let quiet = on_a_terminal(&sandbox, &["run", file.to_str().unwrap(), "--quiet"]);
    assert!(!quiet.contains("running Pause"), "{quiet}");
    let json = on_a_terminal(
        &sandbox,
        &["run", file.to_str().unwrap(), "--format", "json"],
    );
    assert!(!json.contains("running Pause"), "{json}");
}

#[test]
fn run_not_on_a_terminal_prints_no_progress() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("m.asl.json", MACHINE);
    let out = sandbox.run(&["run", file.to_str().unwrap(), "-v"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Only the line naming the execution, which every run prints; no progress.
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].starts_with("sfn-local: execution "),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout.trim(), "{}");
}
