"""Runs a Lambda handler as a `--task` program: the event on stdin, the result on stdout, and
on an exception Lambda's error shape on the last line of stderr (so Catch on the exception's
class name matches, as on AWS).

    sfn-local run --template template.yaml \
      --task 'Charge=python3 local_lambda.py functions/charge/app.py'
"""

import importlib.util
import json
import sys


def main():
    path = sys.argv[1]
    handler = sys.argv[2] if len(sys.argv) > 2 else "lambda_handler"
    spec = importlib.util.spec_from_file_location("handler", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    event = json.load(sys.stdin)
    try:
        result = getattr(module, handler)(event, None)
    except Exception as error:  # noqa: BLE001 -- every error is the function's
        print(json.dumps({"errorType": type(error).__name__, "errorMessage": str(error)}),
              file=sys.stderr)
        sys.exit(1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
