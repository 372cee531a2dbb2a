//! `DescribeStateMachineAlias`.

use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let a = super::alias(server, request.required("stateMachineAliasArn")?)?;
    let mut m = Map::new();
    m.insert("stateMachineAliasArn".into(), a.arn.into());
    m.insert("name".into(), a.name.into());
    if let Some(d) = a.description {
        m.insert("description".into(), d.into());
    }
    m.insert(
        "routingConfiguration".into(),
        serde_json::from_str(&a.routing).unwrap_or(Value::Array(Vec::new())),
    );
    m.insert("creationDate".into(), epoch_seconds(a.creation_date_ms));
    if let Some(u) = a.update_date_ms {
        m.insert("updateDate".into(), epoch_seconds(u));
    }
    Ok(Value::Object(m))
}
