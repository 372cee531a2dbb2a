//! `sfn-local console [--port N] [--db PATH]`: the console's pages ([`crate::console`]) on
//! localhost, over the database, until Ctrl-C.

use crate::cli::flags::DbArgs;
use crate::cli::EXIT_USAGE;
use clap::Args;
use std::process::ExitCode;

/// Arguments of `console`.
#[derive(Debug, Args)]
pub struct ConsoleArgs {
    /// The port (0 picks a free one; the address is printed on stderr).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// `--db`.
    #[command(flatten)]
    pub database: DbArgs,
    /// Who may address the server and how long clients may take.
    #[command(flatten)]
    pub web: crate::cli::web::WebArgs,
}

/// Runs `console`.
pub fn run(args: ConsoleArgs) -> ExitCode {
    let checked = args.web.options("sfn-local console").and_then(|web| {
        let exposure = crate::cli::web::Exposure {
            bind: args.bind,
            open_host: web.hosts.open_to_any_page(),
            runs_commands: false,
            runs_template_code: false,
            proxies_anywhere: false,
            allow_remote: false,
        };
        crate::cli::web::check_exposure("sfn-local console", &exposure).map(|()| web)
    });
    let web = match checked {
        Ok(web) => web,
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let store = match args.database.lower().open() {
        Ok(s) => s,
        Err(e) => return e.exit(),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(crate::depth::THREAD_STACK_BYTES)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            errln!("error: cannot start the server: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    runtime.block_on(async move {
        let address = std::net::SocketAddr::new(args.bind, args.port);
        let listener = match tokio::net::TcpListener::bind(address).await {
            Ok(l) => l,
            Err(e) => {
                errln!("error: cannot listen on {address}: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        };
        let shown = listener.local_addr().unwrap_or(address);
        errln!(
            "sfn-local console: http://{shown}/ (database {}); Ctrl-C stops it",
            store.path().display()
        );
        let app = crate::console::router(store);
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        match crate::web::listen::serve(listener, app, &web, shutdown).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                errln!("error: {e}");
                ExitCode::from(EXIT_USAGE)
            }
        }
    })
}
