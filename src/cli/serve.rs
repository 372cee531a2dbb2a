//! `sfn-local serve`: the AWS Step Functions API on localhost (see [`crate::serve`]).

use crate::cli::flags::{
    self, AccountArgs, DatabaseArgs, EndpointArgs, FlagError, SupervisionArgs, TemplatesArgs,
};
use crate::cli::EXIT_USAGE;
use crate::serve::{Created, InitialMachine, MachineTask, ServeConfig};
use clap::Args;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `serve`.
#[derive(Debug, Args)]
#[command(mut_args(flags::reword(
    "region",
    "The region of ARNs for unsigned requests (a signed request's own region wins)"
)))]
#[command(mut_args(flags::edit("account_id", |arg| arg
    .env("AWS_ACCOUNT_ID")
    .help("The account id in ARNs (Step Functions Local's AWS_ACCOUNT_ID)"))))]
#[command(mut_args(flags::reword(
    "endpoints",
    "Call a service's integrations at a local endpoint: SERVICE=URL (repeatable; `all=URL` for one endpoint serving every service). Also Step Functions Local's LAMBDA_ENDPOINT, SQS_ENDPOINT, ... (a flag wins over a variable)"
)))]
pub struct ServeArgs {
    /// The port (Step Functions Local's is 8083; 0 picks a free one). Once listening, serve
    /// prints `SFN_LOCAL_ENDPOINT=http://HOST:PORT` on a line of its own to stdout.
    #[arg(long, default_value_t = 8083)]
    pub port: u16,
    /// Once the server accepts connections, write {"endpoint", "host", "port", "pid",
    /// "database"} as JSON to PATH (atomically: it exists only whole); removed when serve stops.
    #[arg(long, value_name = "PATH")]
    pub ready_file: Option<PathBuf>,
    /// The address to listen on. Only loopback unless you name another address here (the
    /// Docker image sets SFN_LOCAL_BIND=0.0.0.0).
    #[arg(long, env = "SFN_LOCAL_BIND", default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// `--region`, `--account-id`.
    #[command(flatten)]
    pub account: AccountArgs,
    /// `--db`, `--durability`.
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// A MockConfigFile (Step Functions Local's format) for `stateMachineArn#TestCase`
    /// (default: ./MockConfigFile.json when it exists, as Step Functions Local's JAR reads it).
    #[arg(long, value_name = "FILE", env = "SFN_MOCK_CONFIG")]
    pub mock_config: Option<PathBuf>,
    /// `--clock`, `--clock-start`, `--time-scale`, `--seed`. A virtual clock here moves only
    /// when a client asks (`sfn-local clock`, POST /sfn-local/clock).
    #[command(flatten)]
    pub clock: flags::ClockArgs,
    /// Multiply the time Wait states wait, and nothing else (Step Functions Local's
    /// WAIT_TIME_SCALE: task timeouts, heartbeats and retry intervals keep their length)
    #[arg(long, value_name = "F", env = "WAIT_TIME_SCALE", default_value_t = 1.0)]
    pub wait_time_scale: f64,
    /// Run a local program for the Task states of this name in every state machine
    /// (STATE=COMMAND), or in one (MACHINE:STATE=COMMAND); repeatable.
    #[arg(long = "task", value_name = "[MACHINE:]STATE=COMMAND")]
    pub tasks: Vec<String>,
    /// Run a managed handler for `.waitForTaskToken` states of this name, in every state
    /// machine or in one: [MACHINE:]STATE=COMMAND (repeatable). Its stdout answers the task;
    /// heartbeats and cancellation are done for it (see "Workers").
    #[arg(long = "worker", value_name = "[MACHINE:]STATE=COMMAND")]
    pub workers: Vec<String>,
    /// `--endpoint`.
    #[command(flatten)]
    pub endpoints: EndpointArgs,
    /// Reproduce Step Functions Local where suites assert its differences from AWS (see the
    /// README's table); AWS's behaviour by default.
    #[arg(long, value_enum, env = "SFN_LOCAL_COMPAT", default_value_t = CompatArg::Aws)]
    pub compat: CompatArg,
    /// `--heartbeat`, `--kill-after`.
    #[command(flatten)]
    pub supervision: SupervisionArgs,
    /// The history cap (AWS: 25000). 0 removes it.
    #[arg(long, default_value_t = crate::engine::history::MAX_HISTORY_EVENTS)]
    pub max_history_events: i64,
    /// How many threads run executions at first (each hosts many); more start, up to 8 times
    /// as many, while every one is held by a long evaluation.
    #[arg(long, default_value_t = 2)]
    pub execution_threads: usize,
    /// Let HTTP Tasks (`http:invoke`) call their ApiEndpoint: any host, or only the HOST or
    /// HOST:PORT listed. Off by default: a server that calls whatever URL a request names is a
    /// proxy into this machine for anyone who reaches it.
    #[arg(long, value_name = "HOST", num_args = 0.., value_delimiter = ',')]
    pub allow_http_invoke: Option<Vec<String>>,
    /// Allow a --bind address other than loopback (or --allow-host '*' or a public suffix such
    /// as .com) even with --task or --worker bindings or a template's Lambda code.
    // Falsey: the variable reads as a switch (`1`, `true`, `yes` allow; `0`, `false`, `no` or empty
    // do not), as the Docker image and the README set it (`SFN_LOCAL_ALLOW_REMOTE=1`).
    #[arg(long, env = "SFN_LOCAL_ALLOW_REMOTE", action = clap::ArgAction::SetTrue,
          value_parser = clap::builder::FalseyValueParser::new())]
    pub allow_remote: bool,
    /// Who may address the server and how long clients may take.
    #[command(flatten)]
    pub web: crate::cli::web::WebArgs,
    /// `--template` (repeatable), `--sub`, `--definition-substitutions`.
    #[command(flatten)]
    pub templates: TemplatesArgs,
}

