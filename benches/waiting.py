"""What waiting costs: one `sfn-local serve` holding N executions that wait on task tokens, and
one `sfn-local run` of a Map whose iterations each wait on a token. Prints, per binary given
(today's build and this one, side by side):

  - idle CPU of the waiting process over IDLE_S seconds (from /proc/PID/stat), in % of one core;
  - peak RSS (VmHWM) and OS threads while waiting;
  - StartExecution throughput (8 client processes) with none waiting, then with N waiting;
  - answer latency, p50/p99: SendTaskSuccess through the API, and `sfn-local send-task-success`
    from another process, until the execution's TaskSucceeded event (its timestamp, against the
    client's clock before the call; for the CLI, against the token's answered_at);
  - `run` of a Map of MAP_N iterations each waiting on a token: idle CPU, peak RSS, threads
    (a distributed Map: an inline one runs at most 40 iterations at once, as on AWS).

Usage: python benches/waiting.py LABEL=BIN[:N_WAITING] ...   (a release build; see docs/src/internals/speed.md)
  e.g. python benches/waiting.py today=/tmp/old/sfn-local:1000 new=target/release/sfn-local:10000
"""
import json
import multiprocessing
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

from sfn_api import Client, free_port, wait_port

IDLE_S = float(os.environ.get("IDLE_S", "10"))
N_START = int(os.environ.get("N_START", "2000"))
N_ANSWER = int(os.environ.get("N_ANSWER", "200"))
MAP_N = int(os.environ.get("MAP_N", "1000"))
CLIENTS = 8
TICK = os.sysconf("SC_CLK_TCK")
ROLE = "arn:aws:iam::123456789012:role/bench"
PASS = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}})
WAIT = json.dumps({"StartAt": "W", "States": {"W": {"Type": "Task",
    "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
    "Parameters": {"QueueUrl": "q", "MessageBody": {"t.$": "$$.Task.Token"}}, "End": True}}})
