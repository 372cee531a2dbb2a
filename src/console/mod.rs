//! The console: pages in the browser over the database, as AWS's console shows them: state
//! machines, executions with status filters, an execution drawn on its graph with its events
//! (updating live while it runs), and the tasks waiting for a token with buttons to answer them.
//!
//! [`router`] is an axum `Router` of `GET` pages (`/`, `/console/...`) and small form posts under
//! `/console/tasks/...`; it never takes `POST /`, which is the AWS API's (serve mounts this
//! router beside its own). `sfn-local console` serves it alone. Handlers only decode, call the
//! store, and render ([`pages`]); the assets are compiled into the binary.
//!
//! Safe to leave open while browsing ([`guard`]): every page forbids framing and runs only the
//! console's own script, and a form post is taken only from the console's own pages (its
//! `Origin`/`Sec-Fetch-Site`, and a token that only this process's pages carry).

mod guard;
mod pages;

use crate::graph::ExecutionPicture;
use crate::store::{ExecutionStatus, Store};
use crate::tasks::callback::{answer_task, SentAnswer};
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use serde::Deserialize;
use std::sync::Arc;

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");

/// What the handlers share: the database, and the token this process's forms carry.
struct Console {
    store: Arc<Store>,
    csrf: guard::CsrfToken,
}

/// The console's routes over this database.
pub fn router(store: Arc<Store>) -> Router {
    let console = Arc::new(Console {
        store,
        csrf: guard::CsrfToken::generate(),
    });
    let writes = Router::new()
        .route("/console/tasks/success", post(send_success))
        .route("/console/tasks/failure", post(send_failure))
        .route("/console/tasks/heartbeat", post(send_heartbeat))
        .layer(axum::middleware::from_fn(guard::same_origin_only));
    Router::new()
        .route("/", get(home))
        .route("/console", get(home))
        .route("/console/executions", get(executions))
        .route("/console/execution", get(execution))
        .route("/console/execution/live", get(execution_live))
        .route("/console/execution/graph.svg", get(execution_svg))
        .route("/console/execution/graph.png", get(execution_png))
        .route("/console/assets/console.css", get(css))
        .route("/console/assets/console.js", get(js))
        .merge(writes)
        .with_state(console)
        .layer(axum::middleware::from_fn(guard::page_headers))
}

type Shared = State<Arc<Console>>;

fn failure(status: StatusCode, message: impl std::fmt::Display) -> Response {
    (status, Html(pages::error_page(&message.to_string()))).into_response()
}

async fn css() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], CSS)
}

async fn js() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        JS,
    )
}

