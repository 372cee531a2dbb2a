//! What the API creates besides executions (migration V5): state machines, their versions and
//! aliases, activities and tags. Each write is one short IMMEDIATE transaction; the CLI and the
//! server read the same rows.

use super::cached::CachedSql;
use super::{Result, Store};
use rusqlite::{params, OptionalExtension, Row};

/// A state machine created through the API.
#[derive(Debug, Clone, PartialEq)]
pub struct StateMachineRecord {
    /// `arn:aws:states:REGION:ACCOUNT:stateMachine:NAME`.
    pub arn: String,
    /// Its name.
    pub name: String,
    /// `STANDARD` or `EXPRESS`.
    pub machine_type: String,
    /// The definition as written.
    pub definition: String,
    /// The role ARN (stored and echoed, never assumed).
    pub role_arn: String,
    /// A JSON object of the settings only AWS acts on (loggingConfiguration,
    /// tracingConfiguration, encryptionConfiguration), echoed back as sent.
    pub settings: String,
    /// Changes with every update.
    pub revision_id: String,
    /// ms since the Unix epoch.
    pub creation_date_ms: i64,
    /// The last update, ms since the Unix epoch.
    pub update_date_ms: Option<i64>,
}

/// An activity created through the API.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivityRecord {
    /// `arn:aws:states:REGION:ACCOUNT:activity:NAME`.
    pub arn: String,
    /// Its name.
    pub name: String,
    /// A JSON object of settings echoed back (encryptionConfiguration).
    pub settings: String,
    /// ms since the Unix epoch.
    pub creation_date_ms: i64,
}

/// What [`Store::register_cli_machine`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Registered {
    /// The machine is new: created.
    Created,
    /// The database holds it with this definition already.
    Unchanged,
    /// A machine registered by the command line held another definition: it has this one now
    /// (a new revision), as a redeploy would do; editing a file and running it again is the
    /// command line's loop.
    Updated,
    /// A machine created through the API holds the name with another definition: refused, as
    /// AWS refuses CreateStateMachine (`StateMachineAlreadyExists`).
    Taken(StateMachineRecord),
}

/// The mark in `settings` of a machine the command line registered (not echoed by the API,
/// which reads only AWS's settings from that object).
const CLI_MARK: &str = "registeredBy";

const MACHINE_COLUMNS: &str =
    "arn, name, type, definition, role_arn, settings, revision_id, creation_date, update_date";

fn machine_from_row(row: &Row<'_>) -> rusqlite::Result<StateMachineRecord> {
    Ok(StateMachineRecord {
        arn: row.get(0)?,
        name: row.get(1)?,
        machine_type: row.get(2)?,
        definition: row.get(3)?,
        role_arn: row.get(4)?,
        settings: row.get(5)?,
        revision_id: row.get(6)?,
        creation_date_ms: row.get(7)?,
        update_date_ms: row.get(8)?,
    })
}

fn activity_from_row(row: &Row<'_>) -> rusqlite::Result<ActivityRecord> {
    Ok(ActivityRecord {
        arn: row.get(0)?,
        name: row.get(1)?,
        settings: row.get(2)?,
        creation_date_ms: row.get(3)?,
    })
}

impl Store {
    /// Stores a new state machine with its tags; `false` (and nothing stored) if its ARN is
    /// taken.
    pub fn insert_state_machine(
        &self,
        machine: &StateMachineRecord,
        tags: &[(String, String)],
    ) -> Result<bool> {
        self.write_now("create state machine", |tx| {
            let inserted = tx.execute_cached(
                &format!(
                    "INSERT INTO state_machines ({MACHINE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                     ON CONFLICT (arn) DO NOTHING"
                ),
                params![
                    machine.arn,
                    machine.name,
                    machine.machine_type,
                    machine.definition,
                    machine.role_arn,
                    machine.settings,
                    machine.revision_id,
                    machine.creation_date_ms,
                    machine.update_date_ms
                ],
            )? == 1;
            if inserted {
                put_tags(tx, &machine.arn, tags)?;
            }
            Ok(inserted)
        })
    }

