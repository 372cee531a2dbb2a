//! The console in a real browser: headless Chromium driven through chromedriver's WebDriver HTTP
//! API opens an execution waiting for its task token, clicks "Send success", and watches the
//! execution turn SUCCEEDED; plus the pages and form posts over plain HTTP. And what a page
//! from another site can do with the console open in the same browser: nothing (a rebinding
//! page reads and writes nothing, a cross-site form is refused, framing is refused).
//!
//! Chromium and chromedriver are Debian's `chromium` and `chromium-driver`, installed by
//! `.ci/deps`. Screenshots go to `$SFN_LOCAL_SCREENSHOTS` when it is set (the README's come
//! from there), else into the test's temporary folder.

mod common;

use common::Sandbox;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const APPROVAL: &str = r#"{
  "Comment": "Waits for a person to approve, then finishes.",
  "StartAt": "Prepare",
  "States": {
    "Prepare": {"Type": "Pass", "Result": {"order": 42}, "Next": "Approve"},
    "Approve": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
      "Parameters": {"token.$": "$$.Task.Token", "order.$": "$.order"},
      "TimeoutSeconds": 3600, "HeartbeatSeconds": 600,
      "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Rejected"}], "Next": "Ship"},
    "Ship": {"Type": "Pass", "End": true},
    "Rejected": {"Type": "Fail", "Error": "Rejected"}
  }
}"#;

/// One HTTP/1.1 request on a fresh connection; returns status and body.
fn http(port: u16, method: &str, path: &str, body: Option<(&str, &str)>) -> (u16, String) {
    let (status, _, body) = http_with(port, method, path, body, "");
    (status, body)
}

/// One HTTP/1.1 request with `extra` header lines (each ending in CRLF); returns status,
/// head and body.
fn http_with(
    port: u16,
    method: &str,
    path: &str,
    body: Option<(&str, &str)>,
    extra: &str,
) -> (u16, String, String) {
    let (status, head, raw) = http_bytes(port, method, path, body, extra);
    (status, head, String::from_utf8_lossy(&raw).into_owned())
}

/// [`http_with`], the body's bytes as they came (a PNG).
fn http_bytes(
    port: u16,
    method: &str,
    path: &str,
    body: Option<(&str, &str)>,
    extra: &str,
) -> (u16, String, Vec<u8>) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let (content_type, body) = body.unwrap_or(("application/json", ""));
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra}\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    // Read the head, then exactly Content-Length bytes (chromedriver may keep the connection
    // open), or chunks, or to the end.
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let lower = head.to_ascii_lowercase();
    let length = lower
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    let mut raw = Vec::new();
    if let Some(n) = length {
        raw.resize(n, 0);
        reader.read_exact(&mut raw).unwrap();
    } else if lower.contains("transfer-encoding: chunked") {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).unwrap();
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 {
                break;
            }
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk).unwrap();
            raw.extend_from_slice(&chunk[..n]);
        }
    } else {
        reader.read_to_end(&mut raw).unwrap();
    }
    (status, head, raw)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills a child process when dropped (a failing test leaves nothing running).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `sfn-local console --port 0` on the sandbox's database; returns it and its port.
fn console(sandbox: &Sandbox) -> (Running, u16) {
    let mut child = sandbox
        .command()
        .args(["console", "--port", "0"])
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    (Running(child), port)
}

