//! The context object (`$$`): what an execution knows about itself.

use crate::clock::{iso8601, Millis};
use serde_json::{json, Map, Value};

/// Who and what an execution is: the names and ARNs that feed the context object.
#[derive(Debug, Clone)]
pub struct ExecutionInfo {
    /// `arn:aws:states:REGION:ACCOUNT:execution:MACHINE:NAME`.
    pub execution_arn: String,
    /// The execution's name.
    pub name: String,
    /// `arn:aws:states:REGION:ACCOUNT:stateMachine:MACHINE`.
    pub state_machine_arn: String,
    /// The state machine's name.
    pub state_machine_name: String,
    /// The role the execution runs as.
    pub role_arn: String,
    /// The region in the ARNs.
    pub region: String,
    /// The account in the ARNs.
    pub account: String,
    /// When it started.
    pub start_time: Millis,
    /// How many times it was redriven (`$$.Execution.RedriveCount`).
    pub redrive_count: u32,
    /// When it was last redriven (`$$.Execution.RedriveTime`); its `TimeoutSeconds` counts
    /// from here.
    pub redrive_time: Option<Millis>,
    /// The version it was started through (a version ARN, or the version an alias chose).
    pub version_arn: Option<String>,
    /// The alias it was started through.
    pub alias_arn: Option<String>,
    /// Started by StartSyncExecution: such an execution cannot be redriven, and its context
    /// has no `Execution.RedriveCount` (as AWS recorded it).
    pub synchronous: bool,
}

/// The ARN-building defaults, as AWS's would look.
impl ExecutionInfo {
    /// Builds the ARNs from a region, an account and the two names.
    pub fn new(
        region: &str,
        account: &str,
        state_machine_name: &str,
        execution_name: &str,
        role_arn: Option<&str>,
        start_time: Millis,
    ) -> Self {
        ExecutionInfo {
            execution_arn: format!(
                "arn:aws:states:{region}:{account}:execution:{state_machine_name}:{execution_name}"
            ),
            name: execution_name.to_owned(),
            state_machine_arn: format!(
                "arn:aws:states:{region}:{account}:stateMachine:{state_machine_name}"
            ),
            state_machine_name: state_machine_name.to_owned(),
            role_arn: role_arn.map(str::to_owned).unwrap_or_else(|| {
                format!("arn:aws:iam::{account}:role/service-role/StepFunctions-{state_machine_name}-role")
            }),
            region: region.to_owned(),
            account: account.to_owned(),
            start_time,
            redrive_count: 0,
            redrive_time: None,
            version_arn: None,
            alias_arn: None,
            synchronous: false,
        }
    }

    /// The same execution, started through a version (and an alias that chose it).
    pub fn started_through(mut self, version_arn: String, alias_arn: Option<String>) -> Self {
        self.version_arn = Some(version_arn);
        self.alias_arn = alias_arn;
        self
    }

    /// The same execution, redriven `count` times, last at `time`.
    pub fn redriven(mut self, count: u32, time: Option<Millis>) -> Self {
        self.redrive_count = count;
        self.redrive_time = time;
        self
    }

    /// The context object at the start of a state: Execution, StateMachine and State, in AWS's
    /// key order. Task and Map fields are added by the states that have them.
    pub fn context(&self, input: &Value, state_name: &str, entered: Millis) -> Value {
        let mut context = json!({
            "Execution": {
                "Id": self.execution_arn,
                "Input": null,
                "StartTime": iso8601(self.start_time),
                "Name": self.name,
                "RoleArn": self.role_arn,
                "RedriveCount": self.redrive_count
            },
            "StateMachine": {
                "Id": self.state_machine_arn,
                "Name": self.state_machine_name
            },
            "State": {
                "Name": state_name,
                "EnteredTime": iso8601(entered)
            }
        });
        // Cloned in place afterwards: `json!` would copy the input through serde's serializer
        // (a large input's copy took five times as long).
        context["Execution"]["Input"] = input.clone();
        if let Some(time) = self.redrive_time {
            context["Execution"]["RedriveTime"] = iso8601(time).into();
        }
        if self.synchronous {
            if let Some(execution) = context["Execution"].as_object_mut() {
                execution.remove("RedriveCount");
            }
        }
        context
    }
}

/// Sets `$$.State` for a state being entered (reusing the rest of the object).
pub fn enter_state(
    context: &mut Value,
    state_name: &str,
    entered: Millis,
    retry_count: Option<u64>,
) {
    let mut state = Map::new();
    state.insert("Name".into(), state_name.into());
    state.insert("EnteredTime".into(), iso8601(entered).into());
    if let Some(n) = retry_count {
        state.insert("RetryCount".into(), n.into());
    }
    if let Value::Object(m) = context {
        m.insert("State".into(), Value::Object(state));
        m.remove("Task");
        m.remove("Map");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Regression: a StartSyncExecution's context showed `Execution.RedriveCount`, which AWS's
    // context of a synchronous execution does not have (the express sync recording).
    #[test]
    fn a_synchronous_execution_has_no_redrive_count() {
        let mut info = ExecutionInfo::new("us-east-1", "1", "M", "e", None, 0);
        let context = info.context(&json!({}), "S", 0);
        assert_eq!(context["Execution"]["RedriveCount"], 0);
        info.synchronous = true;
        let context = info.context(&json!({}), "S", 0);
        let execution = context["Execution"].as_object().expect("Execution");
        assert!(!execution.contains_key("RedriveCount"), "{execution:?}");
        assert_eq!(execution["Name"], "e");
    }
}
