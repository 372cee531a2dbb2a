//! `sfn-local test`: a fuzzed test spec (`*.sfntest.json`) and MockConfigFile beside a fixed,
//! valid definition, read and run as the command does (every case to its end, in memory).
//!
//! Input: `SPEC \0 MOCK CONFIG`. The command's report goes to stdout: run with
//! `-close_fd_mask=1`.
#![no_main]

use libfuzzer_sys::fuzz_target;

// As the binary does: one JSONata evaluation holds a bounded amount of memory.
#[global_allocator]
static ALLOCATOR: sfn_local::memory::Metered<std::alloc::System> =
    sfn_local::memory::Metered(std::alloc::System);
use sfn_local::cli::test::{run, TestArgs};
use std::path::PathBuf;
use std::sync::OnceLock;

const DEFINITION: &str = r#"{"StartAt":"Get","States":{
    "Get":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","ResultPath":"$.got",
           "Retry":[{"ErrorEquals":["Again"],"MaxAttempts":2,"IntervalSeconds":1}],
           "Catch":[{"ErrorEquals":["States.ALL"],"Next":"Failed"}],"Next":"Route"},
    "Route":{"Type":"Choice","Choices":[{"Variable":"$.got.ok","BooleanEquals":true,"Next":"Done"}],"Default":"Failed"},
    "Failed":{"Type":"Fail","Error":"Bad","Cause":"no"},
    "Done":{"Type":"Succeed"}}}"#;

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // Under fuzz/target (ignored by git, removed with the build), one per process.
        let d = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join(format!("test-spec-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("a temporary folder");
        std::fs::write(d.join("m.asl.json"), DEFINITION).expect("the definition is written");
        d
    })
}

fuzz_target!(|data: &[u8]| {
    let (spec, mocks) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let dir = dir();
    let spec_path = dir.join("m.sfntest.json");
    if std::fs::write(&spec_path, spec).is_err()
        || std::fs::write(dir.join("m.mocks.json"), mocks).is_err()
    {
        return;
    }
    let _ = run(TestArgs {
        specs: vec![spec_path],
        junit: None,
        jobs: Some(1),
        update_snapshots: false,
        clock: Default::default(),
        case_timeout: 5,
        substitutions: Default::default(),
        s3: Default::default(),
        machines: Default::default(),
        coverage: false,
        coverage_format: Default::default(),
        coverage_output: None,
        coverage_fail_under: None,
    });
});