/// Starts `run` of the approval machine and waits until its task token is issued.
fn waiting_execution(sandbox: &Sandbox, name: &str) -> (Child, String) {
    let file = sandbox.write(&format!("{name}.asl.json"), APPROVAL);
    let mut child = sandbox.spawn(&["run", file.to_str().unwrap(), "--name", name]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut token = None;
    while token.is_none() && Instant::now() < deadline {
        let listed = sandbox.run(&["list-tasks", "--execution-arn", name, "--format", "json"]);
        if listed.code == 0 {
            token = listed.json()["tasks"][0]["taskToken"]
                .as_str()
                .map(str::to_owned);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    match token {
        Some(token) => (child, token),
        None => {
            common::kill(&mut child);
            panic!("no task token appeared");
        }
    }
}

fn form_encode(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| {
            let enc: String = v
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                        (b as char).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect();
            format!("{k}={enc}")
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// The console's form token, as its execution page carries it.
fn csrf_of(page: &str) -> String {
    page.split(r#"name="csrf" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no csrf field in {page}"))
        .to_owned()
}

/// Whether the execution still waits for `token`, with no answer in its history.
fn still_waiting(sandbox: &Sandbox, name: &str, token: &str) {
    let listed = sandbox.run(&["list-tasks", "--execution-arn", name, "--format", "json"]);
    assert_eq!(
        listed.json()["tasks"][0]["taskToken"].as_str(),
        Some(token),
        "{}",
        listed.stdout
    );
    let history = sandbox.history(name);
    let types = common::types(&history);
    assert!(
        !types.iter().any(|t| t.starts_with("TaskSucceeded")
            || t.starts_with("TaskFailed")
            || t.starts_with("Execution") && t != "ExecutionStarted"),
        "{types:?}"
    );
}

#[test]
fn cross_site_form_posts_are_refused_and_change_nothing() {
    let sandbox = Sandbox::new();
    let (run, token) = waiting_execution(&sandbox, "approve-csrf");
    let (_console, port) = console(&sandbox);
    let csrf = csrf_of(&http(port, "GET", "/console/execution?arn=approve-csrf", None).1);
    let form = |csrf: &str| {
        form_encode(&[
            ("token", &token),
            ("execution", "approve-csrf"),
            ("output", r#"{"forged":true}"#),
            ("csrf", csrf),
        ])
    };
    let post = |body: &str, extra: &str| {
        http_with(
            port,
            "POST",
            "/console/tasks/success",
            Some(("application/x-www-form-urlencoded", body)),
            extra,
        )
    };
    // What a browser says of a form on another site, even with the right token.
    for extra in [
        "Origin: http://evil.test\r\n".to_owned(),
        "Origin: null\r\n".to_owned(),
        format!("Origin: http://localhost:{port}\r\n"),
        "Sec-Fetch-Site: cross-site\r\n".to_owned(),
        "Sec-Fetch-Site: same-site\r\n".to_owned(),
    ] {
        let (status, _, page) = post(&form(&csrf), &extra);
        assert_eq!(status, 403, "{extra}: {page}");
        assert!(page.contains("its own pages"), "{page}");
    }
    // A form without this process's token (made elsewhere, or before a restart).
    for stale in ["", "0000", &"ab".repeat(32)] {
        let (status, _, page) = post(&form(stale), "");
        assert_eq!(status, 403, "{stale}: {page}");
        assert!(page.contains("reload the page"), "{page}");
    }
    still_waiting(&sandbox, "approve-csrf", &token);
    // The console's own page, as the browser sends it, is taken.
    let own = format!("Origin: http://127.0.0.1:{port}\r\nSec-Fetch-Site: same-origin\r\n");
    let (status, _, _) = post(&form(&csrf), &own);
    assert_eq!(status, 303);
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success());
}

#[test]
fn pages_forbid_framing_and_run_only_the_consoles_script() {
    let sandbox = Sandbox::new();
    let (_console, port) = console(&sandbox);
    for path in ["/", "/console/executions", "/console/execution?arn=nope"] {
        let (_, head, _) = http_with(port, "GET", path, None, "");
        let head = head.to_ascii_lowercase();
        assert!(head.contains("x-frame-options: deny"), "{path}: {head}");
        let csp = head
            .lines()
            .find_map(|l| l.strip_prefix("content-security-policy: "))
            .unwrap_or_else(|| panic!("{path}: no CSP in {head}"));
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(csp.contains("script-src 'self';"), "{csp}");
        assert!(!csp.contains("unsafe-eval"), "{csp}");
        assert!(head.contains("x-content-type-options: nosniff"), "{head}");
        assert!(head.contains("cache-control: no-store"), "{head}");
        assert!(!head.contains("access-control-allow"), "no CORS: {head}");
    }
}

#[test]
fn pages_list_filter_and_answer_over_http() {
    let sandbox = Sandbox::new();
    let done = sandbox.run(&[
        "run",
        "definitions/order-pipeline.asl.json",
        "--input-file",
        "fixtures/order.json",
        "--name",
        "order-1",
    ]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    let (run, token) = waiting_execution(&sandbox, "approve-http");
    let (_console, port) = console(&sandbox);

    let (status, home) = http(port, "GET", "/", None);
    assert_eq!(status, 200);
    assert!(
        home.contains("order-pipeline") && home.contains("approve-http"),
        "{home}"
    );
    let (_, running) = http(port, "GET", "/console/executions?status=RUNNING", None);
    assert!(
        running.contains("approve-http") && !running.contains(">order-1<"),
        "{running}"
    );
    let (_, succeeded) = http(port, "GET", "/console/executions?status=SUCCEEDED", None);
    assert!(succeeded.contains(">order-1<") && !succeeded.contains("approve-http"));
    let (status, _) = http(port, "GET", "/console/executions?status=BOGUS", None);
    assert_eq!(status, 400);
    let (status, _) = http(port, "GET", "/console/execution?arn=nope", None);
    assert_eq!(status, 404);
    let (status, page) = http(port, "GET", "/console/execution?arn=order-1", None);
    assert_eq!(status, 200);
    assert!(
        page.contains("<svg") && page.contains("MapIterationSucceeded"),
        "{page}"
    );
    // #51: the picture offered as a PNG download too, the SVG's picture at the SVG's size.
    assert!(
        page.contains(r#"href="/console/execution/graph.png?arn="#),
        "{page}"
    );
    let (_, svg) = http(
        port,
        "GET",
        "/console/execution/graph.svg?arn=order-1",
        None,
    );
    let (status, head, png) = http_bytes(
        port,
        "GET",
        "/console/execution/graph.png?arn=order-1",
        None,
        "",
    );
    assert_eq!(status, 200, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: image/png"),
        "{head}"
    );
    assert_eq!(common::png_size(&png), common::svg_size(&svg));
    // Each event's step is the state it belongs to, read from the links (#36): a Parallel's
    // and a Map's own events name them, not the last state a branch entered.
    for (event, step) in [
        ("ParallelStateSucceeded", "Ship"),
        ("MapIterationSucceeded", "PriceItems"),
    ] {
        let row = format!("<td>{event}</td><td>{step}</td>");
        assert!(page.contains(&row), "{row}: {page}");
    }
    let (status, css) = http(port, "GET", "/console/assets/console.css", None);
    assert_eq!(status, 200);
    assert!(css.contains(".status"));
    // The API's `POST /` is not the console's.
    let (status, _) = http(port, "POST", "/", Some(("application/json", "{}")));
    assert_eq!(status, 405);

    // Bad output is refused and changes nothing; a heartbeat and a success are taken.
    let arn = "approve-http";
    let csrf = csrf_of(&http(port, "GET", "/console/execution?arn=approve-http", None).1);
    let bad = form_encode(&[
        ("token", &token),
        ("execution", arn),
        ("output", "{not json"),
        ("csrf", &csrf),
    ]);
    let (status, _) = http(
        port,
        "POST",
        "/console/tasks/success",
        Some(("application/x-www-form-urlencoded", &bad)),
    );
    assert_eq!(status, 303);
    let (_, page) = http(port, "GET", "/console/execution?arn=approve-http", None);
    assert!(page.contains("Send success"), "still waiting");
    let beat = form_encode(&[("token", &token), ("execution", arn), ("csrf", &csrf)]);
    let (status, _) = http(
        port,
        "POST",
        "/console/tasks/heartbeat",
        Some(("application/x-www-form-urlencoded", &beat)),
    );
    assert_eq!(status, 303);
    let ok = form_encode(&[
        ("token", &token),
        ("execution", arn),
        ("output", r#"{"ok":true}"#),
        ("csrf", &csrf),
    ]);
    let (status, _) = http(
        port,
        "POST",
        "/console/tasks/success",
        Some(("application/x-www-form-urlencoded", &ok)),
    );
    assert_eq!(status, 303);
    let out = run.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""ok":true"#));
    // A second answer to the closed token is refused with AWS's TaskTimedOut.
    let (_, _) = http(
        port,
        "POST",
        "/console/tasks/success",
        Some(("application/x-www-form-urlencoded", &ok)),
    );
    let history = sandbox.history("approve-http");
    assert_eq!(history.last().unwrap()["type"], "ExecutionSucceeded");
}

/// chromedriver on a free port, waited for until ready.
fn chromedriver() -> (Running, u16) {
    let port = free_port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver (Debian's chromium-driver; .ci/deps installs it)");
    let running = Running(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            let (status, body) = http(port, "GET", "/status", None);
            if status == 200 && body.contains("\"ready\":true") {
                return (running, port);
            }
        }
        assert!(Instant::now() < deadline, "chromedriver did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A WebDriver session (W3C protocol over HTTP).
struct Browser {
    port: u16,
    session: String,
}

impl Browser {
    fn open(port: u16, profile: &std::path::Path) -> Browser {
        Browser::open_with(port, profile, &[])
    }

    /// A browser with more command-line switches.
    fn open_with(port: u16, profile: &std::path::Path, switches: &[&str]) -> Browser {
        let mut args = vec![
            json!("--headless"),
            json!("--no-sandbox"),
            json!("--disable-gpu"),
            json!("--disable-background-networking"),
            json!("--disable-component-update"),
            json!("--disable-sync"),
            json!("--no-first-run"),
            json!(format!("--user-data-dir={}", profile.display())),
            json!("--window-size=1280,1000"),
        ];
        args.extend(switches.iter().map(|s| json!(s)));
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}
        }}});
        let (status, body) = http(
            port,
            "POST",
            "/session",
            Some(("application/json", &caps.to_string())),
        );
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        Browser {
            port,
            session: v["value"]["sessionId"].as_str().unwrap().to_owned(),
        }
    }

    fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let text = body.to_string();
        let (status, out) = http(
            self.port,
            method,
            &path,
            (method == "POST").then_some(("application/json", text.as_str())),
        );
        let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        assert_eq!(status, 200, "{method} {path}: {out}");
        v["value"].clone()
    }

    fn go(&self, url: &str) {
        self.call("POST", "/url", json!({"url": url}));
    }

    fn find(&self, css: &str) -> Option<String> {
        let path = format!("/session/{}/element", self.session);
        let body = json!({"using": "css selector", "value": css}).to_string();
        let (status, out) = http(self.port, "POST", &path, Some(("application/json", &body)));
        if status != 200 {
            eprintln!("find {css}: {status} {out}");
            return None;
        }
        let v: Value = serde_json::from_str(&out).ok()?;
        v["value"]["element-6066-11e4-a52e-4f735466cecf"]
            .as_str()
            .map(str::to_owned)
    }

    /// The text of the element `css` selects, read in one script call: the page's live refresh
    /// replaces elements, so a found element can be stale by the time its text is asked for.
    fn text(&self, css: &str) -> Option<String> {
        let script = "const e = document.querySelector(arguments[0]); return e ? e.textContent.trim() : null;";
        self.call(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": [css]}),
        )
        .as_str()
        .map(str::to_owned)
    }

    /// Clicks the element `css` selects. The page's live refresh replaces its elements every
    /// second, so one found just before may be stale by the click: find it again then.
    fn click(&self, css: &str) {
        for _ in 0..10 {
            let element = self.find(css).unwrap_or_else(|| panic!("no {css}"));
            let path = format!("/session/{}/element/{element}/click", self.session);
            let (status, out) = http(self.port, "POST", &path, Some(("application/json", "{}")));
            if status == 200 {
                return;
            }
            assert!(out.contains("stale element"), "click {css}: {out}");
        }
        panic!("{css} went stale ten times in a row");
    }

    fn screenshot(&self, file: &std::path::Path) {
        use base64::Engine as _;
        let b64 = self.call("GET", "/screenshot", Value::Null);
        let png = base64::engine::general_purpose::STANDARD
            .decode(b64.as_str().unwrap())
            .unwrap();
        std::fs::write(file, png).unwrap();
    }

    fn close(&self) {
        let _ = http(
            self.port,
            "DELETE",
            &format!("/session/{}", self.session),
            None,
        );
    }
}

fn screenshots(sandbox: &Sandbox) -> PathBuf {
    match std::env::var_os("SFN_LOCAL_SCREENSHOTS") {
        Some(dir) => {
            std::fs::create_dir_all(&dir).unwrap();
            PathBuf::from(dir)
        }
        None => sandbox.dir.path().to_owned(),
    }
}

/// Runs a published definition once (it fails at its first Task: nothing is bound), its
/// `${Name}` placeholders given ARNs, so the console has its picture to show.
fn run_published(sandbox: &Sandbox, path: &str, name: &str) {
    let file = common::realworld_dir().join(path);
    let text = std::fs::read_to_string(&file).unwrap();
    let mut args = vec!["run".to_owned(), file.to_string_lossy().into_owned()];
    args.extend(["--name".to_owned(), name.to_owned()]);
    for part in text.split("${").skip(1) {
        let placeholder = &part[..part.find('}').unwrap()];
        let value =
            format!("{placeholder}=arn:aws:lambda:us-east-1:123456789012:function:{placeholder}");
        args.extend(["--sub".to_owned(), value]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = sandbox.run(&args);
    assert!(out.stderr.contains("FAILED"), "{name}: {}", out.stderr);
}

/// Run in the page: where the browser drew each state's shape, its texts, the edge labels and
/// the cluster labels, against the boxes the layout gave them (`data-box`); the problems found.
const SAME_GEOMETRY: &str = r#"
const svg = document.querySelector(arguments[0]);
const problems = [];
const boxOf = el => el.dataset.box.split(' ').map(Number);
const within = (r, b) => r.x >= b[0] - 0.5 && r.y >= b[1] - 0.5
    && r.x + r.width <= b[0] + b[2] + 0.5 && r.y + r.height <= b[1] + b[3] + 0.5;
for (const g of svg.querySelectorAll('g[data-box]')) {
  const b = boxOf(g), r = g.querySelector('.shape').getBBox();
  if ([r.x - b[0], r.y - b[1], r.width - b[2], r.height - b[3]].some(d => Math.abs(d) > 1))
    problems.push(`${g.dataset.name} drawn at ${[r.x, r.y, r.width, r.height]}, laid out at ${b}`);
  for (const t of g.querySelectorAll(':scope > text'))
    if (!within(t.getBBox(), b)) problems.push(`'${t.textContent}' overflows the box of ${g.dataset.name}`);
}
for (const e of svg.querySelectorAll('g.edge')) {
  const lines = [...e.querySelectorAll('text')];
  for (const t of lines)
    if (!within(t.getBBox(), boxOf(lines[0]))) problems.push(`edge label '${t.textContent}' overflows its place`);
}
for (const t of svg.querySelectorAll('text.cluster-label'))
  if (!within(t.getBBox(), boxOf(t))) problems.push(`cluster label '${t.textContent}' overflows its place`);
return [svg.querySelectorAll('g[data-box]').length, problems];
"#;

/// #51: three published pictures (a Parallel with a Catch, a distributed Map, and the largest
/// published definition, 27 states) opened in the console in headless Chromium: every shape is
/// drawn where the layout put it, and every text the browser sets (with its own fonts) stays in
/// the place the layout measured for it. Screenshots go where `SFN_LOCAL_SCREENSHOTS` says.
#[test]
fn published_pictures_in_chromium_keep_the_layouts_geometry() {
    let sandbox = Sandbox::new();
    let pictures = [
        (
            "parallel-with-catch",
            "idempotent-workflow-sam/statemachine/statemachine.asl.json",
        ),
        (
            "distributed-map",
            "distributed-data-stream-aggregator/statemachine/statemachine.asl.json",
        ),
        (
            "largest-published",
            "bedrock-evaluations-sam/statemachine/statemachine.asl.json",
        ),
    ];
    for (name, path) in pictures {
        run_published(&sandbox, path, name);
    }
    let (_console, port) = console(&sandbox);
    let (_driver, driver_port) = chromedriver();
    let shots = screenshots(&sandbox);
    let browser = Browser::open(driver_port, &sandbox.path("chromium-profile"));
    let base = format!("http://127.0.0.1:{port}/console/execution");
    for (name, _) in pictures {
        // On the execution's page, and alone (the download), each in full for its screenshot.
        for (url, svg) in [
            (format!("{base}?arn={name}"), ".graph svg"),
            (format!("{base}/graph.svg?arn={name}"), "svg"),
        ] {
            browser.go(&url);
            let script = json!({"script": SAME_GEOMETRY, "args": [svg]});
            let found = browser.call("POST", "/execute/sync", script);
            assert!(found[0].as_u64().unwrap() > 5, "{name}: {found}");
            assert_eq!(found[1], json!([]), "{url}");
        }
        let size = "const s = document.querySelector('svg'); return [s.width.baseVal.value, s.height.baseVal.value];";
        let size = browser.call("POST", "/execute/sync", json!({"script": size, "args": []}));
        let rect = json!({"width": size[0].as_f64().unwrap() + 40.0, "height": size[1].as_f64().unwrap() + 160.0});
        browser.call("POST", "/window/rect", rect);
        browser.screenshot(&shots.join(format!("console-graph-{name}.png")));
    }
    browser.close();
}

#[test]
fn clicking_send_success_in_chromium_turns_the_execution_succeeded() {
    let sandbox = Sandbox::new();
    let done = sandbox.run(&[
        "run",
        "definitions/order-pipeline.asl.json",
        "--input-file",
        "fixtures/order.json",
        "--name",
        "order-1",
    ]);
    assert_eq!(done.code, 0, "{}", done.stderr);
    let (run, _) = waiting_execution(&sandbox, "approve-1");
    let (_console, port) = console(&sandbox);
    let (_driver, driver_port) = chromedriver();
    let shots = screenshots(&sandbox);
    let browser = Browser::open(driver_port, &sandbox.path("chromium-profile"));
    let base = format!("http://127.0.0.1:{port}");

    browser.go(&format!("{base}/"));
    assert!(browser.find("a[href*='machine=']").is_some());
    browser.screenshot(&shots.join("console-state-machines.png"));
    browser.go(&format!("{base}/console/execution?arn=order-1"));
    browser.screenshot(&shots.join("console-order-pipeline.png"));

    browser.go(&format!("{base}/console/execution?arn=approve-1"));
    assert_eq!(
        browser.text("#execution-status").as_deref(),
        Some("RUNNING")
    );
    assert!(
        browser.find("g.waiting[data-name='Approve']").is_some(),
        "Approve drawn as waiting"
    );
    browser.screenshot(&shots.join("console-waiting.png"));
    browser.click("button.success");

    // The form posts, the page comes back, and its live part turns SUCCEEDED.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if browser.text("#execution-status").as_deref() == Some("SUCCEEDED") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the execution never turned SUCCEEDED in the page"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(browser.text("#said").as_deref(), Some("success sent"));
    assert!(browser.find("g.succeeded[data-name='Approve']").is_some());
    assert!(browser
        .find("g.not-entered[data-name='Rejected']")
        .is_some());
    assert!(browser
        .find("tr.event[data-type='ExecutionSucceeded']")
        .is_some());
    browser.screenshot(&shots.join("console-succeeded.png"));
    browser.close();

    let out = run.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Starts `sfn-local serve --port 0` on the sandbox's database; returns it and its port. Its
/// stderr is drained on a thread.
fn serve(sandbox: &Sandbox) -> (Running, u16) {
    let mut child = sandbox
        .command()
        .args(["serve", "--port", "0"])
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let port = loop {
        let line = lines
            .next()
            .and_then(Result::ok)
            .expect("serve said where it listens");
        if let Some(rest) = line.split("listening on http://127.0.0.1:").nth(1) {
            break rest
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| panic!("no port in {line:?}"));
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    (Running(child), port)
}

/// What a rebinding page's script tries, same-origin to itself: read the console and the API,
/// create and start a state machine, answer the waiting task. Each result is `{status, text}`
/// or `{error}`.
const REBINDING_ATTACK: &str = r#"
const [token, execution, done] = arguments;
async function attempt(path, init) {
  try { const r = await fetch(path, init); return {status: r.status, text: await r.text()}; }
  catch (e) { return {error: String(e)}; }
}
const api = (op, body) => attempt('/', {method: 'POST', body: JSON.stringify(body),
  headers: {'X-Amz-Target': 'AWSStepFunctions.' + op, 'Content-Type': 'application/x-amz-json-1.0'}});
(async () => {
  const out = {};
  out.home = await attempt('/');
  out.execution = await attempt('/console/execution?arn=' + encodeURIComponent(execution));
  out.list = await api('ListStateMachines', {});
  out.create = await api('CreateStateMachine', {name: 'planted', roleArn: 'arn:aws:iam::123456789012:role/x',
    definition: '{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}'});
  out.answer = await attempt('/console/tasks/success', {method: 'POST',
    body: new URLSearchParams({token, execution, output: '{"pwned":true}'})});
  done(out);
})();
"#;

/// Frames `src` in the current page; resolves once the frame has loaded (or after 10 s).
const FRAME: &str = r#"
const [src, done] = arguments;
const f = document.createElement('iframe');
f.id = 'framed'; f.src = src; f.width = 800; f.height = 600;
f.onload = () => done('loaded');
setTimeout(() => done('timeout'), 10000);
document.body.appendChild(f);
"#;

impl Browser {
    /// Runs an asynchronous script (its last argument is the callback).
    fn run_async(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/async",
            json!({"script": script, "args": args}),
        )
    }

    /// The URL and text of the frame `#framed`, read from inside it.
    fn framed(&self) -> (String, String) {
        let frame = self.find("#framed").expect("the frame");
        self.call(
            "POST",
            "/frame",
            json!({"id": {"element-6066-11e4-a52e-4f735466cecf": frame}}),
        );
        let read = "return [location.href, document.body ? document.body.innerText : ''];";
        let path = format!("/session/{}/execute/sync", self.session);
        let body = json!({"script": read, "args": []}).to_string();
        let (_, out) = http(self.port, "POST", &path, Some(("application/json", &body)));
        self.call("POST", "/frame/parent", json!({}));
        let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        (
            v["value"][0].as_str().unwrap_or_default().to_owned(),
            v["value"][1].as_str().unwrap_or_default().to_owned(),
        )
    }
}

#[test]
fn a_rebinding_page_in_chromium_can_neither_read_nor_write_nor_frame_the_console() {
    let sandbox = Sandbox::new();
    let (run, token) = waiting_execution(&sandbox, "approve-rebind");
    let (_serve, port) = serve(&sandbox);
    let (_driver, driver_port) = chromedriver();
    // evil.test resolves to 127.0.0.1, as a rebinding site's name does once it has re-pointed.
    let browser = Browser::open_with(
        driver_port,
        &sandbox.path("chromium-profile"),
        &["--host-resolver-rules=MAP evil.test 127.0.0.1"],
    );
    let args = json!([token, "approve-rebind"]);

    // In the page of http://evil.test:PORT, its script gets only refusals.
    browser.go(&format!("http://evil.test:{port}/"));
    let out = browser.run_async(REBINDING_ATTACK, args.clone());
    for key in ["home", "execution", "list", "create", "answer"] {
        assert_eq!(out[key]["status"], 403, "{key}: {}", out[key]);
        let text = out[key]["text"].as_str().unwrap_or_default();
        assert!(text.contains("--allow-host evil.test"), "{key}: {text}");
        assert!(!text.contains(&token), "{key} showed the token");
    }
    // The same script from the console's own origin does read: the test sees a hole when
    // there is one. Its answer still lacks the form token, and is refused.
    browser.go(&format!("http://127.0.0.1:{port}/"));
    let own = browser.run_async(REBINDING_ATTACK, args);
    assert_eq!(own["home"]["status"], 200, "{}", own["home"]);
    assert!(own["execution"]["text"].as_str().unwrap().contains(&token));
    assert_eq!(own["list"]["status"], 200, "{}", own["list"]);
    assert_eq!(own["answer"]["status"], 403, "{}", own["answer"]);
    assert!(own["answer"]["text"]
        .as_str()
        .unwrap()
        .contains("reload the page"));
    let (_, _, listed) = http_with(
        port,
        "POST",
        "/",
        Some(("application/x-amz-json-1.0", "{}")),
        "X-Amz-Target: AWSStepFunctions.ListStateMachines\r\n",
    );
    assert_eq!(
        listed.matches("\"planted\"").count(),
        1,
        "created once, from the console's own origin only: {listed}"
    );
    still_waiting(&sandbox, "approve-rebind", &token);

    // Framed by another site, the execution page stays blank (the browser's error page);
    // a page that allows framing loads in the same frame (the check can see a frame load).
    browser.go(&format!("http://evil.test:{port}/"));
    let victim = format!("http://127.0.0.1:{port}/console/execution?arn=approve-rebind");
    browser.run_async(FRAME, json!([victim]));
    let (url, text) = browser.framed();
    assert!(!url.starts_with("http://127.0.0.1"), "framed: {url}");
    assert!(!text.contains("Send success"), "framed: {text}");
    browser.go(&format!("http://evil.test:{port}/"));
    browser.run_async(FRAME, json!([format!("http://evil.test:{port}/other")]));
    let (url, text) = browser.framed();
    assert!(url.starts_with("http://evil.test"), "{url}");
    assert!(text.contains("--allow-host"), "{text}");
    browser.close();

    // The execution still waits: answer it so `run` ends.
    assert_eq!(sandbox.send_success(&token, "{}").code, 0);
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success());
}
