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
    /// The folder, when given (`s3://` resources are refused without it).
    pub fn lower(&self) -> Option<PathBuf> {
        self.s3_dir.clone()
    }
}
