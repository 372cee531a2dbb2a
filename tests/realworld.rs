//! `sfn-local` over `tests/corpora/realworld`: state machines and SAM templates as their authors
//! published them in AWS's workflows collection. Every file is validated clean, skipped as not
//! a state machine, or listed here with its real error and why; every state machine of every
//! SAM template is found. Also the features those files need, through the binary: YAML
//! definitions, `${Name}` substitutions, templates, folder walks, Jayway's JSONPath.

mod common;

use common::Sandbox;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Reports (by label, relative to the corpus) that keep an ERROR, the code it has, and why
/// AWS would reject it too.
const KNOWN_ERRORS: &[(&str, &str, &str)] = &[
    (
        "sfn-iot-data-analytics-dataset/statemachine/statemachine.asl.json",
        "INVALID_JSON_DESCRIPTION",
        "the file is not JSON: `\"Messages\": \"Messages.$\": \"$.Messages\"` (line 10)",
    ),
    (
        "shared-fallback-state-jsonata/statemachine/statemachine.asl.json#StateMachine",
        "SCHEMA_VALIDATION_FAILED",
        "`\"QueryLanguage\": \"JSONata\"` is written inside `States`, so it is a state (not an \
         object) and the machine stays JSONPath, where `Arguments` and `Output` are not allowed \
         (checked once, through the SAM template that names it)",
    ),
    // Real: the template's DefinitionUri names `statemachines/` but the file is in
    // `statemachine/`; `sam build` would fail the same way.
    (
        "account-vending-machine/template.yaml#AccountVendingStateMachine",
        "UNREADABLE_DEFINITION",
        "DefinitionUri names a file that is not there",
    ),
    // Real: `Description: >` is followed by a line that is not indented, which ends the
    // folded scalar; `Sample SAM Template ...` is then a key without ':'. libyaml (PyYAML,
    // CloudFormation) refuses it too. A template with a state machine that does not parse
    // fails the walk rather than being skipped.
    (
        "event-sourcing/template.yaml",
        "INVALID_JSON_DESCRIPTION",
        "not valid YAML",
    ),
];

/// Files a folder walk passes over although they are JSON or YAML, and why.
const KNOWN_SKIPS: &[(&str, &str)] = &[
    (
        "data-processing/cdk/statemachine/input.json",
        "not a state machine",
    ),
    (
        "data-processing/sam/statemachine/input.json",
        "not a state machine",
    ),
    (
        "_workflow_model/template.yaml",
        "a template with no state machine",
    ),
];

/// A report's label: its file, and `#LogicalId` for a template's state machine.
fn label(report: &Value, root: &Path) -> String {
    let file = relative(report["file"].as_str().unwrap(), root);
    match report["logicalId"].as_str() {
        Some(id) => format!("{file}#{id}"),
        None => file,
    }
}

fn relative(path: &str, root: &Path) -> String {
    path.strip_prefix(&format!("{}/", root.display()))
        .unwrap_or(path)
        .to_owned()
}

