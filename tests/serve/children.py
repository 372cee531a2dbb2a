"""A machine created through the API starts another one created through the API (by ARN, with
`states:startExecution.sync:2`): the child is a real execution, listed and described."""
import json
import sys
import time

import boto3

endpoint = sys.argv[1]
sfn = boto3.client("stepfunctions", endpoint_url=endpoint, region_name="us-east-1",
                   aws_access_key_id="test", aws_secret_access_key="test")
role = "arn:aws:iam::123456789012:role/test"

child = sfn.create_state_machine(name="Kid", roleArn=role, definition=json.dumps(
    {"StartAt": "Hi", "States": {"Hi": {"Type": "Pass", "Parameters": {"hello.$": "$.who"}, "End": True}}}
))["stateMachineArn"]
parent = sfn.create_state_machine(name="Mom", roleArn=role, definition=json.dumps(
    {"StartAt": "Call", "States": {"Call": {
        "Type": "Task", "Resource": "arn:aws:states:::states:startExecution.sync:2",
        "Parameters": {"StateMachineArn": child, "Name": "kid-1", "Input": {"who.$": "$.who"}},
        "OutputPath": "$.Output", "End": True}}}))["stateMachineArn"]
e = sfn.start_execution(stateMachineArn=parent, input=json.dumps({"who": "world"}))["executionArn"]
for _ in range(1200):
    d = sfn.describe_execution(executionArn=e)
    if d["status"] != "RUNNING":
        break
    time.sleep(0.05)
assert d["status"] == "SUCCEEDED", d
assert json.loads(d["output"]) == {"hello": "world"}, d
kids = sfn.list_executions(stateMachineArn=child)["executions"]
assert [k["name"] for k in kids] == ["kid-1"], kids
k = sfn.describe_execution(executionArn=kids[0]["executionArn"])
assert k["status"] == "SUCCEEDED" and json.loads(k["input"])["who"] == "world", k
print("children ok")
