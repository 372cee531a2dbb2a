//! Definition text → parse + validate (JSON and YAML, STANDARD and EXPRESS) → the span index and
//! the three report formats, as `sfn-local validate` does for a file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sfn_local::asl::{compile_text, MachineType, SourceFormat};
use sfn_local::cli::report::{render, FileReport, Format};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for (format, path) in [
        (SourceFormat::Json, "machine.asl.json"),
        (SourceFormat::Yaml, "machine.asl.yaml"),
    ] {
        let loaded = sfn_local_fuzz::load_standard(text, format);
        let file = FileReport {
            path,
            logical_id: None,
            template: None,
            text,
            diagnostics: &loaded.diagnostics,
        };
        for f in [Format::Human, Format::Json, Format::Github] {
            let _ = render(f, &[file], false);
        }
    }
    let _ = compile_text(text, MachineType::Express);
});
