"""Benchmarks `sfn-local serve` with two CPU-bound executions running (#38): each spins on a
catastrophic regex (every evaluation stopped at JSONata's 10 s limit) in a Catch loop. Prints:

  - StartExecution latency of another machine meanwhile (p50, p99, max over N_STARTS), and the
    same with nothing spinning, side by side;
  - how long StopExecution of each spinning execution takes to answer with it ABORTED.

Usage: python benches/fair_threads.py SFN_LOCAL_BIN   (benches/fair_threads.sh builds and runs it)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from sfn_api import Client, free_port, wait_port

SFN_LOCAL = sys.argv[1]
N_STARTS = int(os.environ.get("N_STARTS", "500"))
ROLE = "arn:aws:iam::123456789012:role/bench"
PASS = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}})
SPIN = json.dumps({
    "QueryLanguage": "JSONata",
    "StartAt": "Spin",
    "States": {"Spin": {
        "Type": "Parallel",
        "Branches": [{"StartAt": "Regex", "States": {"Regex": {
            "Type": "Pass",
            "Output": "{% $match('" + "a" * 70 + "!', /(a+)+$/) %}",
            "End": True}}}],
        "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Spin"}],
        "End": True}},
})


def starts(c, machine, prefix):
    times = []
    for i in range(N_STARTS):
        t = time.perf_counter()
        c.call("StartExecution", {"stateMachineArn": machine, "name": f"{prefix}-{i}"})
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99)], times[-1]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        server = subprocess.Popen([SFN_LOCAL, "serve", "--port", str(port), "--db", f"{tmp}/b.db"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(port)
            c = Client(port)
            other = c.call("CreateStateMachine", {"name": "Other", "definition": PASS, "roleArn": ROLE})
            spin = c.call("CreateStateMachine", {"name": "Spin", "definition": SPIN, "roleArn": ROLE})
            quiet = starts(c, other["stateMachineArn"], "quiet")
            spinning = [c.call("StartExecution", {"stateMachineArn": spin["stateMachineArn"],
                                                  "name": f"spin-{i}"})["executionArn"] for i in range(2)]
            time.sleep(0.5)
            busy = starts(c, other["stateMachineArn"], "busy")
            stops = []
            for arn in spinning:
                t = time.perf_counter()
                c.call("StopExecution", {"executionArn": arn})
                while c.call("DescribeExecution", {"executionArn": arn})["status"] == "RUNNING":
                    pass
                stops.append((time.perf_counter() - t) * 1000)
        finally:
            server.terminate()
            server.wait()
    print(f"StartExecution of another machine ({N_STARTS} calls), ms:")
    print(f"{'':34}{'p50':>8}{'p99':>8}{'max':>8}")
    print(f"{'nothing else running':34}{quiet[0]:>8.2f}{quiet[1]:>8.2f}{quiet[2]:>8.2f}")
    print(f"{'two executions spinning':34}{busy[0]:>8.2f}{busy[1]:>8.2f}{busy[2]:>8.2f}")
    print("StopExecution of each spinning execution until ABORTED, ms: "
          + ", ".join(f"{s:.1f}" for s in stops))


if __name__ == "__main__":
    main()
