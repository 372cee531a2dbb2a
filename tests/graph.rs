//! `sfn-local graph`: golden Mermaid and DOT for every bundled definition, SVG structure (every
//! state once, every edge, no overlapping boxes, also for a 60-state machine), and an execution's
//! path coloured from its stored history.

mod common;

use common::{state_tag, Sandbox};
use std::path::{Path, PathBuf};

fn bundled() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("definitions");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".asl.json"))
        .collect();
    out.sort();
    out
}

fn stem(p: &Path) -> String {
    p.file_name()
        .unwrap()
        .to_string_lossy()
        .trim_end_matches(".asl.json")
        .to_owned()
}

#[test]
fn mermaid_and_dot_of_every_bundled_definition() {
    let sandbox = Sandbox::new();
    let files = bundled();
    assert!(files.len() >= 4);
    for file in files {
        for format in ["mermaid", "dot"] {
            let out = sandbox.run(&["graph", file.to_str().unwrap(), "--format", format]);
            assert_eq!(out.code, 0, "{}", out.stderr);
            insta::assert_snapshot!(format!("{}.{format}", stem(&file)), out.stdout);
        }
    }
}

/// A state's or marker's box in an SVG: (id, class, name, x, y, w, h).
#[derive(Debug, Clone)]
struct Shape {
    id: String,
    class: String,
    name: String,
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let tag = format!(" {tag}");
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = tag[start..].find('"')? + start;
    Some(tag[start..end].to_owned())
}

fn shapes(svg: &str) -> Vec<Shape> {
    svg.split("<g ")
        .skip(1)
        .filter_map(|g| {
            let tag = &g[..g.find('>')?];
            let class = attr(tag, "class")?;
            let b: Vec<f64> = attr(tag, "data-box")?
                .split(' ')
                .map(|v| v.parse().unwrap())
                .collect();
            Some(Shape {
                id: attr(tag, "id")?,
                class,
                name: attr(tag, "data-name")?,
                x: b[0],
                y: b[1],
                w: b[2],
                h: b[3],
            })
        })
        .collect()
}

fn edges(svg: &str) -> Vec<(String, String, String)> {
    svg.split("<g ")
        .skip(1)
        .filter_map(|g| {
            let tag = &g[..g.find('>')?];
            Some((
                attr(tag, "class")?,
                attr(tag, "data-from")?,
                attr(tag, "data-to")?,
            ))
        })
        .collect()
}

fn state_names(definition: &serde_json::Value, out: &mut Vec<String>) {
    if let Some(states) = definition["States"].as_object() {
        for (name, state) in states {
            out.push(name.clone());
            for branch in state["Branches"].as_array().into_iter().flatten() {
                state_names(branch, out);
            }
            for key in ["ItemProcessor", "Iterator"] {
                if state[key].is_object() {
                    state_names(&state[key], out);
                }
            }
        }
    }
}

/// Every state drawn exactly once, and no two boxes overlap unless one is a Parallel or Map
/// holding the other.
fn check_structure(definition: &str, svg: &str) {
    let value: serde_json::Value = serde_json::from_str(definition).unwrap();
    let mut names = Vec::new();
    state_names(&value, &mut names);
    let shapes = shapes(svg);
    let states: Vec<&Shape> = shapes
        .iter()
        .filter(|s| s.class.starts_with("state"))
        .collect();
    for name in &names {
        let n = states.iter().filter(|s| &s.name == name).count();
        assert_eq!(n, 1, "state {name} drawn {n} times");
    }
    assert_eq!(states.len(), names.len());
    for (i, a) in shapes.iter().enumerate() {
        for b in &shapes[i + 1..] {
            let disjoint =
                a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y;
            if disjoint {
                continue;
            }
            let contains = |o: &Shape, i: &Shape| {
                o.class.contains("compound")
                    && o.x <= i.x
                    && o.y <= i.y
                    && i.x + i.w <= o.x + o.w
                    && i.y + i.h <= o.y + o.h
            };
            assert!(
                contains(a, b) || contains(b, a),
                "boxes overlap: {a:?} and {b:?}"
            );
        }
    }
}

