//! `graph`: draw a definition (or an execution on its definition) as SVG, Mermaid or DOT.

use crate::asl::{self, MachineType};
use crate::cli::report::{self, FileReport};
use crate::cli::EXIT_USAGE;
use crate::graph::{dot, mermaid, svg, ExecutionPicture, Graph};
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

/// The picture's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum GraphFormat {
    /// A standalone SVG, laid out by sfn-local (no Graphviz needed).
    #[default]
    Svg,
    /// A Mermaid flowchart (renders in GitHub markdown).
    Mermaid,
    /// Graphviz DOT.
    Dot,
}

/// Arguments of `graph`.
#[derive(Debug, Args)]
#[command(mut_args(crate::cli::flags::reword("db", "The database (with --execution-arn)")))]
pub struct GraphArgs {
    /// The definition to draw (not needed with --execution-arn).
    #[arg(
        required_unless_present = "execution_arn",
        conflicts_with = "execution_arn"
    )]
    pub definition: Option<PathBuf>,
    /// Draw this execution's path on its machine, coloured by what happened to each state.
    #[arg(long, value_name = "ARN")]
    pub execution_arn: Option<String>,
    /// svg, mermaid or dot.
    #[arg(long, value_enum, default_value_t)]
    pub format: GraphFormat,
    /// Write to this file instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// `--db`, read with --execution-arn.
    #[command(flatten)]
    pub database: crate::cli::flags::DbArgs,
}

/// Runs `graph`.
pub fn run(args: GraphArgs) -> ExitCode {
    let (graph, overlay, name) = if let Some(arn) = &args.execution_arn {
        // The same answers as describe-execution: a missing database holds no execution.
        const OP: &str = "DescribeExecution";
        let store = match crate::cli::executions::open_for(OP, arn, &args.database.lower()) {
            Ok(s) => s,
            Err(code) => return code,
        };
        match ExecutionPicture::load(&store, arn, crate::clock::system_now()) {
            Ok(p) => (p.graph, Some(p.overlay), p.record.state_machine_name),
            Err(crate::graph::GraphError::NoExecution(_)) => {
                return crate::cli::executions::no_execution(OP, arn, store.path());
            }
            Err(e) => {
                errln!("error: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    } else {
        let Some(path) = &args.definition else {
            errln!("error: give a DEFINITION or --execution-arn");
            return ExitCode::from(EXIT_USAGE);
        };
        // JSON or YAML, as every command reads a definition; `${Name}` placeholders get
        // stand-ins, since a picture needs no values.
        let (text, loaded) = match crate::cli::definition::load_file(
            path,
            MachineType::Standard,
            &asl::Substitutions::new(),
            asl::Unresolved::StandIn,
        ) {
            Ok(read) => read,
            Err(e) => {
                errln!("error: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        };
        let (machine, diags) = (loaded.machine, loaded.diagnostics);
        let shown = path.display().to_string();
        let Some(machine) = machine else {
            let report = report::render_human(
                &[FileReport {
                    path: &shown,
                    text: &text,
                    diagnostics: &diags,
                }],
                false,
            );
            err!("{report}");
            errln!("error: {shown} is not a valid state machine; nothing was drawn");
            return ExitCode::from(EXIT_USAGE);
        };
        let name = crate::cli::definition::machine_name(path);
        (Graph::from_machine(&machine), None, name)
    };
    let picture = match args.format {
        GraphFormat::Svg => svg::render(&graph, overlay.as_ref()),
        GraphFormat::Mermaid => mermaid::render(&graph, overlay.as_ref()),
        GraphFormat::Dot => dot::render(&graph, &name, overlay.as_ref()),
    };
    match &args.output {
        Some(file) => {
            if let Err(e) = std::fs::write(file, picture) {
                errln!("error: cannot write {}: {e}", file.display());
                return ExitCode::from(EXIT_USAGE);
            }
        }
        None => {
            use std::io::Write as _;
            let _ = std::io::stdout().lock().write_all(picture.as_bytes());
        }
    }
    ExitCode::SUCCESS
}
