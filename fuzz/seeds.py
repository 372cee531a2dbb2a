#!/usr/bin/env python3
"""Builds the fuzz targets' seed corpora in fuzz/corpus/TARGET/ from the conformance corpus
(tests/corpora/conformance), the published definitions (tests/corpora/realworld)
and the repository's own fixtures, definitions, test specs and mock files.

Seeds are generated, not committed: run `fuzz/seeds.py` (fuzz/run.sh does) after a fresh clone.
Evaluator seeds are `TEXT \\0 JSON` (see fuzz/src/lib.rs): a real path, expression or rule
beside a real input.
"""

import hashlib
import json
import os
import sys
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
REPO = FUZZ.parent
SHARED = Path(os.environ.get("SFN_SHARED", REPO / "tests" / "corpora"))
CORPUS = FUZZ / "corpus"
# A cap per target: enough variety, and libFuzzer merges the rest away anyway.
MAX_SEEDS = 3000
MAX_SEED_BYTES = 64 * 1024

PATH_KEYS = {"InputPath", "OutputPath", "ResultPath", "ItemsPath", "Variable", "ErrorPath",
             "CausePath", "SecondsPath", "TimestampPath", "HeartbeatSecondsPath",
             "TimeoutSecondsPath", "MaxConcurrencyPath", "ToleratedFailureCountPath",
             "ToleratedFailurePercentagePath"}
TEMPLATE_KEYS = {"Parameters", "ResultSelector", "ItemSelector", "Arguments", "Output", "Assign"}

seeds = {}


def add(target, data):
    if isinstance(data, str):
        data = data.encode()
    if len(data) > MAX_SEED_BYTES:
        return
    bucket = seeds.setdefault(target, {})
    if len(bucket) < MAX_SEEDS:
        bucket[hashlib.sha1(data).hexdigest()] = data


