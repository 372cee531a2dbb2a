"""Charges an order: a card ending in 0000 is declined."""


class CardDeclined(Exception):
    pass


def lambda_handler(event, context):
    if str(event.get("card", "")).endswith("0000"):
        raise CardDeclined(f"card {event['card']} was declined")
    return {"charged": event["amount"]}
