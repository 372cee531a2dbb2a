//! `sfn-local serve`'s API request decoding: the `X-Amz-Target` header naming the operation,
//! the SigV4 `Authorization` header giving the region, and the JSON body checked against
//! botocore's model of the operation's input (required members, types, lengths, enums), each
//! step as `serve` takes it, with the error AWS would answer on failure.
//!
//! Input: `TARGET \n AUTHORIZATION \0 BODY`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sfn_local::serve::model;
use sfn_local::serve::operation::Operation;
use sfn_local::serve::protocol::signed_region;

fuzz_target!(|data: &[u8]| {
    let (head, body) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let head = String::from_utf8_lossy(head);
    let mut lines = head.splitn(2, '\n');
    let target = lines.next().unwrap_or("");
    let mut headers = http::HeaderMap::new();
    if let Some(Ok(auth)) = lines.next().map(http::HeaderValue::from_str) {
        headers.insert(http::header::AUTHORIZATION, auth);
    }
    let _ = signed_region(&headers);
    let name = target.strip_prefix("AWSStepFunctions.").unwrap_or(target);
    let Some(operation) = Operation::from_name(name) else {
        return;
    };
    let input: serde_json::Value = if body.iter().all(u8::is_ascii_whitespace) {
        serde_json::Value::Object(Default::default())
    } else {
        match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(_) => sfn_local_fuzz::value_from(body),
        }
    };
    if let Err(e) = model::validate(operation.name(), &input) {
        // The answer's body is built from the error.
        let _ = format!("{e:?}");
    }
});
