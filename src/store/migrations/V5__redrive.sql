-- V5: redrive (RedriveExecution).
--
-- A redriven execution keeps its row, ARN and history: the redrive appends ExecutionRedriven and
-- the row goes back to RUNNING. These say how often and when it was last redriven, for
-- DescribeExecution's redriveCount/redriveDate and the context object's Execution.RedriveCount
-- and Execution.RedriveTime.
ALTER TABLE executions ADD COLUMN redrive_count INTEGER NOT NULL DEFAULT 0 CHECK (redrive_count >= 0);
ALTER TABLE executions ADD COLUMN redrive_date INTEGER;
-- The clientToken of the last redrive: the same token again is the same request (idempotent).
ALTER TABLE executions ADD COLUMN redrive_client_token TEXT;
