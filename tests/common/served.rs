//! A `sfn-local serve` (or `console`) on port 0, run for a test and killed when dropped, and
//! curl for requests addressed to a chosen `Host`.

use super::Sandbox;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running server (`serve` or `console` on port 0), killed when dropped.
pub struct Served {
    pub child: Child,
    pub port: u16,
    log: Arc<Mutex<String>>,
}

impl Served {
    /// Starts `command` (whose stderr is piped) and waits for the address it prints.
    pub fn start(mut command: Command) -> Served {
        let mut child = command.spawn().expect("spawn sfn-local");
        let log = Arc::new(Mutex::new(String::new()));
        let pipe = child.stderr.take().expect("stderr");
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let mut served = Served {
            child,
            port: 0,
            log,
        };
        let until = Instant::now() + Duration::from_secs(60);
        while served.port == 0 {
            let log = served.log();
            if let Some(port) = log
                .split("http://127.0.0.1:")
                .nth(1)
                .or_else(|| log.split("http://0.0.0.0:").nth(1))
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|p| p.parse().ok())
            {
                served.port = port;
            }
            assert!(Instant::now() < until, "the server did not start: {log}");
            std::thread::sleep(Duration::from_millis(20));
        }
        served
    }

    /// `sfn-local serve --port 0 ARGS`.
    pub fn serve(sandbox: &Sandbox, args: &[&str]) -> Served {
        let mut command = sandbox.command();
        command.args(["serve", "--port", "0"]).args(args);
        Served::start(command)
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        stream
    }

    /// One API call addressed to localhost: the status and the body as JSON.
    pub fn call(&self, operation: &str, body: Value) -> (u16, Value) {
        let (status, text) = curl(
            self.port,
            "localhost",
            &[
                "-X",
                "POST",
                "-H",
                &format!("X-Amz-Target: AWSStepFunctions.{operation}"),
                "-H",
                "Content-Type: application/x-amz-json-1.0",
                "--data-binary",
                &body.to_string(),
            ],
            "/",
        );
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        super::kill(&mut self.child);
    }
}

/// curl, with `Host: HOST` on a request to 127.0.0.1: the status and the body.
pub fn curl(port: u16, host: &str, args: &[&str], path: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "-S", "--max-time", "30", "-w", "\n%{http_code}"])
        .args(["-H", &format!("Host: {host}")])
        .args(args)
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output()
        .expect("curl (.ci/deps installs it)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", &text));
    (status.trim().parse().unwrap_or(0), body.to_owned())
}
