//! The language server's stdio: LSP's framing (`Content-Length: N`, a blank line, then N bytes
//! of JSON) read here instead of by lsp-server's `Connection::stdio`, which ended the server on
//! a body that is not JSON and allocated whatever a `Content-Length` claimed before any of it
//! arrived (`Content-Length: 1000000000000000` aborted the process).
//!
//! Nothing a client sends ends the server here but `exit` or the end of its input:
//! - a body that is not JSON, or a header that is not LSP's, gets JSON-RPC's ParseError
//!   (-32700, id null), and reading goes on; JSON that is no message gets InvalidRequest
//!   (-32600, with its id when it has one);
//! - a `Content-Length` over [`MESSAGE_BYTES`] gets InvalidRequest (id null: its id is in the
//!   body, which is not read) and its body is read and dropped in chunks, never held, so the
//!   stream stays in step; a body within the limit is held only as its bytes arrive;
//! - where the length is unknown (a malformed header) or a lie (a client that sent less than it
//!   said), the next message is found by its first header line: a JSON body cannot hold
//!   `Content-Length: N` followed by a raw line break (a string escapes control characters,
//!   and the name is no JSON outside one), so such a line begins the next message.
//!
//! The main loop sees lsp-server's [`Connection`] as before: messages in on one channel, out on
//! another, which a writer thread frames onto stdout.

use crossbeam_channel::Sender;
use lsp_server::{Connection, Message};
use serde_json::{json, Value};
use std::io::{self, BufRead, Read, Write};
use std::thread::JoinHandle;

/// The largest message read: a larger one is refused and its body dropped unread.
pub const MESSAGE_BYTES: u64 = 64 * 1024 * 1024;

/// The longest header line; a longer one is a malformed header (LSP's are about 30 bytes).
const HEADER_LINE_BYTES: usize = 1024;

/// The end of a skipped line kept to recognise a header line in it.
const HEADER_TAIL_BYTES: usize = 64;

/// The name that begins a message, matched without regard to case.
const CONTENT_LENGTH: &[u8] = b"content-length:";

/// JSON-RPC's code for a message that is not JSON (or not framed as LSP frames it).
const PARSE_ERROR: i32 = -32700;

/// JSON-RPC's code for JSON that is not a message, and here for a message over the limit.
const INVALID_REQUEST: i32 = -32600;

/// The reader and writer threads of [`stdio`].
pub struct IoThreads {
    reader: JoinHandle<io::Result<()>>,
    writer: JoinHandle<io::Result<()>>,
}

impl IoThreads {
    /// Waits for both threads (the writer ends once the server's sender is dropped, the reader
    /// after `exit` or at the end of stdin) and returns the first error either met.
    pub fn join(self) -> io::Result<()> {
        let writer = self
            .writer
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        let reader = self
            .reader
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        reader.and(writer)
    }
}

/// A connection over stdin and stdout, framed as this module's overview says.
pub fn stdio() -> io::Result<(Connection, IoThreads)> {
    // Rendezvous channels, as lsp-server's: the reader holds one message at a time.
    let (to_server, receiver) = crossbeam_channel::bounded::<Message>(0);
    let (sender, from_server) = crossbeam_channel::bounded::<Message>(0);
    let writer = std::thread::Builder::new()
        .name("sfn-local-lsp-writer".into())
        .spawn(move || {
            from_server
                .into_iter()
                .try_for_each(|message| message.write(&mut io::stdout().lock()))
        })?;
    let reader = std::thread::Builder::new()
        .name("sfn-local-lsp-reader".into())
        .spawn(move || {
            let answer = |error: &Value| write_frame(&mut io::stdout().lock(), &error.to_string());
            read_loop(io::stdin().lock(), &to_server, answer)
        })?;
    let connection = Connection { sender, receiver };
    Ok((connection, IoThreads { reader, writer }))
}

/// Reads messages from `input` and hands them to the server until `exit` or the end of the
/// input; what is no message is answered with `answer`.
fn read_loop(
    input: impl BufRead,
    to_server: &Sender<Message>,
    answer: impl Fn(&Value) -> io::Result<()>,
) -> io::Result<()> {
    let mut reader = Reader::new(input);
    loop {
        match reader.next()? {
            Frame::End => return Ok(()),
            Frame::Refused(error) => answer(&error)?,
            Frame::Message(message) => {
                let exit = matches!(&message, Message::Notification(n) if n.method == "exit");
                // A server that stopped takes nothing more.
                if to_server.send(message).is_err() || exit {
                    return Ok(());
                }
            }
        }
    }
}

