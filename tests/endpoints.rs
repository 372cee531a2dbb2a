//! `--endpoint SERVICE=URL`: Task states call AWS services at a local endpoint. moto's server
//! (installed by `.ci/deps`) is the real local AWS here: the machines send to SQS, publish to
//! SNS, put and get DynamoDB items, invoke Lambda, fail on a missing table with AWS's error,
//! and run the callback pattern with a worker reading the queue with the AWS CLI.

mod common;

use common::{deps_python_bin, Output, Sandbox};
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// moto's server on a free loopback port, killed when dropped.
struct Moto {
    child: Child,
    url: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn moto() -> Moto {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(deps_python_bin("moto_server"))
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start moto_server");
    let moto = Moto {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    // Lambda without Docker: moto answers an invocation with its payload.
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let ok = python(
            &moto,
            r#"import urllib.request, json
req = urllib.request.Request(URL + "/moto-api/config", data=json.dumps({"lambda": {"use_docker": False}}).encode(), headers={"Content-Type": "application/json"}, method="POST")
urllib.request.urlopen(req).read()"#,
        );
        if ok.code == 0 {
            break;
        }
        assert!(Instant::now() < until, "moto did not start: {}", ok.stderr);
        std::thread::sleep(Duration::from_millis(200));
    }
    moto
}

/// Runs a Python snippet with boto3 against moto (`URL` and `kw` are defined).
fn python(moto: &Moto, code: &str) -> Output {
    let prelude = format!(
        "import boto3, json\nURL = {:?}\nkw = dict(endpoint_url=URL, region_name='us-east-1', aws_access_key_id='test', aws_secret_access_key='test')\n",
        moto.url
    );
    Command::new(deps_python_bin("python"))
        .args(["-c", &format!("{prelude}{code}")])
        .output()
        .expect("python")
        .into()
}

fn setup(moto: &Moto) -> Value {
    let out = python(
        moto,
        r#"
import io, zipfile
iam = boto3.client('iam', **kw)
role = iam.create_role(RoleName='r', AssumeRolePolicyDocument='{}')['Role']['Arn']
buf = io.BytesIO()
with zipfile.ZipFile(buf, 'w') as z: z.writestr('h.py', 'def handler(e, c):\n    return e\n')
boto3.client('lambda', **kw).create_function(FunctionName='echo', Runtime='python3.11', Role=role, Handler='h.handler', Code={'ZipFile': buf.getvalue()})
q = boto3.client('sqs', **kw).create_queue(QueueName='orders')['QueueUrl']
t = boto3.client('sns', **kw).create_topic(Name='news')['TopicArn']
boto3.client('dynamodb', **kw).create_table(TableName='items', KeySchema=[{'AttributeName': 'id', 'KeyType': 'HASH'}], AttributeDefinitions=[{'AttributeName': 'id', 'AttributeType': 'S'}], BillingMode='PAY_PER_REQUEST')
print(json.dumps({'queue': q, 'topic': t}))
"#,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.json()
}

#[test]
fn optimized_integrations_call_moto() {
    let moto = moto();
    let ids = setup(&moto);
    let sb = Sandbox::new()
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    let machine = sb.write(
        "m.asl.json",
        r#"{"StartAt":"Send","States":{
  "Send":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage","Parameters":{"QueueUrl.$":"$.queue","MessageBody":{"order":42}},"ResultPath":"$.sent","Next":"Publish"},
  "Publish":{"Type":"Task","Resource":"arn:aws:states:::sns:publish","Parameters":{"TopicArn.$":"$.topic","Message":"hello"},"ResultPath":"$.published","Next":"Put"},
  "Put":{"Type":"Task","Resource":"arn:aws:states:::dynamodb:putItem","Parameters":{"TableName":"items","Item":{"id":{"S":"a"},"v":{"S":"one"}}},"ResultPath":null,"Next":"Get"},
  "Get":{"Type":"Task","Resource":"arn:aws:states:::dynamodb:getItem","Parameters":{"TableName":"items","Key":{"id":{"S":"a"}}},"ResultSelector":{"item.$":"$.Item"},"ResultPath":"$.got","Next":"Invoke"},
  "Invoke":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"echo","Payload":{"x":1}},"ResultPath":"$.invoked","Next":"Legacy"},
  "Legacy":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:echo","ResultPath":"$.legacy","Next":"Sdk"},
  "Sdk":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:dynamodb:listTables","Parameters":{},"ResultPath":"$.tables","Next":"Missing"},
  "Missing":{"Type":"Task","Resource":"arn:aws:states:::dynamodb:getItem","Parameters":{"TableName":"nope","Key":{"id":{"S":"a"}}},
     "Catch":[{"ErrorEquals":["DynamoDB.ResourceNotFoundException"],"ResultPath":"$.missing","Next":"Done"}],"End":true},
  "Done":{"Type":"Succeed"}}}"#,
    );
    let input = serde_json::json!({"queue": ids["queue"], "topic": ids["topic"]}).to_string();
    let out = sb.run(&[
        "run",
        machine.to_str().unwrap(),
        "--endpoint",
        &format!("all={}", moto.url),
        "--input",
        &input,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let o = out.json();
    assert!(o["sent"]["MessageId"].is_string(), "{o}");
    assert!(o["sent"]["MD5OfMessageBody"].is_string(), "{o}");
    assert_eq!(o["sent"]["SdkHttpMetadata"]["HttpStatusCode"], 200);
    assert!(
        o["published"]["MessageId"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{o}"
    );
    assert_eq!(o["got"]["item"]["v"]["S"], "one");
    assert_eq!(o["invoked"]["Payload"], serde_json::json!({"x":1}));
    assert_eq!(o["invoked"]["StatusCode"], 200);
    assert_eq!(o["invoked"]["ExecutedVersion"], "$LATEST");
    assert!(o["invoked"]["SdkResponseMetadata"]["RequestId"].is_string());
    assert_eq!(o["legacy"]["queue"], ids["queue"]);
    assert_eq!(o["tables"]["TableNames"], serde_json::json!(["items"]));
    assert_eq!(o["missing"]["Error"], "DynamoDB.ResourceNotFoundException");
    assert!(
        o["missing"]["Cause"].as_str().unwrap().contains(
            "(Service: AmazonDynamoDBv2; Status Code: 400; Error Code: ResourceNotFoundException;"
        ),
        "{o}"
    );
    // The message really is in the queue.
    let got = python(
        &moto,
        &format!(
            "m = boto3.client('sqs', **kw).receive_message(QueueUrl={:?})['Messages'][0]['Body']\nprint(m)",
            ids["queue"].as_str().unwrap()
        ),
    );
    assert_eq!(got.stdout.trim(), r#"{"order":42}"#, "{}", got.stderr);
}

#[test]
fn sqs_wait_for_task_token_is_answered_by_a_queue_worker() {
    let moto = moto();
    let ids = setup(&moto);
    let queue = ids["queue"].as_str().unwrap().to_owned();
    let sb = Sandbox::with_workers()
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_DEFAULT_REGION", "us-east-1");
    let machine = sb.write(
        "cb.asl.json",
        r#"{"StartAt":"Ask","States":{"Ask":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage.waitForTaskToken",
           "Parameters":{"QueueUrl.$":"$.queue","MessageBody":{"token.$":"$$.Task.Token","n.$":"$.n"}},"TimeoutSeconds":120,"End":true}}}"#,
    );
    let input = serde_json::json!({"queue": queue, "n": 5}).to_string();
    let run = sb.spawn(&[
        "run",
        machine.to_str().unwrap(),
        "--endpoint",
        &format!("sqs={}", moto.url),
        "--input",
        &input,
    ]);
    // The worker: the AWS CLI reads the queue, sfn-local answers with the token.
    let aws = deps_python_bin("aws");
    let worker = r#"set -e
until body=$("$AWS" --endpoint-url "$URL" sqs receive-message --queue-url "$QUEUE" --wait-time-seconds 1 --query 'Messages[0].Body' --output text) && [ "$body" != "None" ] && [ -n "$body" ]; do sleep 0.2; done
token=$(printf '%s' "$body" | sed 's/.*"token":"\([^"]*\)".*/\1/')
n=$(printf '%s' "$body" | sed 's/.*"n":\([0-9]*\).*/\1/')
"$SFN_LOCAL" send-task-success --task-token "$token" --task-output "{\"doubled\":$((n * 2))}"
"#;
    let mut w = sb.command();
    let status = w.args(["--version"]).status().expect("sfn-local");
    assert!(status.success());
    let worker_out = Command::new("sh")
        .args(["-c", worker])
        .env("AWS", &aws)
        .env("URL", &moto.url)
        .env("QUEUE", &queue)
        .env("SFN_LOCAL", common::bin())
        .env("SFN_LOCAL_DB", sb.db())
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .output()
        .expect("worker");
    assert!(
        worker_out.status.success(),
        "{}",
        String::from_utf8_lossy(&worker_out.stderr)
    );
    let out = Output::of(run);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), serde_json::json!({"doubled": 10}));
}

