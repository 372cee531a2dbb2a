#!/usr/bin/env python3
"""Copies AWS's published service models (botocore's JSON models, as pinned by
.ci/requirements.txt) into src/engine/test_state/models/, for TestState's STRICT and PRESENT
mock validation. Each model keeps what the check reads, as AWS publishes it: every operation's
output shape and the shapes it reaches; documentation is dropped.

Usage: scripts/service_models.py [PYTHON_WITH_BOTOCORE_SITE_PACKAGES_DIR]
(default: the botocore importable by this interpreter, e.g. .deps/venv/bin/python).
"""
import json
import os

import botocore_models

# The services Step Functions' optimized integrations call, and the AWS SDK integrations
# workflows use most. Names are botocore's.
SERVICES = """lambda stepfunctions events dynamodb sqs sns ecs glue batch athena sagemaker
codebuild eks emr emr-containers emr-serverless bedrock-runtime bedrock databrew mediaconvert
s3 kms secretsmanager ssm sts iam cloudwatch logs sesv2 textract comprehend rekognition
translate firehose kinesis scheduler""".split()

DROP = {"documentation", "documentationUrl", "examples", "deprecatedMessage"}


def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in DROP}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x


def main():
    data = botocore_models.data_dir()
    out_dir = os.path.join(os.path.dirname(__file__), "..", "src", "engine", "test_state", "models")
    os.makedirs(out_dir, exist_ok=True)
    for service in SERVICES:
        model = botocore_models.load(data, service)
        shapes = model["shapes"]
        operations = {
            name: {"output": op["output"]}
            for name, op in model["operations"].items()
            if op.get("output")
        }
        keep = botocore_models.reachable(shapes, [o["output"]["shape"] for o in operations.values()])
        trimmed = {
            "metadata": {k: model["metadata"].get(k) for k in ("apiVersion", "serviceId", "protocol")},
            "operations": operations,
            "shapes": strip({k: v for k, v in shapes.items() if k in keep}),
        }
        with open(os.path.join(out_dir, service + ".json"), "w") as f:
            json.dump(trimmed, f, separators=(",", ":"), sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