/// One frame onto `out`.
fn write_frame(out: &mut impl Write, text: &str) -> io::Result<()> {
    write!(out, "Content-Length: {}\r\n\r\n{text}", text.len())?;
    out.flush()
}

/// What the next look at the input found.
#[derive(Debug)]
enum Frame {
    /// A message for the server.
    Message(Message),
    /// Something that is no message: the error to answer with.
    Refused(Value),
    /// The end of the input.
    End,
}

/// A header block, as read.
#[derive(Debug, PartialEq)]
enum Header {
    /// The input ended.
    End,
    /// A body of this many bytes follows.
    Length(u64),
    /// A body over [`MESSAGE_BYTES`] follows (its length as written; `None` past `u64`).
    TooLarge(String, Option<u64>),
    /// Not LSP's header: why, and the body's length when it was given.
    Malformed(String, Option<u64>),
}

/// What to drop before the next header.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Skip {
    Nothing,
    /// A body of this many bytes (or less, if a header line comes first).
    Bytes(u64),
    /// Everything up to the next header line.
    ToNextHeader,
}

/// The framing state over an input.
struct Reader<R> {
    input: R,
    /// What the last refusal left to drop.
    skip: Skip,
    /// A header line found while dropping: the first of the next header.
    found_header: Option<Vec<u8>>,
}

impl<R: BufRead> Reader<R> {
    fn new(input: R) -> Self {
        Reader {
            input,
            skip: Skip::Nothing,
            found_header: None,
        }
    }

    /// The next message, or what to answer instead.
    fn next(&mut self) -> io::Result<Frame> {
        match std::mem::replace(&mut self.skip, Skip::Nothing) {
            Skip::Nothing => {}
            Skip::Bytes(n) => self.drop_until_header(Some(n))?,
            Skip::ToNextHeader => self.drop_until_header(None)?,
        }
        let (code, message, skip) = match self.header()? {
            Header::End => return Ok(Frame::End),
            Header::Length(length) => return self.body(length),
            Header::TooLarge(written, length) => (
                INVALID_REQUEST,
                format!("a message of {written} bytes is over the {MESSAGE_BYTES}-byte limit of sfn-local lsp; it was skipped unread"),
                length.map_or(Skip::ToNextHeader, Skip::Bytes),
            ),
            Header::Malformed(why, length) => (
                PARSE_ERROR,
                format!("not an LSP header: {why}; skipped to the next Content-Length"),
                length.map_or(Skip::ToNextHeader, Skip::Bytes),
            ),
        };
        self.skip = skip;
        Ok(Frame::Refused(error_answer(Value::Null, code, message)))
    }

    /// Reads a body of `length` bytes (as they arrive: nothing is allocated ahead) and decodes
    /// it.
    fn body(&mut self, length: u64) -> io::Result<Frame> {
        let mut body = Vec::new();
        (&mut self.input).take(length).read_to_end(&mut body)?;
        if (body.len() as u64) < length {
            return Ok(Frame::End);
        }
        Ok(decode(&body))
    }

