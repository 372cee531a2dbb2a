//! What a Task's `Resource` ARN names: a service integration (with its pattern), an activity, or a
//! Lambda function. The `tasks` layer decides what each means on this machine; the language only
//! needs the shape, for validation (Express limits, `.waitForTaskToken` needing a token).

use std::fmt;

/// How a service integration waits (the ARN's suffix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntegrationPattern {
    /// No suffix: call and take the response.
    RequestResponse,
    /// `.sync` (or `.sync:2`): wait for the job to finish.
    Sync,
    /// `.waitForTaskToken`: wait for `SendTaskSuccess`/`SendTaskFailure` with the token.
    WaitForTaskToken,
}

/// The parsed meaning of a Task `Resource`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceKind {
    /// `arn:PARTITION:states:::SERVICE:ACTION[.PATTERN]`, e.g. `sqs:sendMessage.waitForTaskToken`.
    Integration {
        /// The service, as history's `resourceType` spells it (`sqs`, `lambda`, `aws-sdk:s3`...).
        service: String,
        /// The action with its pattern suffix, as history's `resource` spells it.
        action: String,
        /// How it waits.
        pattern: IntegrationPattern,
    },
    /// `arn:PARTITION:states:REGION:ACCOUNT:activity:NAME`.
    Activity {
        /// The activity's name.
        name: String,
    },
    /// `arn:PARTITION:lambda:REGION:ACCOUNT:function:NAME` (the legacy Lambda resource).
    LambdaFunction,
}

/// A Task's `Resource`: the ARN as written and what it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// The ARN as written.
    pub arn: String,
    /// What it names.
    pub kind: ResourceKind,
}

/// Why a string is not a resource ARN.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("The resource provided {arn} is not recognized. The value is not a valid resource ARN, or the resource is not available in this region.")]
pub struct ResourceError {
    /// The rejected text.
    pub arn: String,
}

/// The patterns an optimized integration's action supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Patterns {
    /// `.sync` (and `.sync:2` for `states:startExecution`).
    pub sync: bool,
    /// `.waitForTaskToken`.
    pub wait_for_task_token: bool,
}

/// One service of AWS's optimized integrations: its actions (each with whether it has `.sync`)
/// and whether it takes `.waitForTaskToken`. Request-response is supported by every action.
struct OptimizedService {
    service: &'static str,
    /// `(action, .sync supported)`.
    actions: &'static [(&'static str, bool)],
    wait_for_task_token: bool,
}

