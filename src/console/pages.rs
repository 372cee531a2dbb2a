//! The console's HTML, written by hand (no template engine, no JavaScript build chain): every
//! value that came from the database or a user goes through [`esc`].

use crate::engine::visits::Tree;
use crate::graph::overlay::{duration_text, StateStatus};
use crate::graph::{svg, ExecutionPicture};
use crate::store::{EventRecord, ExecutionRecord, ExecutionStatus, TokenRecord};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Percent-encodes a query value.
pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

fn time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f").to_string())
        .unwrap_or_default()
}

fn layout(title: &str, body: &str) -> String {
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title} · sfn-local</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/console/assets/console.css"></head>
<body><header><a class="brand" href="/">sfn-local</a><a href="/">State machines</a><a href="/console/executions">Executions</a><a href="/console/executions?status=RUNNING">Running</a></header>
<main>{body}</main>
<script src="/console/assets/console.js"></script></body></html>
"#,
        title = esc(title)
    )
}

/// A page saying what went wrong.
pub fn error_page(message: &str) -> String {
    layout(
        "Error",
        &format!(
            r#"<h1>Error</h1><p class="notice error">{}</p>"#,
            esc(message)
        ),
    )
}

fn status_badge(status: ExecutionStatus) -> String {
    format!(
        r#"<span class="status {s}">{s}</span>"#,
        s = status.as_str()
    )
}

fn execution_link(e: &ExecutionRecord) -> String {
    format!(
        r#"<a href="/console/execution?arn={}">{}</a>"#,
        url_encode(&e.execution_arn),
        esc(&e.name)
    )
}

const STATUSES: [ExecutionStatus; 5] = [
    ExecutionStatus::Running,
    ExecutionStatus::Succeeded,
    ExecutionStatus::Failed,
    ExecutionStatus::TimedOut,
    ExecutionStatus::Aborted,
];

/// The state machines that have executions in this database, with counts by status.
pub fn home(created: &[(String, String)], all: &[ExecutionRecord]) -> String {
    let mut machines: BTreeMap<&str, (&str, Vec<&ExecutionRecord>)> = BTreeMap::new();
    // Machines created through the API (`serve`) are listed even before their first execution.
    for (arn, name) in created {
        machines.entry(arn).or_insert((name, Vec::new()));
    }
    for e in all {
        machines
            .entry(&e.state_machine_arn)
            .or_insert((&e.state_machine_name, Vec::new()))
            .1
            .push(e);
    }
    let mut body = String::from("<h1>State machines</h1>");
    if machines.is_empty() {
        body.push_str("<p>No state machines or executions in this database yet. Start one with <code>sfn-local run DEFINITION</code>.</p>");
        return layout("State machines", &body);
    }
    body.push_str("<table><tr><th>Name</th><th>ARN</th><th>Executions</th>");
    for s in STATUSES {
        let _ = write!(body, "<th>{}</th>", s.as_str());
    }
    body.push_str("<th>Latest</th></tr>");
    for (arn, (name, runs)) in &machines {
        let latest = runs.iter().max_by_key(|e| e.start_date_ms);
        let _ = write!(
            body,
            r#"<tr><td><a href="/console/executions?machine={}">{}</a></td><td class="muted">{}</td><td>{}</td>"#,
            url_encode(arn),
            esc(name),
            esc(arn),
            runs.len()
        );
        for s in STATUSES {
            let n = runs.iter().filter(|e| e.status == s).count();
            let _ = write!(
                body,
                r#"<td><a href="/console/executions?machine={}&status={}">{n}</a></td>"#,
                url_encode(arn),
                s.as_str()
            );
        }
        let _ = write!(
            body,
            "<td>{}</td></tr>",
            latest.map(|e| execution_link(e)).unwrap_or_default()
        );
    }
    body.push_str("</table>");
    layout("State machines", &body)
}