    /// Replaces a state machine's definition, role, settings, revision and update date;
    /// `false` if it does not exist.
    pub fn update_state_machine(&self, machine: &StateMachineRecord) -> Result<bool> {
        self.write_now("update state machine", |tx| {
            Ok(tx.execute_cached(
                "UPDATE state_machines SET definition = ?2, role_arn = ?3, settings = ?4,
                     revision_id = ?5, update_date = ?6 WHERE arn = ?1",
                params![
                    machine.arn,
                    machine.definition,
                    machine.role_arn,
                    machine.settings,
                    machine.revision_id,
                    machine.update_date_ms
                ],
            )? == 1)
        })
    }

    /// Deletes a state machine, its versions, aliases and tags; `false` if it did not exist.
    /// Its executions stay (AWS lets running ones finish).
    pub fn delete_state_machine(&self, arn: &str) -> Result<bool> {
        self.write_now("delete state machine", |tx| {
            let deleted =
                tx.execute_cached("DELETE FROM state_machines WHERE arn = ?1", [arn])? == 1;
            tx.execute_cached(
                "DELETE FROM state_machine_versions WHERE state_machine_arn = ?1",
                [arn],
            )?;
            tx.execute_cached(
                "DELETE FROM state_machine_aliases WHERE state_machine_arn = ?1",
                [arn],
            )?;
            tx.execute_cached("DELETE FROM tags WHERE resource_arn = ?1", [arn])?;
            Ok(deleted)
        })
    }

    /// Makes a machine the command line runs from a file one of the database's state machines,
    /// listed and described through the API like one created there: created when new, given
    /// the new definition when the command line registered it before (see [`Registered`]), and
    /// refused when the API created it with another definition. One transaction.
    pub fn register_cli_machine(&self, machine: &StateMachineRecord) -> Result<Registered> {
        self.write_now("register state machine", |tx| {
            let existing = tx
                .query_row_cached(
                    &format!("SELECT {MACHINE_COLUMNS} FROM state_machines WHERE arn = ?1"),
                    [&machine.arn],
                    machine_from_row,
                )
                .optional()?;
            let Some(existing) = existing else {
                let settings = serde_json::json!({ CLI_MARK: "sfn-local run" }).to_string();
                tx.execute_cached(
                    &format!(
                        "INSERT INTO state_machines ({MACHINE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
                    ),
                    params![
                        machine.arn,
                        machine.name,
                        machine.machine_type,
                        machine.definition,
                        machine.role_arn,
                        settings,
                        machine.revision_id,
                        machine.creation_date_ms,
                        machine.update_date_ms
                    ],
                )?;
                return Ok(Registered::Created);
            };
            if existing.definition == machine.definition {
                return Ok(Registered::Unchanged);
            }
            let registered_by_cli = serde_json::from_str::<serde_json::Value>(&existing.settings)
                .map(|s| s.get(CLI_MARK).is_some())
                .unwrap_or(false);
            if !registered_by_cli {
                return Ok(Registered::Taken(existing));
            }
            tx.execute_cached(
                "UPDATE state_machines SET definition = ?2, revision_id = ?3, update_date = ?4 WHERE arn = ?1",
                params![
                    machine.arn,
                    machine.definition,
                    machine.revision_id,
                    machine.creation_date_ms
                ],
            )?;
            Ok(Registered::Updated)
        })
    }

    /// One state machine by ARN.
    pub fn state_machine(&self, arn: &str) -> Result<Option<StateMachineRecord>> {
        self.read(|conn| {
            conn.query_row_cached(
                &format!("SELECT {MACHINE_COLUMNS} FROM state_machines WHERE arn = ?1"),
                [arn],
                machine_from_row,
            )
            .optional()
            .map_err(|e| self.sqlite("read state machine", e))
        })
    }