/// AWS's optimized integrations, from "Integrating optimized services with Step Functions"
/// (the table of patterns per service) and each service's page (its actions, and which of them
/// run a job with `.sync`). Anything else under `arn:aws:states:::` is not a resource AWS
/// recognizes; `aws-sdk:*` takes any service and action.
const OPTIMIZED: &[OptimizedService] = &[
    OptimizedService {
        service: "apigateway",
        actions: &[("invoke", false)],
        wait_for_task_token: true,
    },
    OptimizedService {
        service: "athena",
        actions: &[
            ("startQueryExecution", true),
            ("stopQueryExecution", false),
            ("getQueryExecution", false),
            ("getQueryResults", false),
        ],
        wait_for_task_token: false,
    },
    OptimizedService {
        service: "batch",
        actions: &[("submitJob", true)],
        wait_for_task_token: false,
    },
    OptimizedService {
        service: "bedrock",
        actions: &[
            ("invokeModel", false),
            ("createModelCustomizationJob", true),
        ],
        wait_for_task_token: true,
    },
    OptimizedService {
        service: "codebuild",
        actions: &[
            ("startBuild", true),
            ("stopBuild", false),
            ("batchDeleteBuilds", false),
            ("batchGetReports", false),
            ("startBuildBatch", true),
            ("stopBuildBatch", false),
            ("retryBuildBatch", true),
            ("deleteBuildBatch", false),
        ],
        wait_for_task_token: false,
    },
    OptimizedService {
        service: "dynamodb",
        actions: &[
            ("getItem", false),
            ("putItem", false),
            ("updateItem", false),
            ("deleteItem", false),
        ],
        wait_for_task_token: false,
    },
    OptimizedService {
        service: "ecs",
        actions: &[("runTask", true)],
        wait_for_task_token: true,
    },
    OptimizedService {
        service: "eks",
        actions: &[
            ("createCluster", true),
            ("deleteCluster", true),
            ("createFargateProfile", true),
            ("deleteFargateProfile", true),
            ("createNodegroup", true),
            ("deleteNodegroup", true),
            ("runJob", true),
            ("call", false),
        ],
        wait_for_task_token: true,
    },
    OptimizedService {
        service: "elasticmapreduce",
        actions: &[
            ("createCluster", true),
            ("terminateCluster", true),
            ("addStep", true),
            ("cancelStep", false),
            ("setClusterTerminationProtection", false),
            ("modifyInstanceFleetByName", false),
            ("modifyInstanceGroupByName", false),
        ],
        wait_for_task_token: false,
    },
    OptimizedService {
        service: "emr-containers",
        actions: &[
            ("createVirtualCluster", false),
            ("deleteVirtualCluster", true),
            ("startJobRun", true),
        ],
        wait_for_task_token: false,
    },
    OptimizedService {
        service: "emr-serverless",
        actions: &[
            ("createApplication", true),
            ("startApplication", true),
            ("stopApplication", true),
            ("deleteApplication", true),
            ("startJobRun", true),
            ("cancelJobRun", true),
        ],
        wait_for_task_token: false,
    },
    OptimizedService {
        service: "events",
        actions: &[("putEvents", false)],
        wait_for_task_token: true,
    },
    OptimizedService {
        service: "glue",
        actions: &[("startJobRun", true)],
        wait_for_task_token: false,
    },
    OptimizedService {
        service: "databrew",
        actions: &[("startJobRun", true)],
        wait_for_task_token: false,
    },
    OptimizedService {
        service: "http",
        actions: &[("invoke", false)],
        wait_for_task_token: false,
    },
    OptimizedService {
        service: "lambda",
        actions: &[("invoke", false)],
        wait_for_task_token: true,
    },
    OptimizedService {
        service: "mediaconvert",
        actions: &[("createJob", true)],
        wait_for_task_token: false,
    },
    OptimizedService {
        service: "sagemaker",
        actions: &[
            ("createEndpoint", false),
            ("createEndpointConfig", false),
            ("createHyperParameterTuningJob", true),
            ("createLabelingJob", true),
            ("createModel", false),
            ("createProcessingJob", true),
            ("createTrainingJob", true),
            ("createTransformJob", true),
            ("updateEndpoint", false),
        ],
        wait_for_task_token: false,
    },
    OptimizedService {
        service: "sns",
        actions: &[("publish", false)],
        wait_for_task_token: true,
    },
    OptimizedService {
        service: "sqs",
        actions: &[("sendMessage", false)],
        wait_for_task_token: true,
    },
    OptimizedService {
        service: "states",
        actions: &[("startExecution", true)],
        wait_for_task_token: true,
    },
];

/// Every optimized-integration resource ARN AWS accepts, with each pattern it supports
/// (`arn:aws:states:::sqs:sendMessage`, `...sendMessage.waitForTaskToken`, ...), for an
/// editor's completion.
pub fn optimized_resources() -> Vec<String> {
    let mut out = Vec::new();
    for s in OPTIMIZED {
        for (action, sync) in s.actions {
            let base = format!("arn:aws:states:::{}:{action}", s.service);
            if *sync {
                out.push(format!("{base}.sync"));
            }
            if *sync && s.service == "states" {
                out.push(format!("{base}.sync:2"));
            }
            if s.wait_for_task_token {
                out.push(format!("{base}.waitForTaskToken"));
            }
            out.push(base);
        }
    }
    out
}

/// The patterns AWS supports for optimized integration `service:action` (without a pattern
/// suffix); `None` when AWS has no such optimized integration.
pub fn optimized_integration(service: &str, action: &str) -> Option<Patterns> {
    let s = OPTIMIZED.iter().find(|s| s.service == service)?;
    let (_, sync) = s.actions.iter().find(|(a, _)| *a == action)?;
    Some(Patterns {
        sync: *sync,
        wait_for_task_token: s.wait_for_task_token,
    })
}

/// Whether AWS recognizes `service:action` with its pattern suffix as a Task resource.
fn recognized(service: &str, action: &str) -> bool {
    if service.starts_with("aws-sdk:") {
        // Any service and action; AWS SDK integrations have no `.sync`.
        return !action.contains(".sync");
    }
    let (base, suffix) = match action.split_once('.') {
        Some((base, suffix)) => (base, Some(suffix)),
        None => (action, None),
    };
    let Some(p) = optimized_integration(service, base) else {
        return false;
    };
    match suffix {
        None => true,
        Some("sync") => p.sync,
        // Only Step Functions has a second version of `.sync` (output as JSON).
        Some("sync:2") => p.sync && service == "states",
        Some("waitForTaskToken") => p.wait_for_task_token,
        Some(_) => false,
    }
}