/// Executions, newest first, with status filters.
pub fn executions(
    list: &[ExecutionRecord],
    status: Option<ExecutionStatus>,
    machine: Option<&str>,
    coverage: Option<&crate::coverage::MachineCoverage>,
) -> String {
    let machine_q = machine
        .map(|m| format!("&machine={}", url_encode(m)))
        .unwrap_or_default();
    let mut body = String::from("<h1>Executions</h1><p class=\"filters\">");
    let _ = write!(
        body,
        r#"<a href="/console/executions?status={machine_q}" class="{}">All</a>"#,
        if status.is_none() { "active" } else { "" }
    );
    for s in STATUSES {
        let _ = write!(
            body,
            r#"<a href="/console/executions?status={}{machine_q}" class="{}">{}</a>"#,
            s.as_str(),
            if status == Some(s) { "active" } else { "" },
            s.as_str()
        );
    }
    if let Some(m) = machine {
        let _ = write!(
            body,
            r#" <span class="muted">state machine {}</span>"#,
            esc(m)
        );
    }
    body.push_str("</p><table><tr><th>Name</th><th>Status</th><th>State machine</th><th>Started</th><th>Ended</th><th>Duration</th></tr>");
    let mut list: Vec<&ExecutionRecord> = list.iter().collect();
    list.sort_by_key(|e| std::cmp::Reverse(e.start_date_ms));
    for e in &list {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            execution_link(e),
            status_badge(e.status),
            esc(&e.state_machine_name),
            time(e.start_date_ms),
            e.stop_date_ms.map(time).unwrap_or_default(),
            e.stop_date_ms
                .map(|s| duration_text(s - e.start_date_ms))
                .unwrap_or_default()
        );
    }
    if list.is_empty() {
        body.push_str(r#"<tr><td colspan="6" class="muted">No executions.</td></tr>"#);
    }
    body.push_str("</table>");
    if let Some(c) = coverage {
        coverage_section(c, &mut body);
    }
    layout("Executions", &body)
}

fn pretty(json: &str) -> String {
    serde_json::from_str::<serde_json::Value>(json)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| json.to_owned())
}

