//! The conformance harness shared by the corpus suites (`conformance_pure`, `conformance_aws_task`):
//! virtual time, running a case through the engine, the recording's normalisation, placeholder
//! matching, comparing a run with the recording, and the known-failures rule (a checked-in list
//! that only shrinks). See `tests/conformance_pure.rs` for what is compared and why.

use super::{conformance_cases, definition_text, json_files, read_json};
use serde_json::Value;
use sfn_local::asl::{compile_text, MachineType, StateMachine};
use sfn_local::clock::{system_now, Clock, Millis};
use sfn_local::engine::context::ExecutionInfo;
use sfn_local::engine::history::{History, HistoryEvent, MemorySink, MAX_HISTORY_EVENTS};
use sfn_local::engine::{Engine, Outcome};
use sfn_local::store::StopRequest;
use sfn_local::tasks::TaskRunner;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// One selection of the pure cases, with its own known-failures list and report.
pub struct Suite {
    /// What the report calls it.
    pub title: &'static str,
    /// `tests/known_failures/<name>.txt` and `target/conformance/<name>.txt`.
    pub name: &'static str,
    /// Which cases belong to it.
    pub select: fn(&Value) -> bool,
    /// The corpus folder its cases come from (`pure`, `aws_task`).
    pub bucket: &'static str,
    /// What runs the case's Task states.
    pub tasks: fn(&Value) -> Result<Rc<dyn TaskRunner>, String>,
}

/// Virtual time never runs past this much after the start: a case that still waits by then is
/// treated as still running (AWS's longest Wait is a year).
pub const VIRTUAL_HORIZON_MS: Millis = 400 * 24 * 3600 * 1000;

// ---------------------------------------------------------------------------------------------
// Virtual time: a clock whose sleepers register their deadlines, and an executor that moves the
// clock to the earliest deadline whenever the execution cannot make progress otherwise.

pub struct VirtualClock {
    now: AtomicI64,
    sleepers: Mutex<Vec<(Millis, Waker)>>,
}

impl VirtualClock {
    pub fn new(start: Millis) -> Self {
        VirtualClock {
            now: AtomicI64::new(start),
            sleepers: Mutex::new(Vec::new()),
        }
    }

    /// Moves to the earliest pending deadline and wakes everyone due. False when nobody sleeps
    /// or the next deadline lies past `limit`.
    fn advance(&self, limit: Millis) -> bool {
        let mut sleepers = self.sleepers.lock().unwrap();
        let Some(next) = sleepers.iter().map(|(d, _)| *d).min() else {
            return false;
        };
        if next > limit {
            return false;
        }
        let now = self.now.load(Ordering::SeqCst).max(next);
        self.now.store(now, Ordering::SeqCst);
        let (due, rest): (Vec<_>, Vec<_>) = sleepers.drain(..).partition(|(d, _)| *d <= now);
        *sleepers = rest;
        drop(sleepers);
        for (_, w) in due {
            w.wake();
        }
        true
    }
}

struct Sleep<'a> {
    clock: &'a VirtualClock,
    deadline: Millis,
}

impl Future for Sleep<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.clock.now.load(Ordering::SeqCst) >= self.deadline {
            return Poll::Ready(());
        }
        self.clock
            .sleepers
            .lock()
            .unwrap()
            .push((self.deadline, cx.waker().clone()));
        Poll::Pending
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Millis {
        self.now.load(Ordering::SeqCst)
    }

    fn sleep_until(&self, deadline: Millis) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(Sleep {
            clock: self,
            deadline,
        })
    }
}

struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Polls `fut` to the end on this thread, advancing virtual time when it is idle. `None` when
/// it is still waiting at the horizon (or stuck with nothing to wait for).
pub fn drive<F: Future>(fut: F, clock: &VirtualClock, limit: Millis) -> Option<F::Output> {
    let flag = Arc::new(Flag(AtomicBool::new(false)));
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    for _ in 0..1_000_000 {
        flag.0.store(false, Ordering::SeqCst);
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return Some(v);
        }
        if flag.0.load(Ordering::SeqCst) {
            continue;
        }
        if !clock.advance(limit) {
            return None;
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Running a case.

pub struct Run {
    /// None when the execution had not ended at the virtual horizon.
    pub outcome: Option<Outcome>,
    pub events: Vec<HistoryEvent>,
}

pub fn hint<'a>(case: &'a Value, key: &str, default: &'a str) -> &'a str {
    case["context_hints"][key].as_str().unwrap_or(default)
}

/// The case's definition, compiled as its `state_machine_type`, and that type.
pub fn compile_case(case: &Value) -> Result<(StateMachine, MachineType), String> {
    let machine_type = match case["state_machine_type"].as_str() {
        Some("EXPRESS") => MachineType::Express,
        _ => MachineType::Standard,
    };
    let text = definition_text(case).ok_or("the case has no definition")?;
    let (machine, diags) = compile_text(&text, machine_type);
    let machine = machine.ok_or_else(|| format!("definition rejected: {diags:?}"))?;
    Ok((machine, machine_type))
}

pub fn run_case(case: &Value, tasks: Rc<dyn TaskRunner>) -> Result<Run, String> {
    let (machine, machine_type) = compile_case(case)?;
    let start = system_now();
    let region = hint(case, "region", "<region>");
    let account = hint(case, "account", "111111111111");
    let sm_name = hint(case, "state_machine_name", "<ArnPart_0idx>");
    let exec_name = hint(case, "execution_name", "<ExecArnPart_0idx>");
    let role = hint(case, "role_arn", "snf_role_arn");
    let mut info = ExecutionInfo::new(region, account, sm_name, exec_name, Some(role), start);
    info.synchronous = case["kind"] == "start_sync_execution";
    if machine_type == MachineType::Express {
        // Express executions are named `express:<machine>:<name>:<uuid>`.
        info.execution_arn = format!(
            "arn:aws:states:{region}:{account}:express:{sm_name}:{exec_name}:{}",
            "3f1a4b2c-0000-4000-8000-000000000000"
        );
    }
    let clock = Arc::new(VirtualClock::new(start));
    let sink = MemorySink::default();
    let history = History::new(1, Box::new(sink.clone()), MAX_HISTORY_EVENTS);
    let mut engine = Engine::new(
        Arc::new(machine),
        info,
        case["input"].clone(),
        history,
        clock.clone(),
        tasks,
    );
    if case["expected"]["status"] == "ABORTED" {
        // The recording's test called StopExecution while the execution waited: stop it one
        // (virtual) second in, with no error or cause, as that test did.
        let clock = clock.clone();
        engine = engine.with_stop_signal(Box::pin(async move {
            clock.sleep_until(start + 1000).await;
            StopRequest {
                requested_at: start + 1000,
                error: None,
                cause: None,
            }
        }));
    }
    let outcome = drive(engine.run(), &clock, start + VIRTUAL_HORIZON_MS);
    drop(engine);
    let events = sink.events.take();
    Ok(Run { outcome, events })
}

// ---------------------------------------------------------------------------------------------
// Normalisation and matching.

/// Applies the recording's normalisation to a recorded field (an error or a cause): a string
/// holding a JSON object becomes the object (one level: strings inside it stay strings).
pub fn normalise_field(v: Value) -> Value {
    if let Value::String(s) = &v {
        if s.starts_with('{') {
            if let Ok(parsed @ Value::Object(_)) = serde_json::from_str::<Value>(s) {
                return normalise(parsed);
            }
        }
    }
    normalise(v)
}

/// Applies the recording's text normalisation to one of our values.
pub fn normalise(v: Value) -> Value {
    match v {
        Value::String(s) => {
            let s = s.replace("arn:aws:", "arn:<partition>:");
            if is_iso_date(&s) {
                return Value::String("date".into());
            }
            Value::String(s)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(normalise).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| {
                    // A date is masked as a date first, whatever its key (`BatchTimestamp`).
                    let is_date = v.as_str().is_some_and(is_iso_date);
                    let v = if k.to_ascii_lowercase().contains("timestamp")
                        && !v.is_object()
                        && !is_date
                    {
                        Value::String("timestamp".into())
                    } else {
                        normalise(v)
                    };
                    (k, v)
                })
                .collect(),
        ),
        other => other,
    }
}

/// `2024-01-01` or `2024-01-01T10:00:00[.fff][Z|±hh:mm]`, as the recording masked them.
pub fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| r.clone().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    if b.len() < 10
        || !digits(0..4)
        || b[4] != b'-'
        || !digits(5..7)
        || b[7] != b'-'
        || !digits(8..10)
    {
        return false;
    }
    if b.len() == 10 {
        return true;
    }
    if !(b[10] == b'T' || b[10] == b't') || b.len() < 19 {
        return false;
    }
    digits(11..13) && b[13] == b':' && digits(14..16) && b[16] == b':' && digits(17..19)
}

