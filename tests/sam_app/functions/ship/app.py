"""Ships an order with the carrier the state machine names."""


def lambda_handler(event, context):
    return {"tracking": f"{event['carrier']}-{event['orderId']}"}