    /// Every state machine, by name.
    pub fn state_machines(&self) -> Result<Vec<StateMachineRecord>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT {MACHINE_COLUMNS} FROM state_machines ORDER BY name, arn"
                ))
                .map_err(|e| self.sqlite("list state machines", e))?;
            let rows = stmt
                .query_map([], machine_from_row)
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| self.sqlite("list state machines", e))?;
            Ok(rows)
        })
    }

    /// Stores a new activity with its tags; `false` (and nothing stored) if its ARN is taken.
    pub fn insert_activity(
        &self,
        activity: &ActivityRecord,
        tags: &[(String, String)],
    ) -> Result<bool> {
        self.write_now("create activity", |tx| {
            let inserted = tx.execute_cached(
                "INSERT INTO activities (arn, name, settings, creation_date) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (arn) DO NOTHING",
                params![
                    activity.arn,
                    activity.name,
                    activity.settings,
                    activity.creation_date_ms
                ],
            )? == 1;
            if inserted {
                put_tags(tx, &activity.arn, tags)?;
            }
            Ok(inserted)
        })
    }

    /// One activity by ARN.
    pub fn activity(&self, arn: &str) -> Result<Option<ActivityRecord>> {
        self.read(|conn| {
            conn.query_row_cached(
                "SELECT arn, name, settings, creation_date FROM activities WHERE arn = ?1",
                [arn],
                activity_from_row,
            )
            .optional()
            .map_err(|e| self.sqlite("read activity", e))
        })
    }

    /// Every activity, by name.
    pub fn activities(&self) -> Result<Vec<ActivityRecord>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare(
                    "SELECT arn, name, settings, creation_date FROM activities ORDER BY name, arn",
                )
                .map_err(|e| self.sqlite("list activities", e))?;
            let rows = stmt
                .query_map([], activity_from_row)
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| self.sqlite("list activities", e))?;
            Ok(rows)
        })
    }

    /// Deletes an activity and its tags; `false` if it did not exist.
    pub fn delete_activity(&self, arn: &str) -> Result<bool> {
        self.write_now("delete activity", |tx| {
            let deleted = tx.execute_cached("DELETE FROM activities WHERE arn = ?1", [arn])? == 1;
            tx.execute_cached("DELETE FROM tags WHERE resource_arn = ?1", [arn])?;
            Ok(deleted)
        })
    }

    /// Adds or overwrites tags of a resource.
    pub fn tag_resource(&self, arn: &str, tags: &[(String, String)]) -> Result<()> {
        self.write_now("tag resource", |tx| put_tags(tx, arn, tags))
    }

    /// Removes tags of a resource by key (absent keys are ignored, as AWS does).
    pub fn untag_resource(&self, arn: &str, keys: &[String]) -> Result<()> {
        self.write_now("untag resource", |tx| {
            for key in keys {
                tx.execute_cached(
                    "DELETE FROM tags WHERE resource_arn = ?1 AND key = ?2",
                    params![arn, key],
                )?;
            }
            Ok(())
        })
    }

    /// A resource's tags, by key.
    pub fn tags(&self, arn: &str) -> Result<Vec<(String, String)>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare("SELECT key, value FROM tags WHERE resource_arn = ?1 ORDER BY key")
                .map_err(|e| self.sqlite("list tags", e))?;
            let rows = stmt
                .query_map([arn], |row| Ok((row.get(0)?, row.get(1)?)))
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| self.sqlite("list tags", e))?;
            Ok(rows)
        })
    }
}

fn put_tags(
    tx: &rusqlite::Transaction<'_>,
    arn: &str,
    tags: &[(String, String)],
) -> rusqlite::Result<()> {
    for (key, value) in tags {
        tx.execute_cached(
            "INSERT INTO tags (resource_arn, key, value) VALUES (?1, ?2, ?3)
             ON CONFLICT (resource_arn, key) DO UPDATE SET value = excluded.value",
            params![arn, key, value],
        )?;
    }
    Ok(())
}