MAP = json.dumps({"StartAt": "M", "States": {"M": {"Type": "Map", "MaxConcurrency": 0,
    "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
        "StartAt": "W", "States": {"W": {"Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "Parameters": {"QueueUrl": "q", "MessageBody": {"t.$": "$$.Task.Token"}}, "End": True}}},
    "End": True}}})


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    return int(fields["VmHWM"].split()[0]) / 1024, int(fields["Threads"])


def idle_cpu(pid):
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(IDLE_S)
    return 100 * (cpu_seconds(pid) - c0) / (time.monotonic() - t0)


def open_tokens(db):
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute("SELECT t.token, e.execution_arn FROM task_tokens t "
                            "JOIN executions e ON e.id = t.execution_id "
                            "WHERE t.status = 'STARTED' ORDER BY t.rowid").fetchall()
    finally:
        conn.close()


def wait_tokens(db, n, limit_s=1800):
    t0 = time.time()
    while time.time() - t0 < limit_s:
        try:
            tokens = open_tokens(db)
        except sqlite3.Error:
            tokens = []
        if len(tokens) >= n:
            return tokens
        time.sleep(0.5)
    raise RuntimeError(f"only {len(tokens)} of {n} tokens issued in {limit_s} s")


def start_some(args):
    port, machine, prefix, k, n = args
    c = Client(port)
    for i in range(k, n, CLIENTS):
        c.call("StartExecution", {"stateMachineArn": machine, "name": f"{prefix}-{i}"})
    return 0


def start_many(pool, port, machine, prefix, n):
    """Starts n executions from CLIENTS processes; returns StartExecution calls per second."""
    t = time.perf_counter()
    pool.map(start_some, [(port, machine, prefix, k, n) for k in range(CLIENTS)])
    return n / (time.perf_counter() - t)


def succeeded_at(client, arn):
    """Seconds since the epoch of the execution's TaskSucceeded event, once it is there."""
    while True:
        events = client.call("GetExecutionHistory", {"executionArn": arn, "maxResults": 1000})["events"]
        for e in events:
            if e["type"] == "TaskSucceeded":
                return float(e["timestamp"])
        time.sleep(0.002)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def bench_serve(binary, n_waiting, tmp):
    db = f"{tmp}/serve.db"
    port = free_port()
    p = subprocess.Popen([binary, "serve", "--port", str(port), "--db", db],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = {}
    try:
        wait_port(port, attempts=1200)
        c = Client(port)
        passing = c.call("CreateStateMachine", {"name": "Pass", "definition": PASS, "roleArn": ROLE})["stateMachineArn"]
        waits = c.call("CreateStateMachine", {"name": "Waits", "definition": WAIT, "roleArn": ROLE})["stateMachineArn"]
        with multiprocessing.get_context("fork").Pool(CLIENTS) as pool:
            pool.map(abs, range(CLIENTS))
            out["starts/s, none waiting"] = start_many(pool, port, passing, "a", N_START)
            t = time.perf_counter()
            start_many(pool, port, waits, "w", n_waiting)
            tokens = wait_tokens(db, n_waiting)
            out["time to start all waiting, s"] = time.perf_counter() - t
            time.sleep(1)
            out["idle CPU, % of a core"] = idle_cpu(p.pid)
            out["peak RSS, MB"], out["OS threads"] = status(p.pid)
            out["starts/s, N waiting"] = start_many(pool, port, passing, "b", N_START)
        out["start throughput kept, %"] = 100 * out["starts/s, N waiting"] / out["starts/s, none waiting"]
        api = []
        for token, arn in tokens[:N_ANSWER]:
            t0 = time.time()
            c.call("SendTaskSuccess", {"taskToken": token, "output": "{}"})
            api.append(1000 * (succeeded_at(c, arn) - t0))
        out["answer via API, p50 ms"], out["answer via API, p99 ms"] = pct(api, 0.5), pct(api, 0.99)
        cli = []
        env = dict(os.environ, SFN_LOCAL_DB=db)
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
        for token, arn in tokens[N_ANSWER:2 * N_ANSWER]:
            subprocess.run([binary, "send-task-success", "--task-token", token, "--task-output", "{}"],
                           env=env, check=True, stdout=subprocess.DEVNULL)
            answered = conn.execute("SELECT answered_at FROM task_tokens WHERE token = ?", (token,)).fetchone()[0]
            cli.append(1000 * succeeded_at(c, arn) - answered)
        conn.close()
        out["answer from another process, p50 ms"] = pct(cli, 0.5)
        out["answer from another process, p99 ms"] = pct(cli, 0.99)
        out["peak RSS at the end, MB"], _ = status(p.pid)
    finally:
        print(f"{binary} serve, {n_waiting} waiting: {out}", file=sys.stderr, flush=True)
        p.terminate()
        p.wait()
    return out


def bench_map(binary, tmp):
    db = f"{tmp}/map.db"
    with open(f"{tmp}/map.json", "w") as f:
        f.write(MAP)
    items = json.dumps(list(range(MAP_N)))
    p = subprocess.Popen([binary, "run", f"{tmp}/map.json", "--db", db, "--input", items],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = {}
    try:
        wait_tokens(db, MAP_N)
        time.sleep(1)
        out[f"run, Map of {MAP_N} waiting: idle CPU, % of a core"] = idle_cpu(p.pid)
        rss, threads = status(p.pid)
        out[f"run, Map of {MAP_N} waiting: peak RSS, MB"] = rss
        out[f"run, Map of {MAP_N} waiting: OS threads"] = threads
    finally:
        p.terminate()
        p.wait()
    return out


def main():
    columns = []
    for arg in sys.argv[1:]:
        label, _, rest = arg.partition("=")
        binary, _, n = rest.partition(":")
        n = int(n or "10000")
        with tempfile.TemporaryDirectory() as tmp:
            figures = bench_serve(binary, n, tmp)
            figures.update(bench_map(binary, tmp))
        columns.append((f"{label} ({n} waiting)", figures))
        print(f"{label}: done", file=sys.stderr, flush=True)
    keys = []
    for _, figures in columns:
        keys += [k for k in figures if k not in keys]
    width = max(len(k) for k in keys) + 2
    print(f"{'':{width}}" + "".join(f"{label:>26}" for label, _ in columns))
    for k in keys:
        row = "".join(f"{figures[k]:>26.1f}" if k in figures else f"{'-':>26}" for _, figures in columns)
        print(f"{k:{width}}{row}")


main()