/// `--compat`: whose behaviour to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompatArg {
    /// AWS Step Functions.
    Aws,
    /// AWS Step Functions Local (the `amazon/aws-stepfunctions-local` image).
    #[value(name = "stepfunctions-local")]
    StepfunctionsLocal,
}

impl From<CompatArg> for crate::asl::Compat {
    fn from(c: CompatArg) -> Self {
        match c {
            CompatArg::Aws => crate::asl::Compat::Aws,
            CompatArg::StepfunctionsLocal => crate::asl::Compat::StepFunctionsLocal,
        }
    }
}

/// Parses `--task`/`--worker` bindings and checks each program can be started, before the
/// server listens: a binding that cannot work is refused (exit 2), not found out by an
/// execution.
fn bindings(flag: &str, written: &[String]) -> Result<Vec<MachineTask>, String> {
    let mut out = Vec::new();
    for text in written {
        let binding = MachineTask::parse_flag(flag, text)?;
        binding
            .command
            .check_program()
            .map_err(|e| format!("{}: {e}", binding.written))?;
        out.push(binding);
    }
    Ok(out)
}

/// Step Functions Local's ready line, which suites and testcontainers wait for (its log
/// prints `Starting server on port 8083 with account 123456789012, region us-east-1` on
/// stdout once it accepts connections).
fn announce_ready(port: u16, account: &str, region: &str) {
    let now = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S%.3f");
    outln!("{now}: Starting server on port {port} with account {account}, region {region}");
}

