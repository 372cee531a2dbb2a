//! `CreateActivity`, idempotent by name as on AWS.

use super::{check_name, tags};
use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use crate::store::ActivityRecord;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let name = request.required("name")?;
    check_name(name)?;
    let arn = format!(
        "arn:aws:states:{}:{}:activity:{name}",
        request.region, server.config.account_id
    );
    let mut settings = Map::new();
    if let Some(e) = request.input.get("encryptionConfiguration") {
        settings.insert("encryptionConfiguration".into(), e.clone());
    }
    let record = ActivityRecord {
        arn: arn.clone(),
        name: name.to_owned(),
        settings: Value::Object(settings).to_string(),
        creation_date_ms: crate::clock::system_now(),
    };
    let created = if server.store.insert_activity(&record, &tags(&request))? {
        record.creation_date_ms
    } else {
        super::activity(server, &arn)?.creation_date_ms
    };
    Ok(json!({ "activityArn": arn, "creationDate": epoch_seconds(created) }))
}
