//! `sfn-local coverage` over executions made by `run`, `test` and `serve` (driven by boto3): a
//! suite that misses exactly one Choice rule, one Catch and one Retry reports exactly those in
//! text, JSON and LCOV (checked by Debian's `lcov` and `genhtml`); an edited definition's
//! executions are not counted; pictures and the console colour what was reached.

mod common;

use common::{deps_python_bin, state_tag, Sandbox};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

const ORDERS: &str = "tests/coverage/orders.asl.json";
const MOCKS: &str = "tests/coverage/orders.mocks.json";

/// The three items the suite misses, as the text report lists them.
const MISSED: [&str; 3] = [
    r#"  tests/coverage/orders.asl.json:13  branch: Choice rule 2 of Check ($.kind == "small" → Charge)"#,
    "  tests/coverage/orders.asl.json:39  error path: Retry 2 of Charge (Flaky)",
    "  tests/coverage/orders.asl.json:50  error path: Catch 2 of Charge (States.ALL → Broken)",
];

/// Runs `orders` once through `run` (mocked Charge, no waiting on Retry intervals).
fn run_order(sb: &Sandbox, definition: &str, kind: &str, test_case: Option<&str>, extra: &[&str]) {
    let input = format!(r#"{{"kind": "{kind}"}}"#);
    let mut args = vec!["run", definition, "--input", &input, "--time-scale", "0"];
    if let Some(case) = test_case {
        args.extend(["--mock-config", MOCKS, "--test-case", case]);
    }
    args.extend(extra);
    let out = sb.run(&args);
    assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
}

/// The suite: every rule but `small`, the Default, a Retry of `Busy`, a Catch of `Declined`.
fn run_suite(sb: &Sandbox) {
    run_order(sb, ORDERS, "big", Some("Paid"), &[]);
    run_order(sb, ORDERS, "other", None, &[]);
    run_order(sb, ORDERS, "big", Some("BusyThenPaid"), &[]);
    run_order(sb, ORDERS, "big", Some("Declined"), &[]);
    // The same content, minified and under another machine name, counts.
    let value: Value = serde_json::from_str(&std::fs::read_to_string(ORDERS).unwrap()).unwrap();
    let copy = sb.write("renamed.asl.json", &value.to_string());
    run_order(sb, copy.to_str().unwrap(), "gift", None, &[]);
}

/// The lines of the text report's "not covered" section.
fn missed_lines(report: &str) -> Vec<String> {
    report
        .lines()
        .skip_while(|l| !l.ends_with(": not covered"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The LCOV branches (line, taken) of a tracefile.
fn branches(lcov: &str) -> Vec<(usize, String)> {
    lcov.lines()
        .filter_map(|l| l.strip_prefix("BRDA:"))
        .map(|b| {
            let parts: Vec<&str> = b.split(',').collect();
            (parts[0].parse().unwrap(), parts[3].to_owned())
        })
        .collect()
}

fn lcov_tool(args: &[&str]) -> std::process::Output {
    Command::new(args[0])
        .args(&args[1..])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap_or_else(|e| panic!("{} (install Debian's lcov: .ci/deps): {e}", args[0]))
}

#[test]
fn a_suite_missing_one_rule_one_catch_and_one_retry_reports_exactly_those_in_every_format() {
    let sb = Sandbox::new();
    run_suite(&sb);
    // An edited definition under the same name: its executions are not counted.
    let edited = std::fs::read_to_string(ORDERS)
        .unwrap()
        .replace("Coverage fixture", "Edited fixture");
    let edited = sb.write("orders.asl.json", &edited);
    run_order(&sb, edited.to_str().unwrap(), "small", Some("Paid"), &[]);
    check_text(&sb);
    check_json(&sb);
    check_lcov(&sb);
    let gate = sb.run(&["coverage", ORDERS, "--fail-under", "100"]);
    assert_eq!(gate.code, 0, "{}", gate.stderr);
    let gate = sb.run(&["coverage", ORDERS, "--fail-under", "100,90"]);
    assert_eq!(gate.code, 1, "{}", gate.stderr);
    assert!(
        gate.stderr
            .contains("branches 83.3% (5/6) is below --fail-under 90%"),
        "{}",
        gate.stderr
    );
}

/// The table's row and the three items missed, with their lines.
fn check_text(sb: &Sandbox) {
    let text = sb.run(&["coverage", ORDERS]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert_eq!(missed_lines(&text.stdout), MISSED, "{}", text.stdout);
    let row = text.stdout.lines().nth(1).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells,
        [ORDERS, "5", "6/6", "100%", "5/6", "83%", "2/4", "50%"],
        "{}",
        text.stdout
    );
}

/// The same three items missed, and the rules that share a target told apart.
fn check_json(sb: &Sandbox) {
    let json = sb.run(&["coverage", ORDERS, "--format", "json"]).json();
    let machine = &json["machines"][0];
    assert_eq!(machine["executions"], 5);
    assert_eq!(
        machine["stateMachineNames"],
        serde_json::json!(["orders", "renamed"])
    );
    let missed: Vec<(String, String, i64)> = machine["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["hits"] == 0)
        .map(|i| {
            (
                i["kind"].as_str().unwrap().to_owned(),
                i["state"].as_str().unwrap().to_owned(),
                i["line"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        missed,
        [
            ("choice".into(), "Check".into(), 13),
            ("retry".into(), "Charge".into(), 39),
            ("catch".into(), "Charge".into(), 50)
        ]
    );
    let rule = |n: usize| machine["items"].as_array().unwrap()[1 + n]["hits"].clone();
    assert_eq!((rule(0), rule(2)), (3.into(), 1.into()), "{machine}");
}

/// The same three branches at 0 in LCOV, which `lcov --summary` and `genhtml` read.
fn check_lcov(sb: &Sandbox) {
    let lcov_file = sb.path("orders.lcov");
    let out = sb.run(&[
        "coverage",
        ORDERS,
        "--format",
        "lcov",
        "-o",
        lcov_file.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lcov = std::fs::read_to_string(&lcov_file).unwrap();
    assert!(lcov.starts_with(&format!("TN:\nSF:{ORDERS}\n")), "{lcov}");
    let zero: Vec<usize> = branches(&lcov)
        .into_iter()
        .filter(|(_, taken)| taken == "0")
        .map(|(line, _)| line)
        .collect();
    assert_eq!(zero, [13, 39, 50], "{lcov}");
    assert!(
        lcov.contains("DA:5,5\n") && lcov.contains("LH:6\n"),
        "{lcov}"
    );
    let summary = lcov_tool(&[
        "lcov",
        "--summary",
        lcov_file.to_str().unwrap(),
        "--rc",
        "lcov_branch_coverage=1",
    ]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&summary.stdout),
        String::from_utf8_lossy(&summary.stderr)
    );
    assert!(summary.status.success(), "{said}");
    assert!(
        said.contains("6 of 6 lines") && said.contains("7 of 10 branches"),
        "{said}"
    );
    let html = sb.path("html");
    let genhtml = lcov_tool(&[
        "genhtml",
        lcov_file.to_str().unwrap(),
        "--branch-coverage",
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(
        genhtml.status.success(),
        "{}",
        String::from_utf8_lossy(&genhtml.stderr)
    );
    assert!(html.join("index.html").is_file());
}

#[test]
fn test_coverage_reports_the_suite_it_just_ran() {
    let sb = Sandbox::new();
    let lcov_file = sb.path("suite.lcov");
    let out = sb.run(&["test", "tests/coverage/orders.sfntest.json", "--coverage"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("5 passed, 0 failed"), "{}", out.stdout);
    assert_eq!(missed_lines(&out.stdout), MISSED, "{}", out.stdout);
    let out = sb.run(&[
        "test",
        "tests/coverage/orders.sfntest.json",
        "--coverage",
        "--coverage-format",
        "lcov",
        "--coverage-output",
        lcov_file.to_str().unwrap(),
        "--coverage-fail-under",
        "100,90",
    ]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let lcov = std::fs::read_to_string(&lcov_file).unwrap();
    let zero: Vec<usize> = branches(&lcov)
        .into_iter()
        .filter(|(_, taken)| taken == "0")
        .map(|(line, _)| line)
        .collect();
    assert_eq!(zero, [13, 39, 50], "{lcov}");
    // Nothing was stored: `test` runs in memory.
    assert!(!sb.db().exists());
}

#[test]
fn graph_coverage_colours_what_was_reached() {
    let sb = Sandbox::new();
    run_order(&sb, ORDERS, "gift", None, &[]);
    let svg = sb.run(&["graph", ORDERS, "--coverage"]);
    assert_eq!(svg.code, 0, "{}", svg.stderr);
    let class_of = |name: &str| {
        let at = svg.stdout.find(&format!("data-name=\"{name}\"")).unwrap();
        let start = svg.stdout[..at].rfind("<g class=\"").unwrap();
        svg.stdout[start..at].to_owned()
    };
    assert!(
        class_of("Free").contains("succeeded"),
        "{}",
        class_of("Free")
    );
    assert!(
        class_of("Charge").contains("not-entered"),
        "{}",
        class_of("Charge")
    );
    assert!(svg.stdout.contains("not covered: Choice rule 1 of Check"));
    let mermaid = sb.run(&["graph", ORDERS, "--coverage", "--format", "mermaid"]);
    assert!(
        mermaid.stdout.contains("class n2 succeeded"),
        "{}",
        mermaid.stdout
    );
    assert!(
        mermaid.stdout.contains("class n1 not_entered"),
        "{}",
        mermaid.stdout
    );
    let dot = sb.run(&["graph", ORDERS, "--coverage", "--format", "dot"]);
    let line = |name: &str| {
        dot.stdout
            .lines()
            .find(|l| l.contains(&format!("label=\"{name}")))
            .unwrap()
            .to_owned()
    };
    assert!(line("Free").contains("#e6f4ea"), "{}", dot.stdout);
    assert!(line("Charge").contains("#ffffff"), "{}", dot.stdout);
    transitions_are_coloured_taken_or_missed(&svg.stdout, &mermaid.stdout, &dot.stdout);
}

/// After one `gift` order: the `gift` rule and Free's `Next` were taken; every other rule, the
/// Default and Charge's transitions (its `Next` and both Catch entries) were not.
fn transitions_are_coloured_taken_or_missed(svg: &str, mermaid: &str, dot: &str) {
    let edge = |from: &str, to: &str, label: &str| {
        dot.lines()
            .find(|l| l.contains(&format!("{from} -> {to} [")) && l.contains(label))
            .unwrap_or_else(|| panic!("no edge {from} -> {to} {label}: {dot}"))
            .to_owned()
    };
    let gift = edge("n0", "n2", "gift");
    assert!(
        gift.contains("color=\"#188038\"") && gift.contains("penwidth=2"),
        "{gift}"
    );
    let small = edge("n0", "n1", "small");
    assert!(
        small.contains("#e37400") && small.contains("not taken"),
        "{small}"
    );
    let catch_all = edge("n1", "n4", "States.ALL");
    assert!(
        catch_all.contains("#e37400") && catch_all.contains("not taken"),
        "{catch_all}"
    );
    assert!(
        !dot.contains("start0 -> n0 ["),
        "the start edge is no transition: {dot}"
    );
    // Mermaid numbers links as written: 0 is the start edge, 3 the `gift` rule.
    assert!(mermaid.contains("linkStyle 3 stroke:#188038"), "{mermaid}");
    assert!(mermaid.contains("linkStyle 2 stroke:#e37400"), "{mermaid}");
    assert!(!mermaid.contains("linkStyle 0 "), "{mermaid}");
    assert!(
        mermaid.contains("#quot;small#quot; (not taken)"),
        "{mermaid}"
    );
    for class in ["edge taken", "edge missed", "edge catch missed"] {
        assert!(
            svg.contains(&format!("<g class=\"{class}\"")),
            "{class}: {svg}"
        );
    }
    assert!(svg.contains("<title>not taken by any execution</title>"));
}

/// Regression (#51): the coverage chapter promised untaken edges labelled "not taken", but the
/// SVG only dashed them (the words were in a hover title). After one `gift` order, the `small`
/// rule's label reads "not taken" under its rule, as does the Default's, Charge's `Next` (no
/// label of its own) reads "not taken" alone, the taken `gift` rule does not, and the picture still passes the geometric check.
#[test]
fn an_untaken_edge_is_labelled_not_taken_in_the_svg() {
    let sb = Sandbox::new();
    run_order(&sb, ORDERS, "gift", None, &[]);
    let svg_file = sb.path("coverage.svg");
    let out = sb.run(&[
        "graph",
        ORDERS,
        "--coverage",
        "-o",
        svg_file.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let svg = std::fs::read_to_string(&svg_file).unwrap();
    let labels_of = |class: &str| -> Vec<Vec<String>> {
        svg.split(&format!("<g class=\"{class}\""))
            .skip(1)
            .map(|g| {
                let g = &g[..g.find("</g>").unwrap()];
                g.split("<text")
                    .skip(1)
                    .map(|t| t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()].to_owned())
                    .collect()
            })
            .collect()
    };
    let missed = labels_of("edge missed");
    assert!(
        missed
            .iter()
            .any(|l| l.len() == 2 && l[0].contains("small") && l[1] == "not taken"),
        "{missed:?}"
    );
    assert!(
        missed.iter().any(|l| l == &["Default", "not taken"]),
        "{missed:?}"
    );
    assert!(
        missed.iter().any(|l| l == &["not taken"]),
        "Charge's Next: {missed:?}"
    );
    assert!(labels_of("edge catch missed")
        .iter()
        .all(|l| l.last().map(String::as_str) == Some("not taken")));
    let taken = labels_of("edge taken");
    assert!(
        taken.iter().flatten().all(|l| l != "not taken"),
        "{taken:?}"
    );
    let (ok, said) = common::picture_check("svg_check.py", &svg_file, &["--labels"]);
    assert!(ok, "{said}");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// Starts `sfn-local ARGS --port P` in the sandbox and waits until it listens.
fn start_server(sb: &Sandbox, args: &[&str], port: u16) -> std::process::Child {
    let mut child = sb
        .command()
        .args(args)
        .args(["--port", &port.to_string()])
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("listening on") || line.contains("console") {
                let _ = tx.send(());
            }
        }
    });
    let until = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "server did not start");
        let _ = rx.recv_timeout(Duration::from_millis(50));
    }
    child
}

fn stop(mut child: std::process::Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

fn http_get(port: u16, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn coverage_of_executions_made_through_serve_by_boto3() {
    let port = free_port();
    let sb = Sandbox::new()
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    let server = start_server(&sb, &["serve"], port);
    let endpoint = format!("http://127.0.0.1:{port}");
    let client = Command::new(deps_python_bin("python"))
        .args([
            "tests/coverage/boto3_runs.py",
            &endpoint,
            "tests/coverage/picker.asl.json",
            "Picker",
            r#"{"n": 20, "items": [1, 2, 3]}"#,
            r#"{"n": 30, "items": []}"#,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("python");
    let page = http_get(port, "/console/executions?machine=Picker");
    stop(server);
    assert!(
        client.status.success(),
        "{}{}",
        String::from_utf8_lossy(&client.stdout),
        String::from_utf8_lossy(&client.stderr)
    );
    let json = sb
        .run(&[
            "coverage",
            "tests/coverage/picker.asl.json",
            "--format",
            "json",
        ])
        .json();
    let machine = &json["machines"][0];
    assert_eq!(machine["executions"], 2, "{machine}");
    let hits = |state: &str, kind: &str| {
        machine["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["state"] == state && i["kind"] == kind)
            .map(|i| i["hits"].clone())
            .unwrap()
    };
    // States inside a Map's processor count, once per iteration.
    assert_eq!(hits("Item", "state"), 3);
    assert_eq!(hits("Pick", "choice"), 2);
    assert_eq!(hits("Pick", "default"), 0);
    assert_eq!(hits("Small", "state"), 0);
    // Every machine in the database, named by its API name.
    let all = sb.run(&["coverage"]);
    assert_eq!(all.code, 0, "{}", all.stderr);
    let row = all.stdout.lines().nth(1).unwrap();
    assert!(row.starts_with("Picker "), "{}", all.stdout);
    assert!(row.contains("3/4 75%"), "{}", all.stdout);
    // The console shows the same on the machine's page.
    assert!(page.contains("<h2 id=\"coverage\">Coverage</h2>"), "{page}");
    assert!(
        page.contains("2 executions of this definition · states 3/4 (75%)"),
        "{page}"
    );
    assert!(page.contains("Default of Pick (→ Small)"), "{page}");
}

#[test]
fn a_templates_machine_is_reported_on_the_templates_lines() {
    let sb = Sandbox::new();
    let template = "tests/coverage/template.yaml";
    let out = sb.run(&["run", "--template", template, "--input", r#"{"n": 20}"#]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = sb.run(&["coverage", template]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert_eq!(
        missed_lines(&text.stdout),
        [
            "  tests/coverage/template.yaml:15  branch: Default of Pick (→ Small)",
            "  tests/coverage/template.yaml:19  state: Pass state Small",
            "  tests/coverage/template.yaml:21  branch: End of Small",
        ],
        "{}",
        text.stdout
    );
    assert!(text
        .stdout
        .contains("tests/coverage/template.yaml#Picker  "));
    let lcov = sb.run(&["coverage", template, "--format", "lcov"]);
    assert!(lcov
        .stdout
        .starts_with("TN:\nSF:tests/coverage/template.yaml\n"));
    assert!(lcov.stdout.contains("DA:19,0\n"), "{}", lcov.stdout);
}

#[test]
fn bad_input_is_refused_with_what_is_wrong() {
    let sb = Sandbox::new();
    let out = sb.run(&["coverage", ORDERS]);
    out.assert_error(2, "there is no database at");
    run_order(&sb, ORDERS, "gift", None, &[]);
    let out = sb.run(&["coverage", ORDERS, "--fail-under", "120"]);
    out.assert_error(2, "'120' is not a percentage");
    let out = sb.run(&["coverage", "--format", "lcov"]);
    out.assert_error(2, "LCOV needs definition files");
    let broken = sb.write("broken.asl.json", r#"{"StartAt": "Nowhere", "States": {}}"#);
    let out = sb.run(&["coverage", broken.to_str().unwrap()]);
    out.assert_error(2, "is not a valid state machine");
}

/// A made-up history of `orders` for one input kind: the states it enters, in one lane.
fn bench_history(kind: &str) -> Vec<sfn_local::store::NewEvent> {
    use sfn_local::store::NewEvent;
    let path: &[(&str, &str)] = match kind {
        "big" => &[("Check", "Choice"), ("Charge", "Task"), ("Done", "Succeed")],
        "gift" => &[("Check", "Choice"), ("Free", "Pass"), ("Done", "Succeed")],
        _ => &[("Check", "Choice"), ("Broken", "Fail")],
    };
    let mut events = vec![NewEvent {
        id: 1,
        previous_event_id: 0,
        timestamp_ms: 0,
        event_type: "ExecutionStarted".into(),
        replay_key: None,
        details: Some("{}".into()),
    }];
    let input = format!(r#"{{\"kind\":\"{kind}\"}}"#);
    for (state, ty) in path {
        let mut push = |what: &str, details: String| {
            let id = events.len() as i64 + 1;
            events.push(NewEvent {
                id,
                previous_event_id: id - 1,
                timestamp_ms: id,
                event_type: format!("{ty}{what}").into(),
                replay_key: Some(format!("r:{}", id - 2).into()),
                details: Some(details),
            });
        };
        push(
            "StateEntered",
            format!(r#"{{"name":"{state}","input":"{input}"}}"#),
        );
        if *ty != "Fail" {
            push("StateExited", format!(r#"{{"name":"{state}"}}"#));
        }
    }
    events
}

/// Stores 10,000 finished executions of `definition` through the store's own writer.
fn fill_bench_db(path: &std::path::Path, definition: &str) {
    use sfn_local::store::{Append, ExecutionStatus, Finish, NewExecution, Store};
    let store = Store::open(path, Default::default()).unwrap();
    let mut last = None;
    for n in 0..10_000 {
        let arn = format!("arn:aws:states:us-east-1:123456789012:execution:orders:e{n}");
        let _ = store.create_execution(NewExecution {
            execution_arn: arn.clone(),
            name: format!("e{n}"),
            state_machine_arn: "arn:aws:states:us-east-1:123456789012:stateMachine:orders".into(),
            state_machine_name: "orders".into(),
            definition: definition.to_owned(),
            input: "{}".into(),
            start_date_ms: 0,
            role_arn: None,
            timeout_at_ms: None,
            position: None,
            owner: None,
            lease_expires_at_ms: None,
            run_config: None,
            state_machine_version_arn: None,
            state_machine_alias_arn: None,
            events: bench_history(["big", "gift", "other"][n % 3]),
        });
        let finish = Finish {
            status: ExecutionStatus::Succeeded,
            output: Some("{}".into()),
            error: None,
            cause: None,
            stop_date_ms: 1,
        };
        last = Some(store.append(Append {
            execution_arn: arn,
            events: Vec::new(),
            position: None,
            finish: Some(finish),
            owner: None,
        }));
    }
    last.unwrap().wait_blocking().unwrap();
}

/// CPU time of this process's waited-for children, in ms.
fn children_cpu_ms() -> f64 {
    // SAFETY: getrusage fills a plain struct.
    let mut usage: nix::libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { nix::libc::getrusage(nix::libc::RUSAGE_CHILDREN, &mut usage) };
    let ms = |t: nix::libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

/// A database of 10,000 executions, summarised: the time is printed, not asserted (run with
/// `cargo test --test coverage -- --ignored --nocapture`).
#[test]
#[ignore = "a benchmark: prints how long coverage of 10,000 executions takes"]
fn ten_thousand_executions_are_summarised() {
    let sb = Sandbox::new();
    fill_bench_db(&sb.db(), &std::fs::read_to_string(ORDERS).unwrap());
    let (cpu_before, started) = (children_cpu_ms(), Instant::now());
    let out = sb.run(&["coverage", ORDERS]);
    let (elapsed, cpu_ms) = (started.elapsed(), children_cpu_ms() - cpu_before);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains(" 10000 "), "{}", out.stdout);
    let build = if cfg!(debug_assertions) {
        "debug build"
    } else {
        "release build"
    };
    println!(
        "coverage of 10,000 executions: {:.0} ms wall, {cpu_ms:.0} ms CPU (the whole `sfn-local coverage` process, {build})",
        elapsed.as_secs_f64() * 1000.0
    );
    println!("{}", out.stdout);
}

/// A distributed Map's processor runs in child executions with histories of their own: their
/// states, rules and ends count for the parent's definition, and they are no executions of it.
#[test]
fn a_distributed_maps_children_count_for_its_processor() {
    let sb = Sandbox::new();
    let definition = "tests/coverage/distributed.asl.json";
    let out = sb.run(&[
        "run",
        definition,
        "--input",
        r#"{"items":[{"n":1},{"n":2}]}"#,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = sb.run(&["coverage", definition]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    let row = report.stdout.lines().nth(1).unwrap().to_owned();
    assert!(
        row.contains(" 1  3/4 75%") && row.contains("3/5 60%"),
        "one execution; Size and Small reached by its children: {}",
        report.stdout
    );
    assert_eq!(
        missed_lines(&report.stdout),
        [
            "  tests/coverage/distributed.asl.json:14  branch: Choice rule 1 of Size ($.n > 10 → Big)",
            "  tests/coverage/distributed.asl.json:18  state: Pass state Big",
            "  tests/coverage/distributed.asl.json:18  branch: End of Big",
        ]
    );
}

const PARALLEL_CATCH: &str = "tests/coverage/parallel_catch.asl.json";

/// Regression (#36): a Parallel whose branch's Task failed with `Boom`, caught by the
/// Parallel's Catch, beside a branch with a Map of three Parallels. Coverage missed the Catch,
/// "why" named a Pass of the sibling branch, the table labelled rows with the wrong state and
/// the picture coloured the Parallel aborted.
#[test]
fn a_parallels_catch_of_its_branch_tasks_error_is_taken_and_every_report_names_the_task() {
    let sb = Sandbox::new();
    let run = sb.run(&[
        "run",
        PARALLEL_CATCH,
        "--name",
        "boom",
        "--input",
        r#"{"items": [1, 2, 3]}"#,
        "--mock-config",
        "tests/coverage/parallel_catch.mocks.json",
        "--test-case",
        "Boom",
        // ChargeItem fails after a while: the sibling branch (its Map of Parallels) ends first.
        "--clock",
        "virtual",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Coverage, in JSON: the Catch taken once, every state but Done (after the Catch) entered.
    let json = sb
        .run(&["coverage", PARALLEL_CATCH, "--format", "json"])
        .json();
    let items = json["machines"][0]["items"].as_array().unwrap().clone();
    let hits = |kind: &str, state: &str| {
        items
            .iter()
            .find(|i| i["kind"] == kind && i["state"] == state)
            .unwrap_or_else(|| panic!("no {kind} of {state}"))["hits"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(hits("catch", "P"), 1);
    for (state, visits) in [
        ("P", 1),
        ("Reserve", 1),
        ("Items", 1),
        ("Both", 3),
        ("Note", 3),
        ("Ship", 3),
        ("ChargeItem", 1),
        ("Recovered", 1),
        ("Done", 0),
    ] {
        assert_eq!(hits("state", state), visits, "{state}");
    }
    assert_eq!(hits("next", "P"), 0);
    assert_eq!(json["machines"][0]["endings"], serde_json::json!([]));
    // Text and LCOV agree: the Catch is not among what was missed, and its line is taken.
    let text = sb.run(&["coverage", PARALLEL_CATCH]).stdout;
    assert!(!text.contains("Catch 1 of P"), "{text}");
    assert!(text.contains("Next of P (→ Done)"), "{text}");
    let lcov = sb
        .run(&["coverage", PARALLEL_CATCH, "--format", "lcov"])
        .stdout;
    let catch_line = items.iter().find(|i| i["kind"] == "catch").unwrap()["line"]
        .as_i64()
        .unwrap() as usize;
    assert!(
        branches(&lcov).contains(&(catch_line, "1".to_owned())),
        "{lcov}"
    );
    // "why" and the table name the failing Task.
    let described = sb.run(&[
        "describe-execution",
        "--execution-arn",
        "boom",
        "--format",
        "text",
    ]);
    assert!(
        described.stdout.contains(
            "why        failed at state 'ChargeItem': Boom: the card melted (caught; went on to 'Recovered')"
        ),
        "{}",
        described.stdout
    );
    let table = sb
        .run(&[
            "get-execution-history",
            "--execution-arn",
            "boom",
            "--format",
            "table",
        ])
        .stdout;
    let state_of = |ty: &str| -> Vec<String> {
        table
            .lines()
            .filter(|l| l.split_whitespace().nth(3) == Some(ty))
            .map(|l| l.split_whitespace().nth(2).unwrap_or("").to_owned())
            .collect()
    };
    assert_eq!(state_of("TaskFailed"), ["ChargeItem"], "{table}");
    assert_eq!(state_of("ParallelStateFailed"), ["P"], "{table}");
    assert_eq!(state_of("ParallelStateSucceeded"), ["Both"; 3], "{table}");
    assert_eq!(state_of("MapStateSucceeded"), ["Items"], "{table}");
    assert!(
        table.contains("TaskScheduled           lambda:invoke"),
        "{table}"
    );
    // The picture: the Parallel was caught, its failing Task failed, nothing aborted.
    let svg = sb.run(&["graph", "--execution-arn", "boom"]).stdout;
    let (tag, title) = state_tag(&svg, "P");
    assert!(tag.contains(" caught\""), "{tag}");
    assert!(title.contains("caught Boom → Recovered"), "{title}");
    assert!(state_tag(&svg, "ChargeItem").0.contains(" failed\""));
    assert!(state_tag(&svg, "Items")
        .1
        .contains("iterations: 3 started, 3 succeeded"));
    assert!(!svg.contains(" aborted\""), "{svg}");
}

/// A template with two machines, each a Pass then a Choice.
const TWO_MACHINES: &str = r#"{"Resources": {
  "First": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {"Definition":
    {"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}}},
  "Second": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {"Definition":
    {"StartAt": "B", "States": {"B": {"Type": "Pass", "End": true}}}}}}}"#;

/// A spec of `machine` in the template with `cases` cases.
fn template_spec(machine: &str, cases: usize) -> String {
    let case = r#"{"input": {}, "expect": {"status": "SUCCEEDED"}}"#;
    let cases = vec![case; cases].join(",");
    format!(r#"{{"template": "template.json", "stateMachine": "{machine}", "cases": [{cases}]}}"#)
}

/// Regression (#36): `test --coverage` counted every execution of a template for each of its
/// machines (7 and 7 for 4 and 3), and printed "N passed" on stdout before a JSON report.
#[test]
fn test_coverage_counts_each_template_machine_its_own_executions() {
    let sb = Sandbox::new();
    sb.write("template.json", TWO_MACHINES);
    sb.write("first.sfntest.json", &template_spec("First", 4));
    sb.write("second.sfntest.json", &template_spec("Second", 3));
    let out = sb.run_in_sandbox(&["test", ".", "--coverage", "--coverage-format", "json"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("7 passed, 0 failed"), "{}", out.stderr);
    // stdout is the JSON report alone.
    let report: Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    let executions: Vec<(String, i64)> = report["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["machine"].as_str().unwrap().to_owned(),
                m["executions"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        executions,
        [
            ("template.json#First".into(), 4),
            ("template.json#Second".into(), 3)
        ]
    );
    // A template's machine whose definition is a file of its own (DefinitionUri) counts too.
    let sb = Sandbox::new();
    sb.write(
        "flow.asl.json",
        r#"{"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}"#,
    );
    sb.write(
        "template.json",
        r#"{"Resources": {"Flow": {"Type": "AWS::Serverless::StateMachine",
            "Properties": {"DefinitionUri": "flow.asl.json"}}}}"#,
    );
    sb.write("flow.sfntest.json", &template_spec("Flow", 2));
    let out = sb.run_in_sandbox(&["test", ".", "--coverage", "--coverage-format", "json"]);
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", out.stdout, out.stderr));
    assert_eq!(report["machines"][0]["executions"], 2, "{report}");
}

/// A SAM template whose Pass state takes `${Greeting}` from a parameter.
const GREETER: &str = r#"{"Transform": "AWS::Serverless-2016-10-31",
  "Parameters": {"Greeting": {"Type": "String"}},
  "Resources": {"Greeter": {"Type": "AWS::Serverless::StateMachine", "Properties": {
    "DefinitionSubstitutions": {"Greeting": {"Ref": "Greeting"}},
    "Definition": {"StartAt": "Greet", "States": {
      "Greet": {"Type": "Pass", "Parameters": {"greeting": "${Greeting}"}, "End": true}}}}}}}"#;

/// Regression (#36): coverage found executions by the definition's text alone, so a report
/// without the runs' `--sub` values said "0 executions, 0%" with no hint that executions of
/// the machine existed. It now names them, where their definition differs and how to match
/// them; with the values it counts them; an edited file's executions are "another definition".
#[test]
fn a_report_without_the_runs_sub_values_names_the_executions_it_could_not_match() {
    let sb = Sandbox::new();
    sb.write("template.json", GREETER);
    let run = sb.run_in_sandbox(&[
        "run",
        "--template",
        "template.json",
        "--sub",
        "Greeting=Hello",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = sb.run_in_sandbox(&["coverage", "template.json"]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    let said =
        "1 execution(s) of state machine 'Greeter' ran another definition, not counted here: \
                at /States/Greet/Parameters/greeting they ran \"Hello\" where this one has \
                \"Greeting\". If those are ${Name} values, give the values they ran with \
                (--sub NAME=VALUE)";
    assert!(report.stdout.contains(said), "{}", report.stdout);
    assert!(report.stderr.contains(said), "{}", report.stderr);
    let json = sb
        .run_in_sandbox(&["coverage", "template.json", "--format", "json"])
        .json();
    let machine = &json["machines"][0];
    assert_eq!(machine["executions"], 0);
    assert_eq!(
        machine["unmatched"],
        serde_json::json!([{"stateMachineName": "Greeter", "executions": 1,
            "differsAt": "/States/Greet/Parameters/greeting", "ran": "Hello", "here": "Greeting"}])
    );
    // With the runs' values, the execution is counted and nothing is left unmatched.
    let matched = sb
        .run_in_sandbox(&[
            "coverage",
            "template.json",
            "--sub",
            "Greeting=Hello",
            "--format",
            "json",
        ])
        .json();
    assert_eq!(matched["machines"][0]["executions"], 1);
    assert_eq!(matched["machines"][0]["unmatched"], serde_json::json!([]));
    // A definition file edited since its runs: its executions ran an older version.
    let file = sb.write(
        "steps.asl.json",
        r#"{"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}"#,
    );
    let file = file.to_str().unwrap();
    assert_eq!(sb.run(&["run", file]).code, 0);
    sb.write("steps.asl.json", r#"{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B"}, "B": {"Type": "Pass", "End": true}}}"#);
    let edited = sb.run(&["coverage", file]);
    assert!(
        edited.stdout.contains("1 execution(s) of state machine 'steps' ran another definition, not counted here: at /States/A/End they ran true where this one has nothing")
            && edited.stdout.contains("else they ran an older version of this machine"),
        "{}",
        edited.stdout
    );
}

/// Regression (#36): `graph 'T#LogicalId' --coverage` failed with "No such file", and graph's
/// advice for a template of several machines, `--state-machine`, was a flag graph refused.
#[test]
fn graph_draws_a_templates_machine_by_logical_id_with_its_coverage() {
    let sb = Sandbox::new();
    sb.write("template.json", TWO_MACHINES);
    let run = sb.run_in_sandbox(&[
        "run",
        "--template",
        "template.json",
        "--state-machine",
        "Second",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let several = sb.run_in_sandbox(&["graph", "template.json"]);
    several.assert_error(2, "choose one as template.json#LogicalId");
    for args in [
        &["graph", "template.json#Second", "--coverage"][..],
        &[
            "graph",
            "template.json",
            "--state-machine",
            "Second",
            "--coverage",
        ],
    ] {
        let out = sb.run_in_sandbox(args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        let (tag, title) = state_tag(&out.stdout, "B");
        assert!(!tag.contains("not-entered"), "{tag}");
        assert!(title.contains("entered ×1"), "{title}");
    }
    let first = sb.run_in_sandbox(&[
        "graph",
        "template.json",
        "--state-machine",
        "First",
        "--coverage",
    ]);
    assert!(
        state_tag(&first.stdout, "A").0.contains("not-entered"),
        "{}",
        first.stdout
    );
    // coverage takes the same `T#LogicalId`.
    let json = sb
        .run_in_sandbox(&["coverage", "template.json#Second", "--format", "json"])
        .json();
    assert_eq!(json["machines"].as_array().unwrap().len(), 1);
    assert_eq!(json["machines"][0]["executions"], 1);
}

/// Regression (#36): `-q` still printed warnings. With it, stderr keeps errors only; the
/// report itself still says what it could not count.
#[test]
fn quiet_keeps_warnings_off_stderr() {
    let sb = Sandbox::new();
    let spec = "tests/coverage/orders.sfntest.json";
    let loud = sb.run(&["test", spec, "--sub", "Nope=1"]);
    assert!(
        loud.stderr
            .contains("warning: the substitution Nope is not used"),
        "{}",
        loud.stderr
    );
    let quiet = sb.run(&["test", "-q", spec, "--sub", "Nope=1"]);
    assert_eq!((quiet.code, quiet.stderr.as_str()), (0, ""));
    sb.write("template.json", GREETER);
    let run = sb.run_in_sandbox(&["run", "--template", "template.json", "--sub", "Greeting=Hi"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = sb.run_in_sandbox(&["coverage", "-q", "template.json"]);
    assert_eq!(report.stderr, "");
    assert!(
        report
            .stdout
            .contains("ran another definition, not counted here"),
        "{}",
        report.stdout
    );
}

/// Regression (#36): with no arguments, coverage grouped executions by text alone; a machine
/// whose definition changed between runs gave two rows with nothing saying which is current.
/// The machine is known by its name: the older text is labelled so, and the current one says
/// how many executions ran an older version.
#[test]
fn every_machine_labels_an_older_version_of_a_machine_by_its_name() {
    let sb = Sandbox::new();
    let old = r#"{"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}"#;
    let new = r#"{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B"}, "B": {"Type": "Pass", "End": true}}}"#;
    let file = sb.write("steps.asl.json", old);
    let file = file.to_str().unwrap();
    for _ in 0..3 {
        assert_eq!(sb.run(&["run", file]).code, 0);
    }
    sb.write("steps.asl.json", new);
    assert_eq!(sb.run(&["run", file]).code, 0);
    let report = sb.run(&["coverage"]);
    let rows: Vec<&str> = report.stdout.lines().skip(1).take(2).collect();
    assert!(rows[0].starts_with("steps    "), "{}", report.stdout);
    assert!(
        rows[1].starts_with("steps (older version)"),
        "{}",
        report.stdout
    );
    assert!(
        report.stdout.contains("steps: 3 execution(s) of state machine 'steps' ran another definition, not counted here"),
        "{}",
        report.stdout
    );
    // The same machine asked for by name or ARN.
    let arn = "arn:aws:states:us-east-1:123456789012:stateMachine:steps";
    for who in ["steps", arn] {
        let json = sb
            .run(&["coverage", "--state-machine", who, "--format", "json"])
            .json();
        let executions: Vec<i64> = json["machines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["executions"].as_i64().unwrap())
            .collect();
        assert_eq!(executions, [1, 3], "{who}");
    }
    sb.run(&["coverage", "--state-machine", "nope"])
        .assert_error(2, "no execution of state machine 'nope' in the database");
}