/// One execution: its status, graph, waiting tasks and events, with the live part refreshed by
/// the page's script while it runs; `(said, error)` is what the last form post did, and `csrf`
/// the token its forms carry.
pub fn execution(
    p: &ExecutionPicture,
    events: &[EventRecord],
    tokens: &[TokenRecord],
    (said, error): (Option<&str>, Option<&str>),
    csrf: &str,
) -> String {
    let e = &p.record;
    let mut body = String::new();
    let _ = write!(
        body,
        r#"<h1>Execution {}</h1><p class="muted">{} · state machine <a href="/console/executions?machine={}">{}</a></p>"#,
        esc(&e.name),
        esc(&e.execution_arn),
        url_encode(&e.state_machine_arn),
        esc(&e.state_machine_name)
    );
    if let Some(said) = said {
        let _ = write!(body, r#"<p class="notice" id="said">{}</p>"#, esc(said));
    }
    if let Some(error) = error {
        let _ = write!(
            body,
            r#"<p class="notice error" id="error">{}</p>"#,
            esc(error)
        );
    }
    let _ = write!(
        body,
        r#"<div id="live" data-running="{}" data-src="/console/execution/live?arn={}">{}</div>"#,
        e.status == ExecutionStatus::Running,
        url_encode(&e.execution_arn),
        live(p, events, tokens, csrf)
    );
    layout(&format!("{} {}", e.name, e.status.as_str()), &body)
}

/// The part of the execution page that changes while it runs (its forms carry `csrf`).
pub fn live(
    p: &ExecutionPicture,
    events: &[EventRecord],
    tokens: &[TokenRecord],
    csrf: &str,
) -> String {
    let e = &p.record;
    let now = p.overlay.now_ms;
    let mut out = format!(
        r#"<div data-running="{}"><p>Status: <span id="execution-status">{}</span> · started {}"#,
        e.status == ExecutionStatus::Running,
        status_badge(e.status),
        time(e.start_date_ms)
    );
    match e.stop_date_ms {
        Some(stop) => {
            let _ = write!(
                out,
                " · ended {} · took {}",
                time(stop),
                duration_text(stop - e.start_date_ms)
            );
        }
        None => {
            let _ = write!(
                out,
                " · running for {}",
                duration_text(now - e.start_date_ms)
            );
        }
    }
    out.push_str("</p>");
    if let (Some(error), cause) = (&e.error, &e.cause) {
        let _ = write!(
            out,
            r#"<p class="notice error">{}: {}</p>"#,
            esc(error),
            esc(cause.as_deref().unwrap_or(""))
        );
    }
    out.push_str(r#"<div class="columns"><section><h2>Graph</h2><p class="legend">"#);
    for s in StateStatus::ALL {
        let (fill, stroke) = s.colours();
        let _ = write!(
            out,
            r#"<span><i style="background:{fill};border-color:{stroke}"></i>{}</span>"#,
            s.as_str().replace('-', " ")
        );
    }
    let arn = url_encode(&e.execution_arn);
    let _ = write!(
        out,
        r#"</p><p class="downloads">Download: <a href="/console/execution/graph.svg?arn={arn}" download="{name}.svg">SVG</a> · <a href="/console/execution/graph.png?arn={arn}" download="{name}.png">PNG</a></p><div class="graph">"#,
        name = esc(&e.name)
    );
    out.push_str(&svg::render(&p.graph, Some(&p.overlay)));
    out.push_str("</div></section><section>");
    out.push_str(&tasks(&e.execution_arn, tokens, now, csrf));
    let _ = write!(
        out,
        r#"<h2>Input and output</h2><details data-key="input"><summary>Execution input</summary><pre>{}</pre></details>"#,
        esc(&pretty(&e.input))
    );
    if let Some(output) = &e.output {
        let _ = write!(
            out,
            r#"<details data-key="output"><summary>Execution output</summary><pre id="execution-output">{}</pre></details>"#,
            esc(&pretty(output))
        );
    }
    out.push_str("</section></div>");
    out.push_str(&event_table(events, e.start_date_ms));
    out.push_str("</div>");
    out
}

fn tasks(execution_arn: &str, tokens: &[TokenRecord], now: i64, csrf: &str) -> String {
    let mut out = String::from("<h2>Waiting for a token</h2>");
    if tokens.is_empty() {
        out.push_str(r#"<p class="muted">No task is waiting.</p>"#);
        return out;
    }
    for t in tokens {
        let _ = write!(
            out,
            r#"<div class="task" data-state="{}"><b>{}</b> <span class="muted">attempt {} · {} · waiting since {}</span>"#,
            esc(&t.state_name),
            esc(&t.state_name),
            t.attempt + 1,
            match t.kind {
                crate::store::TokenKind::Callback => "callback",
                crate::store::TokenKind::Activity => "activity",
            },
            time(t.created_at)
        );
        if let Some(at) = t.timeout_at {
            let _ = write!(out, "<br>timeout in {}", duration_text((at - now).max(0)));
        }
        if let Some(at) = t.heartbeat_at {
            let _ = write!(
                out,
                "<br>heartbeat due in {}",
                duration_text((at - now).max(0))
            );
        }
        let _ = write!(
            out,
            r#"<details data-key="task-input-{}"><summary>Task input</summary><pre>{}</pre></details>"#,
            esc(&t.token),
            esc(&pretty(&t.input))
        );
        let hidden = format!(
            r#"<input type="hidden" name="token" value="{}"><input type="hidden" name="execution" value="{}"><input type="hidden" name="csrf" value="{}">"#,
            esc(&t.token),
            esc(execution_arn),
            esc(csrf)
        );
        let _ = write!(
            out,
            r#"<div><form method="post" action="/console/tasks/success">{hidden}<textarea name="output" aria-label="output">{{}}</textarea><br><button class="success" type="submit">Send success</button></form><form method="post" action="/console/tasks/failure">{hidden}<input type="text" name="error" placeholder="Error" aria-label="error"> <input type="text" name="cause" placeholder="Cause" aria-label="cause"><br><button class="failure" type="submit">Send failure</button></form><form method="post" action="/console/tasks/heartbeat">{hidden}<button type="submit">Send heartbeat</button></form></div></div>"#
        );
    }
    out
}

fn event_table(events: &[EventRecord], start_ms: i64) -> String {
    let mut out = String::from(
        r#"<h2>Events</h2><table id="events"><tr><th>ID</th><th>Type</th><th>Step</th><th>Elapsed</th><th>Timestamp</th><th>Details</th></tr>"#,
    );
    // Each event's step is the visit it belongs to, read from the events' links.
    let tree = Tree::from_records(events);
    for (i, ev) in events.iter().enumerate() {
        let details: serde_json::Value = ev
            .details
            .as_deref()
            .and_then(|d| serde_json::from_str(d).ok())
            .unwrap_or(serde_json::Value::Null);
        let step = tree.owner(i).map_or("", |v| v.state.as_str());
        let _ = write!(
            out,
            r#"<tr class="event" data-type="{t}"><td>{}</td><td>{t}</td><td>{}</td><td>{}</td><td>{}</td><td>"#,
            ev.id,
            esc(step),
            duration_text(ev.timestamp_ms - start_ms),
            time(ev.timestamp_ms),
            t = esc(&ev.event_type)
        );
        if let serde_json::Value::Object(map) = &details {
            let keys: Vec<&str> = map.keys().map(String::as_str).collect();
            let _ = write!(
                out,
                r#"<details data-key="ev-{}"><summary>{}</summary><pre>{}</pre></details>"#,
                ev.id,
                esc(&keys.join(", ")),
                esc(&pretty_details(map))
            );
        }
        out.push_str("</td></tr>");
    }
    out.push_str("</table>");
    out
}

/// The details with `input` and `output` (JSON text in AWS's shape) shown as JSON, not strings.
fn pretty_details(map: &serde_json::Map<String, serde_json::Value>) -> String {
    let mut shown = map.clone();
    for key in ["input", "output"] {
        if let Some(serde_json::Value::String(s)) = shown.get(key) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(s) {
                shown.insert(key.to_owned(), v);
            }
        }
    }
    serde_json::to_string_pretty(&serde_json::Value::Object(shown)).unwrap_or_default()
}

/// A machine's coverage: the counts, its graph coloured by what was reached, and the list of
/// what no execution took.
fn coverage_section(c: &crate::coverage::MachineCoverage, body: &mut String) {
    use crate::coverage::Category;
    let cell = |category| {
        let n = c.counts(category);
        format!("{}/{} ({:.0}%)", n.covered, n.total, n.percent())
    };
    let _ = write!(
        body,
        r#"<h2 id="coverage">Coverage</h2><p class="coverage-counts">{} executions of this definition · states {} · branches {} · error paths {}</p>"#,
        c.hits.executions,
        cell(Category::State),
        cell(Category::Branch),
        cell(Category::ErrorPath)
    );
    let graph = crate::graph::Graph::from_machine(&c.coverable.machine);
    let _ = write!(
        body,
        r#"<div class="graph coverage-graph">{}</div>"#,
        crate::graph::svg::render(&graph, Some(&c.overlay()))
    );
    let missed: Vec<&crate::coverage::model::Item> = c
        .coverable
        .items
        .iter()
        .zip(&c.hits.items)
        .filter(|(_, hits)| **hits == 0)
        .map(|(item, _)| item)
        .collect();
    if missed.is_empty() {
        body.push_str("<p>Everything was covered.</p>");
        return;
    }
    body.push_str(r#"<h3>Not covered</h3><ul class="not-covered">"#);
    for item in missed {
        let _ = write!(
            body,
            "<li>{} <span class=\"muted\">{}</span></li>",
            esc(&item.description),
            esc(&item.pointer.to_string())
        );
    }
    body.push_str("</ul>");
}
