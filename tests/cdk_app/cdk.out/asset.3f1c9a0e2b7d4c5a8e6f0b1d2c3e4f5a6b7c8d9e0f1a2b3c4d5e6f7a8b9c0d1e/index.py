def handler(event, context):
    return {"charged": event["amount"]}
