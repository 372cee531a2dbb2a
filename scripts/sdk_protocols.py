#!/usr/bin/env python3
"""Writes src/tasks/aws/sdk_models.json.gz: the compact table `aws-sdk:SERVICE:ACTION` Tasks are
built from for services spoken to over rest-json, rest-xml, ec2 and query (botocore's JSON
models, as pinned by .ci/requirements.txt). The binary embeds this table, not the models: per
service its protocol, API version, endpoint prefix, signing name and XML namespace; per
operation its HTTP method, request URI and input/output shapes; per shape only what
serialization reads (type, members with their location - uri, querystring, header, headers,
statusCode, body - and wire names, list/map element names, flattening). Documentation,
examples, enums, constraints and shapes no operation reaches are dropped.

Usage: scripts/sdk_protocols.py [PYTHON_WITH_BOTOCORE_SITE_PACKAGES_DIR]
"""
import gzip
import json
import os

import botocore_models

# botocore's service name -> the name `--endpoint` and `aws-sdk:NAME` use.
SERVICES = ["lambda", "route53", "ec2", "iam", "cloudwatch", "sns", "sts"]

BUILT = ["rest-json", "rest-xml", "ec2", "query"]

TYPES = {
    "structure": "s", "list": "l", "map": "m", "string": "S", "integer": "i", "long": "i",
    "float": "f", "double": "f", "boolean": "b", "timestamp": "T", "blob": "B",
}


def compact_shape(shape):
    out = {"t": TYPES[shape["type"]]}
    t = shape["type"]
    if t == "structure":
        # In the model's order: XML bodies list their elements in it.
        members = []
        for name, m in shape.get("members", {}).items():
            members.append([name, m["shape"], m.get("location"), m.get("locationName"),
                            m.get("queryName"), bool(m.get("flattened"))])
        out["m"] = members
        if "payload" in shape:
            out["p"] = shape["payload"]
    elif t == "list":
        out["e"] = shape["member"]["shape"]
        out["n"] = shape["member"].get("locationName")
        out["f"] = bool(shape.get("flattened"))
    elif t == "map":
        out["k"] = shape["key"]["shape"]
        out["v"] = shape["value"]["shape"]
        out["kn"] = shape["key"].get("locationName")
        out["vn"] = shape["value"].get("locationName")
        out["f"] = bool(shape.get("flattened"))
    elif t == "timestamp" and "timestampFormat" in shape:
        out["ts"] = shape["timestampFormat"]
    return out


def service_table(model):
    shapes = model["shapes"]
    roots = []
    ops = {}
    for name, op in model["operations"].items():
        inp, outp = op.get("input", {}), op.get("output", {})
        roots += [s["shape"] for s in (inp, outp) if s]
        ops[name] = [op["http"]["method"], op["http"]["requestUri"], inp.get("shape"),
                     outp.get("shape"), outp.get("resultWrapper"), inp.get("locationName"),
                     (inp.get("xmlNamespace") or {}).get("uri")]
    # The wire code of each modeled error -> its shape (the SDK v2's exception class).
    keep = botocore_models.reachable(shapes, roots)
    errors = {}
    for op in model["operations"].values():
        for e in op.get("errors", []):
            code = shapes[e["shape"]].get("error", {}).get("code", e["shape"])
            errors[code] = e["shape"]
    meta = model["metadata"]
    # A model may list several protocols (CloudWatch: smithy-rpc-v2-cbor, json, query); the
    # table keeps the first one sfn-local builds requests for.
    spoken = [p for p in meta.get("protocols", [meta["protocol"]]) if p in BUILT]
    return {
        "errors": errors,
        "protocol": (spoken or [meta["protocol"]])[0],
        "version": meta["apiVersion"],
        "prefix": meta["endpointPrefix"],
        "signing": meta.get("signingName", meta["endpointPrefix"]),
        "ops": ops,
        "shapes": {k: compact_shape(shapes[k]) for k in sorted(keep)},
    }


def main():
    data = botocore_models.data_dir()
    table = {service: service_table(botocore_models.load(data, service)) for service in SERVICES}
    out = os.path.join(os.path.dirname(__file__), "..", "src", "tasks", "aws", "sdk_models.json.gz")
    text = json.dumps(table, separators=(",", ":")).encode()
    # mtime=0: the same models always give the same bytes.
    with open(out, "wb") as f:
        f.write(gzip.compress(text, 9, mtime=0))
    print(f"{out}: {len(text)} bytes of JSON, gzipped")


if __name__ == "__main__":
    main()
