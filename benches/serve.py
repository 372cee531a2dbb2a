"""Benchmarks `sfn-local serve` beside moto's server (interpreter enabled), over raw HTTP
(AWS JSON 1.0, keep-alive connections), and prints the figures side by side:

  1. latency of StartExecution + DescribeExecution (until SUCCEEDED) of a one-state machine;
  2. executions/s with 16 concurrent clients (started, then all finished);
  3. 1,000 executions waiting on task tokens in one serve process, then all answered: peak
     memory and thread count (sfn-local only: moto cannot wait on tokens).

Usage: python benches/serve.py SFN_LOCAL_BIN MOTO_SERVER_BIN (benches/serve.sh runs it).
"""
import http.client
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import sfn_api
from sfn_api import free_port, wait_port

SFN_LOCAL, MOTO = sys.argv[1], sys.argv[2]
N_LATENCY = int(os.environ.get("N_LATENCY", "200"))
N_THROUGHPUT = int(os.environ.get("N_THROUGHPUT", "2000"))
N_WAITING = int(os.environ.get("N_WAITING", "1000"))
CLIENTS = 16
ROLE = "arn:aws:iam::123456789012:role/bench"
PASS = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}})
WAIT = json.dumps({"StartAt": "W", "States": {"W": {"Type": "Task",
    "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
    "Parameters": {"QueueUrl": "q", "MessageBody": {"t.$": "$$.Task.Token"}}, "End": True}}})


# moto's server wants a signature header; it is not checked.
AUTH = {"Authorization": "AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/states/aws4_request, SignedHeaders=host, Signature=0"}


def Client(port):
    return sfn_api.Client(port, timeout=120, headers=AUTH)


def start_sfn_local(tmp):
    port = free_port()
    p = subprocess.Popen([SFN_LOCAL, "serve", "--port", str(port), "--db", f"{tmp}/bench.db"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port)
    return p, port


def start_moto():
    port = free_port()
    p = subprocess.Popen([MOTO, "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port)
    c = http.client.HTTPConnection("127.0.0.1", port)
    c.request("POST", "/moto-api/config", json.dumps({"stepfunctions": {"execute_state_machine": True}}),
              {"Content-Type": "application/json"})
    c.getresponse().read()
    return p, port


def finish(client, arn):
    while True:
        d = client.call("DescribeExecution", {"executionArn": arn})
        if d["status"] != "RUNNING":
            return d


def latency(port, name):
    c = Client(port)
    m = c.call("CreateStateMachine", {"name": name, "definition": PASS, "roleArn": ROLE})["stateMachineArn"]
    times = []
    for i in range(N_LATENCY):
        t = time.perf_counter()
        arn = c.call("StartExecution", {"stateMachineArn": m, "name": f"l-{i}"})["executionArn"]
        assert finish(c, arn)["status"] == "SUCCEEDED"
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95)]


def client_work(args):
    """One client process: starts its share of the executions, then waits for each to end."""
    port, m, k = args
    cl = Client(port)
    arns = [cl.call("StartExecution", {"stateMachineArn": m, "name": f"t-{i}"})["executionArn"]
            for i in range(k, N_THROUGHPUT, CLIENTS)]
    return sum(finish(cl, arn)["status"] == "SUCCEEDED" for arn in arns)


def throughput(port, name):
    # Clients are processes, not threads: one Python interpreter's lock would cap the load
    # the clients can send (the same clients drive both servers).
    c = Client(port)
    m = c.call("CreateStateMachine", {"name": name, "definition": PASS, "roleArn": ROLE})["stateMachineArn"]
    with multiprocessing.get_context("fork").Pool(CLIENTS) as pool:
        pool.map(abs, range(CLIENTS))  # the processes are forked before the clock starts
        t = time.perf_counter()
        done = sum(pool.map(client_work, [(port, m, k) for k in range(CLIENTS)]))
        elapsed = time.perf_counter() - t
    assert done == N_THROUGHPUT, f"{done} of {N_THROUGHPUT} succeeded"
    return N_THROUGHPUT / elapsed


def proc_status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    return int(fields["VmHWM"].split()[0]) / 1024, int(fields["Threads"])


def waiting(port, pid, tmp):
    c = Client(port)
    m = c.call("CreateStateMachine", {"name": "Waits", "definition": WAIT, "roleArn": ROLE})["stateMachineArn"]
    arns = [c.call("StartExecution", {"stateMachineArn": m, "name": f"w-{i}"})["executionArn"] for i in range(N_WAITING)]
    env = dict(os.environ, SFN_LOCAL_DB=f"{tmp}/bench.db")
    tokens = []
    t0 = time.time()
    while len(tokens) < N_WAITING and time.time() - t0 < 600:
        out = subprocess.run([SFN_LOCAL, "list-tasks", "--format", "json"], env=env, capture_output=True, text=True)
        tokens = [t["taskToken"] for t in json.loads(out.stdout)["tasks"]]
        time.sleep(0.2)
    mem_waiting, threads_waiting = proc_status(pid)
    for tok in tokens:
        c.call("SendTaskSuccess", {"taskToken": tok, "output": "{}"})
    done = sum(finish(c, arn)["status"] == "SUCCEEDED" for arn in arns)
    mem_peak, threads_after = proc_status(pid)
    return len(tokens), done, mem_waiting, threads_waiting, mem_peak, threads_after


def main():
    with tempfile.TemporaryDirectory() as tmp:
        sfn, sfn_port = start_sfn_local(tmp)
        moto, moto_port = start_moto()
        try:
            sl = latency(sfn_port, "Lat")
            ml = latency(moto_port, "Lat")
            st = throughput(sfn_port, "Thr")
            mt = throughput(moto_port, "Thr")
            print(f"{'':46}{'sfn-local serve':>18}{'moto server':>14}")
            print(f"{'start+describe latency, median ms':46}{sl[0]:>18.2f}{ml[0]:>14.2f}")
            print(f"{'start+describe latency, p95 ms':46}{sl[1]:>18.2f}{ml[1]:>14.2f}")
            print(f"{f'executions/s, {CLIENTS} clients, {N_THROUGHPUT} executions':46}{st:>18.0f}{mt:>14.0f}")
            print(f"throughput ratio: {st / mt:.1f}x moto's")
            w = waiting(sfn_port, sfn.pid, tmp)
            print(f"{w[0]} executions waiting on task tokens: peak RSS {w[2]:.0f} MB, {w[3]} OS threads;"
                  f" after answering all ({w[1]} SUCCEEDED): peak RSS {w[4]:.0f} MB, {w[5]} threads")
        finally:
            sfn.terminate()
            moto.terminate()
            sfn.wait()
            moto.wait()


main()
