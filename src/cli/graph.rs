//! `graph`: draw a definition (or an execution on its definition) as SVG, PNG, Mermaid or DOT.

use crate::asl;
use crate::cli::report::{self, FileReport};
use crate::cli::EXIT_USAGE;
use crate::graph::{dot, mermaid, png, svg, ExecutionPicture, Graph};
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
    /// The SVG as a PNG (fonts compiled in, nothing read from the machine).
    Png,
}

/// Arguments of `graph`.
#[derive(Debug, Args)]
#[command(mut_args(crate::cli::flags::reword(
    "db",
    "The database (with --execution-arn or --coverage)"
)))]
pub struct GraphArgs {
    /// The definition to draw: a file, or a SAM/CloudFormation template
    /// (`template.yaml#LogicalId` when it has several state machines). Not needed with
    /// --execution-arn.
    #[arg(
        required_unless_present = "execution_arn",
        conflicts_with = "execution_arn"
    )]
    pub definition: Option<PathBuf>,
    /// The logical ID of the template's state machine to draw (as `template.yaml#LogicalId`).
    #[arg(long, value_name = "LOGICAL_ID", requires = "definition")]
    pub state_machine: Option<String>,
    /// Draw this execution's path on its machine, coloured by what happened to each state.
    #[arg(long, value_name = "ARN")]
    pub execution_arn: Option<String>,
    /// Colour the definition by coverage: what the executions in the database that ran it
    /// (by content) reached, and what none did.
    #[arg(long, requires = "definition")]
    pub coverage: bool,
    /// svg, png, mermaid or dot [default: png for an --output ending in .png, else svg].
    #[arg(long, value_enum)]
    pub format: Option<GraphFormat>,
    /// Write to this file instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// `--db`, read with --execution-arn or --coverage.
    #[command(flatten)]
    pub database: crate::cli::flags::DbArgs,
    /// Values for `${NAME}` placeholders (stand-ins for the rest).
    #[command(flatten)]
    pub substitutions: crate::cli::flags::SubstitutionArgs,
}

/// What to draw: the graph, the colours over it, and the machine's name.
type Picture = (Graph, Option<crate::graph::overlay::Overlay>, String);

/// Runs `graph`.
pub fn run(args: GraphArgs) -> ExitCode {
    let drawn = match (&args.execution_arn, &args.definition) {
        (Some(arn), _) => execution_picture(&args, arn),
        (None, Some(path)) => match &args.state_machine {
            Some(id) => definition_picture(&args, &machine_of(path, id)),
            None => definition_picture(&args, path),
        },
        (None, None) => {
            errln!("error: give a DEFINITION or --execution-arn");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let (graph, overlay, name) = match drawn {
        Ok(p) => p,
        Err(code) => return code,
    };
    let format = args
        .format
        .unwrap_or_else(|| format_of(args.output.as_deref()));
    let picture = match format {
        GraphFormat::Svg => svg::render(&graph, overlay.as_ref()).into_bytes(),
        GraphFormat::Mermaid => mermaid::render(&graph, overlay.as_ref()).into_bytes(),
        GraphFormat::Dot => dot::render(&graph, &name, overlay.as_ref()).into_bytes(),
        GraphFormat::Png => match png::render(&svg::render(&graph, overlay.as_ref())) {
            Ok(bytes) => bytes,
            Err(e) => {
                errln!("error: {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    write_picture(args.output.as_deref(), format, &picture)
}

/// PNG when the output file's name ends in `.png`, else SVG.
fn format_of(output: Option<&std::path::Path>) -> GraphFormat {
    let png = output
        .and_then(|f| f.extension())
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    if png {
        GraphFormat::Png
    } else {
        GraphFormat::Svg
    }
}

/// Writes the picture to the file, or to stdout (never a PNG's bytes to a terminal).
fn write_picture(
    output: Option<&std::path::Path>,
    format: GraphFormat,
    picture: &[u8],
) -> ExitCode {
    use std::io::{IsTerminal as _, Write as _};
    match output {
        Some(file) => {
            if let Err(e) = std::fs::write(file, picture) {
                errln!("error: cannot write {}: {e}", file.display());
                return ExitCode::from(EXIT_USAGE);
            }
        }
        None if format == GraphFormat::Png && std::io::stdout().is_terminal() => {
            errln!("error: a PNG is binary: give --output FILE.png, or redirect stdout");
            return ExitCode::from(EXIT_USAGE);
        }
        None => {
            let _ = std::io::stdout().lock().write_all(picture);
        }
    }
    ExitCode::SUCCESS
}

/// An execution's path on its machine.
fn execution_picture(args: &GraphArgs, arn: &str) -> Result<Picture, ExitCode> {
    // The same answers as describe-execution: a missing database holds no execution.
    const OP: &str = "DescribeExecution";
    let store = crate::cli::executions::open_for(OP, arn, &args.database.lower())?;
    match ExecutionPicture::load(&store, arn, crate::clock::system_now()) {
        Ok(p) => Ok((p.graph, Some(p.overlay), p.record.state_machine_name)),
        Err(crate::graph::GraphError::NoExecution(_)) => {
            Err(crate::cli::executions::no_execution(OP, arn, store.path()))
        }
        Err(e) => {
            errln!("error: {e}");
            Err(ExitCode::from(EXIT_USAGE))
        }
    }
}

/// `template.yaml --state-machine ID` as the one argument `template.yaml#ID`.
fn machine_of(template: &std::path::Path, id: &str) -> PathBuf {
    let mut whole = template.as_os_str().to_owned();
    whole.push("#");
    whole.push(id);
    PathBuf::from(whole)
}

/// A definition file's (or a template's) machine, coloured by coverage with `--coverage`.
fn definition_picture(args: &GraphArgs, path: &std::path::Path) -> Result<Picture, ExitCode> {
    let usage = |e: String| {
        errln!("error: {e}");
        ExitCode::from(EXIT_USAGE)
    };
    // JSON or YAML, or a template's state machine, as every command reads a definition;
    // `${Name}` placeholders without a value get stand-ins, since a picture needs none.
    let subs = args.substitutions.substitutions().map_err(usage)?;
    let reference = crate::loader::Reference::parse(path);
    let (file, name) =
        crate::cli::flags::load_reference(&reference, &subs, asl::Unresolved::StandIn)
            .map_err(|e| usage(e.to_string()))?;
    let shown = file.label();
    let Some(machine) = file.definition.machine else {
        let diags = &file.definition.diagnostics;
        let report = report::render_human(&[FileReport::new(&shown, &file.text, diags)], false);
        err!("{report}");
        errln!("error: {shown} is not a valid state machine; nothing was drawn");
        return Err(ExitCode::from(EXIT_USAGE));
    };
    let overlay = match args.coverage {
        true => Some(coverage_overlay(path, args).map_err(usage)?),
        false => None,
    };
    Ok((Graph::from_machine(&machine), overlay, name))
}

/// The coverage colours of the definition at `path` (a file, or `template#LogicalId`), from
/// the executions in the database, with the `--sub` values given.
fn coverage_overlay(
    path: &std::path::Path,
    args: &GraphArgs,
) -> Result<crate::graph::overlay::Overlay, String> {
    let store = args
        .database
        .lower()
        .open_for_reading()
        .map_err(|e| e.to_string())?;
    let targets = crate::cli::coverage::targets(&[path.to_path_buf()], &args.substitutions)?;
    let measured = crate::coverage::measure(&store, targets).map_err(|e| e.to_string())?;
    measured
        .first()
        .map(|m| m.overlay())
        .ok_or_else(|| format!("{} holds no state machine", path.display()))
}
