//! Every operation of the service model, behind one enum, each with its handler in `ops/`.

use crate::serve::protocol::ApiError;
use crate::serve::{ops, Server};
use serde_json::Value;
use std::sync::Arc;

/// One decoded API call.
#[derive(Debug, Clone)]
pub struct Request {
    /// The operation's name.
    pub operation: &'static str,
    /// The request body, already checked against the model's input shape.
    pub input: Value,
    /// The region of ARNs made for this call (the signature's, else `--region`).
    pub region: String,
}

impl Request {
    /// A string member.
    pub fn str(&self, member: &str) -> Option<&str> {
        self.input.get(member).and_then(Value::as_str)
    }

    /// A string member the model requires (validation has made sure it is there).
    pub fn required(&self, member: &str) -> Result<&str, ApiError> {
        self.str(member)
            .ok_or_else(|| ApiError::validation(member, "null", "Member must not be null"))
    }

    /// An integer member.
    pub fn u64(&self, member: &str) -> Option<u64> {
        self.input.get(member).and_then(Value::as_u64)
    }

    /// A boolean member.
    pub fn bool(&self, member: &str) -> Option<bool> {
        self.input.get(member).and_then(Value::as_bool)
    }
}

macro_rules! operations {
    ($($name:ident => $handler:path),* $(,)?) => {
        /// An operation of AWS Step Functions' API (`X-Amz-Target: AWSStepFunctions.<name>`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Operation {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                $name,
            )*
        }

        impl Operation {
            /// The operation the target names, if the model has it.
            pub fn from_name(name: &str) -> Option<Operation> {
                match name {
                    $(stringify!($name) => Some(Operation::$name),)*
                    _ => None,
                }
            }

            /// The operation's name in the model.
            pub fn name(self) -> &'static str {
                match self {
                    $(Operation::$name => stringify!($name),)*
                }
            }

            /// Runs the operation.
            pub async fn handle(self, server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
                match self {
                    $(Operation::$name => $handler(server, request).await,)*
                }
            }
        }
    };
}

operations! {
    CreateStateMachine => ops::create_state_machine::handle,
    DescribeStateMachine => ops::describe_state_machine::handle,
    ListStateMachines => ops::list_state_machines::handle,
    UpdateStateMachine => ops::update_state_machine::handle,
    DeleteStateMachine => ops::delete_state_machine::handle,
    ValidateStateMachineDefinition => ops::validate_state_machine_definition::handle,
    DescribeStateMachineForExecution => ops::describe_state_machine_for_execution::handle,
    StartExecution => ops::start_execution::handle,
    StartSyncExecution => ops::start_sync_execution::handle,
    DescribeExecution => ops::describe_execution::handle,
    ListExecutions => ops::list_executions::handle,
    GetExecutionHistory => ops::get_execution_history::handle,
    StopExecution => ops::stop_execution::handle,
    SendTaskSuccess => ops::send_task_success::handle,
    SendTaskFailure => ops::send_task_failure::handle,
    SendTaskHeartbeat => ops::send_task_heartbeat::handle,
    CreateActivity => ops::create_activity::handle,
    DescribeActivity => ops::describe_activity::handle,
    ListActivities => ops::list_activities::handle,
    DeleteActivity => ops::delete_activity::handle,
    GetActivityTask => ops::get_activity_task::handle,
    TagResource => ops::tag_resource::handle,
    UntagResource => ops::untag_resource::handle,
    ListTagsForResource => ops::list_tags_for_resource::handle,
    PublishStateMachineVersion => ops::publish_state_machine_version::handle,
    ListStateMachineVersions => ops::list_state_machine_versions::handle,
    DeleteStateMachineVersion => ops::delete_state_machine_version::handle,
    CreateStateMachineAlias => ops::create_state_machine_alias::handle,
    DescribeStateMachineAlias => ops::describe_state_machine_alias::handle,
    UpdateStateMachineAlias => ops::update_state_machine_alias::handle,
    DeleteStateMachineAlias => ops::delete_state_machine_alias::handle,
    ListStateMachineAliases => ops::list_state_machine_aliases::handle,
    DescribeMapRun => ops::describe_map_run::handle,
    ListMapRuns => ops::list_map_runs::handle,
    UpdateMapRun => ops::update_map_run::handle,
    RedriveExecution => ops::redrive_execution::handle,
    TestState => ops::test_state::handle,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_of_the_model_has_a_variant() {
        let model: Value = serde_json::from_str(include_str!("model.json")).unwrap();
        for name in model["operations"].as_object().unwrap().keys() {
            assert!(Operation::from_name(name).is_some(), "{name}");
        }
    }
}
