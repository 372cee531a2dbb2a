"""Per-invocation latency of a template's Lambda functions run natively by `sfn-local serve
--template` (#37), cold and warm, for a Python and a Node.js function, over 100 executions.

Each execution of the machine calls the Python function, then the Node.js one (plain function
ARNs). The latency of one invocation is its `LambdaFunctionScheduled` to
`LambdaFunctionSucceeded` in the history (sfn-local's own clock, in milliseconds). The first
execution of a server meets cold functions (a new interpreter loads the shim and the handler);
the other 99 meet them warm. Cold figures come from the first execution of COLD_SERVERS fresh
servers. For scale: `sam local invoke` starts a Docker container per call (seconds).

Usage: python3 benches/local_lambda.py [SFN_LOCAL_BIN]   (default: target/release/sfn-local,
else target/debug/sfn-local)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N = int(os.environ.get("N_EXECUTIONS", "100"))
COLD_SERVERS = int(os.environ.get("COLD_SERVERS", "5"))
ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:bench"

TEMPLATE = """Transform: AWS::Serverless-2016-10-31
Resources:
  Py:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: py/, Handler: app.handler, Runtime: python3.12}
  Js:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: js/, Handler: index.handler, Runtime: nodejs20.x}
  Bench:
    Type: AWS::Serverless::StateMachine
    Properties:
      Name: bench
      Definition:
        StartAt: Py
        States:
          Py: {Type: Task, Resource: !GetAtt Py.Arn, Next: Js}
          Js: {Type: Task, Resource: !GetAtt Js.Arn, End: true}
"""


def binary():
    if len(sys.argv) > 1:
        return sys.argv[1]
    for build in ("release", "debug"):
        candidate = ROOT / "target" / build / "sfn-local"
        if candidate.is_file():
            return str(candidate)
    sys.exit("build sfn-local first (cargo build --release)")


def call(endpoint, operation, body):
    request = urllib.request.Request(endpoint, json.dumps(body).encode(), {
        "Content-Type": "application/x-amz-json-1.0",
        "X-Amz-Target": f"AWSStepFunctions.{operation}",
    })
    with urllib.request.urlopen(request, timeout=60) as r:
        return json.loads(r.read())


class Server:
    def __init__(self, bin_path, app):
        ready = Path(app, f"ready-{time.monotonic_ns()}.json")
        self.process = subprocess.Popen(
            [bin_path, "serve", "--port", "0", "--ready-file", str(ready), "--db",
             str(Path(app, f"{time.monotonic_ns()}.db")), "--template", str(Path(app, "template.yaml"))],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not ready.exists() or not ready.read_text().strip():
            if time.monotonic() > deadline or self.process.poll() is not None:
                sys.exit("serve did not start")
            time.sleep(0.01)
        self.endpoint = json.loads(ready.read_text())["endpoint"]

    def execute(self):
        """Runs one execution to its end; the latency of each invocation, by state, in ms."""
        arn = call(self.endpoint, "StartExecution", {"stateMachineArn": ARN})["executionArn"]
        while call(self.endpoint, "DescribeExecution", {"executionArn": arn})["status"] == "RUNNING":
            time.sleep(0.002)
        events = call(self.endpoint, "GetExecutionHistory", {"executionArn": arn})["events"]
        latencies, scheduled, state = {}, None, None
        for e in events:
            if e["type"] == "TaskStateEntered":
                state = e["stateEnteredEventDetails"]["name"]
            elif e["type"] == "LambdaFunctionScheduled":
                scheduled = e["timestamp"]
            elif e["type"] == "LambdaFunctionSucceeded":
                latencies[state] = (e["timestamp"] - scheduled) * 1000
            elif e["type"] == "ExecutionFailed":
                sys.exit(f"the execution failed: {e}")
        return latencies

    def stop(self):
        self.process.terminate()
        self.process.wait()


def figures(samples):
    samples = sorted(samples)
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    return f"median {statistics.median(samples):7.1f} ms   p95 {p95:7.1f} ms   (n={len(samples)})"


def main():
    bin_path = binary()
    with tempfile.TemporaryDirectory() as app:
        Path(app, "template.yaml").write_text(TEMPLATE)
        Path(app, "py").mkdir()
        Path(app, "py/app.py").write_text("def handler(event, context):\n    return {'ok': True}\n")
        Path(app, "js").mkdir()
        Path(app, "js/index.js").write_text("exports.handler = async (event) => ({ ok: true });\n")
        cold = {"Py": [], "Js": []}
        warm = {"Py": [], "Js": []}
        for i in range(COLD_SERVERS):
            server = Server(bin_path, app)
            for state, ms in server.execute().items():
                cold[state].append(ms)
            if i == 0:
                for _ in range(N - 1):
                    for state, ms in server.execute().items():
                        warm[state].append(ms)
            server.stop()
    print(f"sfn-local {bin_path}: a template's functions, per invocation (Scheduled -> Succeeded)")
    for state, runtime in (("Py", f"python3 {sys.version.split()[0]}"), ("Js", "node " + subprocess.run(
            ["node", "--version"], capture_output=True, text=True).stdout.strip())):
        print(f"  {runtime:16} cold (first of a server, {COLD_SERVERS} servers): {figures(cold[state])}")
        print(f"  {runtime:16} warm (executions 2..{N} of one server):   {figures(warm[state])}")


if __name__ == "__main__":
    main()
