//! `--time-scale F`: multiply every duration the engine waits for by F.

use super::FlagError;

/// Checks a time scale: a finite number, zero or more (0: waits take no time).
pub fn check(scale: f64) -> Result<f64, FlagError> {
    if scale.is_finite() && scale >= 0.0 {
        Ok(scale)
    } else {
        Err(FlagError::Usage(
            "--time-scale must be a non-negative number".into(),
        ))
    }
}
