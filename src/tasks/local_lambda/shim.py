# sfn-local's Python runtime for a template's Lambda function: one warm process per function,
# as Lambda keeps a container warm. Lines on stdin are invocations; each answer is one line on
# stdout after MARK; the handler's prints go to stderr (its logs), ended by END after each
# invocation. Exceptions become Lambda's error payload (errorMessage, errorType, requestId,
# stackTrace), as Lambda's Python runtime writes it.
import importlib, json, os, platform, sys, time, traceback

MARK = "\x1esfn-local:"
END = "\x1esfn-local:end"
PROTO = sys.stdout
sys.stdout = sys.stderr
CODE_DIR, HANDLER = sys.argv[1], sys.argv[2]
sys.path.insert(0, CODE_DIR)


def answer(value):
    PROTO.write(MARK + json.dumps(value) + "\n")
    PROTO.flush()


def load():
    module_name, _, function_name = HANDLER.rpartition(".")
    if not module_name:
        return None, ("Runtime.MalformedHandlerName", f"Bad handler '{HANDLER}': not enough values to unpack (expected 2, got 1)")
    try:
        module = importlib.import_module(module_name.replace("/", "."))
    except Exception as error:  # noqa: BLE001 -- Lambda reports any import failure
        return None, ("Runtime.ImportModuleError", f"Unable to import module '{module_name}': {error}")
    handler = getattr(module, function_name, None)
    if handler is None:
        return None, ("Runtime.HandlerNotFound", f"Handler '{function_name}' missing on module '{module_name}'")
    return handler, None


class Context:
    def __init__(self, request):
        name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
        self.function_name = name
        self.function_version = "$LATEST"
        self.invoked_function_arn = request["invokedFunctionArn"]
        self.memory_limit_in_mb = int(os.environ["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"])
        self.aws_request_id = request["requestId"]
        self.log_group_name = "/aws/lambda/" + name
        self.log_stream_name = os.environ["AWS_LAMBDA_LOG_STREAM_NAME"]
        self.identity = None
        self.client_context = None
        self._deadline_ms = request["deadlineMs"]

    def get_remaining_time_in_millis(self):
        return max(0, int(self._deadline_ms - time.time() * 1000))


def invoke(handler, request):
    try:
        result = handler(request["event"], Context(request))
    except Exception as error:  # noqa: BLE001 -- every exception is the function's error
        frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename != "<string>"]
        return {"error": {"errorMessage": str(error), "errorType": type(error).__name__,
                          "requestId": request["requestId"], "stackTrace": traceback.format_list(frames)}}
    try:
        json.dumps(result)
    except (TypeError, ValueError) as error:
        return {"error": {"errorMessage": f"Unable to marshal response: {error}",
                          "errorType": "Runtime.MarshalError", "requestId": request["requestId"], "stackTrace": []}}
    return {"ok": result}


def main():
    handler, failed = load()
    answer({"ready": True, "version": platform.python_version()})
    for line in sys.stdin:
        request = json.loads(line)
        if failed:
            error_type, message = failed
            reply = {"error": {"errorMessage": message, "errorType": error_type,
                               "requestId": request["requestId"], "stackTrace": []}}
        else:
            reply = invoke(handler, request)
        sys.stderr.write(END + "\n")
        sys.stderr.flush()
        answer(reply)


main()
