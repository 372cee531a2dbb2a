//! SAM and CloudFormation templates as `validate` reads them (#30): nothing unreadable passes,
//! in any output format; annotations and JSON reports name real files with the logical ID
//! beside them; a definition a template names is checked once, in the template's context.

mod common;

use common::Sandbox;
use serde_json::Value;

const FORMATS: [&str; 3] = ["text", "json", "github"];

fn mkdir(sb: &Sandbox, dir: &str) {
    std::fs::create_dir_all(sb.path(dir)).unwrap();
}

/// Asserts that `validate ARGS` fails (exit 1) in every output format, and returns the JSON.
fn fails_in_every_format(sb: &Sandbox, args: &[&str]) -> Value {
    let mut json = Value::Null;
    for format in FORMATS {
        let mut all = vec!["validate", "--format", format];
        all.extend_from_slice(args);
        let out = sb.run_in_sandbox(&all);
        assert_eq!(
            out.code, 1,
            "--format {format}: {}\n{}",
            out.stdout, out.stderr
        );
        match format {
            "json" => json = out.json(),
            "github" => assert!(out.stdout.starts_with("::error "), "{}", out.stdout),
            _ => assert!(out.stdout.contains("error"), "{}", out.stdout),
        }
    }
    json
}

const ORDER: &str = r#"{
  "StartAt": "Charge",
  "States": {
    "Charge": {"Type": "Task", "Resource": "${ChargeFunctionArn}", "End": true}
  }
}
"#;

const SAM: &str = "Transform: AWS::Serverless-2016-10-31
Resources:
  ChargeFunction:
    Type: AWS::Serverless::Function
  OrderStateMachine:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionUri: statemachine/order.asl.json
      DefinitionSubstitutions:
        ChargeFunctionArn: !GetAtt ChargeFunction.Arn
";

/// Regression (#30): a `DefinitionUri` naming a missing file printed a note and passed (exit
/// 0, `[]` in JSON, nothing for GitHub), so a renamed `.asl.json` passed CI.
#[test]
fn a_missing_definition_uri_fails_in_every_format() {
    let sb = Sandbox::new();
    sb.write("template.yaml", SAM);
    let json = fails_in_every_format(&sb, &["template.yaml"]);
    assert_eq!(json["result"], "FAIL", "{json}");
    let d = &json["diagnostics"][0];
    assert_eq!(d["code"], "UNREADABLE_DEFINITION");
    assert_eq!(
        d["location"],
        "/Resources/OrderStateMachine/Properties/DefinitionUri"
    );
    let message = d["message"].as_str().unwrap();
    assert!(
        message.contains("statemachine/order.asl.json") && message.contains("No such file"),
        "{message}"
    );
    // Only what is wrong: not the unrelated size limit of a definition.
    assert!(!message.contains("at most"), "{message}");

    let out = sb.run_in_sandbox(&["validate", "--format", "github", "template.yaml"]);
    assert_eq!(
        out.stdout
            .lines()
            .next()
            .unwrap()
            .split("::")
            .nth(1)
            .unwrap(),
        "error file=template.yaml,line=8,col=7,title=UNREADABLE_DEFINITION in OrderStateMachine",
        "{}",
        out.stdout
    );
    // A folder walk fails the same way.
    let walk = fails_in_every_format(&sb, &["."]);
    assert_eq!(walk[0]["logicalId"], "OrderStateMachine", "{walk}");
}

