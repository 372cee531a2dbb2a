"""Drives `sfn-local serve` with boto3, unchanged but for endpoint_url (argv[1])."""
import json
import sys
import time

import boto3
from botocore.config import Config

endpoint = sys.argv[1]
here = sys.argv[2]
sfn = boto3.client("stepfunctions", endpoint_url=endpoint, region_name="us-east-1",
                   aws_access_key_id="test", aws_secret_access_key="test")
role = "arn:aws:iam::123456789012:role/test"


def final(arn):
    for _ in range(600):
        d = sfn.describe_execution(executionArn=arn)
        if d["status"] != "RUNNING":
            return d
        time.sleep(0.1)
    raise AssertionError(f"{arn} still running")


definition = open(f"{here}/pass.asl.json").read()
m = sfn.create_state_machine(name="Boto", definition=definition, roleArn=role)["stateMachineArn"]
assert sfn.describe_state_machine(stateMachineArn=m)["definition"] == definition
arns = [sfn.start_execution(stateMachineArn=m, name=f"b-{i}", input=json.dumps({"who": i}))["executionArn"]
        for i in range(5)]
d = final(arns[0])
assert d["status"] == "SUCCEEDED", d
assert json.loads(d["output"]) == {"greeting": "hello 0"}, d
assert d["startDate"] <= d["stopDate"], d  # datetimes, parsed by botocore

# History through boto3's paginator, one event per page.
pages = sfn.get_paginator("get_execution_history").paginate(
    executionArn=arns[0], PaginationConfig={"PageSize": 1})
types = [e["type"] for page in pages for e in page["events"]]
assert types[0] == "ExecutionStarted" and types[-1] == "ExecutionSucceeded", types
whole = [e["type"] for e in sfn.get_execution_history(executionArn=arns[0])["events"]]
assert types == whole, (types, whole)
quiet = sfn.get_execution_history(executionArn=arns[0], includeExecutionData=False)["events"]
assert "input" not in quiet[0]["executionStartedEventDetails"], quiet[0]

for a in arns:
    final(a)
listed = [e["executionArn"] for page in sfn.get_paginator("list_executions").paginate(
    stateMachineArn=m, PaginationConfig={"PageSize": 2}) for e in page["executions"]]
assert sorted(listed) == sorted(arns), listed

# Error shapes as boto3 raises them.
try:
    sfn.describe_execution(executionArn="arn:aws:states:us-east-1:123456789012:execution:Boto:nope")
    raise AssertionError("no error")
except sfn.exceptions.ExecutionDoesNotExist as e:
    assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 400
try:
    sfn.start_execution(stateMachineArn=m, name="b-0", input='{"who": "other"}')
    raise AssertionError("no error")
except sfn.exceptions.ExecutionAlreadyExists:
    pass
try:
    sfn.start_execution(stateMachineArn=m, input="{not json")
    raise AssertionError("no error")
except sfn.exceptions.InvalidExecutionInput:
    pass
try:
    sfn.start_execution(stateMachineArn=m, input="x" * (256 * 1024 + 1))
    raise AssertionError("no error")
except sfn.exceptions.ValidationException as e:
    assert "'input'" in str(e), str(e)
try:
    sfn.send_task_success(taskToken="AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", output="{}")
    raise AssertionError("no error")
except (sfn.exceptions.TaskDoesNotExist, sfn.exceptions.InvalidToken):
    pass

# StartSyncExecution (botocore's sync- host prefix is turned off for a local endpoint).
sync = boto3.client("stepfunctions", endpoint_url=endpoint, region_name="us-east-1",
                    aws_access_key_id="test", aws_secret_access_key="test",
                    config=Config(inject_host_prefix=False))
x = sync.create_state_machine(name="BotoExpress", definition=definition, roleArn=role, type="EXPRESS")
r = sync.start_sync_execution(stateMachineArn=x["stateMachineArn"], input='{"who": "sync"}')
assert r["status"] == "SUCCEEDED" and json.loads(r["output"]) == {"greeting": "hello sync"}, r
# A synchronous execution's context has no Execution.RedriveCount (AWS's recording).
ctx = sync.create_state_machine(name="BotoExpressContext", roleArn=role, type="EXPRESS", definition=json.dumps(
    {"StartAt": "C", "States": {"C": {"Type": "Pass", "Parameters": {"e.$": "$$.Execution"}, "End": True}}}))
r = sync.start_sync_execution(stateMachineArn=ctx["stateMachineArn"])
assert "RedriveCount" not in json.loads(r["output"])["e"] and "Name" in json.loads(r["output"])["e"], r
try:
    sync.start_sync_execution(stateMachineArn=m)
    raise AssertionError("no error")