/// A published version of a state machine (immutable).
#[derive(Debug, Clone, PartialEq)]
pub struct VersionRecord {
    /// `arn:aws:states:REGION:ACCOUNT:stateMachine:NAME:N`.
    pub arn: String,
    /// The state machine's ARN.
    pub state_machine_arn: String,
    /// 1, 2, ...
    pub version: i64,
    /// The machine as it was.
    pub machine: StateMachineRecord,
    /// `versionDescription`.
    pub description: Option<String>,
    /// ms since the Unix epoch.
    pub creation_date_ms: i64,
}

/// An alias routing executions to one or two versions.
#[derive(Debug, Clone, PartialEq)]
pub struct AliasRecord {
    /// `arn:aws:states:REGION:ACCOUNT:stateMachine:NAME:ALIAS`.
    pub arn: String,
    /// The state machine's ARN.
    pub state_machine_arn: String,
    /// The alias's name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// `routingConfiguration` as JSON: `[{"stateMachineVersionArn", "weight"}]`.
    pub routing: String,
    /// ms since the Unix epoch.
    pub creation_date_ms: i64,
    /// The last update, ms since the Unix epoch.
    pub update_date_ms: Option<i64>,
}

const VERSION_COLUMNS: &str = "v.arn, v.state_machine_arn, v.version, v.type, v.definition, \
     v.role_arn, v.settings, v.revision_id, v.description, v.creation_date, m.name";

fn version_from_row(row: &Row<'_>) -> rusqlite::Result<VersionRecord> {
    let created: i64 = row.get(9)?;
    Ok(VersionRecord {
        arn: row.get(0)?,
        state_machine_arn: row.get(1)?,
        version: row.get(2)?,
        machine: StateMachineRecord {
            arn: row.get(0)?,
            name: row.get::<_, Option<String>>(10)?.unwrap_or_default(),
            machine_type: row.get(3)?,
            definition: row.get(4)?,
            role_arn: row.get(5)?,
            settings: row.get(6)?,
            revision_id: row.get(7)?,
            creation_date_ms: created,
            update_date_ms: None,
        },
        description: row.get(8)?,
        creation_date_ms: created,
    })
}

const ALIAS_COLUMNS: &str =
    "arn, state_machine_arn, name, description, routing, creation_date, update_date";

fn alias_from_row(row: &Row<'_>) -> rusqlite::Result<AliasRecord> {
    Ok(AliasRecord {
        arn: row.get(0)?,
        state_machine_arn: row.get(1)?,
        name: row.get(2)?,
        description: row.get(3)?,
        routing: row.get(4)?,
        creation_date_ms: row.get(5)?,
        update_date_ms: row.get(6)?,
    })
}