/// Regression (#37): a SAM `DefinitionUri` given as an S3 location is valid SAM, but
/// `validate` failed it (UNREADABLE_DEFINITION), turning a valid project's CI gate red. It is
/// a warning that it is not checked; `--strict` makes every warning an error.
#[test]
fn an_s3_definition_uri_is_a_warning_and_strict_fails_it() {
    let sb = Sandbox::new();
    sb.write(
        "template.yaml",
        "Resources:
  InS3:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionUri: s3://bucket/order.asl.json
  InS3Object:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionUri: {Bucket: b, Key: k}
",
    );
    let out = sb.run_in_sandbox(&["validate", "--format", "json", "template.yaml"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let json = out.json();
    let reports = json.as_array().unwrap();
    assert_eq!(reports.len(), 2, "{json}");
    for r in reports {
        let d = &r["diagnostics"][0];
        assert_eq!(d["severity"], "WARNING", "{r}");
        assert_eq!(d["code"], "NOT_CHECKED", "{r}");
        assert!(
            d["message"]
                .as_str()
                .unwrap()
                .contains("not checked: the definition is in S3"),
            "{r}"
        );
    }
    let strict = fails_in_every_format(&sb, &["--strict", "template.yaml"]);
    assert_eq!(strict[0]["diagnostics"][0]["severity"], "ERROR", "{strict}");
    // run cannot run what it cannot read.
    let out = sb.run_in_sandbox(&[
        "run",
        "--template",
        "template.yaml",
        "--state-machine",
        "InS3",
    ]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("in S3"), "{}", out.stderr);
}

#[test]
fn a_state_machine_without_a_definition_fails() {
    let sb = Sandbox::new();
    sb.write(
        "template.yaml",
        "Resources:
  Nothing:
    Type: AWS::StepFunctions::StateMachine
    Properties:
      RoleArn: arn:aws:iam::123456789012:role/r
",
    );
    let json = fails_in_every_format(&sb, &["template.yaml"]);
    assert_eq!(
        json["diagnostics"][0]["code"], "UNREADABLE_DEFINITION",
        "{json}"
    );
}

/// Regression (#37): `${ShipingQueueUrl}` where DefinitionSubstitutions gives
/// `ShippingQueueUrl` passed with a warning and exit 0, its hint suggesting
/// `--sub ShipingQueueUrl=` (the wrong fix), and the unused `ShippingQueueUrl` went unmentioned.
#[test]
fn a_misspelt_placeholder_is_an_error_with_did_you_mean_and_the_unused_value_a_warning() {
    let sb = Sandbox::new();
    sb.write(
        "template.yaml",
        r#"Resources:
  Orders:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionSubstitutions:
        ShippingQueueUrl: https://sqs.us-east-1.amazonaws.com/123456789012/ship
      Definition:
        StartAt: Ship
        States:
          Ship:
            Type: Task
            Resource: arn:aws:states:::sqs:sendMessage
            Parameters:
              QueueUrl: ${ShipingQueueUrl}
              MessageBody.$: $
            End: true
"#,
    );
    let json = fails_in_every_format(&sb, &["template.yaml"]);
    let diagnostics = json["diagnostics"].as_array().unwrap();
    let typo = diagnostics
        .iter()
        .find(|d| d["code"] == "UNRESOLVED_SUBSTITUTION")
        .expect("the misspelt placeholder");
    assert_eq!(typo["severity"], "ERROR", "{json}");
    let message = typo["message"].as_str().unwrap();
    assert!(
        message.contains("did you mean ${ShippingQueueUrl}"),
        "{message}"
    );
    assert!(!message.contains("--sub ShipingQueueUrl"), "{message}");
    let unused = diagnostics
        .iter()
        .find(|d| d["code"] == "UNUSED_SUBSTITUTION")
        .expect("the unused substitution");
    assert_eq!(unused["severity"], "WARNING", "{json}");
    assert_eq!(
        unused["location"],
        "/Resources/Orders/Properties/DefinitionSubstitutions/ShippingQueueUrl"
    );
}

/// Regression (#37): `!Sub "${ChargeFunctoin.Arn}"` in an inline `Definition` passed, though
/// CloudFormation rejects the template (an unresolved resource dependency).
#[test]
fn an_inline_sub_of_a_missing_resource_is_an_error() {
    let sb = Sandbox::new();
    sb.write(
        "template.yaml",
        r#"Transform: AWS::Serverless-2016-10-31
Resources:
  ChargeFunction:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: charge/, Handler: app.handler, Runtime: python3.12}
  Orders:
    Type: AWS::Serverless::StateMachine
    Properties:
      Definition:
        StartAt: Charge
        States:
          Charge:
            Type: Task
            Resource: !Sub "${ChargeFunctoin.Arn}"
            End: true
"#,
    );
    let json = fails_in_every_format(&sb, &["template.yaml"]);
    let d = &json["diagnostics"][0];
    assert_eq!(d["code"], "UNRESOLVED_REFERENCE", "{json}");
    assert_eq!(
        d["location"],
        "/Resources/Orders/Properties/Definition/States/Charge/Resource"
    );
    let message = d["message"].as_str().unwrap();
    assert!(message.contains("[ChargeFunctoin]"), "{message}");
    assert!(
        message.contains("did you mean \"ChargeFunction\""),
        "{message}"
    );
}

/// Regression (#37): `Fn::ImportValue` placeholders were named by their position in the
/// `Fn::Join` (`ImportValue-OrdersStack1`), which changed whenever the definition did.
#[test]
fn import_value_placeholders_are_named_by_the_export() {
    let sb = Sandbox::new();
    let template = serde_json::json!({"Resources": {"Orders": {
        "Type": "AWS::StepFunctions::StateMachine",
        "Properties": {"DefinitionString": {"Fn::Join": ["", [
            "{\"StartAt\":\"Charge\",\"States\":{\"Charge\":{\"Type\":\"Task\",\"Resource\":\"",
            {"Fn::ImportValue": "PaymentsStack:ChargeFunctionArn"},
            "\",\"End\":true}}}"]]}}}}});
    sb.write("template.json", &template.to_string());
    let out = sb.run_in_sandbox(&["run", "--template", "template.json", "--input", "{}"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("--sub PaymentsStack:ChargeFunctionArn=VALUE"),
        "{}",
        out.stderr
    );
    let out = sb.run_in_sandbox(&[
        "run",
        "--template",
        "template.json",
        "--sub",
        "PaymentsStack:ChargeFunctionArn=arn:aws:lambda:us-east-1:123456789012:function:charge",
        "--task",
        "Charge=cat",
        "--input",
        r#"{"ok": 1}"#,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// Regression (#30): a folder walk skipped a template it could not parse and exited 0.
#[test]
fn a_template_that_does_not_parse_fails_a_walk_and_junk_is_skipped_with_why() {
    let sb = Sandbox::new();
    mkdir(&sb, "app");
    sb.write(
        "app/template.yaml",
        "Resources:\n  Machine:\n    Type: AWS::Serverless::StateMachine\n    Properties:\n      Definition: [unclosed\n",
    );
    sb.write("app/notes.yaml", "just: [text\n");
    sb.write("app/broken.json", "{\"StartAt\": \"A\", \"States\": {");
    let json = fails_in_every_format(&sb, &["app"]);
    let files: Vec<&str> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["app/broken.json", "app/template.yaml"], "{json}");
    let out = sb.run_in_sandbox(&["validate", "-v", "app"]);
    assert!(
        out.stderr
            .lines()
            .any(|l| l.starts_with("skipped app/notes.yaml: not valid YAML")),
        "{}",
        out.stderr
    );
}

/// Regression (#30): a walk checked a definition a template names twice (alone, with spurious
/// UNRESOLVED_SUBSTITUTION warnings, and through the template) and counted "3 files" for 2.
#[test]
fn a_walk_checks_a_named_definition_once_in_its_template_context() {
    let sb = Sandbox::new();
    mkdir(&sb, "statemachine");
    sb.write("template.yaml", SAM);
    sb.write("statemachine/order.asl.json", ORDER);
    let out = sb.run_in_sandbox(&["validate", "--format", "json", "."]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let v = out.json();
    assert_eq!(
        v,
        serde_json::json!([{
            "file": "./statemachine/order.asl.json",
            "logicalId": "OrderStateMachine",
            "template": "./template.yaml",
            "result": "OK",
            "diagnostics": [],
            "truncated": false
        }])
    );
    let out = sb.run_in_sandbox(&["validate", "."]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        out.stdout, "./statemachine/order.asl.json (OrderStateMachine): ok\n",
        "{}",
        out.stdout
    );
    let out = sb.run_in_sandbox(&["validate", "--format", "github", "."]);
    assert_eq!(out.stdout, "", "no annotation for a clean definition");

    // Two machines, one in the template, one in a file: 2 files, 2 state machines.
    sb.write(
        "template.yaml",
        &format!(
            "{SAM}  Inline:
    Type: AWS::Serverless::StateMachine
    Properties:
      Definition:
        StartAt: P
        States:
          P: {{Type: Pass, End: true}}
"
        ),
    );
    let out = sb.run_in_sandbox(&["validate", "."]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout.ends_with("2 files, 2 state machines: ok\n"),
        "{}",
        out.stdout
    );
}

/// Regression (#30): annotations said `file=template.yaml#MyStateMachine`, which GitHub
/// cannot place. The file holding the problem is named, at its own line.
#[test]
fn annotations_name_the_file_that_holds_the_problem() {
    let sb = Sandbox::new();
    mkdir(&sb, "statemachine");
    sb.write("template.yaml", SAM);
    sb.write(
        "statemachine/order.asl.json",
        "{\n  \"StartAt\": \"Charge\",\n  \"States\": {\n    \"Charge\": {\"Type\": \"Task\", \"Resource\": \"${ChargeFunctionArn}\", \"Next\": \"Nowhere\"}\n  }\n}\n",
    );
    let json = fails_in_every_format(&sb, &["template.yaml"]);
    assert_eq!(json["logicalId"], "OrderStateMachine", "{json}");
    let out = sb.run_in_sandbox(&["validate", "--format", "github", "template.yaml"]);
    let line = out.stdout.lines().next().unwrap();
    assert!(
        line.starts_with(
            "::error file=statemachine/order.asl.json,line=4,col=68,title=MISSING_TRANSITION_TARGET in OrderStateMachine::"
        ),
        "{line}"
    );
    // An absolute path is shown relative to the working directory, as GitHub wants it.
    let abs = sb.path("template.yaml").display().to_string();
    let out = sb.run_in_sandbox(&["validate", "--format", "github", &abs]);
    assert!(
        out.stdout
            .starts_with("::error file=statemachine/order.asl.json,"),
        "{}",
        out.stdout
    );
    // Text names the file and the state machine.
    let out = sb.run_in_sandbox(&["validate", "template.yaml"]);
    assert!(
        out.stdout
            .contains("statemachine/order.asl.json (OrderStateMachine): 1 error"),
        "{}",
        out.stdout
    );
}

/// #30 item 8: a bad `key.$` inside `Parameters` is shown at that key (AWS's `location` stays
/// the object that holds it); an unknown intrinsic gets a did-you-mean.
#[test]
fn a_bad_dynamic_key_is_shown_at_the_key_and_typos_get_a_suggestion() {
    let sb = Sandbox::new();
    sb.write(
        "m.asl.json",
        r#"{
  "StartAt": "Call",
  "States": {
    "Call": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {
        "Payload": {
          "ok.$": "$.a",
          "text.$": "States.Formatt('{}', $.a)"
        }
      },
      "End": true
    }
  }
}
"#,
    );
    let json = fails_in_every_format(&sb, &["m.asl.json"]);
    let d = &json["diagnostics"][0];
    assert_eq!(d["location"], "/States/Call/Parameters/Payload", "{json}");
    let message = d["message"].as_str().unwrap();
    assert!(
        message.contains("unknown function 'States.Formatt' (did you mean 'States.Format'?)"),
        "{message}"
    );
    let out = sb.run_in_sandbox(&["validate", "--format", "github", "m.asl.json"]);
    assert!(
        out.stdout
            .starts_with("::error file=m.asl.json,line=10,col=11,"),
        "{}",
        out.stdout
    );
}

/// Regression (#30): YAML that libyaml (CloudFormation, the SAM CLI, PyYAML) reads and
/// yaml-rust2 refused, so a walk skipped the template and passed: a flow mapping closed left of
/// its content, a quoted scalar continued at its key's column.
#[test]
fn templates_libyaml_reads_are_read_and_checked() {
    let sb = Sandbox::new();
    mkdir(&sb, "app");
    sb.write(
        "app/template.yaml",
        "Resources:
  Policy:
    Type: AWS::IAM::ManagedPolicy
    Properties:
      PolicyDocument: {
        \"Version\": \"2012-10-17\"
     }
  Machine:
    Type: AWS::StepFunctions::StateMachine
    Properties:
      Definition:
        StartAt: P
        States:
          P: {Type: Pass, Next: Missing}
Outputs:
  Sample:
    Value: \"{
      \\\"input\\\": 1
    }\"
",
    );
    let json = fails_in_every_format(&sb, &["app"]);
    let d = &json[0]["diagnostics"][0];
    assert_eq!(d["code"], "MISSING_TRANSITION_TARGET", "{json}");
    assert_eq!(json[0]["logicalId"], "Machine", "{json}");
}

/// Regression (#30): `graph template.yaml` read the template as a definition ("Field
/// 'Resources' is not supported"). A template's machine is drawn, chosen by `#LogicalId` when
/// it has several; placeholders take `--sub` values or stand-ins.
#[test]
fn graph_draws_a_templates_state_machine() {
    let sb = Sandbox::new();
    mkdir(&sb, "statemachine");
    sb.write("statemachine/order.asl.json", ORDER);
    let two = format!(
        "{SAM}  Refund:
    Type: AWS::StepFunctions::StateMachine
    Properties:
      Definition:
        StartAt: GiveBack
        States:
          GiveBack: {{Type: Pass, End: true}}
"
    );
    sb.write("template.yaml", &two);
    let out = sb.run_in_sandbox(&["graph", "--format", "mermaid", "template.yaml"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("several state machines")
            && out.stderr.contains("OrderStateMachine, Refund"),
        "{}",
        out.stderr
    );
    let args = [
        "graph",
        "--format",
        "mermaid",
        "template.yaml#OrderStateMachine",
    ];
    let out = sb.run_in_sandbox(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("Charge") && !out.stdout.contains("GiveBack"),
        "{}",
        out.stdout
    );
    let out = sb.run_in_sandbox(&["graph", "--format", "dot", "template.yaml#Refund"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("GiveBack"), "{}", out.stdout);
    let args = [
        "graph",
        "--sub",
        "ChargeFunctionArn=arn:aws:lambda:us-east-1:1:function:c",
    ];
    let out = sb.run_in_sandbox(&[&args[..], &["template.yaml#OrderStateMachine"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = sb.run_in_sandbox(&["graph", "template.yaml#Nope"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("has no state machine 'Nope'"),
        "{}",
        out.stderr
    );
}

/// An unused `--sub` (a misspelt name) is a warning naming it, for a definition file and for a
/// template's machine alike; a used one says nothing.
#[test]
fn an_unused_sub_is_a_warning_that_names_it() {
    let sb = Sandbox::new();
    mkdir(&sb, "statemachine");
    sb.write("statemachine/order.asl.json", ORDER);
    sb.write("template.yaml", SAM);
    let out = sb.run_in_sandbox(&[
        "graph",
        "--sub",
        "ChargeFnArn=x",
        "--sub",
        "ChargeFunctionArn=arn:aws:lambda:us-east-1:123456789012:function:c",
        "template.yaml",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("warning: the substitution ChargeFnArn is not used")
            && !out.stderr.contains("ChargeFunctionArn is not used"),
        "{}",
        out.stderr
    );
    let out = sb.run_in_sandbox(&["graph", "--sub", "Typo=1", "statemachine/order.asl.json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("substitution Typo is not used"),
        "{}",
        out.stderr
    );
}

/// A synthesized template's line means little to a CDK user (#37): a diagnostic of an inline
/// definition names the construct (`aws:cdk:path`) beside it.
#[test]
fn an_inline_cdk_definitions_diagnostic_names_its_construct() {
    let sb = Sandbox::new();
    let template = serde_json::json!({"Resources": {"Orders0A1B2C3D": {
        "Type": "AWS::StepFunctions::StateMachine",
        "Metadata": {"aws:cdk:path": "OrdersStack/Orders/Resource"},
        "Properties": {"DefinitionString":
            "{\"StartAt\":\"P\",\"States\":{\"P\":{\"Type\":\"Pass\",\"Next\":\"Nowhere\"}}}"}}}});
    sb.write("OrdersStack.template.json", &template.to_string());
    let json = fails_in_every_format(&sb, &["OrdersStack.template.json"]);
    let message = json["diagnostics"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("(construct OrdersStack/Orders/Resource)"),
        "{message}"
    );
}
