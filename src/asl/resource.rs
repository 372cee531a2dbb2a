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

impl Resource {
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
}
