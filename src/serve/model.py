# Regenerates model.json from botocore's Step Functions model (the installed awscli's):
#   python3 src/serve/model.py $SFN_LOCAL_DEPS/venv/lib/python3.11/site-packages/botocore/data/stepfunctions/2016-11-23/service-2.json.gz
# Keeps what request validation needs (operations' input shapes and errors, shapes' types,
# members, required lists, lengths, ranges and enums) and drops the documentation.
import gzip, json, sys

model = json.load(gzip.open(sys.argv[1]))
keep = ("type", "required", "members", "member", "key", "value", "min", "max", "enum", "shape", "pattern", "box")
shapes = {}
for name, shape in model["shapes"].items():
    s = {k: v for k, v in shape.items() if k in keep}
    if "members" in s:
        s["members"] = {m: {"shape": v["shape"]} for m, v in s["members"].items()}
    for k in ("member", "key", "value"):
        if k in s:
            s[k] = {"shape": s[k]["shape"]}
    shapes[name] = s
ops = {n: {"input": o["input"]["shape"], "errors": [e["shape"] for e in o.get("errors", [])]} for n, o in model["operations"].items()}
json.dump({"version": model["metadata"]["apiVersion"], "operations": ops, "shapes": shapes}, sys.stdout, sort_keys=True, separators=(",", ":"))
