//! Where generated names, the generated parts of ARNs and task tokens get their randomness:
//! the operating system, or, after [`seed`] (`--seed N`), one seeded generator, so that two
//! runs with the same `--clock virtual --clock-start T --seed N` write byte-identical
//! histories.
//!
//! Seeded bytes are predictable by design: a seed is for tests, never for a server others
//! can reach (a token is then no secret).

use std::sync::Mutex;

/// The seeded generator, once `--seed` chose one.
static SEEDED: Mutex<Option<fastrand::Rng>> = Mutex::new(None);

thread_local! {
    /// A generator of this thread's own ([`with_seed`]), over the process's: `test` runs cases
    /// side by side, and each must draw the same sequence whatever the others do.
    static THREAD: std::cell::RefCell<Option<fastrand::Rng>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with every draw on this thread coming from a generator seeded with `n`.
pub fn with_seed<R>(n: u64, f: impl FnOnce() -> R) -> R {
    let before = THREAD.replace(Some(fastrand::Rng::with_seed(n)));
    let result = f();
    THREAD.set(before);
    result
}

/// From now on, every draw in this process comes from a generator seeded with `n`.
pub fn seed(n: u64) {
    *SEEDED.lock().unwrap_or_else(|p| p.into_inner()) = Some(fastrand::Rng::with_seed(n));
}

/// Fills `buf` with random bytes (seeded ones after [`seed`]).
pub fn fill(buf: &mut [u8]) -> Result<(), getrandom::Error> {
    let mine = THREAD.with_borrow_mut(|rng| rng.as_mut().map(|rng| rng.fill(buf)));
    if mine.is_some() {
        return Ok(());
    }
    match SEEDED.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        Some(rng) => {
            rng.fill(buf);
            Ok(())
        }
        None => getrandom::fill(buf),
    }
}

/// A version 4 UUID (from seeded bytes after [`seed`]).
pub fn uuid() -> uuid::Uuid {
    let mut bytes = [0u8; 16];
    if fill(&mut bytes).is_err() {
        return uuid::Uuid::new_v4();
    }
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_seeded_generator_repeats_itself() {
        let draw = |n| {
            let mut rng = fastrand::Rng::with_seed(n);
            let mut b = [0u8; 16];
            rng.fill(&mut b);
            uuid::Builder::from_random_bytes(b).into_uuid()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        assert_eq!(draw(7).get_version_num(), 4);
    }
}
