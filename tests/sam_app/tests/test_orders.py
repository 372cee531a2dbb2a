"""The order workflow end to end: its Lambda functions run as they are, with no binding."""

from sfn_local import start_and_wait

ORDERS = "arn:aws:states:us-east-1:123456789012:stateMachine:orders"


def test_a_paid_order_is_charged_shipped_and_notified(sfn_client):
    done = start_and_wait(sfn_client, ORDERS, {"orderId": "o-1", "amount": 42, "card": "4111111111111111"})
    assert done["status"] == "SUCCEEDED", done
    output = done["output_json"]
    assert output["charge"] == {"charged": 42}
    assert output["shipment"] == {"tracking": "ups-o-1"}
    assert output["notification"]["from"] == "orders@example.com"


def test_a_declined_card_fails_with_the_functions_error_name(sfn_client):
    done = start_and_wait(sfn_client, ORDERS, {"orderId": "o-2", "amount": 1, "card": "4000000000000000"})
    assert (done["status"], done["error"]) == ("FAILED", "OrderDeclined")
    events = sfn_client.get_execution_history(executionArn=done["executionArn"])["events"]
    failed = [e["taskFailedEventDetails"] for e in events if e["type"] == "TaskFailed"]
    assert failed[0]["error"] == "CardDeclined"
