-- V9: the version and alias an execution was started through (StartExecution with a version or
-- alias ARN), as DescribeExecution and ListExecutions show them (`stateMachineVersionArn`,
-- `stateMachineAliasArn`). NULL for an execution of the unqualified machine.
ALTER TABLE executions ADD COLUMN state_machine_version_arn TEXT;
ALTER TABLE executions ADD COLUMN state_machine_alias_arn TEXT;