#[test]
fn svg_of_every_bundled_definition_has_every_state_once_and_no_overlaps() {
    let sandbox = Sandbox::new();
    for file in bundled() {
        let out = sandbox.run(&["graph", file.to_str().unwrap(), "--format", "svg"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.starts_with("<svg"));
        check_structure(&std::fs::read_to_string(&file).unwrap(), &out.stdout);
    }
}

#[test]
fn svg_edges_follow_next_choice_default_and_catch() {
    let sandbox = Sandbox::new();
    let definition = r#"{
      "StartAt": "Pick",
      "States": {
        "Pick": {"Type": "Choice", "Choices": [
            {"Variable": "$.n", "NumericGreaterThan": 10, "Next": "Big"}
          ], "Default": "Small"},
        "Big": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Next": "Done",
          "Retry": [{"ErrorEquals": ["States.TaskFailed"], "MaxAttempts": 2}],
          "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Oops"}]},
        "Small": {"Type": "Wait", "Seconds": 1, "Next": "Done"},
        "Oops": {"Type": "Fail", "Error": "E"},
        "Done": {"Type": "Succeed"}
      }
    }"#;
    let file = sandbox.write("m.asl.json", definition);
    let svg_file = sandbox.path("m.svg");
    let out = sandbox.run(&[
        "graph",
        file.to_str().unwrap(),
        "-o",
        svg_file.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "");
    let svg = std::fs::read_to_string(sandbox.path("m.svg")).unwrap();
    check_structure(definition, &svg);
    let shapes = shapes(&svg);
    let id = |name: &str| shapes.iter().find(|s| s.name == name).unwrap().id.clone();
    let edges = edges(&svg);
    let has = |from: &str, to: &str, class: &str| {
        edges
            .iter()
            .any(|(c, f, t)| c == class && *f == id(from) && *t == id(to))
    };
    assert!(has("Pick", "Big", "edge"));
    assert!(has("Pick", "Small", "edge"));
    assert!(has("Big", "Done", "edge"));
    assert!(has("Big", "Oops", "edge catch"));
    assert!(has("Small", "Done", "edge"));
    assert!(svg.contains("$.n &gt; 10"), "the rule labels its edge");
    assert!(svg.contains("retry States.TaskFailed ×2"));
    assert!(
        svg.contains(">States.ALL</text>"),
        "the Catch edge names its errors"
    );
}

