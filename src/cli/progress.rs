//! Progress on `run` and `resume` while stderr is a terminal: the states running now, events so
//! far, tasks waiting for a token with their deadlines counting down, retries; with `-v`, one
//! line per finished state.
//!
//! It reads what the engine committed (the database is the source of truth) from a thread of its
//! own, so the engine knows nothing of it. The spinner is drawn only on a terminal, never with
//! `--quiet` or `--format json`; the `-v` lines are printed wherever stderr goes (a CI log, a
//! pipe under pytest), since that is where they are wanted most.

use crate::graph::overlay::{duration_text, Overlay};
use crate::store::Store;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the spinner reads the database.
const TICK: Duration = Duration::from_millis(200);

/// A running progress display; [`Progress::finish`] (or dropping it) clears it.
pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Whether progress should be watched: not `--quiet`, and either `--verbose` (its lines go
/// to any stderr) or a terminal without JSON output (for the spinner).
pub fn wanted(quiet: bool, json: bool) -> bool {
    !quiet && (crate::cli::ui::verbose() || (!json && std::io::stderr().is_terminal()))
}

impl Progress {
    /// Starts watching the executions (by ARN or name); call only when [`wanted`].
    pub fn start(store: Arc<Store>, executions: Vec<String>, verbose: bool) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || watch(&store, &executions, verbose, &flag))
            .ok();
        Progress { stop, thread }
    }

    /// Stops and clears the display.
    pub fn finish(mut self) {
        self.end();
    }

    fn end(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.end();
    }
}

fn watch(store: &Store, executions: &[String], verbose: bool, stop: &AtomicBool) {
    // The spinner only on a terminal; elsewhere the `-v` lines alone, printed as they come.
    let terminal = std::io::stderr().is_terminal();
    let target = if terminal {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(None, target);
    let print = |line: String| {
        if terminal {
            bar.println(line);
        } else {
            errln!("{line}");
        }
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner:.cyan} {elapsed:>4} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    let mut seen = vec![0usize; executions.len()];
    loop {
        // One more look after the stop, so `-v` prints the last states too.
        let stopping = stop.load(Ordering::Relaxed);
        let now = crate::clock::system_now();
        let mut parts = Vec::new();
        for (i, arn) in executions.iter().enumerate() {
            let Ok(events) = store.history(arn, false) else {
                continue;
            };
            if verbose {
                for event in events.iter().skip(seen[i]) {
                    if let Some(line) = finished_line(event) {
                        print(line);
                    }
                }
            }
            seen[i] = events.len();
            let tokens = store.open_tokens(Some(arn)).unwrap_or_default();
            let overlay = Overlay::from_history(&events, &tokens, true, now);
            parts.push(status_line(&overlay, events.len()));
        }
        bar.set_message(parts.join("  |  "));
        bar.tick();
        if stopping {
            break;
        }
        std::thread::sleep(TICK);
    }
    bar.finish_and_clear();
}

/// `12 events · running Ship, Invoice · waiting Approve (59 min 58 s) · 2 retries`.
fn status_line(overlay: &Overlay, events: usize) -> String {
    let mut running = Vec::new();
    let mut waiting = Vec::new();
    let mut retries = 0;
    let mut names: Vec<&String> = overlay.states.keys().collect();
    names.sort();
    for name in names {
        let run = &overlay.states[name];
        retries += run.retries;
        if !run.waiting.is_empty() {
            let deadline = run.waiting.iter().flatten().min();
            waiting.push(match deadline {
                Some(at) => format!(
                    "{name} ({} left)",
                    duration_text((at - overlay.now_ms).max(0))
                ),
                None => name.clone(),
            });
        } else if run.open > 0 {
            running.push(name.clone());
        }
    }
    let mut line = format!("{events} events");
    if !running.is_empty() {
        line.push_str(&format!(" · running {}", running.join(", ")));
    }
    if !waiting.is_empty() {
        line.push_str(&format!(" · waiting for a token: {}", waiting.join(", ")));
    }
    if retries > 0 {
        line.push_str(&format!(" · {retries} retries"));
    }
    line
}

/// With `-v`: `✓ Name` when a state exits, `✗ Name` when a Fail state is entered.
fn finished_line(event: &crate::store::EventRecord) -> Option<String> {
    let name = || {
        event
            .details
            .as_deref()
            .and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok())
            .and_then(|d| d["name"].as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    if event.event_type.ends_with("StateExited") {
        Some(format!("  ✓ {}", name()))
    } else if event.event_type == "FailStateEntered" {
        Some(format!("  ✗ {}", name()))
    } else if event.event_type.ends_with("Failed") || event.event_type.ends_with("TimedOut") {
        let details: serde_json::Value = event
            .details
            .as_deref()
            .and_then(|d| serde_json::from_str(d).ok())
            .unwrap_or_default();
        Some(format!(
            "  ! {} {}",
            event.event_type,
            details["error"].as_str().unwrap_or_default()
        ))
    } else {
        None
    }
}