async fn home(State(console): Shared) -> Response {
    let store = &console.store;
    let created = store.state_machines().map(|machines| {
        machines
            .into_iter()
            .map(|m| (m.arn, m.name))
            .collect::<Vec<_>>()
    });
    match (created, store.list_executions(None)) {
        (Ok(created), Ok(all)) => Html(pages::home(&created, &all)).into_response(),
        (Err(e), _) | (_, Err(e)) => failure(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// `?status=RUNNING&machine=ARN`.
#[derive(Debug, Deserialize)]
struct ListQuery {
    status: Option<String>,
    machine: Option<String>,
}

async fn executions(State(console): Shared, Query(q): Query<ListQuery>) -> Response {
    let store = &console.store;
    let status = match q.status.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => match s.parse::<ExecutionStatus>() {
            Ok(s) => Some(s),
            Err(e) => return failure(StatusCode::BAD_REQUEST, e),
        },
    };
    match store.list_executions(status) {
        Ok(mut list) => {
            let mut coverage = None;
            if let Some(m) = q.machine.as_deref().filter(|m| !m.is_empty()) {
                coverage = machine_coverage(store, m);
                list.retain(|e| e.state_machine_arn == m || e.state_machine_name == m);
            }
            let page = pages::executions(&list, status, q.machine.as_deref(), coverage.as_ref());
            Html(page).into_response()
        }
        Err(e) => failure(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// A machine's coverage by every execution that ran its definition (by content): the one
/// created through the API, else the one its newest execution ran. `None` when it has neither,
/// or the definition does not compile.
fn machine_coverage(store: &Store, machine: &str) -> Option<crate::coverage::MachineCoverage> {
    let definition = match store.state_machine(machine).ok().flatten() {
        Some(created) => created.definition,
        None => {
            store
                .list_executions(None)
                .ok()?
                .into_iter()
                .filter(|e| e.state_machine_arn == machine || e.state_machine_name == machine)
                .max_by_key(|e| (e.start_date_ms, e.id))?
                .definition
        }
    };
    let value: serde_json::Value = serde_json::from_str(&definition).ok()?;
    let compiled = [
        crate::asl::MachineType::Standard,
        crate::asl::MachineType::Express,
    ]
    .into_iter()
    .find_map(|t| crate::asl::compile_text(&definition, t).0)?;
    let target = crate::coverage::Target {
        label: machine.to_owned(),
        file: None,
        logical_id: None,
        machine_names: vec![machine.to_owned()],
        machine: compiled,
        definition: value,
        placement: None,
    };
    crate::coverage::measure(store, vec![target]).ok()?.pop()
}

/// `?arn=ARN_OR_NAME` (and after a form post, `&said=...` or `&error=...`).
#[derive(Debug, Deserialize)]
struct ExecutionQuery {
    arn: String,
    said: Option<String>,
    error: Option<String>,
}

/// An execution's picture, history and open tokens.
type Loaded = (
    ExecutionPicture,
    Vec<crate::store::EventRecord>,
    Vec<crate::store::TokenRecord>,
);

/// Reads what the execution page shows, or the error page to answer instead.
fn picture(store: &Store, arn: &str) -> Result<Loaded, Box<Response>> {
    let now = crate::clock::system_now();
    let picture = ExecutionPicture::load(store, arn, now).map_err(|e| match e {
        crate::graph::GraphError::NoExecution(_) => Box::new(failure(StatusCode::NOT_FOUND, e)),
        e => Box::new(failure(StatusCode::INTERNAL_SERVER_ERROR, e)),
    })?;
    let arn = &picture.record.execution_arn;
    let events = store
        .history(arn, false)
        .map_err(|e| Box::new(failure(StatusCode::INTERNAL_SERVER_ERROR, e)))?;
    let tokens = store
        .open_tokens(Some(arn))
        .map_err(|e| Box::new(failure(StatusCode::INTERNAL_SERVER_ERROR, e)))?;
    Ok((picture, events, tokens))
}

async fn execution(State(console): Shared, Query(q): Query<ExecutionQuery>) -> Response {
    match picture(&console.store, &q.arn) {
        Ok((p, events, tokens)) => Html(pages::execution(
            &p,
            &events,
            &tokens,
            (q.said.as_deref(), q.error.as_deref()),
            console.csrf.as_str(),
        ))
        .into_response(),
        Err(r) => *r,
    }
}

async fn execution_live(State(console): Shared, Query(q): Query<ExecutionQuery>) -> Response {
    match picture(&console.store, &q.arn) {
        Ok((p, events, tokens)) => {
            Html(pages::live(&p, &events, &tokens, console.csrf.as_str())).into_response()
        }
        Err(r) => *r,
    }
}

async fn execution_svg(State(console): Shared, Query(q): Query<ExecutionQuery>) -> Response {
    match picture(&console.store, &q.arn) {
        Ok((p, _, _)) => (
            [(header::CONTENT_TYPE, "image/svg+xml")],
            crate::graph::svg::render(&p.graph, Some(&p.overlay)),
        )
            .into_response(),
        Err(r) => *r,
    }
}

/// The same picture as a PNG, for a pull request or a wiki.
async fn execution_png(State(console): Shared, Query(q): Query<ExecutionQuery>) -> Response {
    let (p, _, _) = match picture(&console.store, &q.arn) {
        Ok(found) => found,
        Err(r) => return *r,
    };
    let svg = crate::graph::svg::render(&p.graph, Some(&p.overlay));
    match crate::graph::png::render(&svg) {
        Ok(png) => ([(header::CONTENT_TYPE, "image/png")], png).into_response(),
        Err(e) => failure(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// The fields of the answer forms.
#[derive(Debug, Deserialize)]
struct AnswerForm {
    /// The task token.
    token: String,
    /// Where to go back to (the execution's ARN).
    execution: String,
    /// SendTaskSuccess's output (JSON).
    output: Option<String>,
    /// SendTaskFailure's error.
    error: Option<String>,
    /// SendTaskFailure's cause.
    cause: Option<String>,
    /// The token of this process's pages ([`guard::CsrfToken`]).
    csrf: Option<String>,
}

fn back(form: &AnswerForm, said: Result<&str, String>) -> Redirect {
    let (key, text) = match said {
        Ok(s) => ("said", s.to_owned()),
        Err(e) => ("error", e),
    };
    let url = format!(
        "/console/execution?arn={}&{key}={}",
        pages::url_encode(&form.execution),
        pages::url_encode(&text)
    );
    Redirect::to(&url)
}

/// Answers through the token answer code the CLI and the API use, so the console refuses
/// alike (AWS's error name, then its message); a form without this process's token is refused
/// before anything is read or changed.
fn answer(console: &Console, form: &AnswerForm, answer: SentAnswer, said: &str) -> Response {
    if !console.csrf.matches(form.csrf.as_deref()) {
        return failure(StatusCode::FORBIDDEN, guard::STALE_FORM);
    }
    let store = &console.store;
    match answer_task(store, &form.token, answer, crate::clock::system_now()) {
        Ok(()) => back(form, Ok(said)).into_response(),
        Err(r) => back(form, Err(format!("{}: {r}", r.code()))).into_response(),
    }
}

async fn send_success(State(console): Shared, Form(form): Form<AnswerForm>) -> Response {
    let text = form.output.as_deref().unwrap_or("{}").trim();
    let text = if text.is_empty() { "{}" } else { text };
    answer(
        &console,
        &form,
        SentAnswer::Success(text.to_owned()),
        "success sent",
    )
}

async fn send_failure(State(console): Shared, Form(form): Form<AnswerForm>) -> Response {
    let none_if_empty = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
    let answer_with = SentAnswer::Failure {
        error: none_if_empty(&form.error),
        cause: none_if_empty(&form.cause),
    };
    answer(&console, &form, answer_with, "failure sent")
}

async fn send_heartbeat(State(console): Shared, Form(form): Form<AnswerForm>) -> Response {
    answer(&console, &form, SentAnswer::Heartbeat, "heartbeat sent")
}
