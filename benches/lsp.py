#!/usr/bin/env python3
"""Diagnostics latency after an edit, `sfn-local lsp` beside the AWS Toolkit's language service.

    benches/lsp.py                      # release build (cargo build --release first)
    BIN=target/debug/sfn-local benches/lsp.py
    EDITS=41 benches/lsp.py

For definitions of 50, 500 and 5,000 states (Tasks with Retry and Catch, a Choice every tenth
state), the first state's `Next` is changed to a typo and back, EDITS times. For sfn-local the
time is from writing the full-document `didChange` to reading the `publishDiagnostics` of that
version, through a real stdio pipe: the server's 15 ms debounce and the JSON-RPC round trip are
in it. The Toolkit's service (npm amazon-states-language-service, installed into benches/lsp on
first run) is timed in process, parse + doValidation, with no IPC and no debounce. Medians and
95th percentiles, in milliseconds. Not a test: CI never runs it.
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = os.environ.get("BIN", str(ROOT / "target/release/sfn-local"))
EDITS = int(os.environ.get("EDITS", "41"))
SIZES = [50, 500, 5000]


def definition(n):
    states = {}
    for i in range(n):
        name, following = f"S{i}", (f"S{i + 1}" if i + 1 < n else None)
        if i % 10 == 9 and following:
            states[name] = {
                "Type": "Choice",
                "Choices": [{"Variable": "$.n", "NumericGreaterThan": i, "Next": following}],
                "Default": "Failed",
            }
            continue
        state = {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": f"step-{i}", "Payload.$": "$"},
            "ResultSelector": {"n.$": "$.Payload.n"},
            "TimeoutSeconds": 60,
            "Retry": [{"ErrorEquals": ["States.TaskFailed"], "MaxAttempts": 2}],
            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Failed"}],
        }
        state.update({"Next": following} if following else {"End": True})
        states[name] = state
    states["Failed"] = {"Type": "Fail", "Error": "Failed"}
    return json.dumps({"StartAt": "S0", "States": states}, indent=2)


class Client:
    """Just enough of an LSP client: framed JSON-RPC over the server's stdio."""

    def __init__(self, command):
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 0

    def send(self, message):
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self):
        length = 0
        while (line := self.proc.stdout.readline().strip()):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.proc.stdout.read(length))

    def request(self, method, params):
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while (m := self.read()).get("id") != self.next_id:
            pass
        return m

    def notify(self, method, params):
        self.send({"method": method, "params": params})

    def diagnostics(self, uri, version):
        while True:
            m = self.read()
            p = m.get("params") or {}
            if m.get("method") == "textDocument/publishDiagnostics" and p.get("uri") == uri:
                if p.get("version") == version:
                    return p["diagnostics"]


def ours(path):
    client = Client([BIN, "lsp"])
    client.request("initialize", {"processId": None, "capabilities": {}, "rootUri": None})
    client.notify("initialized", {})
    uri, good = path.as_uri(), path.read_text()
    bad = good.replace('"Next": "S1"', '"Next": "S1x"')
    doc = {"uri": uri, "languageId": "json", "version": 0, "text": good}
    client.notify("textDocument/didOpen", {"textDocument": doc})
    assert client.diagnostics(uri, 0) == []
    times = []
    for version in range(1, EDITS + 1):
        text = bad if version % 2 else good
        start = time.perf_counter()
        client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": text}],
            },
        )
        found = client.diagnostics(uri, version)
        times.append((time.perf_counter() - start) * 1000)
        assert bool(found) == bool(version % 2), found
    client.request("shutdown", None)
    client.notify("exit", None)
    client.proc.wait()
    return times


def toolkit(paths):
    folder = ROOT / "benches/lsp"
    if not (folder / "node_modules/amazon-states-language-service").is_dir():
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund"], cwd=folder, check=True)
    out = subprocess.run(
        ["node", str(folder / "toolkit.js"), str(EDITS), *map(str, paths)],
        capture_output=True, text=True, check=True,
    ).stdout
    return json.loads(out)


def summary(times):
    times = sorted(times)
    return times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.95))]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for n in SIZES:
            path = pathlib.Path(tmp) / f"states-{n}.asl.json"
            path.write_text(definition(n))
            paths.append(path)
        theirs = toolkit(paths)
        print(f"sfn-local: {BIN}; {EDITS} edits each; ms from edit to diagnostics, median / p95")
        print(f"{'states':>7} {'size':>9} {'sfn-local lsp':>16} {'AWS Toolkit service':>22}")
        for n, path in zip(SIZES, paths):
            a, b = summary(ours(path)), summary(theirs[str(path)])
            size = f"{path.stat().st_size // 1024} KiB"
            print(f"{n:>7} {size:>9} {a[0]:>8.1f} / {a[1]:>5.1f} {b[0]:>12.1f} / {b[1]:>6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
