"""Map runs through boto3, unchanged but for endpoint_url (argv[1]): ListMapRuns,
DescribeMapRun's counts, ListExecutions by mapRunArn, DescribeExecution and GetExecutionHistory
of a child, and
UpdateMapRun taking effect on the running Map (a higher maxConcurrency starts more children at
once; a failure threshold the run is already past fails it)."""
import json
import sys
import time

import boto3

endpoint = sys.argv[1]
sfn = boto3.client("stepfunctions", endpoint_url=endpoint, region_name="us-east-1",
                   aws_access_key_id="test", aws_secret_access_key="test")
role = "arn:aws:iam::123456789012:role/test"


def until(what, probe, seconds=90):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def final(arn):
    return until(f"{arn} to end", lambda: (lambda d: d if d["status"] != "RUNNING" else None)(
        sfn.describe_execution(executionArn=arn)))


def distributed(label, processor, **extra):
    return json.dumps({"StartAt": "Fan", "States": {"Fan": dict({
        "Type": "Map", "Label": label, "ItemsPath": "$.items", "End": True,
        "ItemProcessor": dict({"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}},
                              **processor)}, **extra)}})


def the_run(execution):
    runs = until("a map run", lambda: sfn.list_map_runs(executionArn=execution)["mapRuns"])
    assert len(runs) == 1, runs
    return runs[0]


# 1. Six children, one at a time, each waiting 2 s; UpdateMapRun raises the concurrency.
slow = {"StartAt": "Nap", "States": {"Nap": {"Type": "Wait", "Seconds": 2, "Next": "Done"},
                                     "Done": {"Type": "Pass", "Parameters": {"n.$": "$.n"}, "End": True}}}
m = sfn.create_state_machine(name="Fanout", roleArn=role,
                             definition=distributed("Fan", slow, MaxConcurrency=1))["stateMachineArn"]
e = sfn.start_execution(stateMachineArn=m, name="fan-1",
                        input=json.dumps({"items": [{"n": i} for i in range(6)]}))["executionArn"]
run = the_run(e)
arn = run["mapRunArn"]
assert arn.startswith("arn:aws:states:us-east-1:123456789012:mapRun:Fanout/Fan:"), arn
assert run["executionArn"] == e, run
assert run["stateMachineArn"] == "arn:aws:states:us-east-1:123456789012:stateMachine:Fanout/Fan", run
d = sfn.describe_map_run(mapRunArn=arn)
assert d["status"] == "RUNNING" and d["maxConcurrency"] == 1, d
assert d["toleratedFailureCount"] == 0 and d["toleratedFailurePercentage"] == 0, d
until("the run to know its items", lambda: sfn.describe_map_run(mapRunArn=arn)["itemCounts"]["total"] == 6)
# One at a time: never two children running.
for _ in range(20):
    counts = sfn.describe_map_run(mapRunArn=arn)["executionCounts"]
    assert counts["running"] <= 1, counts
    time.sleep(0.05)
sfn.update_map_run(mapRunArn=arn, maxConcurrency=6)
assert sfn.describe_map_run(mapRunArn=arn)["maxConcurrency"] == 6
until("children running side by side",
      lambda: sfn.describe_map_run(mapRunArn=arn)["executionCounts"]["running"] >= 2)
out = final(e)
assert out["status"] == "SUCCEEDED", out
assert json.loads(out["output"]) == [{"n": i} for i in range(6)], out
d = sfn.describe_map_run(mapRunArn=arn)
assert d["status"] == "SUCCEEDED" and "stopDate" in d, d
for counts in (d["itemCounts"], d["executionCounts"]):
    assert (counts["total"], counts["succeeded"], counts["pending"], counts["running"]) == (6, 6, 0, 0), d

children = [c for page in sfn.get_paginator("list_executions").paginate(
    mapRunArn=arn, PaginationConfig={"PageSize": 4}) for c in page["executions"]]
assert len(children) == 6, children
assert all(c["mapRunArn"] == arn and c["status"] == "SUCCEEDED" and c["itemCount"] == 1
           for c in children), children
assert all(c["executionArn"].startswith("arn:aws:states:us-east-1:123456789012:execution:Fanout/Fan:")
           for c in children), children
assert len(sfn.list_executions(mapRunArn=arn, statusFilter="FAILED")["executions"]) == 0
child = sfn.describe_execution(executionArn=children[0]["executionArn"])
assert child["mapRunArn"] == arn and child["status"] == "SUCCEEDED", child
assert json.loads(child["output"]) == json.loads(child["input"]), child
# Each child is an execution with a history of its own, as on AWS: GetExecutionHistory pages it.
history = [ev for page in sfn.get_paginator("get_execution_history").paginate(
    executionArn=child["executionArn"], PaginationConfig={"PageSize": 2}) for ev in page["events"]]
assert [ev["type"] for ev in history] == [
    "ExecutionStarted", "WaitStateEntered", "WaitStateExited", "PassStateEntered",
    "PassStateExited", "ExecutionSucceeded"], history
assert [ev["id"] for ev in history] == list(range(1, 7)), history
# The first state's event links to 0, as in every history AWS records.
assert [ev["previousEventId"] for ev in history] == [0, 0, 2, 3, 4, 5], history
begun = history[0]["executionStartedEventDetails"]
assert json.loads(begun["input"]) == json.loads(child["input"]), begun
assert json.loads(history[-1]["executionSucceededEventDetails"]["output"]) == json.loads(child["output"])
newest = sfn.get_execution_history(executionArn=child["executionArn"], reverseOrder=True,
                                   maxResults=1)["events"]
assert newest[0]["type"] == "ExecutionSucceeded" and newest[0]["id"] == 6, newest
try:
    sfn.get_execution_history(executionArn=child["executionArn"] + "x")
    raise AssertionError("an unknown child has a history")
except sfn.exceptions.ExecutionDoesNotExist:
    pass
# The parent's history names the run.
events = sfn.get_execution_history(executionArn=e)["events"]
started = [ev for ev in events if ev["type"] == "MapRunStarted"]
assert started and started[0]["mapRunStartedEventDetails"]["mapRunArn"] == arn, events

# 2. A failure threshold lowered below the failures so far fails the run.
flaky = {"StartAt": "Which", "States": {
    "Which": {"Type": "Choice", "Choices": [{"Variable": "$.fail", "BooleanEquals": True, "Next": "Boom"}],
              "Default": "Nap"},
    "Boom": {"Type": "Fail", "Error": "Boom", "Cause": "asked to"},
    "Nap": {"Type": "Wait", "Seconds": 2, "End": True}}}
m2 = sfn.create_state_machine(name="Flaky", roleArn=role, definition=distributed(
    "Try", flaky, MaxConcurrency=1, ToleratedFailureCount=5))["stateMachineArn"]
items = [{"fail": True}] + [{"fail": False}] * 5
e2 = sfn.start_execution(stateMachineArn=m2, input=json.dumps({"items": items}))["executionArn"]
arn2 = the_run(e2)["mapRunArn"]
assert sfn.describe_map_run(mapRunArn=arn2)["toleratedFailureCount"] == 5
until("the first child to fail",
      lambda: sfn.describe_map_run(mapRunArn=arn2)["executionCounts"]["failed"] == 1)
sfn.update_map_run(mapRunArn=arn2, toleratedFailureCount=0)
out = final(e2)
assert out["status"] == "FAILED" and out["error"] == "States.ExceedToleratedFailureThreshold", out
d = until("the run to fail", lambda: (lambda d: d if d["status"] == "FAILED" else None)(
    sfn.describe_map_run(mapRunArn=arn2)))
assert d["toleratedFailureCount"] == 0 and d["executionCounts"]["failed"] == 1, d
assert d["executionCounts"]["running"] == 0, d
failed = sfn.list_executions(mapRunArn=arn2, statusFilter="FAILED")["executions"]
assert len(failed) == 1, failed
f = sfn.describe_execution(executionArn=failed[0]["executionArn"])
assert (f["error"], f["cause"]) == ("Boom", "asked to"), f
ended = sfn.get_execution_history(executionArn=f["executionArn"])["events"][-1]
assert ended["type"] == "ExecutionFailed", ended
assert ended["executionFailedEventDetails"] == {"error": "Boom", "cause": "asked to"}, ended

# 3. Stopping the execution aborts its run and the children still running.
long = {"StartAt": "Nap", "States": {"Nap": {"Type": "Wait", "Seconds": 600, "End": True}}}
m3 = sfn.create_state_machine(name="Long", roleArn=role,
                              definition=distributed("Nap", long, MaxConcurrency=2))["stateMachineArn"]
e3 = sfn.start_execution(stateMachineArn=m3, input=json.dumps({"items": [1, 2, 3]}))["executionArn"]
arn3 = the_run(e3)["mapRunArn"]
until("two children running", lambda: sfn.describe_map_run(mapRunArn=arn3)["executionCounts"]["running"] == 2)
sfn.stop_execution(executionArn=e3)
stopped = final(e3)
assert stopped["status"] == "ABORTED", stopped
d = until("the run to be aborted", lambda: (lambda d: d if d["status"] == "ABORTED" else None)(
    sfn.describe_map_run(mapRunArn=arn3)))
c = d["executionCounts"]
assert (c["aborted"], c["running"], c["pending"], c["total"]) == (2, 0, 1, 3), d

# 4. AWS's errors.
unknown = "arn:aws:states:us-east-1:123456789012:mapRun:Fanout/Fan:00000000-0000-0000-0000-000000000000"
for call in (lambda: sfn.describe_map_run(mapRunArn=unknown),
             lambda: sfn.update_map_run(mapRunArn=unknown, maxConcurrency=2),
             lambda: sfn.list_executions(mapRunArn=unknown)):
    try:
        call()
        raise AssertionError("an unknown map run was found")
    except sfn.exceptions.ResourceNotFound:
        pass
try:
    sfn.describe_map_run(mapRunArn="not-an-arn")
    raise AssertionError("a malformed ARN was taken")
except sfn.exceptions.InvalidArn:
    pass
try:
    sfn.list_map_runs(executionArn="arn:aws:states:us-east-1:123456789012:execution:Fanout:nope")
    raise AssertionError("an unknown execution was found")
except sfn.exceptions.ExecutionDoesNotExist:
    pass
try:
    sfn.update_map_run(mapRunArn=arn, toleratedFailurePercentage=101)
    raise AssertionError("a percentage over 100 was taken")
except sfn.exceptions.ClientError as err:
    assert err.response["Error"]["Code"] == "ValidationException", err.response
print("map runs ok")