impl Store {
    /// Publishes the machine's current revision as its next version, or answers the latest
    /// version if it already is that revision (AWS publishes nothing new then). `None` if the
    /// machine does not exist.
    pub fn publish_version(
        &self,
        state_machine_arn: &str,
        description: Option<&str>,
        now: i64,
    ) -> Result<Option<VersionRecord>> {
        let published = self.write_now("publish version", |tx| {
            let machine = tx
                .query_row_cached(
                    &format!("SELECT {MACHINE_COLUMNS} FROM state_machines WHERE arn = ?1"),
                    [state_machine_arn],
                    machine_from_row,
                )
                .optional()?;
            let Some(machine) = machine else {
                return Ok(None);
            };
            let latest: Option<(String, i64, String)> = tx
                .query_row_cached(
                    "SELECT arn, version, revision_id FROM state_machine_versions
                     WHERE state_machine_arn = ?1 ORDER BY version DESC LIMIT 1",
                    [state_machine_arn],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                )
                .optional()?;
            if let Some((arn, _, revision)) = &latest {
                if *revision == machine.revision_id {
                    return Ok(Some(arn.clone()));
                }
            }
            let version = latest.map_or(1, |(_, v, _)| v + 1);
            let arn = format!("{state_machine_arn}:{version}");
            tx.execute_cached(
                "INSERT INTO state_machine_versions (arn, state_machine_arn, version, type, definition,
                     role_arn, settings, revision_id, description, creation_date)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    arn,
                    state_machine_arn,
                    version,
                    machine.machine_type,
                    machine.definition,
                    machine.role_arn,
                    machine.settings,
                    machine.revision_id,
                    description,
                    now
                ],
            )?;
            Ok(Some(arn))
        })?;
        match published {
            Some(arn) => self.version(&arn),
            None => Ok(None),
        }
    }

    /// One version by ARN.
    pub fn version(&self, arn: &str) -> Result<Option<VersionRecord>> {
        self.read(|conn| {
            conn.query_row_cached(
                &format!(
                    "SELECT {VERSION_COLUMNS} FROM state_machine_versions v
                     LEFT JOIN state_machines m ON m.arn = v.state_machine_arn WHERE v.arn = ?1"
                ),
                [arn],
                version_from_row,
            )
            .optional()
            .map_err(|e| self.sqlite("read version", e))
        })
    }

    /// A machine's versions, newest first.
    pub fn versions(&self, state_machine_arn: &str) -> Result<Vec<VersionRecord>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT {VERSION_COLUMNS} FROM state_machine_versions v
                     LEFT JOIN state_machines m ON m.arn = v.state_machine_arn
                     WHERE v.state_machine_arn = ?1 ORDER BY v.version DESC"
                ))
                .map_err(|e| self.sqlite("list versions", e))?;
            let rows = stmt
                .query_map([state_machine_arn], version_from_row)
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| self.sqlite("list versions", e))?;
            Ok(rows)
        })
    }

    /// Deletes a version; `false` if it did not exist.
    pub fn delete_version(&self, arn: &str) -> Result<bool> {
        self.write_now("delete version", |tx| {
            Ok(tx.execute_cached("DELETE FROM state_machine_versions WHERE arn = ?1", [arn])? == 1)
        })
    }

    /// Stores a new alias; `false` (and nothing stored) if its ARN is taken.
    pub fn insert_alias(&self, alias: &AliasRecord) -> Result<bool> {
        self.write_now("create alias", |tx| {
            Ok(tx.execute_cached(
                &format!(
                    "INSERT INTO state_machine_aliases ({ALIAS_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (arn) DO NOTHING"
                ),
                params![
                    alias.arn,
                    alias.state_machine_arn,
                    alias.name,
                    alias.description,
                    alias.routing,
                    alias.creation_date_ms,
                    alias.update_date_ms
                ],
            )? == 1)
        })
    }

    /// Replaces an alias's description, routing and update date; `false` if it does not exist.
    pub fn update_alias(&self, alias: &AliasRecord) -> Result<bool> {
        self.write_now("update alias", |tx| {
            Ok(tx.execute_cached(
                "UPDATE state_machine_aliases SET description = ?2, routing = ?3, update_date = ?4
                 WHERE arn = ?1",
                params![
                    alias.arn,
                    alias.description,
                    alias.routing,
                    alias.update_date_ms
                ],
            )? == 1)
        })
    }

    /// One alias by ARN.
    pub fn alias(&self, arn: &str) -> Result<Option<AliasRecord>> {
        self.read(|conn| {
            conn.query_row_cached(
                &format!("SELECT {ALIAS_COLUMNS} FROM state_machine_aliases WHERE arn = ?1"),
                [arn],
                alias_from_row,
            )
            .optional()
            .map_err(|e| self.sqlite("read alias", e))
        })
    }

    /// A machine's aliases, by name.
    pub fn aliases(&self, state_machine_arn: &str) -> Result<Vec<AliasRecord>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT {ALIAS_COLUMNS} FROM state_machine_aliases
                     WHERE state_machine_arn = ?1 ORDER BY name"
                ))
                .map_err(|e| self.sqlite("list aliases", e))?;
            let rows = stmt
                .query_map([state_machine_arn], alias_from_row)
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| self.sqlite("list aliases", e))?;
            Ok(rows)
        })
    }

    /// Deletes an alias; `false` if it did not exist.
    pub fn delete_alias(&self, arn: &str) -> Result<bool> {
        self.write_now("delete alias", |tx| {
            Ok(tx.execute_cached("DELETE FROM state_machine_aliases WHERE arn = ?1", [arn])? == 1)
        })
    }
}

