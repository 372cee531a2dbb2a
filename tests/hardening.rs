//! `serve` (with the console it mounts) and `sfn-local console` are safe to leave running while
//! you browse: requests addressed to a foreign name are refused (DNS rebinding), slow clients
//! are cut off and connections capped, HTTP Tasks call nothing unless allowed, a non-loopback
//! address is warned about (refused with `--task` bindings), and database folders are
//! owner-only. The browser's side (a rebinding page in Chromium, framing, cross-site forms) is
//! in tests/console.rs.

mod common;

use common::served::{curl, Served};
use common::Sandbox;
use serde_json::{json, Value};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const ROLE: &str = "arn:aws:iam::123456789012:role/local";

#[test]
fn requests_addressed_to_a_foreign_name_are_refused_on_the_api_and_the_console() {
    let sandbox = Sandbox::new();
    let served = Served::serve(&sandbox, &["--allow-host", "sfn"]);
    let port = served.port;
    let evil = format!("evil.test:{port}");
    let pass = r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#;
    let create = json!({"name": "planted", "definition": pass, "roleArn": ROLE}).to_string();

    // The API: AWS's error shape, naming the flag that would accept the name; nothing created.
    let (status, body) = curl(
        port,
        &evil,
        &[
            "-X",
            "POST",
            "-H",
            "X-Amz-Target: AWSStepFunctions.CreateStateMachine",
            "-H",
            "Content-Type: application/x-amz-json-1.0",
            "--data-binary",
            &create,
        ],
        "/",
    );
    assert_eq!(status, 403, "{body}");
    let error: Value = serde_json::from_str(&body).expect("a JSON error");
    assert_eq!(error["__type"], "AccessDeniedException");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("--allow-host evil.test"), "{message}");
    assert!(message.contains("SFN_LOCAL_ALLOW_HOSTS"), "{message}");
    let (status, listed) = served.call("ListStateMachines", json!({}));
    assert_eq!(status, 200);
    assert_eq!(listed["stateMachines"], json!([]), "nothing was created");

    // The console's pages and its form posts.
    for path in ["/", "/console/executions", "/console/assets/console.js"] {
        let (status, body) = curl(port, &evil, &[], path);
        assert_eq!(status, 403, "{path}: {body}");
        assert!(body.contains("--allow-host evil.test"), "{path}: {body}");
    }
    let (status, _) = curl(
        port,
        &evil,
        &["--data", "token=x&execution=y"],
        "/console/tasks/success",
    );
    assert_eq!(status, 403);
    // Any port: a rebinding page is refused by its name, whatever port it uses.
    assert_eq!(curl(port, "evil.test", &[], "/").0, 403);

    // This machine's names and addresses, on any port (a published one), and the allowed name.
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "localhost:9000".to_owned(),
        format!("[::1]:{port}"),
        format!("sfn:{port}"),
        format!("SFN.:{port}"),
    ] {
        let (status, body) = curl(port, &host, &[], "/");
        assert_eq!(status, 200, "{host}: {body}");
    }
    // Each refused name is said once in the log, with the way out.
    let log = served.log();
    assert_eq!(log.matches("refused a request").count(), 1, "{log}");
    assert!(log.contains("--allow-host evil.test"), "{log}");
    // Regression (#38): the way out is a command a reader may paste; a name that is shell
    // text is quoted, never echoed bare.
    let (status, body) = curl(port, "$(touch pwned)", &[], "/");
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("--allow-host '$(touch pwned)'"), "{body}");
    assert!(!body.contains("--allow-host $("), "{body}");
}

#[test]
fn allowed_names_come_from_the_environment_and_the_console_checks_them_too() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.command();
    command
        .args(["console", "--port", "0"])
        .env("SFN_LOCAL_ALLOW_HOSTS", "sfn,.compose.internal");
    let console = Served::start(command);
    let port = console.port;
    for host in ["sfn", "a.compose.internal:1", "localhost"] {
        assert_eq!(curl(port, host, &[], "/").0, 200, "{host}");
    }
    let (status, body) = curl(port, "evil.test", &[], "/console/executions");
    assert_eq!(status, 403);
    assert!(body.contains("--allow-host evil.test"), "{body}");
    let (status, _) = curl(port, "compose.internal.evil.test", &[], "/");
    assert_eq!(status, 403);

    let mut command = sandbox.command();
    command
        .args(["serve", "--port", "0"])
        .env("SFN_LOCAL_ALLOW_HOSTS", "*");
    let any = Served::start(command);
    assert_eq!(curl(any.port, "anything.example", &[], "/").0, 200);
}