/// S3 at moto: a distributed Map reads its items from an object (`s3:getObject`, CSV) and from
/// a listing (`s3:listObjectsV2`), writes its results with a `ResultWriter` (read back with
/// boto3), and `aws-sdk:s3` Tasks put, get and list objects; a missing key is AWS's
/// `S3.NoSuchKeyException` with the SDK's cause.
#[test]
fn s3_at_moto_feeds_and_receives_a_distributed_map_and_aws_sdk_tasks() {
    let moto = moto();
    let out = python(
        &moto,
        r#"
s3 = boto3.client('s3', **kw)
s3.create_bucket(Bucket='inbox')
s3.create_bucket(Bucket='outbox')
s3.put_object(Bucket='inbox', Key='orders.csv', Body=b'id,qty\na,1\nb,2\nc,3\n')
for k in ['logs/1.txt', 'logs/2.txt', 'other/3.txt']:
    s3.put_object(Bucket='inbox', Key=k, Body=b'hello')
"#,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sb = Sandbox::new()
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    let machine = sb.write(
        "s3.asl.json",
        r#"{"StartAt":"Orders","States":{
  "Orders":{"Type":"Map","ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},
      "StartAt":"Double","States":{"Double":{"Type":"Pass","Parameters":{"id.$":"$.id","qty.$":"States.StringToJson($.qty)"},"End":true}}},
    "ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV","CSVHeaderLocation":"FIRST_ROW"},
      "Parameters":{"Bucket":"inbox","Key":"orders.csv"}},
    "ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"outbox","Prefix":"runs"}},
    "ResultPath":"$.written","Next":"Logs"},
  "Logs":{"Type":"Map","ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},
      "StartAt":"Key","States":{"Key":{"Type":"Pass","OutputPath":"$.Key","End":true}}},
    "ItemReader":{"Resource":"arn:aws:states:::s3:listObjectsV2","Parameters":{"Bucket":"inbox","Prefix":"logs/"}},
    "ResultPath":"$.logs","Next":"Put"},
  "Put":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:s3:putObject","Parameters":{"Bucket":"outbox","Key":"note.json","Body":{"Dict":"Value"}},"ResultPath":"$.put","Next":"Get"},
  "Get":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:s3:getObject","Parameters":{"Bucket":"outbox","Key":"note.json"},"ResultSelector":{"body.$":"States.StringToJson($.Body)","etag.$":"$.ETag"},"ResultPath":"$.got","Next":"List"},
  "List":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:s3:listObjectsV2","Parameters":{"Bucket":"inbox","Prefix":"logs/"},"ResultSelector":{"keys.$":"$.Contents[*].Key","count.$":"$.KeyCount"},"ResultPath":"$.listed","Next":"Missing"},
  "Missing":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:s3:getObject","Parameters":{"Bucket":"outbox","Key":"nope.json"},
     "Catch":[{"ErrorEquals":["S3.NoSuchKeyException"],"ResultPath":"$.missing","Next":"Done"}],"End":true},
  "Done":{"Type":"Succeed"}}}"#,
    );
    let out = sb.run(&[
        "run",
        machine.to_str().unwrap(),
        "--endpoint",
        &format!("s3={}", moto.url),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let o = out.json();
    assert_eq!(
        o["logs"],
        serde_json::json!(["logs/1.txt", "logs/2.txt"]),
        "{o}"
    );
    assert_eq!(
        o["written"]["ResultWriterDetails"]["Bucket"], "outbox",
        "{o}"
    );
    let manifest_key = o["written"]["ResultWriterDetails"]["Key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(manifest_key.starts_with("runs/") && manifest_key.ends_with("/manifest.json"));
    assert_eq!(o["put"]["ETag"], o["got"]["etag"], "{o}");
    assert_eq!(o["got"]["body"], serde_json::json!({"Dict": "Value"}));
    assert_eq!(
        o["listed"],
        serde_json::json!({"keys": ["logs/1.txt", "logs/2.txt"], "count": 2})
    );
    assert_eq!(o["missing"]["Error"], "S3.NoSuchKeyException", "{o}");
    let cause = o["missing"]["Cause"].as_str().unwrap();
    assert!(
        cause.starts_with(
            "The specified key does not exist. (Service: S3, Status Code: 404, Request ID: "
        ),
        "{cause}"
    );
    // The results really are in moto's bucket.
    let got = python(
        &moto,
        &format!(
            r#"s3 = boto3.client('s3', **kw)
m = json.loads(s3.get_object(Bucket='outbox', Key={manifest_key:?})['Body'].read())
f = m['ResultFiles']['SUCCEEDED'][0]['Key']
rows = json.loads(s3.get_object(Bucket='outbox', Key=f)['Body'].read())
print(json.dumps(sorted(json.loads(r['Output'])['qty'] for r in rows)))"#
        ),
    );
    assert_eq!(got.code, 0, "{}", got.stderr);
    assert_eq!(got.stdout.trim(), "[1, 2, 3]");
}

/// A ResultWriter's file larger than one part (8 MiB) goes to S3 as a multipart upload, a part
/// at a time (S3's ETag for it ends in the part count), and reads back whole with boto3.
#[test]
fn a_result_file_larger_than_a_part_is_uploaded_in_parts() {
    let moto = moto();
    let made = python(
        &moto,
        "boto3.client('s3', **kw).create_bucket(Bucket='outbox')",
    );
    assert_eq!(made.code, 0, "{}", made.stderr);
    let sb = Sandbox::new()
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    let child = serde_json::json!({"Type": "Pass", "Result": "x".repeat(4096), "End": true});
    let machine = serde_json::json!({"StartAt": "Each", "States": {"Each": {
        "Type": "Map", "ItemsPath": "$.items", "End": true,
        "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "EXPRESS"},
            "StartAt": "Big", "States": {"Big": child}},
        "ResultWriter": {"Resource": "arn:aws:states:::s3:putObject",
            "Parameters": {"Bucket": "outbox", "Prefix": "runs"},
            "WriterConfig": {"Transformation": "COMPACT"}}}}});
    let def = sb.write("parts.asl.json", &machine.to_string());
    // 2,300 outputs of 4,098 bytes: 9.4 MB, two parts.
    let input = serde_json::json!({"items": (0..2300).collect::<Vec<_>>()}).to_string();
    let out = sb.run(&[
        "run",
        def.to_str().unwrap(),
        "--input",
        &input,
        "--endpoint",
        &format!("s3={}", moto.url),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let manifest_key = out.json()["ResultWriterDetails"]["Key"]
        .as_str()
        .unwrap()
        .to_owned();
    let got = python(
        &moto,
        &format!(
            r#"s3 = boto3.client('s3', **kw)
m = json.loads(s3.get_object(Bucket='outbox', Key={manifest_key:?})['Body'].read())
f = m['ResultFiles']['SUCCEEDED'][0]
o = s3.get_object(Bucket='outbox', Key=f['Key'])
rows = json.loads(o['Body'].read())
print(json.dumps([f['Size'] == o['ContentLength'], o['ETag'].strip('"').split('-')[1], len(rows), set(rows) == {{'x' * 4096}}]))"#
        ),
    );
    assert_eq!(got.code, 0, "{}", got.stderr);
    assert_eq!(got.stdout.trim(), r#"[true, "2", 2300, true]"#);
}

/// `glue:startJobRun.sync` at moto: the job run is started (StartJobRun's response is the
/// `TaskSubmitted` output), GetJobRun is polled until the run succeeds, and the task's result
/// is the `JobRun`; an unknown job fails with Glue's error as AWS names it.
#[test]
fn glue_start_job_run_sync_polls_the_job_run_to_its_end() {
    let moto = moto();
    let out = python(
        &moto,
        r#"boto3.client('glue', **kw).create_job(Name='etl', Role='arn:aws:iam::123456789012:role/r', Command={'Name': 'glueetl', 'ScriptLocation': 's3://scripts/etl.py'})"#,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sb = Sandbox::new()
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    let machine = sb.write(
        "glue.asl.json",
        r#"{"StartAt":"Etl","States":{
  "Etl":{"Type":"Task","Resource":"arn:aws:states:::glue:startJobRun.sync","Parameters":{"JobName":"etl"},"ResultPath":"$.run","Next":"Missing"},
  "Missing":{"Type":"Task","Resource":"arn:aws:states:::glue:startJobRun.sync","Parameters":{"JobName":"nope"},
     "Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.missing","Next":"Done"}],"End":true},
  "Done":{"Type":"Succeed"}}}"#,
    );
    let out = sb.run(&[
        "run",
        machine.to_str().unwrap(),
        "--name",
        "etl-1",
        "--endpoint",
        &format!("glue={}", moto.url),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let o = out.json();
    assert_eq!(o["run"]["JobRunState"], "SUCCEEDED", "{o}");
    assert_eq!(o["run"]["JobName"], "etl", "{o}");
    assert!(
        o["missing"]["Error"]
            .as_str()
            .is_some_and(|e| e.starts_with("Glue.")),
        "{o}"
    );
    let history = sb.history("etl-1");
    let submitted = history
        .iter()
        .find(|e| e["type"] == "TaskSubmitted")
        .expect("TaskSubmitted");
    let response: Value = serde_json::from_str(
        submitted["taskSubmittedEventDetails"]["output"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(response["JobRunId"], o["run"]["Id"], "{response}");
}

/// A runner killed while its `glue:startJobRun.sync` task polls the job run: `resume` polls the
/// same run (named by the recorded `TaskSubmitted`) instead of starting a second one.
#[test]
fn a_glue_sync_task_killed_mid_job_resumes_with_the_same_job_run() {
    let moto = moto();
    // The run stays STARTING until told otherwise (moto's manual state transitions).
    let out = python(
        &moto,
        r#"boto3.client('glue', **kw).create_job(Name='etl', Role='arn:aws:iam::123456789012:role/r', Command={'Name': 'glueetl', 'ScriptLocation': 's3://scripts/etl.py'})
import urllib.request
def transition(t):
    req = urllib.request.Request(URL + "/moto-api/state-manager/set-transition", data=json.dumps({"model_name": "glue::job_run", "transition": t}).encode(), headers={"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(req).read()
transition({"progression": "manual", "times": 100000})"#,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sb = Sandbox::new()
        .lease_ms(300)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    let machine = sb.write(
        "glue.asl.json",
        r#"{"StartAt":"Etl","States":{"Etl":{"Type":"Task","Resource":"arn:aws:states:::glue:startJobRun.sync","Parameters":{"JobName":"etl"},"End":true}}}"#,
    );
    let mut run = sb.spawn(&[
        "run",
        machine.to_str().unwrap(),
        "--name",
        "g",
        "--endpoint",
        &format!("glue={}", moto.url),
    ]);
    let until = Instant::now() + Duration::from_secs(60);
    let submitted = loop {
        let out = sb.run(&["get-execution-history", "--execution-arn", "g"]);
        let found = (out.code == 0)
            .then(|| out.json()["events"].as_array().cloned())
            .flatten()
            .and_then(|es| es.into_iter().find(|e| e["type"] == "TaskSubmitted"));
        if let Some(e) = found {
            break e;
        }
        assert!(Instant::now() < until, "no TaskSubmitted: {}", out.stderr);
        std::thread::sleep(Duration::from_millis(100));
    };
    common::kill(&mut run);
    let run_id = serde_json::from_str::<Value>(
        submitted["taskSubmittedEventDetails"]["output"]
            .as_str()
            .unwrap(),
    )
    .unwrap()["JobRunId"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = python(
        &moto,
        r#"import urllib.request
req = urllib.request.Request(URL + "/moto-api/state-manager/set-transition", data=json.dumps({"model_name": "glue::job_run", "transition": {"progression": "immediate"}}).encode(), headers={"Content-Type": "application/json"}, method="POST")
urllib.request.urlopen(req).read()"#,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = sb.resume("g");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let o = out.json();
    assert_eq!(o["Id"], run_id.as_str(), "{o}");
    assert_eq!(o["JobRunState"], "SUCCEEDED", "{o}");
    let runs = python(
        &moto,
        "print(len(boto3.client('glue', **kw).get_job_runs(JobName='etl')['JobRuns']))",
    );
    assert_eq!(runs.stdout.trim(), "1", "{}", runs.stderr);
}

/// `aws-sdk:sns:*` over SNS's query protocol at moto: parameters become form fields (maps as
/// entries, lists as members), the XML result comes back as JSON, and a missing topic is
/// `Sns.NotFoundException`.
#[test]
fn aws_sdk_sns_speaks_the_query_protocol() {
    let moto = moto();
    let sb = Sandbox::new()
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    let machine = sb.write(
        "sns.asl.json",
        r#"{"StartAt":"Create","States":{
  "Create":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:sns:createTopic","Parameters":{"Name":"news","Attributes":{"DisplayName":"The news"},"Tags":[{"Key":"team","Value":"a"}]},"ResultPath":"$.created","Next":"List"},
  "List":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:sns:listTopics","Parameters":{},"ResultPath":"$.listed","Next":"Attributes"},
  "Attributes":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:sns:getTopicAttributes","Parameters":{"TopicArn.$":"$.created.TopicArn"},"ResultSelector":{"name.$":"$.Attributes.DisplayName"},"ResultPath":"$.attributes","Next":"Publish"},
  "Publish":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:sns:publish","Parameters":{"TopicArn.$":"$.created.TopicArn","Message":"hi"},"ResultPath":"$.published","Next":"Missing"},
  "Missing":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:sns:getTopicAttributes","Parameters":{"TopicArn":"arn:aws:sns:us-east-1:123456789012:nope"},
     "Catch":[{"ErrorEquals":["Sns.NotFoundException"],"ResultPath":"$.missing","Next":"Done"}],"End":true},
  "Done":{"Type":"Succeed"}}}"#,
    );
    let out = sb.run(&[
        "run",
        machine.to_str().unwrap(),
        "--endpoint",
        &format!("sns={}", moto.url),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let o = out.json();
    let arn = o["created"]["TopicArn"].as_str().unwrap_or_default();
    assert!(arn.ends_with(":news"), "{o}");
    assert_eq!(o["listed"]["Topics"][0]["TopicArn"], arn, "{o}");
    assert_eq!(o["attributes"]["name"], "The news", "{o}");
    assert!(o["published"]["MessageId"].is_string(), "{o}");
    assert_eq!(o["missing"]["Error"], "Sns.NotFoundException", "{o}");
}

/// `codebuild:startBuild.sync` at moto: `ProjectName` is sent as CodeBuild's `projectName`,
/// StartBuild's answer (`{"Build": …}` with capital initials) is the `TaskSubmitted` output,
/// and BatchGetBuilds is polled until the build succeeds.
#[test]
fn codebuild_start_build_sync_polls_the_build_to_its_end() {
    let moto = moto();
    let out = python(
        &moto,
        r#"boto3.client('codebuild', **kw).create_project(name='app', source={'type': 'S3', 'location': 'bucket/src.zip'}, artifacts={'type': 'NO_ARTIFACTS'}, environment={'type': 'LINUX_CONTAINER', 'image': 'aws/codebuild/standard:7.0', 'computeType': 'BUILD_GENERAL1_SMALL'}, serviceRole='arn:aws:iam::123456789012:role/r')"#,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sb = Sandbox::new()
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    let machine = sb.write(
        "cb.asl.json",
        r#"{"StartAt":"Build","States":{"Build":{"Type":"Task","Resource":"arn:aws:states:::codebuild:startBuild.sync","Parameters":{"ProjectName":"app"},"End":true}}}"#,
    );
    let out = sb.run(&[
        "run",
        machine.to_str().unwrap(),
        "--name",
        "cb",
        "--endpoint",
        &format!("codebuild={}", moto.url),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let o = out.json();
    assert_eq!(o["Build"]["BuildStatus"], "SUCCEEDED", "{o}");
    assert_eq!(o["Build"]["ProjectName"], "app", "{o}");
    let history = sb.history("cb");
    let submitted = history
        .iter()
        .find(|e| e["type"] == "TaskSubmitted")
        .expect("TaskSubmitted");
    let response: Value = serde_json::from_str(
        submitted["taskSubmittedEventDetails"]["output"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(response["Build"]["Id"], o["Build"]["Id"], "{response}");
    assert!(
        response["SdkHttpMetadata"]["HttpStatusCode"] == 200,
        "{response}"
    );
}

/// `aws-sdk:*` built from the services' models, one service per protocol at moto: Lambda
/// (rest-json: URI, query string, JSON answer), Route 53 (rest-xml: an XML body with the model's
/// namespace, an XML answer read by the output shape), EC2 (ec2: `Name.N` fields, `item` lists
/// under wire names such as `reservationSet` read back as `Reservations`), IAM (query: a
/// `…Result` wrapper, `member` lists) and a modeled error as the SDK v2's class.
#[test]
fn aws_sdk_speaks_rest_json_rest_xml_ec2_and_query_from_the_models() {
    let moto = moto();
    let sb = Sandbox::new()
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    let machine = sb.write(
        "protocols.asl.json",
        r#"{"StartAt":"Functions","States":{
  "Functions":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:lambda:listFunctions","Parameters":{"MaxItems":5},"ResultPath":"$.functions","Next":"NoFunction"},
  "NoFunction":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:lambda:getFunction","Parameters":{"FunctionName":"nope"},
     "Catch":[{"ErrorEquals":["Lambda.ResourceNotFoundException"],"ResultPath":"$.nofunction","Next":"Zone"}],"End":true},
  "Zone":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:route53:createHostedZone","Parameters":{"Name":"example.com","CallerReference":"ref-1","HostedZoneConfig":{"Comment":"test zone","PrivateZone":false}},"ResultPath":"$.zone","Next":"Zones"},
  "Zones":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:route53:listHostedZones","Parameters":{},"ResultPath":"$.zones","Next":"Run"},
  "Run":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:ec2:runInstances","Parameters":{"ImageId":"ami-12c6146b","MinCount":2,"MaxCount":2,"InstanceType":"t2.micro"},"ResultSelector":{"ids.$":"$.Instances[*].InstanceId"},"ResultPath":"$.run","Next":"Describe"},
  "Describe":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:ec2:describeInstances","Parameters":{"InstanceIds.$":"$.run.ids"},"ResultPath":"$.described","Next":"User"},
  "User":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:iam:createUser","Parameters":{"UserName":"ada","Tags":[{"Key":"team","Value":"a"}]},"ResultPath":"$.user","Next":"Users"},
  "Users":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:iam:listUsers","Parameters":{},"ResultPath":"$.users","Next":"NoUser"},
  "NoUser":{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:iam:getUser","Parameters":{"UserName":"nobody"},
     "Catch":[{"ErrorEquals":["Iam.NoSuchEntityException"],"ResultPath":"$.nouser","Next":"Done"}],"End":true},
  "Done":{"Type":"Succeed"}}}"#,
    );
    let out = sb.run(&[
        "run",
        machine.to_str().unwrap(),
        "--endpoint",
        &format!("all={}", moto.url),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let o = out.json();
    assert_eq!(o["functions"]["Functions"], serde_json::json!([]), "{o}");
    assert_eq!(
        o["nofunction"]["Error"], "Lambda.ResourceNotFoundException",
        "{o}"
    );
    assert_eq!(o["zone"]["HostedZone"]["Name"], "example.com.", "{o}");
    assert_eq!(
        o["zone"]["HostedZone"]["Config"]["Comment"], "test zone",
        "{o}"
    );
    assert!(o["zone"]["Location"].is_string(), "{o}");
    assert_eq!(
        o["zones"]["HostedZones"][0]["Id"], o["zone"]["HostedZone"]["Id"],
        "{o}"
    );
    assert_eq!(o["zones"]["IsTruncated"], false, "{o}");
    let ids = o["run"]["ids"].as_array().cloned().unwrap_or_default();
    assert_eq!(ids.len(), 2, "{o}");
    let described = &o["described"]["Reservations"][0]["Instances"];
    assert_eq!(described.as_array().map(Vec::len), Some(2), "{o}");
    assert_eq!(described[0]["InstanceType"], "t2.micro", "{o}");
    assert_eq!(described[0]["State"]["Code"], 16, "{o}");
    assert_eq!(o["user"]["User"]["UserName"], "ada", "{o}");
    assert_eq!(o["user"]["User"]["Tags"][0]["Key"], "team", "{o}");
    assert_eq!(o["users"]["Users"][0]["UserName"], "ada", "{o}");
    assert_eq!(o["nouser"]["Error"], "Iam.NoSuchEntityException", "{o}");
}
