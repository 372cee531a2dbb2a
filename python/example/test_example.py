"""What a suite for a Step Functions workflow looks like with the sfn-local plugin: the fixtures
start and stop the server, the helpers wait for ends and tokens."""

import sys
from pathlib import Path

import sfn_local
from sfn_local import (advance_time, answer_task, clock_now, start_and_wait, wait_for_execution,
                       wait_for_task_token)

ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:{}"


def test_an_order_is_charged_by_the_local_program(sfn_client):
    done = start_and_wait(sfn_client, ARN.format("Orders"), {"total": 12})
    assert done["status"] == "SUCCEEDED"
    assert done["output_json"] == {"charged": 1200}


def test_a_template_machine_with_its_substitution(sfn_client):
    done = start_and_wait(sfn_client, ARN.format("Greeter"), {"name": "Ada"})
    assert done["output_json"] == {"greeting": "Hello", "name": "Ada"}


def test_an_approval_answered_with_its_task_token(sfn_local, sfn_client):
    started = sfn_client.start_execution(stateMachineArn=ARN.format("Approval"), input='{"order": "o-1"}')
    token = wait_for_task_token(sfn_local, started["executionArn"], "AskForApproval")
    answer_task(sfn_client, token, {"approved": True})
    done = wait_for_execution(sfn_client, started["executionArn"])
    assert (done["status"], done["output_json"]) == ("SUCCEEDED", {"approved": True})


def test_a_refusal_fails_the_execution(sfn_local, sfn_client):
    started = sfn_client.start_execution(stateMachineArn=ARN.format("Approval"), input='{"order": "o-2"}')
    token = wait_for_task_token(sfn_local, started["executionArn"], "AskForApproval")
    answer_task(sfn_client, token, error="Refused", cause="too expensive")
    done = wait_for_execution(sfn_client, started["executionArn"])
    assert (done["status"], done["error"], done["cause"]) == ("FAILED", "Refused", "too expensive")


def test_a_silent_approver_is_caught_by_the_heartbeat_not_the_budget(sfn_local, sfn_client):
    started = sfn_client.start_execution(stateMachineArn=ARN.format("Reminder"), input='{"order": "o-3"}')
    wait_for_task_token(sfn_local, started["executionArn"], "AskForApproval")
    # Nothing moves by itself on the virtual clock: still waiting, however long the test takes.
    assert sfn_client.describe_execution(executionArn=started["executionArn"])["status"] == "RUNNING"
    advance_time(sfn_client, "61s")
    done = wait_for_execution(sfn_client, started["executionArn"])
    assert (done["status"], done["output_json"]) == ("SUCCEEDED", "silent")


def test_heartbeats_keep_the_approval_alive_until_its_hour_is_up(sfn_local, sfn_client):
    started = sfn_client.start_execution(stateMachineArn=ARN.format("Reminder"), input='{"order": "o-4"}')
    token = wait_for_task_token(sfn_local, started["executionArn"], "AskForApproval")
    before = clock_now(sfn_local)["nowMillis"]
    for _ in range(3):
        advance_time(sfn_client, "50s")
        sfn_client.send_task_heartbeat(taskToken=token)
    assert sfn_client.describe_execution(executionArn=started["executionArn"])["status"] == "RUNNING"
    assert clock_now(sfn_local)["nowMillis"] - before == 150_000
    # The approver keeps beating, but the hour's budget runs out: the other clock, the other Catch.
    while sfn_client.describe_execution(executionArn=started["executionArn"])["status"] == "RUNNING":
        sfn_client.send_task_heartbeat(taskToken=token)
        advance_time(sfn_client, "50s")
    done = wait_for_execution(sfn_client, started["executionArn"])
    assert done["output_json"] == "late"


def test_start_and_wait_skips_the_hour_long_wait(sfn_client):
    before = clock_now(sfn_client)["nowMillis"]
    done = start_and_wait(sfn_client, ARN.format("Orders"), {"total": 1})
    assert done["status"] == "SUCCEEDED"
    assert clock_now(sfn_client)["nowMillis"] - before >= 3_600_000


def test_a_private_server_for_one_test(sfn_local_factory, sfn_local):
    # Options given here replace the session's: this server has one machine and no template.
    other = sfn_local_factory(definitions={"Hello": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}},
                              templates=[])
    assert other.endpoint != sfn_local.endpoint
    names = [m["name"] for m in other.client().list_state_machines()["stateMachines"]]
    assert names == ["Hello"]
    # Stopped as Ctrl-C stops it: exit 0, and its ready file is gone.
    assert other.stop() == 0
    assert not (other.workdir / "ready.json").exists()


def test_the_binary_came_with_the_package():
    # pip put it beside this environment's python, on PATH once the venv is active.
    assert Path(sfn_local.find_binary()).parent == Path(sys.executable).parent