/// Bindings as the template names its machines: a MACHINE that is a template machine's
/// logical ID binds that machine (the server knows it by its name). With templates, a binding
/// that matches no template machine, or no Task state of one, is a warning naming the ones
/// there are: it still binds a machine of that name a client creates later.
fn match_template_machines(bindings: &mut [MachineTask], machines: &[InitialMachine]) {
    if machines.is_empty() {
        return;
    }
    let names: Vec<&str> = machines.iter().map(|m| m.name.as_str()).collect();
    for b in bindings.iter_mut() {
        if let Some(m) = machines
            .iter()
            .find(|m| b.machine.as_deref() == Some(&m.logical_id))
        {
            b.machine = Some(m.name.clone());
        }
        let serves: Vec<&InitialMachine> = machines.iter().filter(|m| b.serves(&m.name)).collect();
        if serves.is_empty() {
            errln!(
                "warning: {} binds no state machine of the templates (they are {}); it binds one of that name created later",
                b.written,
                names.join(", ")
            );
            continue;
        }
        let states: std::collections::BTreeSet<String> = serves
            .iter()
            .flat_map(|m| task_states(&m.definition))
            .collect();
        if !states.contains(&b.state) {
            let hint = crate::suggest::did_you_mean(&b.state, states.iter().map(String::as_str));
            let serving: Vec<&str> = serves.iter().map(|m| m.name.as_str()).collect();
            let all: Vec<&str> = states.iter().map(String::as_str).collect();
            errln!(
                "warning: {} binds nothing: no Task state '{}' in {}{hint} (its Task states: {})",
                b.written,
                b.state,
                serving.join(", "),
                all.join(", ")
            );
        }
    }
}

/// With templates, a mock config's machine that is none of theirs, or a mocked state that is
/// no Task of its machine, is a warning naming the ones there are (a client may still create
/// a machine of that name; a config that does not read is reported when a test case uses it).
fn warn_mocks_matching_nothing(file: &Path, machines: &[InitialMachine]) {
    let Ok(config) = crate::cli::flags::mocks::read_config(file) else {
        return;
    };
    if machines.is_empty() {
        return;
    }
    let names: Vec<&str> = machines.iter().map(|m| m.name.as_str()).collect();
    for (name, cases) in &config.machines {
        let Some(machine) = machines.iter().find(|m| &m.name == name) else {
            errln!(
                "warning: the mock config {} mocks '{name}', none of the templates' state machines ({})",
                file.display(),
                names.join(", ")
            );
            continue;
        };
        let states = task_states(&machine.definition);
        let mocked = cases.values().flat_map(|states| states.keys());
        for state in mocked.filter(|s| !states.contains(s)) {
            let hint = crate::suggest::did_you_mean(state, states.iter().map(String::as_str));
            errln!(
                "warning: the mock config {} mocks state '{state}' of {name}, which has no such Task state{hint} (its Task states: {})",
                file.display(),
                states.join(", ")
            );
        }
    }
}

