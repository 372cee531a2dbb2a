//! Links the release binary as a position-dependent executable on Linux with glibc.
//!
//! A position-independent one carries 45,000 relative relocations: at every start the dynamic
//! loader reads them (1 MB) and writes 775 KB of pointers, a page fault for each page. That was
//! half a millisecond of every command's 2.9 ms start (`sfn-local --version`: 2.3 ms without).
//! The cost: the executable's own code is not placed at a random address (its libraries, heap
//! and stack still are). Debug builds, tests and other targets link as before.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux_gnu = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|env| env == "gnu");
    if release && linux_gnu {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
