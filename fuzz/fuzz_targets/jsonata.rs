//! JSONata: compile a fuzzed `{% ... %}` expression as a JSONata state's field and evaluate it
//! with `$states.input` a fuzzed document, as the engine does. The adapter's own time and size
//! bounds are what keep a hostile expression from hanging or exhausting memory.
#![no_main]

use libfuzzer_sys::fuzz_target;

// As the binary does: one JSONata evaluation holds a bounded amount of memory.
#[global_allocator]
static ALLOCATOR: sfn_local::memory::Metered<std::alloc::System> =
    sfn_local::memory::Metered(std::alloc::System);
use sfn_local::asl::diagnostic::{Diagnostics, JsonPointer};
use sfn_local::asl::jsonata::{JsonataScope, JsonataTemplate, Run};
use sfn_local_fuzz::{context, text_and_value, variables};

fuzz_target!(|data: &[u8]| {
    let Some((text, input)) = text_and_value(data) else {
        return;
    };
    let field = serde_json::Value::String(format!("{{% {text} %}}"));
    let mut diags = Diagnostics::default();
    let compiled = JsonataTemplate::compile(&field, &JsonPointer::root().key("Output"), &mut diags);
    if diags.has_errors() {
        return;
    }
    let context = context();
    let vars = variables(&input);
    let scope = JsonataScope::new(&input, &context, &vars).with_result(&input);
    // Each expression as the engine's first try evaluates it, on this thread.
    for expression in compiled.expressions() {
        let _ = expression.bind(&scope).evaluate(&Run::default());
    }
});
