"""A suite in the style of AWS's Step Functions Local samples: boto3 against the emulator's
endpoint, one test case of the MockConfigFile per test (started on `stateMachineArn#TestCase`),
assertions on the execution's history. Nothing here knows it talks to sfn-local: the endpoint is
SFN_ENDPOINT (as such suites read it), the rest is what they do against
amazon/aws-stepfunctions-local with its `SFN_MOCK_CONFIG` and `LAMBDA_ENDPOINT`.

Environment: SFN_ENDPOINT (the emulator), SUITE_DIR (this folder); HYBRID_LAMBDA=1 when the
emulator's LAMBDA_ENDPOINT serves the function `check-identity` (moto, echoing its payload).
"""
import json
import os
import time
import uuid

import boto3
import pytest

HERE = os.environ.get("SUITE_DIR", os.path.dirname(__file__))
REGION = "us-east-1"
ACCOUNT = "123456789012"
MACHINE_ARN = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:LocalTesting"


@pytest.fixture(scope="session")
def sfn():
    return boto3.client("stepfunctions", endpoint_url=os.environ["SFN_ENDPOINT"], region_name=REGION,
                        aws_access_key_id="DUMMYIDEXAMPLE", aws_secret_access_key="DUMMYEXAMPLEKEY")


@pytest.fixture(scope="session")
def machine(sfn):
    with open(os.path.join(HERE, "LocalTesting.asl.json")) as f:
        definition = f.read()
    # Creating the same machine again answers the first (a rerun against a kept database).
    arn = sfn.create_state_machine(name="LocalTesting", definition=definition,
                                   roleArn=f"arn:aws:iam::{ACCOUNT}:role/DummyRole")["stateMachineArn"]
    assert arn == MACHINE_ARN
    return arn


def run_case(sfn, machine, case):
    with open(os.path.join(HERE, "events.json")) as f:
        payload = f.read()
    name = f"{case}-{uuid.uuid4().hex[:8]}"
    arn = sfn.start_execution(stateMachineArn=f"{machine}#{case}", name=name, input=payload)["executionArn"]
    for _ in range(300):
        described = sfn.describe_execution(executionArn=arn)
        if described["status"] != "RUNNING":
            events = sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
            return described, events
        time.sleep(0.1)
    raise AssertionError(f"{arn} is still running")


def exited(events, state):
    return [e for e in events if e["type"] == "TaskStateExited" and e["stateExitedEventDetails"]["name"] == state]


def test_happy_path(sfn, machine):
    described, events = run_case(sfn, machine, "HappyPathTest")
    assert described["status"] == "SUCCEEDED"
    [event] = exited(events, "CustomerAddedToFollowup")
    assert json.loads(event["stateExitedEventDetails"]["output"]) == {
        "Entries": [{"EventId": "11710aed-b79e-4468-a20b-bb3c0c3b4860"}], "FailedEntryCount": 0}


def test_negative_sentiment(sfn, machine):
    described, events = run_case(sfn, machine, "NegativeSentimentTest")
    assert described["status"] == "SUCCEEDED"
    assert exited(events, "NegativeSentiment")
    assert not exited(events, "CustomerAddedToFollowup")


def test_custom_validation_failed_catch(sfn, machine):
    described, events = run_case(sfn, machine, "CustomValidationFailedCatchTest")
    assert described["status"] == "FAILED"
    assert described["error"] == "ValidationFailed"
    [failed] = [e for e in events if e["type"] == "TaskFailed"]
    assert failed["taskFailedEventDetails"]["error"] == "CustomValidationError"
    assert failed["taskFailedEventDetails"]["cause"] == "Check Identity Validation Failed"


def test_retry_on_service_exception(sfn, machine):
    """The sample's query: three InternalServerException failures, then the call succeeds; Step
    Functions Local names the aws-sdk resource `aws-sdk` / `comprehend:detectSentiment`."""
    described, events = run_case(sfn, machine, "RetryOnServiceExceptionTest")
    assert described["status"] == "SUCCEEDED"
    failures = [e for e in events if e["type"] == "TaskFailed"
                and e["taskFailedEventDetails"]["error"] == "InternalServerException"]
    assert len(failures) == 3
    succeeded = [e for e in events if e["type"] == "TaskSucceeded"
                 and e["taskSucceededEventDetails"].get("resource") == "comprehend:detectSentiment"]
    assert len(succeeded) == 1
    assert succeeded[0]["taskSucceededEventDetails"]["resourceType"] == "aws-sdk"


@pytest.mark.skipif(os.environ.get("HYBRID_LAMBDA") != "1", reason="no LAMBDA_ENDPOINT serving check-identity")
def test_hybrid_lambda_calls_lambda_endpoint(sfn, machine):
    """A state the test case does not mock calls the configured endpoint (LAMBDA_ENDPOINT)."""
    described, events = run_case(sfn, machine, "HybridLambdaTest")
    assert described["status"] == "SUCCEEDED", described
    [event] = exited(events, "CheckIdentity")
    output = json.loads(event["stateExitedEventDetails"]["output"])
    # moto's Lambda without Docker answers with the payload it got.
    assert output["results"]["identity"] == {"identity": {"email": "jdoe@example.com", "ssn": "123-45-6789"}}


def test_task_bound_in_a_machine_with_a_random_name(sfn):
    """`--task Stamp=COMMAND` serves the state Stamp of every machine, whatever its name."""
    name = f"suite-{uuid.uuid4().hex[:12]}"
    definition = json.dumps({"StartAt": "Stamp", "States": {
        "Stamp": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                  "Parameters": {"FunctionName": "stamp", "Payload.$": "$"}, "End": True}}})
    arn = sfn.create_state_machine(name=name, definition=definition,
                                   roleArn=f"arn:aws:iam::{ACCOUNT}:role/DummyRole")["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=arn, input='{"order":7}')["executionArn"]
    for _ in range(300):
        described = sfn.describe_execution(executionArn=execution)
        if described["status"] != "RUNNING":
            break
        time.sleep(0.1)
    assert described["status"] == "SUCCEEDED", described
    assert json.loads(described["output"])["Payload"] == {"stamped": True, "input": {"order": 7}}
