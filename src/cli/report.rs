//! Temporary stand-in for the diagnostic renderer (replaced by the source branch).
#![allow(missing_docs)]
use crate::asl::Diagnostics;

pub struct FileReport<'a> {
    pub path: &'a str,
    pub text: &'a str,
    pub diagnostics: &'a Diagnostics,
}

pub fn render_human(files: &[FileReport<'_>], _color: bool) -> String {
    let mut out = String::new();
    for f in files {
        for d in f.diagnostics.iter() {
            out.push_str(&format!(
                "{}: {:?} {} {}: {}\n",
                f.path,
                d.severity,
                d.code,
                d.location_text().unwrap_or_default(),
                d.message
            ));
        }
    }
    out
}

pub fn render_json(files: &[FileReport<'_>]) -> String {
    render_human(files, false)
}

pub fn render_github(files: &[FileReport<'_>]) -> String {
    render_human(files, false)
}
