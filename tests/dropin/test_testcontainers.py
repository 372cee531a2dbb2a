"""testcontainers' own wait on Step Functions Local's ready line, as fixtures written for
amazon/aws-stepfunctions-local wait (`LogMessageWaitStrategy("Starting server on port ...")`):
against the image in a container (SFN_IMAGE), and against the binary (SFN_LOCAL_BIN) through
the same wait strategy, fed the process's output. The port is a free one (PORT) because the
container shares the host's network here; a fixture on a bridge network keeps 8083.
"""
import os
import re
import subprocess
import threading
import time
import uuid

import boto3
from testcontainers.core.container import DockerContainer
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

HERE = os.environ.get("SUITE_DIR", os.path.dirname(__file__))
PORT = int(os.environ["PORT"])
READY = re.compile(rf"Starting server on port {PORT}\b")


def happy_path(endpoint):
    sfn = boto3.client("stepfunctions", endpoint_url=endpoint, region_name="us-east-1",
                       aws_access_key_id="x", aws_secret_access_key="x")
    with open(os.path.join(HERE, "LocalTesting.asl.json")) as f:
        arn = sfn.create_state_machine(name="LocalTesting", definition=f.read(),
                                       roleArn="arn:aws:iam::123456789012:role/DummyRole")["stateMachineArn"]
    with open(os.path.join(HERE, "events.json")) as f:
        execution = sfn.start_execution(stateMachineArn=arn + "#HappyPathTest", name=uuid.uuid4().hex,
                                        input=f.read())["executionArn"]
    for _ in range(300):
        status = sfn.describe_execution(executionArn=execution)["status"]
        if status != "RUNNING":
            return status
        time.sleep(0.1)
    return "RUNNING"


def test_image_ready_line():
    image = os.environ["SFN_IMAGE"]
    container = (DockerContainer(image)
                 .with_kwargs(network_mode="host")
                 .with_command(["--port", str(PORT)])
                 .with_env("SFN_MOCK_CONFIG", "/home/StepFunctionsLocal/MockConfigFile.json")
                 # The definition's retrier waits 0 seconds, which only Step Functions Local takes.
                 .with_env("SFN_LOCAL_COMPAT", "stepfunctions-local")
                 .with_volume_mapping(os.path.join(HERE, "MockConfigFile.json"),
                                      "/home/StepFunctionsLocal/MockConfigFile.json")
                 .waiting_for(LogMessageWaitStrategy(READY).with_startup_timeout(60)))
    with container:
        assert happy_path(f"http://127.0.0.1:{PORT}") == "SUCCEEDED"


class Process:
    """A process as testcontainers' wait strategies see a container: its output so far, and
    whether it still runs."""

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out, self.err = bytearray(), bytearray()
        for pipe, sink in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._drain, args=(pipe, sink), daemon=True).start()

    @staticmethod
    def _drain(pipe, sink):
        for chunk in iter(lambda: pipe.read1(4096), b""):
            sink.extend(chunk)

    def get_logs(self):
        return bytes(self.out), bytes(self.err)

    def get_wrapped_container(self):
        return self

    def reload(self):
        pass

    @property
    def status(self):
        return "running" if self.proc.poll() is None else "exited"

    def get_container_host_ip(self):
        return "127.0.0.1"

    def get_exposed_port(self, port):
        return port


def test_binary_ready_line(tmp_path):
    env = dict(os.environ, SFN_LOCAL_DB=str(tmp_path / "sfn.db"),
               SFN_MOCK_CONFIG=os.path.join(HERE, "MockConfigFile.json"))
    served = Process([os.environ["SFN_LOCAL_BIN"], "serve", "--port", str(PORT)], env)
    try:
        LogMessageWaitStrategy(READY).with_startup_timeout(60).wait_until_ready(served)
        assert happy_path(f"http://127.0.0.1:{PORT}") == "SUCCEEDED"
    finally:
        served.proc.terminate()
        served.proc.wait(timeout=30)
