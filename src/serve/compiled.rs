//! Compiled state machines shared by the executions running them.
//!
//! Every StartExecution used to compile its machine's definition again, and each waiting
//! execution held its own copy of the compiled machine (about 4 KB for a one-state machine; 40
//! MB at 10,000 waiting). Executions of the same definition now share one compiled machine.
//! The cache holds weak references keyed by the definition's text, so a machine nobody runs
//! any more is freed, and an updated machine (new text) compiles anew.

use crate::asl::{self, Compat, MachineType, StateMachine};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// Definition text and type → the compiled machine, while some execution holds it.
#[derive(Default)]
pub struct CompiledMachines {
    machines: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    by_text: HashMap<(MachineType, String), Weak<StateMachine>>,
    /// Entries to hold before dropping the dead ones: twice the live count at the last sweep.
    sweep_at: usize,
}

impl CompiledMachines {
    /// The compiled machine for `definition`, compiled now unless an execution already holds
    /// it; `None` when the definition does not compile.
    pub fn get(
        &self,
        definition: &str,
        machine_type: MachineType,
        compat: Compat,
    ) -> Option<Arc<StateMachine>> {
        let key = (machine_type, definition.to_owned());
        if let Some(machine) = self.lock().by_text.get(&key).and_then(Weak::upgrade) {
            return Some(machine);
        }
        // Compiled outside the lock: another thread may compile the same text meanwhile, and
        // the later insert wins; both machines are equal.
        let machine = Arc::new(asl::compile_text_as(definition, machine_type, compat).0?);
        let mut cache = self.lock();
        cache.by_text.insert(key, Arc::downgrade(&machine));
        if cache.by_text.len() > cache.sweep_at {
            cache.by_text.retain(|_, m| m.strong_count() > 0);
            cache.sweep_at = (2 * cache.by_text.len()).max(64);
        }
        Some(machine)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        // A panic while holding the lock leaves a map that is still whole.
        self.machines.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASS: &str = r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#;

    #[test]
    fn executions_of_one_definition_share_its_compiled_machine() {
        let cache = CompiledMachines::default();
        let a = cache.get(PASS, MachineType::Standard, Compat::Aws).unwrap();
        let b = cache.get(PASS, MachineType::Standard, Compat::Aws).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let express = cache.get(PASS, MachineType::Express, Compat::Aws).unwrap();
        assert!(!Arc::ptr_eq(&a, &express));
    }

    #[test]
    fn a_machine_nobody_runs_is_freed_and_swept() {
        let cache = CompiledMachines::default();
        for i in 0..200 {
            let text = PASS.replace("\"P\"", &format!("\"P{i}\""));
            assert!(cache
                .get(&text, MachineType::Standard, Compat::Aws)
                .is_some());
        }
        assert!(cache.lock().by_text.len() <= 64);
        assert!(cache.get("{", MachineType::Standard, Compat::Aws).is_none());
    }
}