/// A state machine `start-execution --state-machine-arn` can start: its name, definition and
/// role, from the API's rows or from the executions that ran it.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownMachine {
    /// The state machine's name.
    pub name: String,
    /// The definition to run.
    pub definition: String,
    /// Its role ARN, if it has one.
    pub role_arn: Option<String>,
    /// The version ARN (and alias ARN) the machine was named by, when it was a version or an
    /// alias: the execution records them.
    pub started_through: Option<(String, Option<String>)>,
}

impl Store {
    /// The machine an ARN names: a state machine created through the API, one of its versions,
    /// an alias (its most weighted version), or else a machine that executions ran (`run`), with
    /// the definition of its latest execution. `None` if the database knows no such machine.
    pub fn known_machine(&self, arn: &str) -> Result<Option<KnownMachine>> {
        let from = |m: StateMachineRecord| KnownMachine {
            name: m.name,
            definition: m.definition,
            role_arn: Some(m.role_arn).filter(|r| !r.is_empty()),
            started_through: None,
        };
        if let Some(m) = self.state_machine(arn)? {
            return Ok(Some(from(m)));
        }
        if let Some(v) = self.version(arn)? {
            let started_through = Some((arn.to_owned(), None));
            return Ok(Some(KnownMachine {
                started_through,
                ..from(v.machine)
            }));
        }
        if let Some(a) = self.alias(arn)? {
            let routes: Vec<serde_json::Value> =
                serde_json::from_str(&a.routing).unwrap_or_default();
            let heaviest = routes
                .iter()
                .max_by_key(|r| r["weight"].as_i64().unwrap_or(0))
                .and_then(|r| r["stateMachineVersionArn"].as_str());
            if let Some(version) = heaviest {
                if let Some(v) = self.version(version)? {
                    let started_through = Some((version.to_owned(), Some(arn.to_owned())));
                    return Ok(Some(KnownMachine {
                        started_through,
                        ..from(v.machine)
                    }));
                }
            }
        }
        self.read(|conn| {
            conn.query_row_cached(
                "SELECT state_machine_name, definition, role_arn FROM executions
                 WHERE state_machine_arn = ?1 ORDER BY start_date DESC, id DESC LIMIT 1",
                [arn],
                |row| {
                    Ok(KnownMachine {
                        name: row.get(0)?,
                        definition: row.get(1)?,
                        role_arn: row.get(2)?,
                        started_through: None,
                    })
                },
            )
            .optional()
            .map_err(|e| self.sqlite("read state machine", e))
        })
    }
}

impl Store {
    /// Whether an execution of the machine named `state_machine_name` already ran exactly this
    /// definition (`run` showed its warnings then, and need not show them again).
    pub fn has_run_definition(&self, state_machine_name: &str, definition: &str) -> Result<bool> {
        self.read(|conn| {
            conn.query_row_cached(
                "SELECT EXISTS (SELECT 1 FROM executions
                 WHERE state_machine_name = ?1 AND definition = ?2)",
                [state_machine_name, definition],
                |row| row.get::<_, bool>(0),
            )
            .map_err(|e| self.sqlite("read executions", e))
        })
    }
}