/// What AWS checks in a Task's effective Parameters (or Arguments) before it calls the
/// service: `Err` holds the reason AWS puts in brackets after "The Parameters '...' could not be
/// used to start the Task:". API Gateway's `Headers` and `QueryParameters` must map names to
/// lists of strings (`{"Accept": ["application/json"]}`), as "Call API Gateway" documents.
pub fn check_parameters(kind: &ResourceKind, parameters: &serde_json::Value) -> Result<(), String> {
    let ResourceKind::Integration {
        service, action, ..
    } = kind
    else {
        return Ok(());
    };
    let base = action.split('.').next().unwrap_or(action);
    if service == "apigateway" && base == "invoke" {
        for field in ["Headers", "QueryParameters"] {
            let Some(v) = parameters.get(field) else {
                continue;
            };
            let well_formed = v.as_object().is_some_and(|m| {
                m.values().all(|list| {
                    list.as_array()
                        .is_some_and(|l| l.iter().all(serde_json::Value::is_string))
                })
            });
            if !well_formed {
                return Err(format!(
                    "The value of the field '{field}' has an invalid format"
                ));
            }
        }
    }
    Ok(())
}

impl Resource {
    /// Parses a Task's resource ARN: an optimized integration AWS has (with a pattern it
    /// supports for that action), an AWS SDK integration, an activity or a Lambda function.
    pub fn parse_task(arn: &str) -> Result<Resource, ResourceError> {
        let r = Resource::parse(arn)?;
        match &r.kind {
            ResourceKind::Integration {
                service, action, ..
            } if !recognized(service, action) => Err(ResourceError {
                arn: arn.to_owned(),
            }),
            _ => Ok(r),
        }
    }

    /// Parses a resource ARN.
    pub fn parse(arn: &str) -> Result<Resource, ResourceError> {
        let err = || ResourceError {
            arn: arn.to_owned(),
        };
        let parts: Vec<&str> = arn.splitn(6, ':').collect();
        if parts.len() < 6 || parts[0] != "arn" || parts[1].is_empty() {
            return Err(err());
        }
        let (service, region, account, rest) = (parts[2], parts[3], parts[4], parts[5]);
        let kind = match service {
            // AWS also runs integrations written with a region and account
            // (`arn:aws:states:us-east-1:123456789012:aws-sdk:s3:getObject`, as published in
            // AWS's own samples); they mean the same integration.
            "states"
                if (region.is_empty() && account.is_empty()) || rest.starts_with("aws-sdk:") =>
            {
                // arn:aws:states:::sqs:sendMessage.waitForTaskToken; aws-sdk has a service part too.
                let (svc, action) = match rest.strip_prefix("aws-sdk:") {
                    Some(sdk) => {
                        let (s, a) = sdk.split_once(':').ok_or_else(err)?;
                        (format!("aws-sdk:{s}"), a)
                    }
                    None => {
                        let (s, a) = rest.split_once(':').ok_or_else(err)?;
                        (s.to_owned(), a)
                    }
                };
                if svc.is_empty() || action.is_empty() {
                    return Err(err());
                }
                let pattern = if action.ends_with(".waitForTaskToken") {
                    IntegrationPattern::WaitForTaskToken
                } else if action.ends_with(".sync") || action.contains(".sync:") {
                    IntegrationPattern::Sync
                } else {
                    IntegrationPattern::RequestResponse
                };
                ResourceKind::Integration {
                    service: svc,
                    action: action.to_owned(),
                    pattern,
                }
            }
            "states" => match rest.split_once(':') {
                Some(("activity", name)) if !name.is_empty() => ResourceKind::Activity {
                    name: name.to_owned(),
                },
                _ => return Err(err()),
            },
            "lambda" => match rest.split_once(':') {
                Some(("function", name)) if !name.is_empty() => ResourceKind::LambdaFunction,
                _ => return Err(err()),
            },
            _ => return Err(err()),
        };
        Ok(Resource {
            arn: arn.to_owned(),
            kind,
        })
    }

    /// Whether the task waits for a worker holding a task token (callback or activity).
    pub fn waits_for_token(&self) -> bool {
        matches!(
            self.kind,
            ResourceKind::Activity { .. }
                | ResourceKind::Integration {
                    pattern: IntegrationPattern::WaitForTaskToken,
                    ..
                }
        )
    }

