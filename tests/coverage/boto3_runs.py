"""Creates the machine in DEFINITION through the API and runs it on each INPUT (JSON) with boto3,
waiting for each execution to end: coverage reads what serve stored."""
import json
import sys
import time

import boto3

endpoint, definition, name, *inputs = sys.argv[1:]
sfn = boto3.client("stepfunctions", endpoint_url=endpoint, region_name="us-east-1",
                   aws_access_key_id="test", aws_secret_access_key="test")
with open(definition) as f:
    text = f.read()
arn = sfn.create_state_machine(name=name, roleArn="arn:aws:iam::123456789012:role/test",
                               definition=text)["stateMachineArn"]
for given in inputs:
    e = sfn.start_execution(stateMachineArn=arn, input=given)["executionArn"]
    for _ in range(1200):
        d = sfn.describe_execution(executionArn=e)
        if d["status"] != "RUNNING":
            break
        time.sleep(0.05)
    assert d["status"] == "SUCCEEDED", d
print("runs ok")
