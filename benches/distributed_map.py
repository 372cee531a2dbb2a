"""Benchmarks one Distributed Map in `sfn-local serve` while another client keeps working, and
prints, for each size (10k, 100k, 1M items by default):

  - the Map's throughput (children/s, from StartExecution until the execution ends);
  - the server's peak memory (VmHWM) during that run;
  - another client's StartExecution + DescribeExecution round trip (p50, p99, max) of a
    one-state machine, measured the whole time the Map runs.

The Map is the one of issue #38: a JSONata `Items` of N one-digit numbers, `MaxConcurrency: 0`, EXPRESS
children running a Pass. Its output (N numbers) is over AWS's 256 KiB payload limit, so the
execution fails with States.DataLimitExceeded once every child has run, as on AWS.

Each size runs in a fresh server (peak memory is the process's high-water mark).

Then the same Map with a ResultWriter (`sfn-local run --s3-dir`; STANDARD children, whose
records the run keeps in its database and reads back into the result file): children/s, peak
memory and the size of SUCCEEDED_0.json. `WRITER=0` skips it.

Usage: python benches/distributed_map.py SFN_LOCAL_BIN [SIZES...]  (benches/distributed_map.sh)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from sfn_api import Client, free_port, wait_port

SFN_LOCAL = sys.argv[1]
SIZES = [int(s) for s in sys.argv[2:]] or [10_000, 100_000, 1_000_000]
ROLE = "arn:aws:iam::123456789012:role/bench"
PASS = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}})


def map_definition(n, writer=False):
    return json.dumps({
        "QueryLanguage": "JSONata",
        "StartAt": "M",
        "States": {"M": {
            "Type": "Map",
            # One digit an item: a million as JSON is 2 MB, under what one JSONata evaluation
            # may build (4 MiB); `[1..1000000]` itself is 6.9 MB and is refused.
            "Items": "{% [1.." + str(n) + "].($ % 10) %}",
            "MaxConcurrency": 0,
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "EXPRESS"},
                "StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}},
            },
            "End": True,
            **({"ResultWriter": {"Resource": "arn:aws:states:::s3:putObject",
                                 "Arguments": {"Bucket": "out", "Prefix": "runs"}}} if writer else {}),
        }},
    })


def peak_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def other_client(port, stop, times):
    """StartExecution + DescribeExecution of a one-state machine, again and again."""
    c = Client(port)
    m = c.call("CreateStateMachine", {"name": "Other", "definition": PASS, "roleArn": ROLE})["stateMachineArn"]
    i = 0
    while not stop.is_set():
        t = time.perf_counter()
        arn = c.call("StartExecution", {"stateMachineArn": m, "name": f"o-{i}"})["executionArn"]
        t1 = time.perf_counter()
        c.call("DescribeExecution", {"executionArn": arn})
        t2 = time.perf_counter()
        times.append((t2 - t) * 1000)
        if os.environ.get("BENCH_DEBUG") and t2 - t > 0.05:
            print(f"slow: start {(t1 - t) * 1000:.0f} ms, describe {(t2 - t1) * 1000:.0f} ms", flush=True)
        i += 1
        time.sleep(0.01)


def one_size(n):
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        extra = os.environ.get("SERVE_ARGS", "").split()
        server = subprocess.Popen([SFN_LOCAL, "serve", "--port", str(port), "--db", f"{tmp}/bench.db", *extra],
                                  stdout=subprocess.DEVNULL, stderr=None if os.environ.get("BENCH_DEBUG") else subprocess.DEVNULL)
        try:
            wait_port(port)
            c = Client(port)
            m = c.call("CreateStateMachine", {"name": "BigMap", "definition": map_definition(n),
                                              "roleArn": ROLE})["stateMachineArn"]
            stop, times = threading.Event(), []
            other = threading.Thread(target=other_client, args=(port, stop, times))
            other.start()
            time.sleep(0.5)  # the other client's first calls are before the Map
            t = time.perf_counter()
            arn = c.call("StartExecution", {"stateMachineArn": m})["executionArn"]
            while True:
                d = c.call("DescribeExecution", {"executionArn": arn})
                if d["status"] != "RUNNING":
                    break
                time.sleep(0.05)
            elapsed = time.perf_counter() - t
            stop.set()
            other.join()
            times.sort()
            db_mb = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp)) / 2**20
            return {
                "items": n, "status": d["status"], "error": d.get("error", ""),
                "children_per_s": n / elapsed, "seconds": elapsed, "peak_mb": peak_mb(server.pid),
                "db_mb": db_mb, "calls": len(times),
                "p50": statistics.median(times), "p99": times[min(len(times) - 1, int(len(times) * 0.99))],
                "max": times[-1],
            }
        finally:
            server.terminate()
            server.wait()


def with_writer(n):
    """`run` of the Map with a ResultWriter into a local S3 folder; its peak memory from wait4."""
    with tempfile.TemporaryDirectory() as tmp:
        definition = json.loads(map_definition(n, writer=True))
        definition["States"]["M"]["ItemProcessor"]["ProcessorConfig"]["ExecutionType"] = "STANDARD"
        path = os.path.join(tmp, "map.asl.json")
        with open(path, "w") as f:
            json.dump(definition, f)
        t = time.perf_counter()
        proc = subprocess.Popen([SFN_LOCAL, "run", path, "--db", f"{tmp}/bench.db", "--s3-dir", f"{tmp}/s3"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t
        key = json.loads(out)["ResultWriterDetails"]["Key"]
        folder = os.path.join(tmp, "s3", "out", os.path.dirname(key))
        file_mb = os.path.getsize(os.path.join(folder, "SUCCEEDED_0.json")) / 2**20
        return {"items": n, "ok": status == 0, "children_per_s": n / elapsed, "seconds": elapsed,
                "peak_mb": usage.ru_maxrss / 1024, "file_mb": file_mb}


def main():
    print(f"{'items':>10} {'status':>8} {'children/s':>11} {'seconds':>8} {'peak MB':>8} {'db MB':>7}"
          f" {'other client: calls':>20} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}")
    for n in SIZES:
        r = one_size(n)
        print(f"{r['items']:>10,} {r['status']:>8} {r['children_per_s']:>11,.0f} {r['seconds']:>8.1f}"
              f" {r['peak_mb']:>8.0f} {r['db_mb']:>7.0f} {r['calls']:>20} {r['p50']:>7.2f}"
              f" {r['p99']:>7.2f} {r['max']:>7.2f}   {r['error']}", flush=True)
    if os.environ.get("WRITER", "1") == "0":
        return
    print(f"\nwith a ResultWriter (run --s3-dir)\n{'items':>10} {'ok':>5} {'children/s':>11} {'seconds':>8}"
          f" {'peak MB':>8} {'file MB':>8}")
    for n in SIZES:
        r = with_writer(n)
        print(f"{r['items']:>10,} {str(r['ok']):>5} {r['children_per_s']:>11,.0f} {r['seconds']:>8.1f}"
              f" {r['peak_mb']:>8.0f} {r['file_mb']:>8.0f}", flush=True)


if __name__ == "__main__":
    main()
