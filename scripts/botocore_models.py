"""What the model scripts (sdk_protocols.py, service_models.py) share: where botocore's JSON
service models are, reading the newest model of a service, and the shapes an operation reaches."""
import glob
import gzip
import json
import os
import sys


def data_dir():
    """botocore's data folder: under the site-packages folder given as the first argument, or
    the botocore importable by this interpreter."""
    if len(sys.argv) > 1:
        return os.path.join(sys.argv[1], "botocore", "data")
    import botocore

    return os.path.join(os.path.dirname(botocore.__file__), "data")


def load(data, service):
    """The newest `service-2.json` of a service (gzipped or not), parsed."""
    path = sorted(glob.glob(os.path.join(data, service, "*", "service-2.json*")))[-1]
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def reachable(shapes, roots):
    """The names of the shapes `roots` reach through members, list members and map keys and
    values (roots included)."""
    keep = set()

    def reach(name):
        if name in keep:
            return
        keep.add(name)
        shape = shapes[name]
        for k in ("member", "key", "value"):
            if k in shape:
                reach(shape[k]["shape"])
        for m in shape.get("members", {}).values():
            reach(m["shape"])

    for root in roots:
        reach(root)
    return keep