#[test]
fn svg_of_a_sixty_state_machine_keeps_boxes_apart() {
    // A chain of Choice states, each with a side Task and a loop back, Parallels every so often.
    let mut states = serde_json::Map::new();
    for i in 0..20 {
        let next = if i == 19 {
            "Done".to_owned()
        } else {
            format!("C{}", i + 1)
        };
        states.insert(
            format!("C{i}"),
            serde_json::json!({"Type": "Choice", "Choices": [
                {"Variable": "$.x", "StringEquals": format!("v{i}"), "Next": format!("T{i}")}
            ], "Default": next}),
        );
        states.insert(
            format!("T{i}"),
            serde_json::json!({"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                "Next": format!("P{i}"),
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": format!("C{i}")}]}),
        );
        states.insert(
            format!("P{i}"),
            serde_json::json!({"Type": "Pass", "Next": next}),
        );
    }
    states.insert("Done".into(), serde_json::json!({"Type": "Succeed"}));
    let definition = serde_json::json!({"StartAt": "C0", "States": states}).to_string();
    let sandbox = Sandbox::new();
    let file = sandbox.write("big.asl.json", &definition);
    let out = sandbox.run(&["graph", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    check_structure(&definition, &out.stdout);
}

/// `n` Tasks in a chain, every one catching into one Fail state: each Catch edge crosses every
/// layer below its Task, so the edges cross about n²/2 layers in all.
fn all_catch_into_one(n: usize) -> String {
    let mut states = serde_json::Map::new();
    for i in 0..n {
        let next = if i + 1 == n {
            "Done".to_owned()
        } else {
            format!("S{}", i + 1)
        };
        states.insert(
            format!("S{i}"),
            serde_json::json!({"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                "Next": next, "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Oops"}]}),
        );
    }
    states.insert("Done".into(), serde_json::json!({"Type": "Succeed"}));
    states.insert("Oops".into(), serde_json::json!({"Type": "Fail"}));
    serde_json::json!({"StartAt": "S0", "States": states}).to_string()
}

/// Regression (#51): the layered layout gave each layer an edge crosses an item of its own, so
/// 200 Tasks all catching into one handler took 50 s and 400 far longer. Past 20,000 such
/// items the edges into one state share theirs (one trunk), and past 500,000 crossed layers the
/// picture is a note saying to use DOT or Mermaid; both come back at once.
#[test]
fn many_states_catching_into_one_handler_are_drawn_or_declined_at_once() {
    let sandbox = Sandbox::new();
    let shared = all_catch_into_one(250);
    let file = sandbox.write("shared.asl.json", &shared);
    let out = sandbox.run(&["graph", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    check_structure(&shared, &out.stdout);
    // Its PNG would be larger than a PNG may be: said, exit 1, no pixmap of gigabytes.
    let png = sandbox.path("shared.png");
    let out = sandbox.run(&["graph", file.to_str().unwrap(), "-o", png.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("too large for a PNG"), "{}", out.stderr);
    let file = sandbox.write("huge.asl.json", &all_catch_into_one(1200));
    let out = sandbox.run(&["graph", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(
            "too many to lay out (sfn-local's limit); graph --format dot or mermaid draws it"
        ),
        "{}",
        &out.stdout[..out.stdout.len().min(400)]
    );
    let png = sandbox.path("huge.png");
    let out = sandbox.run(&["graph", file.to_str().unwrap(), "-o", png.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn graph_of_an_invalid_definition_says_why_and_exits_2() {
    let sandbox = Sandbox::new();
    let file = sandbox.write("bad.asl.json", r#"{"StartAt": "Nowhere", "States": {}}"#);
    let out = sandbox.run(&["graph", file.to_str().unwrap()]);
    out.assert_error(2, "not a valid state machine");
    assert_eq!(out.stdout, "");
}

#[test]
fn graph_of_an_unknown_execution_is_execution_does_not_exist() {
    let sandbox = Sandbox::new();
    // No database yet, then a database without that execution: both are AWS's error, with
    // the exit status every command gives it.
    let out = sandbox.run(&["graph", "--execution-arn", "nope"]);
    out.assert_error(15, "ExecutionDoesNotExist");
    let file = sandbox.write(
        "m.asl.json",
        r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#,
    );
    assert_eq!(sandbox.run(&["run", file.to_str().unwrap()]).code, 0);
    let out = sandbox.run(&["graph", "--execution-arn", "nope"]);
    out.assert_error(15, "ExecutionDoesNotExist");
}

#[test]
fn an_execution_colours_its_path() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&[
        "run",
        "definitions/order-pipeline.asl.json",
        "--input-file",
        "fixtures/order.json",
        "--name",
        "order-1",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = sandbox.run(&["graph", "--execution-arn", "order-1"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let svg = out.stdout;
    for name in ["Validate", "PriceItems", "Line", "Ship", "Invoice", "Label"] {
        let (tag, _) = state_tag(&svg, name);
        assert!(tag.contains(" succeeded\""), "{name}: {tag}");
    }
    let (tag, _) = state_tag(&svg, "Rejected");
    assert!(tag.contains(" not-entered\""), "{tag}");
    let items =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/order.json"))
            .unwrap();
    let count = serde_json::from_str::<serde_json::Value>(&items).unwrap()["items"]
        .as_array()
        .unwrap()
        .len();
    let (_, title) = state_tag(&svg, "PriceItems");
    assert!(
        title.contains(&format!(
            "iterations: {count} started, {count} succeeded, 0 failed"
        )),
        "{title}"
    );
    assert!(title.contains("time in state"), "{title}");
    let (_, title) = state_tag(&svg, "Line");
    assert!(title.contains(&format!("entered ×{count}")), "{title}");
    // Mermaid and DOT carry the same colours.
    let mermaid = sandbox.run(&["graph", "--execution-arn", "order-1", "--format", "mermaid"]);
    assert!(
        mermaid.stdout.contains("class n0 succeeded"),
        "{}",
        mermaid.stdout
    );
    assert!(mermaid.stdout.contains("not_entered"), "{}", mermaid.stdout);
    let dot = sandbox.run(&["graph", "--execution-arn", "order-1", "--format", "dot"]);
    assert!(
        dot.stdout.contains("fillcolor=\"#e6f4ea\""),
        "{}",
        dot.stdout
    );
}

#[test]
fn retried_caught_and_failed_states_say_so() {
    let sandbox = Sandbox::new();
    let definition = r#"{
      "StartAt": "Flaky",
      "States": {
        "Flaky": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Next": "Done",
          "Retry": [{"ErrorEquals": ["States.TaskFailed"], "MaxAttempts": 2, "IntervalSeconds": 1}],
          "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Recover"}]},
        "Recover": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": true},
        "Done": {"Type": "Succeed"}
      }
    }"#;
    let file = sandbox.write("flaky.asl.json", definition);
    let run = sandbox.run(&[
        "run",
        file.to_str().unwrap(),
        "--name",
        "flaky-1",
        "--time-scale",
        "0",
        "--task",
        "Flaky=false",
        "--task",
        "Recover=false",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let svg = sandbox.run(&["graph", "--execution-arn", "flaky-1"]).stdout;
    let (tag, title) = state_tag(&svg, "Flaky");
    assert!(tag.contains(" caught\""), "{tag}");
    assert!(title.contains("retried ×2"), "{title}");
    assert!(
        title.contains("caught States.TaskFailed → Recover"),
        "{title}"
    );
    let (tag, title) = state_tag(&svg, "Recover");
    assert!(tag.contains(" failed\""), "{tag}");
    assert!(title.contains("States.TaskFailed"), "{title}");
    let (tag, _) = state_tag(&svg, "Done");
    assert!(tag.contains(" not-entered\""), "{tag}");
}

#[test]
fn a_task_waiting_for_its_token_is_waiting_with_its_deadline() {
    let sandbox = Sandbox::new();
    let definition = r#"{
      "StartAt": "Approve",
      "States": {
        "Approve": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
          "Parameters": {"token.$": "$$.Task.Token"}, "TimeoutSeconds": 3600, "End": true}
      }
    }"#;
    let file = sandbox.write("approve.asl.json", definition);
    let mut child = sandbox.spawn(&["run", file.to_str().unwrap(), "--name", "approve-1"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let token = loop {
        let listed = sandbox.run(&[
            "list-tasks",
            "--execution-arn",
            "approve-1",
            "--format",
            "json",
        ]);
        if listed.code == 0 {
            if let Some(t) = listed.json()["tasks"][0]["taskToken"].as_str() {
                break t.to_owned();
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no task token appeared"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let svg = sandbox
        .run(&["graph", "--execution-arn", "approve-1"])
        .stdout;
    let (tag, title) = state_tag(&svg, "Approve");
    assert!(tag.contains(" waiting\""), "{tag}");
    assert!(
        title.contains("waiting for a token; deadline in"),
        "{title}"
    );
    let answer = sandbox.send_success(&token, "{}");
    assert_eq!(answer.code, 0, "{}", answer.stderr);
    let out = child.wait().unwrap();
    assert!(out.success());
    let svg = sandbox
        .run(&["graph", "--execution-arn", "approve-1"])
        .stdout;
    let (tag, _) = state_tag(&svg, "Approve");
    assert!(tag.contains(" succeeded\""), "{tag}");
}

#[test]
fn a_yaml_definition_is_drawn_like_its_json() {
    let sandbox = Sandbox::new();
    let yaml = sandbox.write(
        "order.asl.yaml",
        "StartAt: Check\nStates:\n  Check:\n    Type: Pass\n    Next: Done\n  Done:\n    Type: Succeed\n",
    );
    let json = sandbox.write(
        "order.asl.json",
        r#"{"StartAt":"Check","States":{"Check":{"Type":"Pass","Next":"Done"},"Done":{"Type":"Succeed"}}}"#,
    );
    let from_yaml = sandbox.run(&["graph", yaml.to_str().unwrap(), "--format", "mermaid"]);
    assert_eq!(from_yaml.code, 0, "{}", from_yaml.stderr);
    let from_json = sandbox.run(&["graph", json.to_str().unwrap(), "--format", "mermaid"]);
    assert_eq!(from_yaml.stdout, from_json.stdout);
    assert!(from_yaml.stdout.contains("Check"), "{}", from_yaml.stdout);
}

/// An axis-aligned rectangle `x y w h` from a `data-box`.
type Area = [f64; 4];

fn area(text: &str) -> Area {
    let v: Vec<f64> = text.split(' ').map(|v| v.parse().unwrap()).collect();
    [v[0], v[1], v[2], v[3]]
}

/// Whether two areas share more than an edge (half a pixel of slack).
fn meet(a: Area, b: Area) -> bool {
    const SLACK: f64 = 0.5;
    a[0] + a[2] > b[0] + SLACK
        && b[0] + b[2] > a[0] + SLACK
        && a[1] + a[3] > b[1] + SLACK
        && b[1] + b[3] > a[1] + SLACK
}

fn contains(outer: Area, inner: Area) -> bool {
    outer[0] <= inner[0] + 0.05
        && outer[1] <= inner[1] + 0.05
        && outer[0] + outer[2] >= inner[0] + inner[2] - 0.05
        && outer[1] + outer[3] >= inner[1] + inner[3] - 0.05
}

/// An edge as drawn: from, to, its polyline and its label's area.
type DrawnEdge = (String, String, Vec<(f64, f64)>, Option<Area>);

/// An SVG's geometry as drawn: state boxes by id, each edge's ends, polyline and label, and
/// the cluster labels.
struct Drawn {
    size: (f64, f64),
    boxes: std::collections::HashMap<String, (Area, bool)>,
    edges: Vec<DrawnEdge>,
    cluster_labels: Vec<Area>,
}

fn drawn(svg: &str) -> Drawn {
    let view = attr(&svg[..svg.find('>').unwrap()], "viewBox").unwrap();
    let v: Vec<f64> = view.split(' ').map(|x| x.parse().unwrap()).collect();
    let mut out = Drawn {
        size: (v[2], v[3]),
        boxes: Default::default(),
        edges: Vec::new(),
        cluster_labels: Vec::new(),
    };
    for s in shapes(svg) {
        let compound = s.class.contains("compound");
        out.boxes.insert(s.id, ([s.x, s.y, s.w, s.h], compound));
    }
    for g in svg.split("<g ").skip(1) {
        let tag = &g[..g.find('>').unwrap()];
        let (Some(from), Some(to)) = (attr(tag, "data-from"), attr(tag, "data-to")) else {
            continue;
        };
        let body = &g[..g.find("</g>").unwrap()];
        let d = attr(&body[body.find("<path").unwrap()..], "d").unwrap();
        // Every point of the path data, a curve's control points too: a curve lies inside
        // their hull, so the segments between them bound it.
        let points = d
            .split(' ')
            .map(|p| {
                let p = p.trim_start_matches(char::is_alphabetic);
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        let label = body
            .find("<text")
            .and_then(|at| attr(&body[at..], "data-box"))
            .map(|b| area(&b));
        out.edges.push((from, to, points, label));
    }
    for part in svg.split("class=\"cluster-label\"").skip(1) {
        out.cluster_labels
            .push(area(&attr(part, "data-box").unwrap()));
    }
    out
}

/// The picture's collisions: an edge through a state box other than its ends (and the boxes
/// holding them), a label over a box or another label, anything outside the viewBox.
fn collisions(svg: &str) -> Vec<String> {
    let d = drawn(svg);
    let mut found = Vec::new();
    let inside = |a: Area| {
        a[0] >= -0.05
            && a[1] >= -0.05
            && a[0] + a[2] <= d.size.0 + 0.05
            && a[1] + a[3] <= d.size.1 + 0.05
    };
    for (id, (b, _)) in &d.boxes {
        if !inside(*b) {
            found.push(format!("box {id} outside the picture"));
        }
    }
    let mut labels: Vec<(String, Area)> = Vec::new();
    for (from, to, points, label) in &d.edges {
        let ends = [d.boxes[from].0, d.boxes[to].0];
        // A box holding an end holds the edge (a Parallel's box around its branch).
        let obstacle = |b: Area| !ends.iter().any(|e| contains(b, *e));
        for pair in points.windows(2) {
            let ((x1, y1), (x2, y2)) = (pair[0], pair[1]);
            let seg = [x1.min(x2), y1.min(y2), (x1 - x2).abs(), (y1 - y2).abs()];
            if !inside(seg) {
                found.push(format!("edge {from}->{to} leaves the picture"));
            }
            for (id, (b, _)) in &d.boxes {
                // A line is a rectangle of no width: it meets a box's inside.
                let line = [seg[0] - 0.01, seg[1] - 0.01, seg[2] + 0.02, seg[3] + 0.02];
                if obstacle(*b) && meet(line, *b) {
                    found.push(format!("edge {from}->{to} crosses {id}"));
                }
            }
        }
        if let Some(l) = label {
            if !inside(*l) {
                found.push(format!("label of {from}->{to} outside the picture"));
            }
            for (id, (b, _)) in &d.boxes {
                if obstacle(*b) && meet(*l, *b) {
                    found.push(format!("label of {from}->{to} over {id}"));
                }
            }
            labels.push((format!("{from}->{to}"), *l));
        }
    }
    for l in &d.cluster_labels {
        for (id, (b, compound)) in &d.boxes {
            if !(*compound && contains(*b, *l)) && meet(*l, *b) {
                found.push(format!("cluster label {l:?} over {id}"));
            }
        }
        labels.push(("cluster label".into(), *l));
    }
    for (i, (a, la)) in labels.iter().enumerate() {
        for (b, lb) in &labels[i + 1..] {
            if meet(*la, *lb) {
                found.push(format!("labels of {a} and {b} overlap"));
            }
        }
    }
    found
}

/// Regression (#36): the SVG of a real CDK machine drew a Choice's Default edge through
/// another state's box with its label hidden under it, and cut an edge label off at the
/// picture's right edge. Every bundled and every published definition is drawn and checked.
#[test]
fn no_svg_of_a_bundled_or_published_definition_has_a_collision() {
    let sandbox = Sandbox::new();
    let mut files = bundled();
    files.extend(common::definition_files(&common::realworld_dir()));
    let mut drawn = 0;
    let mut problems = Vec::new();
    for file in &files {
        for args in common::graph_machines(&sandbox, file) {
            let mut command: Vec<&str> = vec!["graph"];
            command.extend(args.iter().map(String::as_str));
            let out = sandbox.run(&command);
            assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
            drawn += 1;
            for p in collisions(&out.stdout) {
                problems.push(format!("{}: {p}", args.join(" ")));
            }
        }
    }
    assert!(drawn >= 60, "only {drawn} machines drawn");
    assert!(
        problems.is_empty(),
        "{} collisions:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_collision_check_sees_an_edge_through_a_box_and_labels_that_overlap() {
    let svg = r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 200">
<g class="edge" data-from="a" data-to="c"><path d="M50.0,20.0 L50.0,180.0"/><text data-box="40.0 60.0 30.0 12.0">x</text></g>
<g class="edge" data-from="a" data-to="b"><path d="M50.0,20.0 L250.0,20.0"/><text data-box="45.0 65.0 30.0 12.0">y</text></g>
<g class="state task" id="a" data-name="A" data-box="10.0 0.0 80.0 20.0"></g>
<g class="state task" id="b" data-name="B" data-box="10.0 90.0 80.0 20.0"></g>
<g class="state task" id="c" data-name="C" data-box="10.0 180.0 80.0 20.0"></g>
</svg>"#;
    let found = collisions(svg);
    for expected in [
        "edge a->c crosses b",
        "edge a->b leaves the picture",
        "labels of a->c and a->b overlap",
    ] {
        assert!(found.iter().any(|f| f == expected), "{expected}: {found:?}");
    }
}

/// #51: `graph --format png` (or `--output x.png`) writes the SVG's picture as a PNG of the
/// same size, fonts compiled in; without a file, the bytes go to a redirected stdout.
#[test]
fn png_of_a_definition_is_the_svg_rasterised() {
    let sandbox = Sandbox::new();
    let definition =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("definitions/order-pipeline.asl.json");
    let definition = definition.to_str().unwrap();
    let svg = sandbox.run(&["graph", definition]);
    assert_eq!(svg.code, 0, "{}", svg.stderr);
    let by_name = sandbox.path("order.png");
    let out = sandbox.run(&["graph", definition, "--output", by_name.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let png = std::fs::read(&by_name).unwrap();
    assert_eq!(common::png_size(&png), common::svg_size(&svg.stdout));
    let piped = sandbox
        .command()
        .args(["graph", definition, "--format", "png"])
        .output()
        .unwrap();
    assert!(piped.status.success());
    assert_eq!(
        piped.stdout, png,
        "the same picture by --format and by the file's name"
    );
    // An explicit format wins over the file's name.
    let forced = sandbox.path("really-svg.png");
    sandbox.run(&[
        "graph",
        definition,
        "--format",
        "svg",
        "-o",
        forced.to_str().unwrap(),
    ]);
    assert!(std::fs::read_to_string(&forced)
        .unwrap()
        .starts_with("<svg"));
}
