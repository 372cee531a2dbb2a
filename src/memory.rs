//! Allocation metering: a global allocator wrapper that counts the bytes a *metered section*
//! of one thread holds, and stops the section once it holds more than its budget.
//!
//! A JSONata evaluation is the one place where a short text written by a user can ask for
//! gigabytes (`[1..1000].{"a": [1..500000]}`: each array is within the engine's own limits,
//! their sum is not; found by fuzzing). The engine has no memory limit of its own but can be
//! cancelled between steps, so [`Section`] holds its cancel token and the allocator cancels it
//! when the section's bytes pass the budget: the evaluation then fails at its next step, having
//! allocated at most one step's worth more (one array or string, each bounded by the engine).
//!
//! Only the binary installs [`Metered`] (`main.rs`); without it a section counts nothing and
//! never cancels.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

/// The budget and the bytes held by the current section of a thread.
struct Meter {
    /// Bytes allocated minus bytes freed on this thread since the section started.
    held: Cell<isize>,
    /// The budget in bytes; 0 when no section is open.
    budget: Cell<isize>,
    /// The section's cancel token, valid while the section is open.
    cancel: Cell<*const jlens_core::CancelToken>,
}

thread_local! {
    // `const`: no lazy initialisation, so no allocation from inside the allocator.
    static METER: Meter = const {
        Meter {
            held: Cell::new(0),
            budget: Cell::new(0),
            cancel: Cell::new(std::ptr::null()),
        }
    };
}

/// A global allocator that meters sections on top of `A`.
pub struct Metered<A>(pub A);

impl<A> Metered<A> {
    fn count(delta: isize) {
        // `try_with`: the thread's storage may be gone while the thread ends.
        let _ = METER.try_with(|m| {
            let budget = m.budget.get();
            if budget == 0 {
                return;
            }
            let held = m.held.get() + delta;
            m.held.set(held);
            if held > budget {
                let token = m.cancel.get();
                if !token.is_null() {
                    // SAFETY: the pointer is set by `Section::start` to a token the section
                    // owns and cleared when the section drops, on this same thread.
                    unsafe { (*token).cancel() };
                }
            }
        });
    }
}

// SAFETY: every call is passed to `A` unchanged; metering only counts.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Metered<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::count(layout.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        Self::count(-(layout.size() as isize));
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::count(layout.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::count(new_size as isize - layout.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }
}

/// A metered section of the current thread: while it lives, holding more than `budget` bytes
/// cancels `token`. Sections do not nest (a JSONata evaluation does not start another).
pub struct Section {
    /// Boxed so its address stays put while the allocator may read it.
    token: Box<jlens_core::CancelToken>,
}

impl Section {
    /// Opens a section with this budget, cancelling `token` when it is exceeded.
    pub fn start(budget: usize, token: jlens_core::CancelToken) -> Section {
        let token = Box::new(token);
        let ptr: *const jlens_core::CancelToken = &*token;
        METER.with(|m| {
            m.held.set(0);
            m.cancel.set(ptr);
            m.budget
                .set(isize::try_from(budget).unwrap_or(isize::MAX).max(1));
        });
        Section { token }
    }

    /// Whether the section went over its budget.
    pub fn exceeded(&self) -> bool {
        self.token.is_cancelled()
    }
}

impl Drop for Section {
    fn drop(&mut self) {
        let _ = METER.try_with(|m| {
            m.budget.set(0);
            m.cancel.set(std::ptr::null());
            m.held.set(0);
        });
    }
}