except sync.exceptions.StateMachineTypeNotSupported:
    pass

# Tags and activities.
sfn.tag_resource(resourceArn=m, tags=[{"key": "team", "value": "orders"}])
assert sfn.list_tags_for_resource(resourceArn=m)["tags"] == [{"key": "team", "value": "orders"}]
sfn.untag_resource(resourceArn=m, tagKeys=["team"])
assert sfn.list_tags_for_resource(resourceArn=m)["tags"] == []
act = sfn.create_activity(name="BotoActivity")["activityArn"]
assert sfn.create_activity(name="BotoActivity")["activityArn"] == act  # idempotent
assert [a["name"] for a in sfn.list_activities()["activities"]] == ["BotoActivity"]
sfn.delete_activity(activityArn=act)
try:
    sfn.describe_activity(activityArn=act)
    raise AssertionError("no error")
except sfn.exceptions.ActivityDoesNotExist:
    pass
# Versions, and aliases routing executions to them.
v1 = sfn.publish_state_machine_version(stateMachineArn=m, description="first")["stateMachineVersionArn"]
assert v1 == m + ":1", v1
assert sfn.publish_state_machine_version(stateMachineArn=m)["stateMachineVersionArn"] == v1  # nothing changed
bye = definition.replace("hello", "bye")
sfn.update_state_machine(stateMachineArn=m, definition=bye)
v2 = sfn.publish_state_machine_version(stateMachineArn=m)["stateMachineVersionArn"]
listed = [v["stateMachineVersionArn"] for v in sfn.list_state_machine_versions(stateMachineArn=m)["stateMachineVersions"]]
assert listed == [v2, v1], listed
live = sfn.create_state_machine_alias(
    name="live", routingConfiguration=[{"stateMachineVersionArn": v1, "weight": 100}])["stateMachineAliasArn"]
assert live == m + ":live", live


def output_of(arn):
    e = sfn.start_execution(stateMachineArn=arn, input='{"who": "x"}')["executionArn"]
    return json.loads(final(e)["output"])["greeting"]


assert output_of(live) == "hello x"
assert output_of(v2) == "bye x"
# Executions record the version (and alias) they were started through, as AWS shows them.
through_alias = sfn.start_execution(stateMachineArn=live, input='{"who": "y"}')["executionArn"]
d = final(through_alias)
assert d["stateMachineArn"] == m, d
assert d["stateMachineAliasArn"] == live and d["stateMachineVersionArn"] == v1, d
through_version = sfn.start_execution(stateMachineArn=v2, input='{"who": "z"}')["executionArn"]
d = final(through_version)
assert d["stateMachineVersionArn"] == v2 and "stateMachineAliasArn" not in d, d
started = sfn.get_execution_history(executionArn=through_alias)["events"][0]["executionStartedEventDetails"]
assert started["stateMachineAliasArn"] == live and started["stateMachineVersionArn"] == v1, started
by_alias = sfn.list_executions(stateMachineArn=live)["executions"]
assert through_alias in [e["executionArn"] for e in by_alias], by_alias
assert len(by_alias) == 2 and all(e["stateMachineAliasArn"] == live for e in by_alias), by_alias
by_version = [e["executionArn"] for e in sfn.list_executions(stateMachineArn=v2)["executions"]]
assert through_version in by_version and through_alias not in by_version, by_version
plain = sfn.list_executions(stateMachineArn=m)["executions"]
assert through_alias in [e["executionArn"] for e in plain], plain
sfn.update_state_machine_alias(stateMachineAliasArn=live,
                               routingConfiguration=[{"stateMachineVersionArn": v2, "weight": 100}])
assert output_of(live) == "bye x"
d = sfn.describe_state_machine_alias(stateMachineAliasArn=live)
assert d["routingConfiguration"] == [{"stateMachineVersionArn": v2, "weight": 100}], d
try:
    sfn.delete_state_machine_version(stateMachineVersionArn=v2)
    raise AssertionError("no error")
except sfn.exceptions.ConflictException:
    pass
try:
    sfn.create_state_machine_alias(name="half", routingConfiguration=[{"stateMachineVersionArn": v1, "weight": 50}])
    raise AssertionError("no error")
except sfn.exceptions.ValidationException:
    pass
sfn.delete_state_machine_alias(stateMachineAliasArn=live)
assert sfn.list_state_machine_aliases(stateMachineArn=m)["stateMachineAliases"] == []
sfn.delete_state_machine_version(stateMachineVersionArn=v1)
print("boto3: all checks passed")