/// The names of the Task states of a definition (JSON), at every depth.
fn task_states(definition: &str) -> Vec<String> {
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(map) => {
                if let Some(serde_json::Value::Object(states)) = map.get("States") {
                    let tasks = states.iter().filter(|(_, s)| s["Type"] == "Task");
                    out.extend(tasks.map(|(name, _)| name.clone()));
                }
                map.values().for_each(|child| walk(child, out));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|child| walk(child, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Ok(value) = serde_json::from_str(definition) {
        walk(&value, &mut out);
    }
    out
}

/// The `--template` machines, named and checked: their diagnostics shown (stand-ins are
/// warnings), and a machine with an ERROR refused (exit 1), as `validate` would fail it.
fn initial_machines(args: &ServeArgs, account_id: &str) -> Result<Vec<InitialMachine>, ExitCode> {
    let files = args.templates.lower().map_err(FlagError::exit)?;
    let mut machines: Vec<InitialMachine> = Vec::new();
    for file in files {
        if !file.definition.diagnostics.is_empty() {
            let color = crate::cli::report::color_wanted(std::io::IsTerminal::is_terminal(
                &std::io::stderr(),
            ));
            err!(
                "{}",
                crate::cli::report::render_human(&[file.report()], color)
            );
        }
        // A definition in S3 is valid but not here: the others are served without it.
        if file.definition.json.is_none() && !file.definition.diagnostics.has_errors() {
            errln!(
                "sfn-local: {} is not created: its definition is in S3",
                file.label()
            );
            continue;
        }
        let (Some(definition), false) = (
            file.definition.json.clone(),
            file.definition.diagnostics.has_errors(),
        ) else {
            errln!(
                "error: {} is not a valid state machine; serve did not start",
                file.label()
            );
            return Err(ExitCode::from(1));
        };
        let logical_id = file.logical_id.clone().unwrap_or_default();
        let name = file.deployed_name.clone().unwrap_or(logical_id.clone());
        if let Some(twin) = machines.iter().find(|m| m.name == name) {
            let why = format!(
                "--template: {} and {} are both named {name}; a server holds one machine per name",
                twin.source,
                file.label()
            );
            return Err(FlagError::Usage(why).exit());
        }
        machines.push(InitialMachine {
            name,
            logical_id: logical_id.clone(),
            machine_type: match file.machine_type {
                crate::asl::MachineType::Express => "EXPRESS",
                crate::asl::MachineType::Standard => "STANDARD",
            }
            .to_owned(),
            definition,
            // SAM names the role it creates after the logical ID (`STACK-IDRole-...`).
            role_arn: format!("arn:aws:iam::{account_id}:role/{logical_id}Role"),
            source: file.label(),
            functions: file.functions.clone(),
        });
    }
    Ok(machines)
}

/// Lowers `serve`'s flags (all but the database, the ready file and the templates) into the
/// server's configuration, checking each binding's program can be started before the server
/// listens.
fn lower(args: ServeArgs, machines: Vec<InitialMachine>) -> Result<ServeConfig, FlagError> {
    let time = args.clock.lower(flags::ClockKind::Real, false)?;
    let wait_scale = flags::clock::check(args.wait_time_scale)?;
    let mut tasks = bindings("--task", &args.tasks)?;
    let mut workers = bindings("--worker", &args.workers)?;
    match_template_machines(&mut tasks, &machines);
    match_template_machines(&mut workers, &machines);
    let endpoints = args.endpoints.lower()?;
    let bound = !(tasks.is_empty() && workers.is_empty());
    let web = args.web.options("sfn-local serve")?;
    let functions = crate::tasks::local_lambda::LocalFunctions::merged(
        machines.iter().filter_map(|m| m.functions.clone()),
    );
    let exposure = crate::cli::web::Exposure {
        bind: args.bind,
        open_host: web.hosts.open_to_any_page(),
        runs_commands: bound,
        runs_template_code: functions.as_ref().is_some_and(|f| f.runs_local_code()),
        proxies_anywhere: crate::tasks::http::HttpAccess::from_flag(
            args.allow_http_invoke.as_deref(),
        )
        .is_any(),
        allow_remote: args.allow_remote,
    };
    crate::cli::web::check_exposure("sfn-local serve", &exposure)?;
    let account = args.account.lower();
    let mock_config = args.mock_config.or_else(|| {
        let default = PathBuf::from("MockConfigFile.json");
        default.is_file().then_some(default)
    });
    if let Some(file) = &mock_config {
        warn_mocks_matching_nothing(file, &machines);
    }
    Ok(ServeConfig {
        bind: SocketAddr::new(args.bind, args.port),
        region: account.region,
        account_id: account.account_id,
        time,
        wait_scale,
        mock_config,
        tasks,
        endpoints,
        compat: args.compat.into(),
        workers,
        worker_options: args.supervision.lower(),
        max_history_events: args.max_history_events,
        threads: args.execution_threads,
        web,
        http_invoke: crate::tasks::http::HttpAccess::from_flag(args.allow_http_invoke.as_deref()),
        machines,
        functions,
    })
}

/// Runs `serve` until SIGINT or SIGTERM.
pub fn run(args: ServeArgs) -> ExitCode {
    let database = args.database.lower();
    let ready_file = args.ready_file.clone();
    let account_id = args.account.lower().account_id;
    let machines = match initial_machines(&args, &account_id) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let config = match lower(args, machines) {
        Ok(c) => c,
        Err(e) => return e.exit(),
    };
    if let Err(e) = clear_ready_file(ready_file.as_deref()) {
        return FlagError::Usage(e).exit();
    }
    let store = match database.open() {
        Ok(s) => s,
        Err(e) => return e.exit(),
    };
    let path = store.path().display().to_string();
    let (account, region) = (config.account_id.clone(), config.region.clone());
    let result = crate::serve::run(store, config, |addr, created, resumed| {
        say_created(created);
        if resumed > 0 {
            errln!("sfn-local serve: resumed {resumed} execution(s) whose runner was gone");
        }
        errln!("sfn-local serve: listening on http://{addr} (database {path})");
        announce_ready(addr.port(), &account, &region);
        announce_endpoint(addr, ready_file.as_deref(), &path)
    });
    if let Some(file) = &ready_file {
        let _ = std::fs::remove_file(file);
    }
    match result {
        Ok(()) => {
            errln!("sfn-local serve: stopped; running executions stay RUNNING and resume on the next start");
            ExitCode::SUCCESS
        }
        Err(e) => {
            errln!("error: {e}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// One line per `--template` machine: its ARN, and whether it was created or updated.
fn say_created(created: &[(String, Created)]) {
    for (arn, what) in created {
        let what = match what {
            Created::New => "created",
            Created::Updated => "updated (the template changed it)",
            Created::Unchanged => "already there",
        };
        errln!("sfn-local serve: {arn}: {what}");
    }
}

/// The URL a client on this machine uses: an unspecified bind address (`0.0.0.0`, `::`) is
/// reached through loopback.
pub fn endpoint_url(addr: SocketAddr) -> String {
    let host = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}", SocketAddr::new(host, addr.port()))
}

/// Tells a test fixture where the server is, once it accepts connections: the `--ready-file`
/// (when asked for), then `SFN_LOCAL_ENDPOINT=URL` alone on a line of stdout, flushed. This line's
/// form is stable: fixtures parse it.
fn announce_endpoint(
    addr: SocketAddr,
    ready_file: Option<&Path>,
    database: &str,
) -> Result<(), String> {
    let endpoint = endpoint_url(addr);
    if let Some(file) = ready_file {
        let ready = serde_json::json!({
            "endpoint": endpoint,
            "host": endpoint_host(&endpoint),
            "port": addr.port(),
            "pid": std::process::id(),
            "database": database,
        });
        write_atomically(file, &format!("{ready}\n"))
            .map_err(|e| format!("--ready-file {}: {e}", file.display()))?;
    }
    outln!("SFN_LOCAL_ENDPOINT={endpoint}");
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    Ok(())
}

/// `127.0.0.1` or `::1` out of `http://127.0.0.1:8083` or `http://[::1]:8083`.
fn endpoint_host(endpoint: &str) -> &str {
    let authority = endpoint.trim_start_matches("http://");
    let host = authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host);
    host.trim_start_matches('[').trim_end_matches(']')
}

/// Writes beside the file then renames, so a reader polling for it never sees half of it.
fn write_atomically(file: &Path, text: &str) -> std::io::Result<()> {
    let mut partial = file.as_os_str().to_owned();
    partial.push(format!(".{}.partial", std::process::id()));
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, file).inspect_err(|_| {
        let _ = std::fs::remove_file(&partial);
    })
}

/// Removes a ready file left by an earlier server (so a waiter never takes it for this one's),
/// after checking that its folder exists: a typo fails before the server starts, not after.
fn clear_ready_file(file: Option<&Path>) -> Result<(), String> {
    let Some(file) = file else { return Ok(()) };
    let folder = match file.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        return Err(format!(
            "--ready-file {}: the folder {} does not exist",
            file.display(),
            folder.display()
        ));
    }
    match std::fs::remove_file(file) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("--ready-file {}: {e}", file.display())),
    }
}