/// Applies a case's `jsonpath` transformers (`$..Key` or `$..a..b.c`) to our output: the value
/// at the chain of keys after the last `..` is replaced wherever it occurs (anchored at the
/// output when the chain goes through an event's `output`).
pub fn apply_transformers(case: &Value, mut v: Value) -> Value {
    let Some(ts) = case["snapshot_other_transformers"].as_array() else {
        return v;
    };
    for t in ts {
        if t["kind"] != "jsonpath" {
            continue;
        }
        let (Some(path), Some(replacement)) = (t["jsonpath"].as_str(), t["replacement"].as_str())
        else {
            continue;
        };
        let last = path.rsplit("..").next().unwrap_or_default();
        let keys: Vec<&str> = last.split('.').collect();
        if let Some(pos) = keys.iter().rposition(|k| *k == "output") {
            let chain = &keys[pos + 1..];
            if !chain.is_empty() {
                replace_at(&mut v, chain, replacement);
            }
        } else if !keys.is_empty() && keys[0] != "$" {
            replace_anywhere(&mut v, &keys, replacement);
        }
    }
    v
}

fn replace_at(v: &mut Value, chain: &[&str], replacement: &str) {
    let mut cur = v;
    for (i, k) in chain.iter().enumerate() {
        let Some(next) = cur.get_mut(*k) else { return };
        if i == chain.len() - 1 {
            *next = Value::String(replacement.into());
            return;
        }
        cur = next;
    }
}

fn replace_anywhere(v: &mut Value, chain: &[&str], replacement: &str) {
    match v {
        Value::Object(o) => {
            if o.contains_key(chain[0]) {
                let mut probe = Value::Object(std::mem::take(o));
                replace_at(&mut probe, chain, replacement);
                if let Value::Object(back) = probe {
                    *o = back;
                }
            }
            for (_, child) in o.iter_mut() {
                replace_anywhere(child, chain, replacement);
            }
        }
        Value::Array(a) => a
            .iter_mut()
            .for_each(|c| replace_anywhere(c, chain, replacement)),
        _ => {}
    }
}

/// Placeholder bindings of one case.
pub type Bindings = HashMap<String, String>;

