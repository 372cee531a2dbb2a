//! The flags every command takes (`-q/--quiet`, `-v/--verbose`, `--color`), set once per process
//! before the command runs and read where output is written.
//!
//! - `--quiet`: results and errors only: no progress display, no hints, no warnings.
//! - `--verbose`: everything: one line per finished state with the progress display, warnings
//!   a definition already showed, files a folder walk passed over.
//! - `--color auto|always|never`: `auto` colors a terminal unless `NO_COLOR` is set or the
//!   terminal is `dumb` (<https://no-color.org>).

use clap::{Args, ValueEnum};
use std::sync::OnceLock;

/// When to color output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set or `TERM` is `dumb`.
    #[default]
    Auto,
    /// Always, even into a pipe.
    Always,
    /// Never.
    Never,
}

/// The flags every command takes, listed last in every command's help (clap numbers a global
/// flag where the top-level command declares it, which a command with many flags of its own
/// would otherwise reach, interleaving them).
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct UiArgs {
    /// Print only results and errors: no progress, hints or warnings.
    #[arg(
        long,
        short,
        global = true,
        conflicts_with = "verbose",
        display_order = 1000
    )]
    pub quiet: bool,
    /// Print more: per-state progress lines, repeated warnings, skipped files.
    #[arg(long, short, global = true, display_order = 1001)]
    pub verbose: bool,
    /// When to color output (NO_COLOR is honoured with `auto`).
    #[arg(long, value_enum, global = true, default_value_t = ColorChoice::Auto, value_name = "WHEN",
          display_order = 1002)]
    pub color: ColorChoice,
}

static UI: OnceLock<UiArgs> = OnceLock::new();

/// Records the flags for this process (the first call wins).
pub fn set(ui: UiArgs) {
    let _ = UI.set(ui);
}

fn get() -> UiArgs {
    UI.get().copied().unwrap_or_default()
}

/// `--quiet`.
pub fn quiet() -> bool {
    get().quiet
}

/// `--verbose`.
pub fn verbose() -> bool {
    get().verbose
}

/// Whether output to a stream (a terminal or not) is colored.
pub fn color(stream_is_terminal: bool) -> bool {
    match get().color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
            let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
            stream_is_terminal && !no_color && !dumb
        }
    }
}
