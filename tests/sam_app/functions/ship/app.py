"""Ships an order with the carrier the state machine names."""


def lambda_handler(event, context):
    left = context.get_remaining_time_in_millis()
    print(f"shipping {event['orderId']} by {context.function_name} (time left: {0 < left <= 10000})")
    return {"tracking": f"{event['carrier']}-{event['orderId']}"}
