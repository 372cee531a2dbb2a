//! A one-shot HTTP API on localhost, for HTTP Tasks (`arn:aws:states:::http:invoke`).

/// A one-shot HTTP API on localhost: answers one request with `status` and `body`, and hands
/// back the request it got (head and body) through the join handle.
pub fn one_shot(status: &str, body: &str) -> (String, std::thread::JoinHandle<String>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nX-Trace: t-1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let handle = std::thread::spawn(move || {
        // No caller within a minute (the test failed before calling): give up, never hang.
        listener.set_nonblocking(true).unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut stream = loop {
            match listener.accept() {
                Ok((stream, _)) => break stream,
                Err(_) if std::time::Instant::now() < until => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                Err(_) => return String::new(),
            }
        };
        stream.set_nonblocking(false).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(60)))
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        // Read the head, then as much body as Content-Length says.
        while let Ok(n) = stream.read(&mut buf) {
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap())
                    })
                    .unwrap_or(0);
                if got.len() >= end + 4 + length {
                    break;
                }
            }
            if n == 0 {
                break;
            }
        }
        stream.write_all(answer.as_bytes()).unwrap();
        String::from_utf8_lossy(&got).to_string()
    });
    (url, handle)
}

/// One unsigned AWS JSON 1.0 call of Step Functions' `operation` (`CreateStateMachine`, ...) to
/// a server at `authority` (`127.0.0.1:PORT`): the whole response, head and body.
pub fn sfn_call(authority: &str, operation: &str, body: &str) -> String {
    let headers = format!(
        "Content-Type: application/x-amz-json-1.0\r\nX-Amz-Target: AWSStepFunctions.{operation}"
    );
    post(authority, "/", &headers, body)
}

/// `POST PATH` to a server at `authority` with `headers` (CRLF-separated lines) and `body`,
/// addressed to localhost: the whole response, head and body.
pub fn post(authority: &str, path: &str, headers: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(authority).expect("connect to serve");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: localhost\r\n{headers}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

/// A response's status and its body as JSON (`Null` when the body is not JSON).
pub fn status_and_json(response: &str) -> (u16, serde_json::Value) {
    let status = response
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("");
    (
        status,
        serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
    )
}