/// Reads until the server closes the connection; what it sent, or a failure if it was still
/// open after 30 s (the server's timeouts here are half a second).
fn read_until_closed(stream: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!(
                "the connection was still open after 30 s ({e}); got {:?}",
                String::from_utf8_lossy(&got)
            ),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn half_sent_requests_slow_bodies_and_idle_connections_are_closed() {
    let sandbox = Sandbox::new();
    let served = Served::serve(
        &sandbox,
        &["--header-timeout", "0.5", "--body-timeout", "0.5"],
    );

    // A head that never ends.
    let mut half = served.connect();
    half.write_all(b"POST / HTTP/1.1\r\nHost: localhost\r\nX-Amz-Target: Awsstep")
        .unwrap();
    let got = read_until_closed(&mut half);
    assert!(!got.contains("200 OK"), "{got}");

    // A body that never ends: AWS's error naming the flag, then the connection closes.
    let mut slow = served.connect();
    slow.write_all(
        b"POST / HTTP/1.1\r\nHost: localhost\r\nX-Amz-Target: AWSStepFunctions.ListStateMachines\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: 100\r\n\r\n{\"maxRes",
    )
    .unwrap();
    let got = read_until_closed(&mut slow);
    assert!(got.starts_with("HTTP/1.1 400"), "{got}");
    assert!(got.contains("--body-timeout"), "{got}");

    // A keep-alive connection that goes idle after its answer.
    let mut idle = served.connect();
    idle.write_all(b"GET /console/executions HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let got = read_until_closed(&mut idle);
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");

    // The server still answers.
    assert_eq!(served.call("ListStateMachines", json!({})).0, 200);
}

#[test]
fn connections_over_the_cap_wait_and_the_log_says_so() {
    let sandbox = Sandbox::new();
    let served = Served::serve(&sandbox, &["--max-connections", "2"]);
    // Two connections that hold their place (half a head: the 10 s header timeout is theirs).
    let mut held: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = served.connect();
            s.write_all(b"GET / HTTP/1.1\r\n").unwrap();
            s
        })
        .collect();
    let until = Instant::now() + Duration::from_secs(30);
    while !served.log().contains("connections are open") {
        assert!(Instant::now() < until, "no log line: {}", served.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = served.log();
    assert!(
        log.contains("2 connections are open, the most --max-connections allows"),
        "{log}"
    );
    // A third waits unanswered while the two are open...
    let mut third = served.connect();
    third
        .write_all(
            b"GET /console/executions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
    third
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 64];
    let waited = third.read(&mut buf);
    assert!(
        matches!(&waited, Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)),
        "answered over the cap: {waited:?}"
    );
    // ...and is answered once one of them closes.
    held.pop();
    third
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let got = read_until_closed(&mut third);
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert_eq!(served.log().matches("connections are open").count(), 1);
}

/// A Task state of the HTTP Task calling `url`.
fn http_task(url: &str) -> String {
    json!({"Type": "Task", "Resource": "arn:aws:states:::http:invoke",
           "Parameters": {"ApiEndpoint": url, "Method": "GET",
                          "Authentication": {"ConnectionArn": "arn:aws:events:us-east-1:123456789012:connection/c/1"}},
           "End": true})
    .to_string()
}

/// A listener no one should call: `accept` says whether someone did.
fn untouched_listener() -> (std::net::TcpListener, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/secret", listener.local_addr().unwrap());
    (listener, url)
}

#[test]
fn http_tasks_in_serve_call_nothing_unless_allowed() {
    let sandbox = Sandbox::new();
    let served = Served::serve(&sandbox, &[]);
    let (listener, url) = untouched_listener();

    // TestState: refused with a clear error, and nothing was called.
    let (status, answer) = served.call(
        "TestState",
        json!({"definition": http_task(&url), "roleArn": ROLE}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["status"], "FAILED", "{answer}");
    assert_eq!(answer["error"], "States.Runtime");
    let cause = answer["cause"].as_str().unwrap();
    assert!(
        cause.contains(&url) && cause.contains("--allow-http-invoke"),
        "{cause}"
    );

    // An execution: fails the same way.
    let machine = json!({"StartAt": "Call", "States": {"Call": serde_json::from_str::<Value>(&http_task(&url)).unwrap()}});
    let (status, created) = served.call(
        "CreateStateMachine",
        json!({"name": "caller", "definition": machine.to_string(), "roleArn": ROLE}),
    );
    assert_eq!(status, 200, "{created}");
    let (_, started) = served.call(
        "StartExecution",
        json!({"stateMachineArn": created["stateMachineArn"]}),
    );
    let arn = started["executionArn"].clone();
    let until = Instant::now() + Duration::from_secs(60);
    let described = loop {
        let (_, d) = served.call("DescribeExecution", json!({"executionArn": arn}));
        if d["status"] != "RUNNING" {
            break d;
        }
        assert!(Instant::now() < until, "the execution never ended");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(described["status"], "FAILED", "{described}");
    assert_eq!(described["error"], "States.Runtime");
    assert!(described["cause"]
        .as_str()
        .unwrap()
        .contains("--allow-http-invoke"));
    assert_eq!(
        listener.accept().map(|_| ()).unwrap_err().kind(),
        ErrorKind::WouldBlock,
        "the HTTP Task reached the listener"
    );

    // Allowed for other hosts only: still refused, naming the list.
    let other = Served::serve(&sandbox, &["--allow-http-invoke", "api.example.com"]);
    let (_, answer) = other.call(
        "TestState",
        json!({"definition": http_task(&url), "roleArn": ROLE}),
    );
    assert_eq!(answer["error"], "States.Runtime", "{answer}");
    assert!(answer["cause"]
        .as_str()
        .unwrap()
        .contains("api.example.com"));

    // Allowed for this host: called.
    let (api, request) = common::http_api::one_shot("200 OK", r#"{"ok":true}"#);
    let host = api.trim_start_matches("http://").to_owned();
    let allowed = Served::serve(&sandbox, &["--allow-http-invoke", &host]);
    let (_, answer) = allowed.call(
        "TestState",
        json!({"definition": http_task(&format!("{api}/orders")), "roleArn": ROLE}),
    );
    assert_eq!(answer["status"], "SUCCEEDED", "{answer}");
    assert!(request.join().unwrap().starts_with("GET /orders"));
    drop(listener);
}

#[test]
fn a_non_loopback_address_is_warned_about_and_refused_with_task_bindings() {
    let sandbox = Sandbox::new();
    let bound = sandbox.run(&[
        "serve", "--bind", "0.0.0.0", "--port", "0", "--task", "M:S=true",
    ]);
    bound.assert_error(2, "--allow-remote");
    assert!(bound
        .stderr
        .contains("could start executions that run those commands"));

    let served = Served::serve(
        &sandbox,
        &["--bind", "0.0.0.0", "--task", "M:S=true", "--allow-remote"],
    );
    assert!(
        served
            .log()
            .contains("warning: listening on 0.0.0.0, not only loopback"),
        "{}",
        served.log()
    );
    let mut command = sandbox.command();
    command.args(["console", "--port", "0", "--bind", "0.0.0.0"]);
    let console = Served::start(command);
    assert!(console.log().contains("warning: listening on 0.0.0.0"));
    // Loopback says nothing.
    let quiet = Served::serve(&sandbox, &["--task", "M:S=true"]);
    assert!(!quiet.log().contains("warning"), "{}", quiet.log());
}

/// Regression (#38): `--allow-host '*'` lets a rebinding page in as surely as a public
/// address, so it gets the same rule: refused with bindings (or an HTTP proxy to anywhere)
/// unless --allow-remote, on any bind; warned otherwise. The same for `--allow-http-invoke`
/// of any host on an address other than loopback.
#[test]
fn any_host_and_a_proxy_to_anywhere_are_exposures_too() {
    let sandbox = Sandbox::new();
    let star = sandbox.run(&[
        "serve",
        "--port",
        "0",
        "--allow-host",
        "*",
        "--task",
        "M:S=true",
    ]);
    star.assert_error(2, "--allow-remote");
    assert!(star.stderr.contains("any web page"), "{}", star.stderr);
    let proxy = sandbox.run(&[
        "serve",
        "--port",
        "0",
        "--bind",
        "0.0.0.0",
        "--allow-http-invoke",
    ]);
    proxy.assert_error(2, "--allow-http-invoke of any host");
    let listed = Served::serve(
        &sandbox,
        &[
            "--bind",
            "0.0.0.0",
            "--allow-http-invoke",
            "api.example.com",
        ],
    );
    assert!(
        listed.log().contains("not only loopback"),
        "{}",
        listed.log()
    );
    let warned = Served::serve(&sandbox, &["--allow-host", "*"]);
    assert!(
        warned.log().contains("warning: --allow-host '*'"),
        "{}",
        warned.log()
    );
}

/// A SAM template with a function whose code sfn-local runs (CodeUri and Handler), the
/// machine that calls it, and the code, written into `sandbox`; returns the template's path.
fn template_with_lambda_code(sandbox: &Sandbox) -> String {
    std::fs::create_dir_all(sandbox.path("fn")).unwrap();
    sandbox.write(
        "fn/app.py",
        "def handler(event, context):\n    return event\n",
    );
    let template = sandbox.write(
        "template.yaml",
        "Transform: AWS::Serverless-2016-10-31
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: fn/, Runtime: python3.12, Handler: app.handler}
  Machine:
    Type: AWS::Serverless::StateMachine
    Properties:
      Definition:
        StartAt: T
        States:
          T: {Type: Task, Resource: !GetAtt Fn.Arn, End: true}
",
    );
    template.to_str().unwrap().to_owned()
}

/// Regression (#47): a served template's Lambda code is a command any client can run with
/// input of its choosing, so it is refused where a `--task` binding is: with `--allow-host
/// '*'`, with a public suffix (`.com`, which any page can get a name under), and on an
/// address other than loopback (the Docker image's SFN_LOCAL_BIND), unless --allow-remote
/// (which the image also sets). A private suffix such as `.internal` is not an exposure.
#[test]
fn a_template_with_lambda_code_is_a_command_binding_for_exposure() {
    let sandbox = Sandbox::new();
    let template = template_with_lambda_code(&sandbox);
    let serve = |extra: &[&str]| {
        let mut args = vec!["serve", "--port", "0", "--template", &template];
        args.extend(extra);
        sandbox.run(&args)
    };
    let star = serve(&["--allow-host", "*"]);
    star.assert_error(2, "--allow-remote");
    assert!(star.stderr.contains("Lambda functions"), "{}", star.stderr);
    let suffix = serve(&["--allow-host", "sfn,.com"]);
    suffix.assert_error(2, "--allow-remote");
    assert!(suffix.stderr.contains("under .com"), "{}", suffix.stderr);
    let image_env = [
        ("SFN_LOCAL_BIND", "0.0.0.0"),
        ("SFN_LOCAL_ALLOW_HOSTS", "<dotless>"),
    ];
    let args = ["serve", "--port", "0", "--template", &template];
    sandbox
        .run_env(&args, &image_env)
        .assert_error(2, "--allow-remote");

    let allowed = Served::serve(
        &sandbox,
        &[
            "--template",
            &template,
            "--allow-host",
            "*",
            "--allow-remote",
        ],
    );
    assert!(allowed.log().contains("warning: --allow-host '*'"));
    let private = Served::serve(
        &sandbox,
        &["--template", &template, "--allow-host", ".internal"],
    );
    assert!(!private.log().contains("warning"), "{}", private.log());
    let mut command = sandbox.command();
    command.args(["serve", "--port", "0", "--template", &template]);
    command.envs(image_env).env("SFN_LOCAL_ALLOW_REMOTE", "1");
    let image = Served::start(command);
    assert!(image.log().contains("not only loopback"), "{}", image.log());
}

/// Regression (#47): `--allow-host .com` lets in any page that registers a name under .com,
/// as `*` does: warned about, and refused with `--task` bindings unless --allow-remote.
#[test]
fn a_public_suffix_in_allow_host_counts_as_any_host() {
    let sandbox = Sandbox::new();
    let bound = sandbox.run(&[
        "serve",
        "--port",
        "0",
        "--allow-host",
        ".io",
        "--task",
        "M:S=true",
    ]);
    bound.assert_error(2, "--allow-remote");
    assert!(
        bound.stderr.contains("--allow-host .io"),
        "{}",
        bound.stderr
    );
    let warned = Served::serve(&sandbox, &["--allow-host", ".co.uk"]);
    assert!(
        warned.log().contains("warning: --allow-host .co.uk"),
        "{}",
        warned.log()
    );
}

/// `<dotless>` (the Docker image's default) answers compose service names, localhost and IP
/// addresses, and refuses any name with a dot: a rebinding page's.
#[test]
fn dotless_names_are_answered_and_dotted_ones_refused() {
    let sandbox = Sandbox::new();
    let served = Served::serve(&sandbox, &["--allow-host", "<dotless>"]);
    let port = served.port;
    for host in ["sfn", "stepfunctions:8083", "localhost", "127.0.0.1"] {
        assert_eq!(curl(port, host, &[], "/").0, 200, "{host}");
    }
    for host in ["evil.example", "sfn.evil.example:8083"] {
        assert_eq!(curl(port, host, &[], "/").0, 403, "{host}");
    }
}

#[test]
fn folders_created_for_a_database_are_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = Sandbox::new();
    let file = sandbox.write(
        "pass.asl.json",
        r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#,
    );
    let db = sandbox.path("new/deeper/runs.db");
    let out = sandbox.run(&["run", file.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for folder in ["new", "new/deeper"] {
        let mode = std::fs::metadata(sandbox.path(folder))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "{folder}: {mode:o}");
    }
    let mode = std::fs::metadata(&db).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}