    /// Reads header lines up to the blank line that ends them.
    fn header(&mut self) -> io::Result<Header> {
        let mut length: Option<Result<u64, String>> = None;
        let mut problem: Option<String> = None;
        let mut started = false;
        loop {
            let line = match self.found_header.take() {
                Some(line) => Line::Text(line),
                None => read_line(&mut self.input, HEADER_LINE_BYTES)?,
            };
            let line = match line {
                Line::End => return Ok(Header::End),
                Line::TooLong => {
                    problem.get_or_insert(format!("a line over {HEADER_LINE_BYTES} bytes"));
                    started = true;
                    continue;
                }
                Line::Text(line) => line,
            };
            let text = String::from_utf8_lossy(trim_line_end(&line)).into_owned();
            match (text.is_empty(), started) {
                // Blank lines between messages are passed over.
                (true, false) => continue,
                (true, true) => break,
                (false, _) => started = true,
            }
            match header_field(&text) {
                Ok(Some(value)) => length = Some(value),
                Ok(None) => {}
                Err(why) => {
                    problem.get_or_insert(why);
                }
            }
        }
        let known = length.as_ref().and_then(|l| l.as_ref().ok()).copied();
        Ok(match (problem, length) {
            (Some(why), _) => Header::Malformed(why, known.filter(|n| *n <= MESSAGE_BYTES)),
            (None, None) => Header::Malformed("no Content-Length".to_owned(), None),
            (None, Some(Ok(n))) if n <= MESSAGE_BYTES => Header::Length(n),
            (None, Some(Ok(n))) => Header::TooLarge(n.to_string(), Some(n)),
            (None, Some(Err(written))) => Header::TooLarge(written, None),
        })
    }

    /// Drops input: `limit` bytes (all when `None`), or up to a header line met on the way,
    /// which is kept as the first line of the next header.
    fn drop_until_header(&mut self, mut limit: Option<u64>) -> io::Result<()> {
        let mut tail: Vec<u8> = Vec::with_capacity(2 * HEADER_TAIL_BYTES);
        while limit != Some(0) {
            let buf = self.input.fill_buf()?;
            if buf.is_empty() {
                return Ok(());
            }
            let most = limit.map_or(buf.len(), |l| {
                buf.len().min(usize::try_from(l).unwrap_or(usize::MAX))
            });
            let (taken, line_ends) = match buf[..most].iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (most, false),
            };
            // Only a line's end can hold a header line's start.
            let kept = taken.min(HEADER_TAIL_BYTES);
            tail.extend_from_slice(&buf[taken - kept..taken]);
            let excess = tail.len().saturating_sub(HEADER_TAIL_BYTES);
            tail.drain(..excess);
            self.input.consume(taken);
            if let Some(l) = limit.as_mut() {
                *l -= taken as u64;
            }
            if line_ends {
                if let Some(start) = header_line_start(&tail) {
                    self.found_header = Some(tail[start..].to_vec());
                    return Ok(());
                }
                tail.clear();
            }
        }
        Ok(())
    }
}

/// A header line's `Content-Length`: `Ok(None)` for another field, `Ok(Some(Err(text)))` for a
/// length past `u64` (too large, not malformed), `Err` for a line that is no header field.
fn header_field(text: &str) -> Result<Option<Result<u64, String>>, String> {
    let Some((name, value)) = text.split_once(':') else {
        return Err(format!("{:?} is not `Name: value`", shorten(text)));
    };
    if !name.trim().eq_ignore_ascii_case("content-length") {
        return Ok(None);
    }
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "Content-Length {:?} is not a number",
            shorten(value)
        ));
    }
    Ok(Some(value.parse::<u64>().map_err(|_| value.to_owned())))
}

/// The first 64 characters of `text`, for a message.
fn shorten(text: &str) -> String {
    text.chars().take(64).collect()
}

/// Where a `Content-Length: N` line starts in `line` (which ends with a line break), if it
/// ends one.
fn header_line_start(line: &[u8]) -> Option<usize> {
    let line = trim_line_end(line);
    let start = line
        .windows(CONTENT_LENGTH.len())
        .rposition(|w| w.eq_ignore_ascii_case(CONTENT_LENGTH))?;
    let number = line[start + CONTENT_LENGTH.len()..].trim_ascii();
    (!number.is_empty() && number.iter().all(u8::is_ascii_digit)).then_some(start)
}

/// `line` without its `\n` or `\r\n`.
fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// One line as read.
enum Line {
    /// The input ended (mid-line or not).
    End,
    /// Over the limit: read to its end and dropped.
    TooLong,
    /// The line with its line break.
    Text(Vec<u8>),
}

/// Reads one line of at most `cap` bytes; a longer one is read to its end and dropped.
fn read_line(input: &mut impl BufRead, cap: usize) -> io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(Line::End);
        }
        let (taken, ends) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        too_long = too_long || line.len() + taken > cap;
        if !too_long {
            line.extend_from_slice(&buf[..taken]);
        }
        input.consume(taken);
        if ends {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Text(line)
            });
        }
    }
}

