//! Definition text → parse + validate (JSON and YAML, STANDARD and EXPRESS) → the span index and
//! the three report formats, as `sfn-local validate` does for a file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sfn_local::asl::{
    compile_text, load_text, LoadOptions, MachineType, SourceFormat, Substitutions, Unresolved,
};
use sfn_local::cli::report::{render, FileReport, Format};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let substitutions = Substitutions::new();
    for (format, path) in [
        (SourceFormat::Json, "machine.asl.json"),
        (SourceFormat::Yaml, "machine.asl.yaml"),
    ] {
        let loaded = load_text(
            text,
            format,
            LoadOptions {
                machine_type: MachineType::Standard,
                substitutions: &substitutions,
                unresolved: Unresolved::StandIn,
            },
        );
        let file = FileReport {
            path,
            text,
            diagnostics: &loaded.diagnostics,
        };
        for f in [Format::Human, Format::Json, Format::Github] {
            let _ = render(f, &[file], false);
        }
    }
    let _ = compile_text(text, MachineType::Express);
});
