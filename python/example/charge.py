"""The Charge Lambda for the example: the event on stdin, the result on stdout."""
import json
import sys

event = json.load(sys.stdin)
json.dump({"charged": event["total"] * 100}, sys.stdout)
