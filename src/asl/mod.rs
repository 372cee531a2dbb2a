//! The Amazon States Language: parse JSON text once into a typed, compiled [`StateMachine`],
//! validate it the way AWS does, and evaluate its paths, templates, intrinsics and Choice rules.
//!
//! No I/O and no async here: the engine drives evaluation, the CLI reports diagnostics.

pub mod choice;
pub mod diagnostic;
pub mod error;
pub mod eval;
pub mod intrinsics;
pub mod path;
pub mod source;
pub mod template;
