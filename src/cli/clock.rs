//! `sfn-local clock now|advance DURATION|next|until-idle --endpoint-url URL`: moves the virtual
//! clock of a `serve --clock virtual` (through the sfn-local extension `POST /sfn-local/clock`,
//! which AWS does not have), and prints where it stands as JSON.

use crate::cli::EXIT_USAGE;
use clap::{Args, Subcommand};
use serde_json::{json, Value};
use std::process::ExitCode;

/// Arguments of `clock`.
#[derive(Debug, Args)]
pub struct ClockArgs {
    /// What to do with the clock.
    #[command(subcommand)]
    pub action: ClockAction,
    /// The server (`sfn-local serve --clock virtual`).
    #[arg(
        long,
        value_name = "URL",
        env = "SFN_LOCAL_ENDPOINT",
        global = true,
        default_value = "http://127.0.0.1:8083"
    )]
    pub endpoint_url: String,
}

/// What `clock` does.
#[derive(Debug, Clone, Subcommand)]
pub enum ClockAction {
    /// Print where the clock stands, its next deadline and how many are waited for.
    Now,
    /// Move the clock forward (e.g. 61s, 1h 30m, 1day), firing every deadline on the way in
    /// order, each once what it caused has settled; never past 9999-12-31T23:59:59.999Z (an
    /// advance past it is refused and the clock stays).
    Advance {
        /// How far.
        #[arg(value_name = "DURATION")]
        duration: String,
    },
    /// Jump to the next deadline and fire every one due then.
    Next,
    /// Jump from deadline to deadline until nothing waits on time.
    UntilIdle,
}

impl ClockAction {
    fn body(&self) -> Value {
        match self {
            ClockAction::Now => json!({"action": "now"}),
            ClockAction::Advance { duration } => json!({"action": "advance", "duration": duration}),
            ClockAction::Next => json!({"action": "next"}),
            ClockAction::UntilIdle => json!({"action": "until-idle"}),
        }
    }
}

/// Runs `clock`.
pub fn run(args: ClockArgs) -> ExitCode {
    if let ClockAction::Advance { duration } = &args.action {
        if let Err(e) = crate::api::clock::parse_duration(duration) {
            errln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    }
    let url = format!(
        "{}{}",
        args.endpoint_url.trim_end_matches('/'),
        crate::api::clock::PATH
    );
    match post(&url, &args.action.body()) {
        Ok(answer) => {
            println!("{answer}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            errln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn post(url: &str, body: &Value) -> Result<String, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let answer = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| format!("cannot reach {url}: {e}"))?;
        let status = answer.status();
        let text = answer.text().await.map_err(|e| e.to_string())?;
        if status.is_success() {
            Ok(text)
        } else {
            let message = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or(text);
            Err(format!("{url}: {message}"))
        }
    })
}
