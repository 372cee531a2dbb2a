-- V5: what the API creates besides executions: state machines, their versions and aliases,
-- activities, and tags. Settings that only mean something on AWS (logging, tracing,
-- encryption, a description) are kept as the JSON object the client sent, to echo back.
CREATE TABLE state_machines (
    arn           TEXT    PRIMARY KEY,
    name          TEXT    NOT NULL,
    type          TEXT    NOT NULL CHECK (type IN ('STANDARD', 'EXPRESS')),
    definition    TEXT    NOT NULL,
    role_arn      TEXT    NOT NULL,
    settings      TEXT    NOT NULL DEFAULT '{}',
    -- Changes with every update (AWS's revisionId).
    revision_id   TEXT    NOT NULL,
    creation_date INTEGER NOT NULL,
    update_date   INTEGER
);

-- PublishStateMachineVersion: an immutable copy of the machine at one revision.
CREATE TABLE state_machine_versions (
    arn               TEXT    PRIMARY KEY,
    state_machine_arn TEXT    NOT NULL,
    version           INTEGER NOT NULL CHECK (version >= 1),
    type              TEXT    NOT NULL,
    definition        TEXT    NOT NULL,
    role_arn          TEXT    NOT NULL,
    settings          TEXT    NOT NULL DEFAULT '{}',
    revision_id       TEXT    NOT NULL,
    description       TEXT,
    creation_date     INTEGER NOT NULL,
    UNIQUE (state_machine_arn, version)
);

-- An alias routes its executions to one or two versions by weight (routingConfiguration, JSON).
CREATE TABLE state_machine_aliases (
    arn               TEXT    PRIMARY KEY,
    state_machine_arn TEXT    NOT NULL,
    name              TEXT    NOT NULL,
    description       TEXT,
    routing           TEXT    NOT NULL,
    creation_date     INTEGER NOT NULL,
    update_date       INTEGER
);

CREATE TABLE activities (
    arn           TEXT    PRIMARY KEY,
    name          TEXT    NOT NULL,
    settings      TEXT    NOT NULL DEFAULT '{}',
    creation_date INTEGER NOT NULL
);

-- Tags of any resource (state machines, activities), in the order they were set.
CREATE TABLE tags (
    resource_arn TEXT NOT NULL,
    key          TEXT NOT NULL,
    value        TEXT NOT NULL,
    PRIMARY KEY (resource_arn, key)
);
