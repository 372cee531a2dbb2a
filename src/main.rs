//! The `sfn-local` binary: parse arguments, hand them to the library's CLI, map the outcome to an
//! exit status.

// Every state allocates small values (payloads, event details); mimalloc's size classes and
// thread-local free lists cut the allocator's share of a run by more than half.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    sfn_local::cli::main()
}
