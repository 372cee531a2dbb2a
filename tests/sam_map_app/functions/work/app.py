"""Works on one item: sleeps a random few milliseconds, as real code takes its time."""

import random
import time


def lambda_handler(event, context):
    time.sleep(random.uniform(0.001, 0.030))
    return {"item": event["item"], "done": True}