#[test]
fn every_published_definition_validates_or_has_a_real_error() {
    let root = common::realworld_dir();
    let sb = Sandbox::new();
    let dir = root.display().to_string();
    let out = sb.run(&["validate", "--format", "json", "--verbose", &dir]);
    assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
    let reports = out.json();
    let reports = reports.as_array().expect("one report per definition");
    let mut errors: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut labels = BTreeSet::new();
    let mut files = BTreeSet::new();
    for r in reports {
        let label = label(r, &root);
        files.insert(relative(r["file"].as_str().unwrap(), &root));
        labels.insert(label.clone());
        for d in r["diagnostics"].as_array().unwrap() {
            if d["severity"] == "ERROR" {
                errors
                    .entry(label.clone())
                    .or_default()
                    .insert(d["code"].as_str().unwrap().to_owned());
            }
        }
    }
    let known: BTreeMap<&str, &str> = KNOWN_ERRORS.iter().map(|(f, c, _)| (*f, *c)).collect();
    for (file, codes) in &errors {
        let Some(code) = known.get(file.as_str()) else {
            panic!("{file}: unexpected ERROR {codes:?}\n{}", out.stdout);
        };
        assert!(codes.contains(*code), "{file}: {codes:?}, expected {code}");
    }
    for (file, _, _) in KNOWN_ERRORS {
        assert!(
            errors.contains_key(*file),
            "{file} should keep its real error"
        );
    }
    // Every JSON or YAML file is either reported or skipped with its reason.
    let mut skipped = BTreeMap::new();
    for line in out.stderr.lines() {
        if let Some(rest) = line.strip_prefix("skipped ") {
            let (path, why) = rest.split_once(": ").unwrap();
            skipped.insert(relative(path, &root), why.to_owned());
        }
    }
    for (file, why) in KNOWN_SKIPS {
        let got = skipped
            .get(*file)
            .unwrap_or_else(|| panic!("{file} not skipped"));
        assert!(got.contains(why), "{file}: skipped because {got}");
    }
    for (file, why) in &skipped {
        let yaml_or_json = [".json", ".yaml", ".yml"].iter().any(|x| file.ends_with(x));
        if yaml_or_json {
            assert!(
                KNOWN_SKIPS.iter().any(|(f, _)| f == file),
                "{file} skipped unexpectedly: {why}"
            );
        }
    }
    // Nothing is passed over with a note: what cannot be read is an ERROR above.
    assert!(
        !out.stderr.lines().any(|l| l.starts_with("note: ")),
        "{}",
        out.stderr
    );
    // A definition a template names is checked once, through the template.
    assert_eq!(labels.len(), reports.len(), "a label reported twice");
    for l in &labels {
        if let Some((file, _)) = l.split_once('#') {
            assert!(!labels.contains(file), "{file} checked alone and as {l}");
        }
    }
    // Every definition file in the corpus was validated, on its own or through a template.
    for file in files_under(&root) {
        let rel = relative(&file, &root);
        let is_definition = [".asl.json", ".asl.yaml", ".asl.yml"]
            .iter()
            .any(|x| rel.ends_with(x));
        if is_definition {
            assert!(files.contains(&rel), "{rel} was not validated");
        }
    }
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p.display().to_string());
        }
    }
    out
}

/// The logical IDs of the state machines a template declares, read from its text.
fn declared_state_machines(text: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut last_resource = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        if indent == 2 && trimmed.ends_with(':') && !trimmed.starts_with('#') {
            last_resource = Some(trimmed.trim_end_matches(':').to_owned());
        }
        if trimmed == "Type: AWS::Serverless::StateMachine"
            || trimmed == "Type: AWS::StepFunctions::StateMachine"
            || trimmed == "Type: \"AWS::Serverless::StateMachine\""
            || trimmed == "Type: 'AWS::Serverless::StateMachine'"
        {
            ids.extend(last_resource.clone());
        }
    }
    ids
}

#[test]
fn every_sam_template_state_machine_is_found() {
    let root = common::realworld_dir();
    let sb = Sandbox::new();
    let mut templates = 0;
    let mut machines = 0;
    for file in files_under(&root) {
        let rel = relative(&file, &root);
        if !(rel.ends_with("template.yaml") || rel.ends_with("template.yml")) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let declared = declared_state_machines(&text);
        let unreadable = KNOWN_ERRORS
            .iter()
            .any(|(f, code, _)| *f == rel && *code == "INVALID_JSON_DESCRIPTION");
        if KNOWN_SKIPS.iter().any(|(f, _)| *f == rel) || unreadable || declared.is_empty() {
            continue;
        }
        templates += 1;
        let out = sb.run(&["validate", "--format", "json", &file]);
        assert!(out.code == 0 || out.code == 1, "{rel}: {}", out.stderr);
        let v = out.json();
        // One report comes in AWS's shape, without a file name.
        let single = !v.is_array();
        let reports: Vec<Value> = match v {
            Value::Array(items) => items,
            one => vec![one],
        };
        for id in &declared {
            machines += 1;
            let found = reports.iter().any(|r| r["logicalId"] == id.as_str())
                || (single && declared.len() == 1);
            assert!(
                found,
                "{rel}: state machine {id} not found\n{}{}",
                out.stdout, out.stderr
            );
        }
    }
    assert!(templates >= 25, "{templates} templates");
    assert!(machines >= templates, "{machines} state machines");
}

