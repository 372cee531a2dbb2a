//! MockConfigFile: parse fuzzed file text, pick every test case, merge inline mocks, check
//! them against a machine and ask each mock for its first answers, as `run --mock-config` and
//! `test` do.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sfn_local::asl::{compile_text, MachineType};
use sfn_local::tasks::mock::{split_test_case, MockConfig};
use std::sync::OnceLock;

fn machine() -> &'static sfn_local::asl::StateMachine {
    static MACHINE: OnceLock<sfn_local::asl::StateMachine> = OnceLock::new();
    MACHINE.get_or_init(|| {
        let text = r#"{"StartAt":"A","States":{
            "A":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Next":"B"},
            "B":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage","End":true}}}"#;
        compile_text(text, MachineType::Standard)
            .0
            .expect("the fuzz machine is valid")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(config) = MockConfig::parse(text) else {
        return;
    };
    for (name, cases) in &config.machines {
        let (machine_name, _) = split_test_case(name);
        for case in cases.keys() {
            if let Ok(mocks) = config.test_case(machine_name, case) {
                let _ = mocks.check_against(machine());
                for state in mocks.states() {
                    for _ in 0..3 {
                        let _ = mocks.next(state);
                    }
                }
            }
        }
    }
    // The same responses given inline (a test spec's `"mocks"`).
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
        if let Some(responses) = v.get("MockedResponses") {
            let _ = config.inline(responses);
        }
    }
});