enum Piece<'a> {
    Text(&'a str),
    Hole(&'a str),
}

/// Splits an expected string into text and `<placeholder>` holes.
fn pieces(s: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find('<') {
        let after = &rest[open + 1..];
        let close = after.find('>');
        let ok = close.is_some_and(|c| {
            c > 0
                && after[..c]
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || "_-:.".contains(ch))
        });
        if !ok {
            out.push(Piece::Text(&rest[..open + 1]));
            rest = after;
            continue;
        }
        let c = close.unwrap_or_default();
        if open > 0 {
            out.push(Piece::Text(&rest[..open]));
        }
        out.push(Piece::Hole(&rest[open..open + c + 2]));
        rest = &after[c + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    // Merge adjacent text pieces.
    let mut merged: Vec<Piece<'_>> = Vec::new();
    for p in out {
        if let (Some(Piece::Text(prev)), Piece::Text(t)) = (merged.last_mut(), &p) {
            let start = prev.as_ptr() as usize - s.as_ptr() as usize;
            let end = t.as_ptr() as usize - s.as_ptr() as usize + t.len();
            *prev = &s[start..end];
            continue;
        }
        merged.push(p);
    }
    merged
}

pub fn match_str(expected: &str, actual: &str, b: &mut Bindings) -> bool {
    if !expected.contains('<') {
        return expected == actual;
    }
    let ps = pieces(expected);
    match_pieces(&ps, actual, b)
}

fn match_pieces(ps: &[Piece<'_>], actual: &str, b: &mut Bindings) -> bool {
    let Some((first, rest)) = ps.split_first() else {
        return actual.is_empty();
    };
    match first {
        Piece::Text(t) => actual
            .strip_prefix(t)
            .is_some_and(|a| match_pieces(rest, a, b)),
        Piece::Hole(name) => {
            if let Some(bound) = b.get(*name).cloned() {
                return actual
                    .strip_prefix(bound.as_str())
                    .is_some_and(|a| match_pieces(rest, a, b));
            }
            let ends: Vec<usize> = actual
                .char_indices()
                .map(|(i, c)| i + c.len_utf8())
                .collect();
            for end in ends {
                let mut trial = b.clone();
                trial.insert((*name).to_owned(), actual[..end].to_owned());
                if match_pieces(rest, &actual[end..], &mut trial) {
                    *b = trial;
                    return true;
                }
            }
            false
        }
    }
}

fn numbers_equal(e: &serde_json::Number, a: &serde_json::Number) -> bool {
    if e == a {
        return true;
    }
    match (e.as_f64(), a.as_f64()) {
        (Some(x), Some(y)) => x == y && e.is_f64() == a.is_f64(),
        _ => false,
    }
}

pub fn match_value(expected: &Value, actual: &Value, b: &mut Bindings) -> bool {
    match (expected, actual) {
        // The recording masked dates as `date` and datetimes as `datetime`; ours are all `date`.
        (Value::String(e), Value::String(a)) if e == "datetime" && a == "date" => true,
        (Value::String(e), Value::String(a)) => match_str(e, a, b),
        // A whole-value placeholder may stand for a non-string (a masked number, say).
        (Value::String(e), a) if is_whole_placeholder(e) => {
            let text = a.to_string();
            match_str(e, &text, b)
        }
        (Value::Number(e), Value::Number(a)) => numbers_equal(e, a),
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(x, y)| match_value(x, y, b))
        }
        (Value::Object(e), Value::Object(a)) => {
            e.len() == a.len()
                && e.iter()
                    .all(|(k, x)| a.get(k).is_some_and(|y| match_value(x, y, b)))
        }
        (e, a) => e == a,
    }
}

fn is_whole_placeholder(s: &str) -> bool {
    matches!(pieces(s).as_slice(), [Piece::Hole(_)])
}

// ---------------------------------------------------------------------------------------------
// Comparing a run with the recording.

pub fn event_types(events: &[HistoryEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.event_type.as_str().to_owned())
        .collect()
}

/// Compares; returns the differences (empty when the case passes).
pub fn compare(case: &Value, run: &Run) -> Vec<String> {
    let mut diffs = Vec::new();
    let mut b = Bindings::new();
    let expected = &case["expected"];
    let want_status = expected["status"].as_str().unwrap_or_default();
    let incomplete = want_status == "INCOMPLETE";
    let got_status = run
        .outcome
        .as_ref()
        .map(|o| o.status.as_str())
        .unwrap_or("RUNNING");
    if !incomplete && want_status != got_status {
        diffs.push(format!("status: expected {want_status}, got {got_status}"));
    }
    if let Some(outcome) = run.outcome.as_ref().filter(|_| !incomplete) {
        match want_status {
            "SUCCEEDED" => {
                let got = apply_transformers(
                    case,
                    normalise(outcome.output.clone().unwrap_or(Value::Null)),
                );
                if !match_value(&expected["output"], &got, &mut b) {
                    diffs.push(format!(
                        "output:\n    expected {}\n    got      {}",
                        expected["output"], got
                    ));
                }
            }
            "FAILED" => {
                let (error, cause) = outcome
                    .error
                    .as_ref()
                    .map(|e| (e.error.clone(), e.cause.clone()))
                    .unwrap_or_default();
                let got_error = normalise_field(error.map(Value::String).unwrap_or(Value::Null));
                let got_cause = normalise_field(cause.map(Value::String).unwrap_or(Value::Null));
                if !match_value(&expected["error"], &got_error, &mut b) {
                    diffs.push(format!(
                        "error:\n    expected {}\n    got      {}",
                        expected["error"], got_error
                    ));
                }
                if !match_value(&expected["cause"], &got_cause, &mut b) {
                    diffs.push(format!(
                        "cause:\n    expected {}\n    got      {}",
                        expected["cause"], got_cause
                    ));
                }
            }
            _ => {}
        }
    }
    if case["kind"] == "execution_history" {
        let want: Vec<String> = case["events"]
            .as_array()
            .map(|es| {
                es.iter()
                    .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        let got = event_types(&run.events);
        let reordered = case["parallel_branch_events_reordered"] == true;
        let same = if incomplete {
            got.len() >= want.len() && got[..want.len()] == want[..]
        } else if reordered {
            // LocalStack zeroed the ids inside the branches and lost some events on the way
            // (the ids that remain have gaps): every recorded type must be among ours, and we
            // must have as many events as AWS's last id says it wrote.
            let last_id = case["events"]
                .as_array()
                .and_then(|es| es.last())
                .and_then(|e| e["id"].as_u64())
                .map(|n| n as usize)
                .unwrap_or(want.len());
            let mut remaining = got.clone();
            let included = want
                .iter()
                .all(|t| match remaining.iter().position(|g| g == t) {
                    Some(i) => {
                        remaining.swap_remove(i);
                        true
                    }
                    None => false,
                });
            included && got.len() == last_id
        } else {
            want == got
        };
        if !same {
            diffs.push(format!(
                "event types{}:\n{}",
                if incomplete {
                    " (prefix)"
                } else if reordered {
                    " (multiset)"
                } else {
                    ""
                },
                side_by_side(&want, &got)
            ));
        } else if reordered {
            // The events LocalStack left their ids to (those before and after the branches)
            // keep AWS's links: compare those.
            let kept = kept_links_differences(case, &run.events);
            if !kept.is_empty() {
                diffs.push(format!("previousEventId:\n    {}", kept.join("\n    ")));
            }
        } else {
            let chain = chain_differences(case, &run.events);
            if !chain.is_empty() {
                diffs.push(format!("previousEventId:\n    {}", chain.join("\n    ")));
            }
            if std::env::var_os("SFN_CONFORMANCE_DETAILS").is_some() {
                print_detail_difference(case, &run.events, &mut b);
            }
        }
    }
    diffs
}

/// Every recorded event whose `previousEventId` differs from ours (the recording's events and
/// ours are already known to have the same types, or ours to extend an `INCOMPLETE` one).
/// AWS links each event to the one it follows; consoles and trace exporters rebuild an
/// execution's tree from these links, so a difference is a failure.
pub fn chain_differences(case: &Value, events: &[HistoryEvent]) -> Vec<String> {
    let recorded = case["events"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    recorded
        .iter()
        .zip(events)
        .filter(|(e, g)| e["previousEventId"].as_i64() != Some(g.previous_event_id))
        .filter(|(e, g)| !older_map_exit_link(case, recorded, e, g))
        .map(|(e, g)| {
            format!(
                "#{} {}: AWS links it to {}, ours to {}",
                g.id,
                g.event_type.as_str(),
                e["previousEventId"],
                g.previous_event_id
            )
        })
        .collect()
}

/// For a `parallel_branch_events_reordered` recording: every event that kept its id must be
/// ours with that id, of the same type and with the same `previousEventId` (the events after
/// the branches, such as `ParallelStateExited`, link back into them).
pub fn kept_links_differences(case: &Value, events: &[HistoryEvent]) -> Vec<String> {
    let recorded = case["events"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    recorded
        .iter()
        .filter_map(|e| Some((e, e["id"].as_i64()?)))
        .filter_map(|(e, id)| {
            let ours = events.iter().find(|g| g.id == id);
            let same = ours.is_some_and(|g| {
                e["type"].as_str() == Some(g.event_type.as_str())
                    && e["previousEventId"].as_i64() == Some(g.previous_event_id)
            });
            (!same).then(|| {
                format!(
                    "#{id} {}: AWS links it to {}, ours: {}",
                    e["type"].as_str().unwrap_or_default(),
                    e["previousEventId"],
                    ours.map_or("none".to_owned(), |g| format!(
                        "{} linked to {}",
                        g.event_type.as_str(),
                        g.previous_event_id
                    ))
                )
            })
        })
        .collect()
}

/// AWS changed where a distributed Map's `MapStateExited` points in November 2024: recordings
/// from 2024-11-13 on point it at `MapRunStarted`, older ones at `MapRunSucceeded` (41 recordings
/// of the corpus, split exactly by date). sfn-local writes today's link; an older recording's
/// link is accepted where it differs only so.
fn older_map_exit_link(case: &Value, recorded: &[Value], e: &Value, ours: &HistoryEvent) -> bool {
    let type_of = |id: i64| {
        recorded
            .iter()
            .find(|r| r["id"].as_i64() == Some(id))
            .and_then(|r| r["type"].as_str())
    };
    // `DD-MM-YYYY, HH:MM:SS`.
    let date = case["recorded_date"].as_str().unwrap_or_default();
    let day = |r: std::ops::Range<usize>| date.get(r).and_then(|t| t.parse::<u32>().ok());
    let recorded_on = (day(6..10), day(3..5), day(0..2));
    let before_change = match recorded_on {
        (Some(y), Some(m), Some(d)) => (y, m, d) < (2024, 11, 13),
        _ => false,
    };
    before_change
        && e["type"] == "MapStateExited"
        && e["previousEventId"].as_i64().and_then(type_of) == Some("MapRunSucceeded")
        && type_of(ours.previous_event_id) == Some("MapRunStarted")
}

/// Prints the first event whose details differ from the recording's (informational: the
/// case's transformers are not applied to events, so masked values show up there).
fn print_detail_difference(case: &Value, events: &[HistoryEvent], b: &mut Bindings) {
    let recorded = case["events"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (e, g) in recorded.iter().zip(events) {
        let ours = g.to_aws_json();
        let key = e["detailsKey"].as_str().unwrap_or_default();
        let want = &e["details"];
        let got = detail_values(&ours[key]);
        if !want.is_null() && !match_value(&detail_values(want), &got, b) {
            eprintln!(
                "DETAILS {} #{} {}:\n    expected {}\n    got      {}",
                case["id"].as_str().unwrap_or_default(),
                g.id,
                g.event_type.as_str(),
                detail_values(want),
                got
            );
            return;
        }
    }
}

/// Event details with their JSON-text fields parsed (the recording parsed objects and kept
/// the test's own text for the rest), for the informational details comparison.
pub fn detail_values(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => serde_json::from_str::<Value>(s)
                            .map(normalise)
                            .unwrap_or_else(|_| normalise(v.clone())),
                        Value::Object(_) => normalise(v.clone()),
                        other => other.clone(),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

pub fn side_by_side(want: &[String], got: &[String]) -> String {
    let n = want.len().max(got.len());
    let mut out = String::new();
    for i in 0..n {
        let w = want.get(i).map(String::as_str).unwrap_or("");
        let g = got.get(i).map(String::as_str).unwrap_or("");
        let mark = if w == g { " " } else { "≠" };
        out.push_str(&format!("    {mark} {:>3} {w:<28} {g}\n", i + 1));
    }
    out
}

// ---------------------------------------------------------------------------------------------

pub fn known_failures(root: &Path, file: &str) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(root.join(file)).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once('\t') {
            Some((id, reason)) => (id.trim().to_owned(), reason.trim().to_owned()),
            None => (l.trim().to_owned(), String::new()),
        })
        .collect()
}
pub fn check_suite(suite: &Suite) {
    let cases = conformance_cases();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let known_file = format!("tests/known_failures/{}.txt", suite.name);
    let known_failures_file = known_file.as_str();
    let known = known_failures(root, known_failures_file);
    let started = std::time::Instant::now();

    let mut per_tag: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failing: Vec<(String, String)> = Vec::new();
    let mut total = 0usize;
    let mut passed = 0usize;
    let mut seen = Vec::new();

    for file in json_files(&cases.join(suite.bucket)) {
        let case = read_json(&file);
        if !(suite.select)(&case) {
            continue;
        }
        let id = case["id"].as_str().unwrap_or_default().to_owned();
        seen.push(id.clone());
        total += 1;
        let result = std::panic::catch_unwind(|| run_case(&case, (suite.tasks)(&case)?));
        let diffs = match result {
            Ok(Ok(run)) => compare(&case, &run),
            Ok(Err(e)) => vec![e],
            Err(p) => vec![format!(
                "PANIC: {}",
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            )],
        };
        let ok = diffs.is_empty();
        if ok {
            passed += 1;
        } else {
            failing.push((id.clone(), diffs.join("\n  ")));
        }
        for tag in case["features"].as_array().into_iter().flatten() {
            let e = per_tag
                .entry(tag.as_str().unwrap_or_default().to_owned())
                .or_default();
            e.1 += 1;
            if ok {
                e.0 += 1;
            }
        }
    }

    let mut report = String::new();
    macro_rules! report {
        ($($t:tt)*) => {{
            report.push_str(&format!($($t)*));
            report.push('\n');
        }};
    }
    report!(
        "\nconformance ({}, {}): per feature tag, passed/total",
        suite.bucket,
        suite.title
    );
    let mut tags: Vec<_> = per_tag.iter().collect();
    tags.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(b.0)));
    for (tag, (p, t)) in tags {
        let mark = if p == t { " " } else { "*" };
        report!("  {mark} {tag:<45} {p:>4}/{t:<4}");
    }
    let rate = if total == 0 {
        100.0
    } else {
        passed as f64 * 100.0 / total as f64
    };
    report!(
        "pass rate: {passed}/{total} = {rate:.1}% ({:.2}s)",
        started.elapsed().as_secs_f64()
    );
    eprint!("{report}");
    let out = root.join("target/conformance");
    if std::fs::create_dir_all(&out).is_ok() {
        let _ = std::fs::write(out.join(format!("{}.txt", suite.name)), &report);
    }
    if std::env::var_os("SFN_CONFORMANCE_PRINT_FAILURES").is_some() {
        eprintln!("\n--- failures in known-failures format ---");
        for (id, diff) in &failing {
            let reason = known
                .get(id)
                .cloned()
                .unwrap_or_else(|| diff.lines().next().unwrap_or_default().to_owned());
            eprintln!("{id}\t{reason}");
            if std::env::var_os("SFN_CONFORMANCE_DIFFS").is_some() {
                eprintln!("  {diff}");
            }
        }
    }

    let mut problems = Vec::new();
    for (id, diff) in &failing {
        if !known.contains_key(id) {
            problems.push(format!("UNLISTED FAILURE {id}\n  {diff}"));
        }
    }
    let failing_ids: Vec<&String> = failing.iter().map(|(id, _)| id).collect();
    for id in known.keys() {
        if !seen.contains(id) {
            problems.push(format!(
                "{id} is listed in {known_failures_file} but is not a {} case in the corpus: remove it from the list",
                suite.title
            ));
        } else if !failing_ids.contains(&id) {
            problems.push(format!(
                "{id} passes now: remove it from {known_failures_file}"
            ));
        }
    }
    if !problems.is_empty() {
        panic!(
            "{} conformance problem(s):\n\n{}",
            problems.len(),
            problems.join("\n\n")
        );
    }
}
