//! `--s3-dir DIR`: the local S3 that distributed Maps' ItemReader and ResultWriter read and
//! write.

use clap::Args;
use std::path::PathBuf;

/// The local S3 of `run` and `test`.
#[derive(Debug, Clone, Default, Args)]
pub struct S3Args {
    /// The local S3 of distributed Maps' ItemReader/ResultWriter: `s3://BUCKET/KEY` is the
    /// file `DIR/BUCKET/KEY`.
    #[arg(long, value_name = "DIR", env = "SFN_LOCAL_S3_DIR")]
    pub s3_dir: Option<PathBuf>,
}

impl S3Args {
    /// The folder, when given (`s3://` resources are refused without it), made absolute: the
    /// execution keeps it, and a resume or redrive from another folder must find it.
    pub fn lower(&self) -> Option<PathBuf> {
        self.s3_dir.as_deref().map(absolute)
    }
}

/// `dir` made absolute (as given if that fails).
pub fn absolute(dir: &std::path::Path) -> PathBuf {
    std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())
}