#[test]
fn yaml_definitions_run_with_substitutions_and_refuse_unresolved_ones() {
    let sb = Sandbox::new();
    sb.write(
        "greet.asl.yaml",
        "StartAt: Greet\nStates:\n  Greet:\n    Type: Pass\n    Parameters:\n      greeting: ${Greeting}\n      who.$: $.who\n    End: true\n",
    );
    let f = sb.path("greet.asl.yaml").display().to_string();
    let out = sb.run(&["validate", "--format", "json", &f]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let d = &out.json()["diagnostics"][0];
    assert_eq!(d["severity"], "WARNING");
    assert_eq!(d["code"], "UNRESOLVED_SUBSTITUTION");
    assert_eq!(d["location"], "/States/Greet/Parameters/greeting");
    let out = sb.run(&["validate", "--format", "json", "--sub", "Greeting=hi", &f]);
    assert_eq!(out.json()["diagnostics"], serde_json::json!([]));

    let out = sb.run(&["run", &f, "--input", r#"{"who": "you"}"#]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("${Greeting} has no value"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("greet.asl.yaml:6:7"), "{}", out.stderr);

    sb.write("subs.yaml", "Greeting: hello\n");
    let subs = sb.path("subs.yaml").display().to_string();
    let out = sb.run(&[
        "run",
        &f,
        "--definition-substitutions",
        &subs,
        "--input",
        r#"{"who": "you"}"#,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json(),
        serde_json::json!({"greeting": "hello", "who": "you"})
    );
}

#[test]
fn yaml_diagnostics_point_at_yaml_lines() {
    let sb = Sandbox::new();
    sb.write(
        "bad.asl.yaml",
        "StartAt: W\nStates:\n  W:\n    Type: Wait\n    Seconds: soon\n    End: true\n",
    );
    let f = sb.path("bad.asl.yaml").display().to_string();
    let out = sb.run(&["validate", "--format", "github", &f]);
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("line=5,col=5"), "{}", out.stdout);
    sb.write("broken.asl.yaml", "StartAt: [A\n");
    let f = sb.path("broken.asl.yaml").display().to_string();
    let out = sb.run(&["validate", "--format", "json", &f]);
    assert_eq!(out.code, 1);
    assert!(out.json()["diagnostics"][0]["message"]
        .as_str()
        .unwrap()
        .contains("not valid YAML"));
}

#[test]
fn templates_validate_and_run_by_logical_id() {
    let sb = Sandbox::new();
    sb.write(
        "template.yaml",
        r#"Transform: AWS::Serverless-2016-10-31
Resources:
  Fn:
    Type: AWS::Serverless::Function
  Queue:
    Type: AWS::SQS::Queue
  Inline:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionSubstitutions:
        Greeting: hi
        FnArn: !GetAtt Fn.Arn
        QueueUrl: !Ref Queue
      Definition:
        StartAt: Greet
        States:
          Greet:
            Type: Pass
            Parameters:
              greeting: ${Greeting}
              fn: ${FnArn}
              queue: ${QueueUrl}
            End: true
  FromFile:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionUri: sm/file.asl.json
      DefinitionSubstitutions:
        Fn: !GetAtt Fn.Arn
  Classic:
    Type: AWS::StepFunctions::StateMachine
    Properties:
      DefinitionString: !Sub |
        {"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": "${AWS::Region}", "Next": "Nowhere"}}}
"#,
    );
    std::fs::create_dir_all(sb.path("sm")).unwrap();
    sb.write(
        "sm/file.asl.json",
        r#"{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "${Fn}", "End": true}}}"#,
    );
    let t = sb.path("template.yaml").display().to_string();
    let out = sb.run(&["validate", "--format", "json", &t]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let v = out.json();
    let reports = v.as_array().unwrap();
    assert_eq!(reports.len(), 3);
    assert!(reports[0]["file"]
        .as_str()
        .unwrap()
        .ends_with("template.yaml"));
    assert_eq!(reports[0]["logicalId"], "Inline");
    assert_eq!(reports[0]["result"], "OK");
    assert!(reports[1]["file"]
        .as_str()
        .unwrap()
        .ends_with("sm/file.asl.json"));
    assert_eq!(reports[1]["logicalId"], "FromFile");
    assert_eq!(reports[1]["template"], t);
    assert_eq!(reports[1]["result"], "OK");
    assert_eq!(reports[1]["diagnostics"], serde_json::json!([]));
    assert!(reports[2]["file"]
        .as_str()
        .unwrap()
        .ends_with("template.yaml"));
    assert_eq!(reports[2]["logicalId"], "Classic");
    let d = &reports[2]["diagnostics"][0];
    assert_eq!(d["code"], "MISSING_TRANSITION_TARGET");
    assert_eq!(
        d["location"],
        "/Resources/Classic/Properties/DefinitionString"
    );

    let out = sb.run(&["run", "--template", &t, "--state-machine", "Inline"]);
    assert_eq!(out.code, 2);
    assert!(out
        .stderr
        .contains("${QueueUrl} has a value only CloudFormation knows"));
    // The template's own function has a local ARN (#37): only the queue needs a value.
    let out = sb.run(&[
        "run",
        "--template",
        &t,
        "--state-machine",
        "Inline",
        "--sub",
        "QueueUrl=https://q",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json(),
        serde_json::json!({"greeting": "hi", "fn": "arn:aws:lambda:us-east-1:123456789012:function:Fn", "queue": "https://q"})
    );
    let out = sb.run(&["run", "--template", &t]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("Inline, FromFile, Classic"),
        "{}",
        out.stderr
    );
}

#[test]
fn folder_walks_pick_state_machines_and_say_what_they_skipped() {
    let sb = Sandbox::new();
    let def = r#"{"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}"#;
    for dir in [
        "proj/statemachine",
        "proj/node_modules/x",
        "proj/.aws-sam",
        "proj/target",
    ] {
        std::fs::create_dir_all(sb.path(dir)).unwrap();
    }
    sb.write("proj/statemachine/a.asl.json", def);
    sb.write("proj/statemachine/plain.json", def);
    sb.write(
        "proj/statemachine/b.asl.yaml",
        "StartAt: P\nStates:\n  P:\n    Type: Pass\n    End: true\n",
    );
    sb.write("proj/statemachine/input.json", r#"{"Objects": []}"#);
    sb.write("proj/package.json", r#"{"name": "x"}"#);
    sb.write("proj/node_modules/x/bad.asl.json", "{");
    sb.write("proj/.aws-sam/bad.asl.json", "{");
    sb.write("proj/target/bad.asl.json", "{");
    let dir = sb.path("proj").display().to_string();
    let out = sb.run(&["validate", "--verbose", "--format", "json", &dir]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let files: Vec<String> = out
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["file"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(files, ["a.asl.json", "b.asl.yaml", "plain.json"]);
    for skipped in [
        "node_modules",
        ".aws-sam",
        "target",
        "package.json",
        "input.json",
    ] {
        assert!(
            out.stderr
                .lines()
                .any(|l| l.starts_with("skipped ") && l.contains(skipped)),
            "{skipped}: {}",
            out.stderr
        );
    }
}

#[test]
fn jayway_paths_aws_runs_are_evaluated() {
    let sb = Sandbox::new();
    sb.write(
        "jayway.asl.json",
        r#"{"StartAt": "P", "States": {"P": {"Type": "Pass", "Parameters": {
            "first.$": "$.[0]",
            "positive.$": "$.[?(@.OU > 0)]",
            "pairs.$": "$.[*].['bucket', 'key']"
        }, "End": true}}}"#,
    );
    let f = sb.path("jayway.asl.json").display().to_string();
    let out = sb.run(&["validate", &f]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let out = sb.run(&[
        "run",
        &f,
        "--input",
        r#"[{"OU": 0, "bucket": "b0", "key": "k0"}, {"OU": 2, "bucket": "b1", "key": "k1"}]"#,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json(),
        serde_json::json!({
            "first": {"OU": 0, "bucket": "b0", "key": "k0"},
            "positive": [{"OU": 2, "bucket": "b1", "key": "k1"}],
            "pairs": [{"bucket": "b0", "key": "k0"}, {"bucket": "b1", "key": "k1"}]
        })
    );
}

/// Regression: the SAM template of text-processing-sqs-express holds a multi-line
/// double-quoted scalar whose last line is indented only as far as its key. libyaml (SAM,
/// CloudFormation) reads it; so does sfn-local, and the template's state machine validates.
#[test]
fn a_template_with_a_quoted_scalar_indented_as_far_as_its_key_is_read() {
    let root = common::realworld_dir();
    let sb = Sandbox::new();
    let file = root.join("text-processing-sqs-express/template.yaml");
    let file = file.display().to_string();
    let out = sb.run(&["validate", "--format", "json", "--verbose", &file]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let report = out.json();
    assert_eq!(report["result"], "OK", "{report}");
    assert!(!out.stderr.contains("not valid YAML"), "{}", out.stderr);
}

/// `serve --template` creates every state machine of every published template that validates
/// (placeholders given stand-ins), one `created` line per machine before it listens; a template
/// with a real error (above) stops it before it listens, non-zero.
#[test]
fn serve_creates_every_state_machine_of_every_published_template() {
    use std::io::{BufRead, BufReader};
    let root = common::realworld_dir();
    let sb = Sandbox::new();
    let out = sb.run(&["validate", "--format", "json", &root.display().to_string()]);
    let mut machines: BTreeMap<String, (usize, bool)> = BTreeMap::new();
    // A machine whose definition is a file of its own may have a second report: what its
    // template gets wrong, in the template (same logical ID). Count each machine once.
    let mut seen = std::collections::BTreeSet::new();
    for r in out.json().as_array().expect("reports") {
        let Some(id) = r["logicalId"].as_str() else {
            continue;
        };
        let template = r["template"].as_str().or(r["file"].as_str()).unwrap();
        let failed = r["result"] == "FAIL";
        let entry = machines.entry(template.to_owned()).or_default();
        entry.0 += usize::from(seen.insert((template.to_owned(), id.to_owned())));
        entry.1 |= failed;
    }
    // The template that does not parse has no report of a machine, only of the file.
    machines.insert(
        root.join("event-sourcing/template.yaml")
            .display()
            .to_string(),
        (0, true),
    );
    assert!(machines.len() > 30, "{machines:?}");
    for (i, (template, (count, failed))) in machines.iter().enumerate() {
        let db = sb.path(&format!("{i}.db"));
        let mut server = sb
            .command()
            .env("SFN_LOCAL_DB", &db)
            .args(["serve", "--port", "0", "--template", template])
            .spawn()
            .expect("spawn serve");
        let mut created = 0;
        let mut log = String::new();
        let mut listening = false;
        let stderr = BufReader::new(server.stderr.take().unwrap());
        for line in stderr.lines().map_while(Result::ok) {
            log.push_str(&line);
            log.push('\n');
            created += usize::from(line.ends_with(": created"));
            if line.contains("listening on") {
                listening = true;
                break;
            }
        }
        if *failed {
            let status = server.wait().unwrap();
            assert!(!listening && !status.success(), "{template}: {log}");
            assert!(log.contains("error"), "{template}: {log}");
        } else {
            common::kill(&mut server);
            assert!(listening, "{template}: {log}");
            assert_eq!(created, *count, "{template}: {log}");
        }
    }
}