def compact(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def walk(v, visit, key=None):
    visit(key, v)
    if isinstance(v, dict):
        for k, x in v.items():
            walk(x, visit, k)
    elif isinstance(v, list):
        for x in v:
            walk(x, visit, key)


def from_definition(definition, inputs):
    """Seeds every target that reads a part of a definition."""
    text = definition if isinstance(definition, str) else json.dumps(definition, indent=2)
    add("definition", text)
    if not isinstance(definition, dict):
        try:
            definition = json.loads(definition)
        except (ValueError, TypeError):
            return
    doc = compact(inputs[0] if inputs else {})

    def visit(key, v):
        if isinstance(key, str) and isinstance(v, str):
            if key in PATH_KEYS or key.endswith(".$"):
                add("path", v + "\0" + doc)
                if v.startswith("States."):
                    add("intrinsic", v + "\0" + doc)
            if v.startswith("{%") and v.endswith("%}"):
                add("jsonata", v[2:-2].strip() + "\0" + doc)
        if key in TEMPLATE_KEYS and isinstance(v, (dict, list)):
            add("template", compact(v) + "\0" + doc)
        if key == "Choices" and isinstance(v, list):
            for rule in v:
                if isinstance(rule, dict):
                    rule = {k: x for k, x in rule.items() if k not in ("Next", "Assign", "Output")}
                    add("choice", compact(rule) + "\0" + doc)

    walk(definition, visit)


def json_files(d):
    return sorted(p for p in Path(d).rglob("*.json")) if Path(d).is_dir() else []


def load(p):
    try:
        return json.loads(Path(p).read_text())
    except (ValueError, OSError):
        return None


def main():
    cases = SHARED / "conformance" / "cases"
    if not cases.is_dir():
        print(f"note: {cases} is missing; seeding from the repository only", file=sys.stderr)
    for f in json_files(cases):
        case = load(f)
        if not isinstance(case, dict):
            continue
        inputs = [case["input"]] if "input" in case else []
        if "definition" in case:
            from_definition(case["definition"], inputs)
        for v in inputs:
            add("task_output", b"\x00" + compact(v).encode())
        expected = case.get("expected") or {}
        if "output" in expected:
            add("task_output", b"\x06" + compact(expected["output"]).encode())
            add("task_output", b"\x02" + compact(expected["output"]).encode())
        if expected.get("error"):
            cause = expected.get("cause") or ""
            cause = cause if isinstance(cause, str) else compact(cause)
            add("task_output", b"\x05" + expected["error"].encode() + b"\0" + cause.encode())
        for r in case.get("task_results") or []:
            details = r.get("details") if isinstance(r, dict) else None
            if isinstance(details, dict) and "output" in details:
                out = details["output"]
                add("task_output", b"\x00" + (out if isinstance(out, str) else compact(out)).encode())
    for d in [REPO / "fixtures", REPO / "definitions", SHARED / "realworld"]:
        for f in sorted(Path(d).rglob("*")) if d.is_dir() else []:
            if f.suffix in (".yaml", ".yml") and "asl" in f.name:
                add("definition", f.read_text(errors="replace"))
            if f.suffix != ".json":
                continue
            v = load(f)
            if f.name.endswith(".sfntest.json"):
                add("test_spec", f.read_text())
            elif f.name.endswith("mocks.json") or (isinstance(v, dict) and "MockedResponses" in v):
                add("mock_config", f.read_text())
            elif isinstance(v, dict) and "States" in v:
                from_definition(f.read_text(), [])
            elif v is not None:
                add("task_output", b"\x00" + f.read_bytes())
    for f in (REPO / "tests").rglob("*.json"):
        v = load(f)
        if isinstance(v, dict) and "MockedResponses" in v:
            add("mock_config", f.read_text())
    # test specs for the fixed definition of fuzz_targets/test_spec.rs, with its mock config.
    mocks = {"StateMachines": {"m": {"TestCases": {"Happy": {"Get": "Ok"}, "Sad": {"Get": "Boom"}}}},
             "MockedResponses": {"Ok": {"0": {"Return": {"ok": True}}},
                                 "Boom": {"0-1": {"Throw": {"Error": "Again", "Cause": "x"}},
                                          "2": {"Throw": {"Error": "Final", "Cause": "y"}}}}}
    add("mock_config", compact(mocks))
    spec = {"definition": "m.asl.json", "mockConfig": "m.mocks.json",
            "cases": [{"name": "happy", "testCase": "Happy", "input": {"a": 1},
                       "expect": {"status": "SUCCEEDED", "states": ["Get", "Route", "Done"]}},
                      {"name": "sad", "testCase": "Sad", "expect": {"status": "FAILED", "error": "Bad"}},
                      {"name": "inline", "mocks": {"Get": {"0": {"Return": {"ok": False}}}},
                       "expect": {"status": "FAILED", "causeContains": "no"}},
                      {"name": "one state", "state": "Route", "input": {"got": {"ok": True}},
                       "expect": {"status": "SUCCEEDED", "nextState": "Done"}}]}
    add("test_spec", compact(spec) + "\0" + compact(mocks))
    for f in sorted(REPO.glob("definitions/*.sfntest.json")):
        add("test_spec", f.read_text() + "\0" + compact(mocks))
    # nesting: every shape at a few depths. Bytes: shape, the depth's order of magnitude (0-255
    # for 1 to 100,000) and two bytes within it; the input's shape, order and a byte (see
    # fuzz_targets/nesting.rs); then a leaf.
    for shape in range(14):
        for depth in (1, 63, 64, 127, 128, 3000, 100000):
            # The smallest order that reaches the depth, and the fraction of it that lands there.
            order = next(o for o in range(256) if 10 ** ((o / 255) ** 3 * 5) >= depth - 0.5)
            fraction = min(65535, round(depth / 10 ** ((order / 255) ** 3 * 5) * 65535))
            for input_shape, input_order in ((2, 0), (0, 110), (1, 255)):
                add("nesting", bytes([shape, order]) + fraction.to_bytes(2, "big")
                    + bytes([input_shape, input_order, 255]) + b"x")
    # serve: every operation with a plausible body.
    model = load(REPO / "src" / "serve" / "model.json") or {}
    arn = "arn:aws:states:us-east-1:123456789012:stateMachine:M"
    body = {"name": "M", "definition": '{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}',
            "roleArn": "arn:aws:iam::123456789012:role/r", "stateMachineArn": arn,
            "executionArn": arn.replace("stateMachine", "execution") + ":e", "input": "{}",
            "maxResults": 10, "taskToken": "t", "output": "{}", "type": "STANDARD"}
    auth = "AWS4-HMAC-SHA256 Credential=AKID/20240101/eu-west-1/states/aws4_request, SignedHeaders=host, Signature=0"
    for op in (model.get("operations") or {}):
        add("serve_request", f"AWSStepFunctions.{op}\n{auth}\0{compact(body)}")
        add("serve_request", f"AWSStepFunctions.{op}\0{{}}")
    for target, bucket in sorted(seeds.items()):
        d = CORPUS / target
        d.mkdir(parents=True, exist_ok=True)
        for name, data in bucket.items():
            (d / name).write_bytes(data)
        print(f"{target:14} {len(bucket):5} seeds")


if __name__ == "__main__":
    main()
