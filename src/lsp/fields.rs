//! What the fields of a state machine mean, in a sentence each with the page of AWS's guide
//! that says more: read by hover, and by completion to describe what it offers.

const GUIDE: &str = "https://docs.aws.amazon.com/step-functions/latest/dg/";

/// `(field, meaning, page of AWS's guide)`.
const FIELDS: &[(&str, &str, &str)] = &[
    ("StartAt", "The state this scope starts with: a state of this same `States` object.", "statemachine-structure.html"),
    ("States", "The states of this scope, by name. A transition may only name a state of the same scope.", "statemachine-structure.html"),
    ("Comment", "A note for people; ignored when the state machine runs.", "statemachine-structure.html"),
    ("QueryLanguage", "`JSONPath` (the default) or `JSONata`: how this state's fields are written. Set at the top, it is every state's default.", "transforming-data.html"),
    ("TimeoutSeconds", "How long the state (or, at the top, the execution) may run before it fails with `States.Timeout`.", "state-task.html"),
    ("TimeoutSecondsPath", "`TimeoutSeconds` read from the state's input by a reference path.", "state-task.html"),
    ("HeartbeatSeconds", "How long a Task may go without a heartbeat (`SendTaskHeartbeat`) before it fails with `States.Timeout`; must be smaller than `TimeoutSeconds`.", "state-task.html"),
    ("HeartbeatSecondsPath", "`HeartbeatSeconds` read from the state's input by a reference path.", "state-task.html"),
    ("Type", "The kind of state: Task, Pass, Choice, Wait, Succeed, Fail, Parallel or Map.", "statemachine-structure.html"),
    ("Next", "The state to run after this one, in the same scope.", "statemachine-structure.html"),
    ("End", "`true` ends the scope (the execution, a Parallel branch or a Map iteration) after this state.", "statemachine-structure.html"),
    ("Resource", "What the Task calls: an optimized integration (`arn:aws:states:::service:action`, with `.sync` or `.waitForTaskToken`), an AWS SDK integration (`arn:aws:states:::aws-sdk:service:action`), a Lambda function or an activity.", "state-task.html"),
    ("Parameters", "The input the Task's resource (or a Pass, Parallel or Map state) is given; keys ending in `.$` take paths and intrinsic functions (JSONPath).", "input-output-inputpath-params.html"),
    ("Arguments", "The input the Task's resource is given, with `{% ... %}` JSONata expressions (JSONata's `Parameters`).", "transforming-data.html"),
    ("Output", "The state's output, with `{% ... %}` JSONata expressions (JSONata only).", "transforming-data.html"),
    ("Assign", "Variables to set when the state ends, readable as `$name` by later states in reach.", "workflow-variables.html"),
    ("InputPath", "The part of the input the state works on (JSONPath); `null` gives it `{}`.", "input-output-inputpath-params.html"),
    ("OutputPath", "The part of the result the state passes on (JSONPath); `null` passes `{}`.", "input-output-example.html"),
    ("ResultPath", "Where the state's result goes in its input (JSONPath); `null` discards the result and passes the input on.", "input-output-resultpath.html"),
    ("ResultSelector", "A new object built from the raw result before `ResultPath` places it (JSONPath).", "input-output-inputpath-params.html"),
    ("Result", "The fixed result of a Pass state.", "state-pass.html"),
    ("Retry", "Retriers, tried in order: the first whose `ErrorEquals` names the error retries the state after `IntervalSeconds`, growing by `BackoffRate`, up to `MaxAttempts` times.", "concepts-error-handling.html"),
    ("Catch", "Catchers, tried in order once retries are spent: the first whose `ErrorEquals` names the error goes to its `Next`, with the error at its `ResultPath`.", "concepts-error-handling.html"),
    ("ErrorEquals", "The error names this retrier or catcher handles: `States.ALL`, a `States.*` name, or a name a task raises.", "concepts-error-handling.html"),
    ("IntervalSeconds", "Seconds before the first retry (1 by default).", "concepts-error-handling.html"),
    ("MaxAttempts", "How many retries at most (3 by default; 0 never retries).", "concepts-error-handling.html"),
    ("BackoffRate", "What each wait is multiplied by for the next retry (2.0 by default).", "concepts-error-handling.html"),
    ("MaxDelaySeconds", "The longest wait between two retries, however the backoff grows.", "concepts-error-handling.html"),
    ("JitterStrategy", "`FULL` picks each wait at random below its computed value, so retries of many executions spread out.", "concepts-error-handling.html"),
    ("Choices", "Choice rules, tried in order: the first that matches the input goes to its `Next`.", "state-choice.html"),
    ("Default", "The state a Choice goes to when no rule matches (otherwise it fails with `States.NoChoiceMatched`).", "state-choice.html"),
    ("Condition", "A JSONata expression that chooses this rule when it is true (JSONata Choice rules).", "state-choice.html"),
    ("Variable", "The path of the input a JSONPath Choice rule compares.", "state-choice.html"),
    ("Seconds", "How long a Wait state waits.", "state-wait.html"),
    ("Timestamp", "When a Wait state stops waiting (an ISO 8601 time, e.g. `2026-01-01T00:00:00Z`).", "state-wait.html"),
    ("SecondsPath", "`Seconds` read from the input by a reference path.", "state-wait.html"),
    ("TimestampPath", "`Timestamp` read from the input by a reference path.", "state-wait.html"),
    ("Error", "The error name a Fail state ends with.", "state-fail.html"),
    ("Cause", "A description of the failure a Fail state ends with.", "state-fail.html"),
    ("Branches", "The Parallel state's branches, each a state machine of its own (`StartAt`, `States`) run at the same time on the same input.", "state-parallel.html"),
    ("ItemProcessor", "What the Map state runs for each item: a state machine of its own (`StartAt`, `States`), with `ProcessorConfig`.", "state-map.html"),
    ("Iterator", "The older name of `ItemProcessor`.", "state-map.html"),
    ("ItemsPath", "Where the Map state's items are in its input (JSONPath).", "state-map.html"),
    ("Items", "The Map state's items, as a JSONata expression or a literal array (JSONata).", "state-map.html"),
    ("ItemSelector", "The input each Map iteration is given, built from the item (`$$.Map.Item.Value`) and the state's input.", "state-map.html"),
    ("ItemReader", "Where a distributed Map reads its items: an S3 object or listing.", "state-map-distributed.html"),
    ("ItemBatcher", "Items passed to each iteration in batches (distributed Map).", "state-map-distributed.html"),
    ("ResultWriter", "Where a distributed Map writes its results in S3.", "state-map-distributed.html"),
    ("MaxConcurrency", "How many Map iterations run at once (0: as many as possible).", "state-map.html"),
    ("ToleratedFailurePercentage", "The share of failed items a distributed Map accepts before it fails.", "state-map-distributed.html"),
    ("ToleratedFailureCount", "How many failed items a distributed Map accepts before it fails.", "state-map-distributed.html"),
    ("ProcessorConfig", "`Mode` (`INLINE` or `DISTRIBUTED`) and, for distributed, `ExecutionType` of the Map's item processor.", "state-map.html"),
    ("Credentials", "A role the Task assumes to call its resource (cross-account).", "state-task.html"),
    ("Version", "The version of the Amazon States Language; `1.0`.", "statemachine-structure.html"),
];

/// What `field` means, in markdown with a link to AWS's guide; `None` for a name that is not
/// a field of the language.
pub fn explain(field: &str) -> Option<String> {
    let (name, meaning, page) = FIELDS.iter().find(|(f, _, _)| *f == field)?;
    Some(format!(
        "**{name}**: {meaning}\n\n[AWS guide]({GUIDE}{page})"
    ))
}

/// The page of AWS's guide for a state type.
pub fn type_page(state_type: &str) -> String {
    format!("{GUIDE}state-{}.html", state_type.to_ascii_lowercase())
}

/// Every field this catalogue explains.
pub fn names() -> impl Iterator<Item = &'static str> {
    FIELDS.iter().map(|(f, _, _)| *f)
}
