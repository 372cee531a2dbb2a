//! The `sfn-local` binary: parse arguments, hand them to the library's CLI, map the outcome to an
//! exit status.

// Every state allocates small values (payloads, event details); mimalloc's size classes and
// thread-local free lists cut the allocator's share of a run by more than half (a 10,000-item
// Map runs in 0.06 s instead of 0.11 s).
#[global_allocator]
// Metered, so that one JSONata evaluation cannot hold more than its budget (sfn_local::memory).
static ALLOCATOR: sfn_local::memory::Metered<mimalloc::MiMalloc> =
    sfn_local::memory::Metered(mimalloc::MiMalloc);

/// mimalloc's `arena_eager_commit` and `purge_delay` options (the same numbers in mimalloc v2
/// and v3, which libmimalloc-sys builds).
const MI_OPTION_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// mimalloc's `destroy_on_exit`: above 1, its exit handler returns at once.
const MI_OPTION_DESTROY_ON_EXIT: libmimalloc_sys::mi_option_t = 22;
/// How long freed memory stays with the process before it is returned to the system.
const PURGE_DELAY_MS: std::os::raw::c_long = 100;

/// By default mimalloc commits whole arenas up front, which doubled the peak memory of a large
/// Map (61 MB instead of 29 MB) for no speed we could measure: commit on demand instead. Freed
/// memory goes back to the system after 100 ms: purged at once, the history's buffers, freed
/// by the store's writer thread, were faulted in again by the engine's (a 10,000-item Map ran
/// 4% slower, for 37 MB instead of 41 MB at its peak).
///
/// At exit, mimalloc's handler returned every free page to the system (one `madvise` each,
/// with the TLB shootdowns they bring): a twentieth of a one-state `run`'s CPU time, for memory
/// the system takes back anyway when the process ends. `destroy_on_exit` = 2 skips it.
///
/// This must run before the first allocation, which the Rust runtime makes before `main`: set
/// in `main`, the first arena was already committed eagerly, and the kernel zeroed a 2 MiB huge
/// page for it in every process, a quarter of the CPU time of a `send-task-heartbeat`
/// (measured: 4.4 ms of CPU, 3.4 ms with the options set first; `benches/worker-heartbeat.sh`).
extern "C" fn configure_allocator() {
    // SAFETY: plain setters of mimalloc's global options, called before any thread starts.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
        libmimalloc_sys::mi_option_set(MI_OPTION_DESTROY_ON_EXIT, 2);
    }
}

// The dynamic loader runs `.init_array` before `main` and before the runtime allocates.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static CONFIGURE_ALLOCATOR: extern "C" fn() = configure_allocator;

fn main() -> std::process::ExitCode {
    #[cfg(not(target_os = "linux"))]
    configure_allocator();
    sfn_local::cli::main()
}
