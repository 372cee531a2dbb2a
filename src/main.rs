//! The `sfn-local` binary: parse arguments, hand them to the library's CLI, map the outcome to an
//! exit status.

fn main() -> std::process::ExitCode {
    sfn_local::cli::main()
}
