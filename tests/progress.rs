//! Progress on `run` while stderr is a terminal (a real pseudo-terminal from util-linux's
//! `script`); when it is not, only the `-v` lines.

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

/// Regression (#30): `-v` printed nothing in CI logs or under pytest, where stderr is no
/// terminal, although `--help` promises its per-state lines.
#[test]
fn run_not_on_a_terminal_prints_state_lines_only_with_v() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("m.asl.json", MACHINE);
    let file = file.to_str().unwrap();
    let out = sandbox.run(&["run", file, "--time-scale", "0"]);
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

    let out = sandbox.run(&["run", file, "-v", "--time-scale", "0"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let states: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("  ✓ "))
        .collect();
    assert_eq!(
        states,
        ["  ✓ Prepare", "  ✓ Pause", "  ✓ Finish"],
        "{}",
        out.stderr
    );
    // No spinner or cursor movement in a log.
    assert!(!out.stderr.contains('\u{1b}'), "{:?}", out.stderr);
    assert!(!out.stderr.contains("events"), "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "{}");
    // --quiet wins.
    let out = sandbox.run(&["run", file, "--quiet", "--time-scale", "0"]);
    assert!(!out.stderr.contains('✓'), "{}", out.stderr);
}