/// A body as a message, or the error that answers it.
fn decode(body: &[u8]) -> Frame {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            let message = format!("the message is not JSON: {e}");
            return Frame::Refused(error_answer(Value::Null, PARSE_ERROR, message));
        }
    };
    let id = value
        .get("id")
        .filter(|id| id.is_number() || id.is_string())
        .cloned()
        .unwrap_or(Value::Null);
    // An object only: serde reads `[1, 2]` as a response's fields in order.
    let decoded = match value.is_object() {
        true => serde_json::from_value::<Message>(value).map_err(|e| e.to_string()),
        false => Err("it is not an object".to_owned()),
    };
    match decoded {
        Ok(message) => Frame::Message(message),
        Err(why) => {
            let message =
                format!("the message is JSON but no request, notification or response: {why}");
            Frame::Refused(error_answer(id, INVALID_REQUEST, message))
        }
    }
}

/// JSON-RPC's error response.
fn error_answer(id: Value, code: i32, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every frame `input` holds, as the answers and message methods the reader gives.
    fn frames(input: &[u8]) -> Vec<String> {
        let mut reader = Reader::new(input);
        let mut out = Vec::new();
        loop {
            match reader.next().unwrap() {
                Frame::End => return out,
                Frame::Refused(e) => out.push(format!("error {}", e["error"]["code"])),
                Frame::Message(Message::Request(r)) => out.push(r.method),
                Frame::Message(Message::Notification(n)) => out.push(n.method),
                Frame::Message(Message::Response(_)) => out.push("response".into()),
            }
        }
    }

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    const HOVER: &str = r#"{"jsonrpc":"2.0","id":1,"method":"textDocument/hover"}"#;

    #[test]
    fn a_malformed_message_is_a_parse_error_and_reading_goes_on() {
        let input = [
            frame("not json"),
            frame(HOVER),
            "Content-Length: ten\r\n\r\n{\"body\": 1}".to_owned(),
            frame(HOVER),
            "Garbage\r\n\r\n".to_owned(),
            frame("[1, 2]"),
            frame(HOVER),
        ]
        .concat();
        assert_eq!(
            frames(input.as_bytes()),
            [
                "error -32700",
                "textDocument/hover",
                "error -32700",
                "textDocument/hover",
                "error -32700",
                "error -32600",
                "textDocument/hover"
            ]
        );
    }

    #[test]
    fn a_body_over_the_limit_is_refused_and_skipped_by_its_length_or_to_the_next_header() {
        // Sent whole: dropped by its length (a header-like text inside a JSON string is not a
        // header line).
        let big = MESSAGE_BYTES as usize + 10;
        let mut body = b"{\"x\": \"Content-Length: 5 ".to_vec();
        body.resize(big - 2, b' ');
        body.extend_from_slice(b"\"}");
        let mut input = format!("Content-Length: {big}\r\n\r\n").into_bytes();
        input.extend_from_slice(&body);
        input.extend_from_slice(frame(HOVER).as_bytes());
        assert_eq!(frames(&input), ["error -32600", "textDocument/hover"]);
        // Claimed, never sent: the next header ends the skip.
        for claim in [
            "1000000000000000",
            "3000000000",
            "99999999999999999999999999",
        ] {
            let input = format!("Content-Length: {claim}\r\n\r\n{}", frame(HOVER));
            assert_eq!(
                frames(input.as_bytes()),
                ["error -32600", "textDocument/hover"]
            );
        }
    }

    #[test]
    fn header_lines_are_bounded_and_a_cut_input_ends_quietly() {
        let long = format!("X-Long: {}\r\n\r\n{}", "a".repeat(100_000), frame(HOVER));
        assert_eq!(
            frames(long.as_bytes()),
            ["error -32700", "textDocument/hover"]
        );
        assert!(frames(b"Content-Length: 100\r\n\r\n{\"a\"").is_empty());
        assert!(frames(b"Content-Len").is_empty());
        // A bare LF, and blank lines between messages, are taken.
        let lf = format!("\r\n\r\nContent-Length: {}\n\n{HOVER}", HOVER.len());
        assert_eq!(frames(lf.as_bytes()), ["textDocument/hover"]);
    }
}
