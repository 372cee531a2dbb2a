//! The state machines `serve --template` creates when it starts, before it takes requests: one
//! per state machine of each template, as CloudFormation would deploy them. A machine the
//! database already holds under that name is kept when its definition is the same, and
//! updated (a new revision, as `UpdateStateMachine` makes) when the template changed it.

use super::{ServeError, Server};
use crate::store::StateMachineRecord;

/// A state machine to create at start, its definition already read and checked.
#[derive(Debug, Clone)]
pub struct InitialMachine {
    /// Its name (the template's `Name`/`StateMachineName`, else its logical ID).
    pub name: String,
    /// Its logical ID in the template (bindings may name the machine by it).
    pub logical_id: String,
    /// `STANDARD` or `EXPRESS`.
    pub machine_type: String,
    /// The definition as AWS would hold it (JSON, placeholders filled).
    pub definition: String,
    /// The role it is created with.
    pub role_arn: String,
    /// Where it comes from (`template.yaml (OrderStateMachine)`), for messages.
    pub source: String,
    /// Its template's Lambda functions, which the server runs itself.
    pub functions: Option<std::sync::Arc<crate::tasks::local_lambda::LocalFunctions>>,
}

/// What starting did to one machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    /// It was not in the database.
    New,
    /// The database held it with another definition or role: updated.
    Updated,
    /// The database held it as it is.
    Unchanged,
}

impl Server {
    /// Creates (or updates) the `--template` machines in the database; the ARN and what was
    /// done, per machine. Their `--task` bindings are checked with every other machine's.
    pub(super) fn create_initial_machines(&self) -> Result<Vec<(String, Created)>, ServeError> {
        let config = &self.config;
        let mut done = Vec::new();
        for m in &config.machines {
            let arn = format!(
                "arn:aws:states:{}:{}:stateMachine:{}",
                config.region, config.account_id, m.name
            );
            let now = crate::clock::system_now();
            let store_error = |e: crate::store::StoreError| ServeError::Machines(e.to_string());
            let created = match self.store.state_machine(&arn).map_err(store_error)? {
                None => {
                    let record = StateMachineRecord {
                        arn: arn.clone(),
                        name: m.name.clone(),
                        machine_type: m.machine_type.clone(),
                        definition: m.definition.clone(),
                        role_arn: m.role_arn.clone(),
                        settings: "{}".to_owned(),
                        revision_id: crate::random::uuid().to_string(),
                        creation_date_ms: now,
                        update_date_ms: None,
                    };
                    self.store
                        .insert_state_machine(&record, &[])
                        .map_err(store_error)?;
                    Created::New
                }
                Some(held) if held.machine_type != m.machine_type => {
                    return Err(ServeError::Machines(format!(
                        "{}: the database holds {arn} as a {} state machine, and the template makes it {} (a machine's type cannot change): delete it first (aws stepfunctions delete-state-machine), or use another --db",
                        m.source, held.machine_type, m.machine_type
                    )))
                }
                Some(held) if held.definition == m.definition && held.role_arn == m.role_arn => {
                    Created::Unchanged
                }
                Some(mut held) => {
                    held.definition = m.definition.clone();
                    held.role_arn = m.role_arn.clone();
                    held.revision_id = crate::random::uuid().to_string();
                    held.update_date_ms = Some(now);
                    self.store
                        .update_state_machine(&held)
                        .map_err(store_error)?;
                    Created::Updated
                }
            };
            done.push((arn, created));
        }
        Ok(done)
    }
}