    /// The integration pattern, for service integrations.
    pub fn pattern(&self) -> Option<IntegrationPattern> {
        match &self.kind {
            ResourceKind::Integration { pattern, .. } => Some(*pattern),
            _ => None,
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.arn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_integrations_activities_and_lambdas() {
        let r = Resource::parse("arn:aws:states:::sqs:sendMessage.waitForTaskToken").unwrap();
        assert_eq!(
            r.kind,
            ResourceKind::Integration {
                service: "sqs".into(),
                action: "sendMessage.waitForTaskToken".into(),
                pattern: IntegrationPattern::WaitForTaskToken
            }
        );
        assert!(r.waits_for_token());
        let r = Resource::parse("arn:aws:states:::aws-sdk:s3:listBuckets").unwrap();
        assert!(
            matches!(r.kind, ResourceKind::Integration { ref service, .. } if service == "aws-sdk:s3")
        );
        let r = Resource::parse("arn:aws:states:us-east-1:123456789012:activity:stock").unwrap();
        assert_eq!(
            r.kind,
            ResourceKind::Activity {
                name: "stock".into()
            }
        );
        let r = Resource::parse("arn:aws:states:::states:startExecution.sync:2").unwrap();
        assert_eq!(r.pattern(), Some(IntegrationPattern::Sync));
        assert!(Resource::parse("arn:aws:lambda:<region>:111111111111:function:f").is_ok());
        assert!(Resource::parse("not-an-arn").is_err());
        assert!(Resource::parse("arn:aws:states:::").is_err());
    }

    #[test]
    fn api_gateway_headers_and_query_parameters_map_names_to_lists_of_strings() {
        let kind = Resource::parse_task("arn:aws:states:::apigateway:invoke.waitForTaskToken")
            .unwrap()
            .kind;
        let ok = serde_json::json!({"ApiEndpoint": "x", "Method": "GET",
            "Headers": {"Accept": ["application/json"]}, "QueryParameters": {"q": ["a", "b"]}});
        assert_eq!(check_parameters(&kind, &ok), Ok(()));
        for (field, bad) in [
            ("Headers", serde_json::json!({"Accept": "application/json"})),
            ("Headers", serde_json::json!(["Accept"])),
            ("QueryParameters", serde_json::json!("?symbol=BTC")),
            ("QueryParameters", serde_json::json!({"n": [1]})),
        ] {
            let mut p = ok.clone();
            p[field] = bad;
            assert_eq!(
                check_parameters(&kind, &p),
                Err(format!(
                    "The value of the field '{field}' has an invalid format"
                ))
            );
        }
        let lambda = Resource::parse_task("arn:aws:states:::lambda:invoke")
            .unwrap()
            .kind;
        assert_eq!(
            check_parameters(&lambda, &serde_json::json!({"Headers": 1})),
            Ok(())
        );
    }

    #[test]
    fn only_aws_optimized_integrations_with_their_patterns_are_task_resources() {
        for ok in [
            "arn:aws:states:::lambda:invoke",
            "arn:aws:states:::lambda:invoke.waitForTaskToken",
            "arn:aws:states:::states:startExecution.sync:2",
            "arn:aws:states:::states:startExecution.waitForTaskToken",
            "arn:aws:states:::athena:startQueryExecution.sync",
            "arn:aws:states:::athena:getQueryResults",
            "arn:aws:states:::ecs:runTask.waitForTaskToken",
            "arn:aws:states:::dynamodb:deleteItem",
            "arn:aws:states:::http:invoke",
            "arn:aws:states:::aws-sdk:s3:listBuckets.waitForTaskToken",
            "arn:aws:states:::aws-sdk:anything:atAll",
            "arn:aws:states:us-east-1:123456789012:activity:a",
        ] {
            assert!(Resource::parse_task(ok).is_ok(), "{ok}");
        }
        for bad in [
            // No such service, no such action, a pattern the action does not have.
            "arn:aws:states:::nosuch:invoke",
            "arn:aws:states:::lambda:invokeAsync",
            "arn:aws:states:::lambda:invoke.sync",
            "arn:aws:states:::dynamodb:putItem.waitForTaskToken",
            "arn:aws:states:::dynamodb:query",
            "arn:aws:states:::athena:getQueryResults.sync",
            "arn:aws:states:::glue:startJobRun.sync:2",
            "arn:aws:states:::sqs:sendMessage.sync",
            "arn:aws:states:::aws-sdk:s3:listBuckets.sync",
            "arn:aws:states:::s3:getObject",
        ] {
            let e = Resource::parse_task(bad).expect_err(bad);
            assert_eq!(
                e.to_string(),
                format!("The resource provided {bad} is not recognized. The value is not a valid resource ARN, or the resource is not available in this region.")
            );
        }
    }
}
