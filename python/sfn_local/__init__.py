"""Start ``sfn-local serve`` from Python and drive executions through it.

The ``sfn-local`` binary comes with this package (``pip install sfn-local``). ``serve()`` starts it
on a free port with a private database and returns once it accepts connections; the helpers do
what tests otherwise write by hand: start an execution and wait for its end, wait for a state's
task token and answer it. The pytest plugin (``sfn_local.pytest_plugin``) wraps these in fixtures.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

__all__ = [
    "ServeOptions",
    "SfnLocal",
    "SfnLocalError",
    "advance_time",
    "answer_task",
    "clock_now",
    "create_state_machine",
    "explain_execution",
    "find_binary",
    "replay",
    "serve",
    "skip_to_next_deadline",
    "start_and_wait",
    "take_ended",
    "wait_for_task_token",
]

PathLike = Union[str, "os.PathLike[str]"]

#: The role ARN sfn-local accepts for every state machine (no IAM locally).
ANY_ROLE = "arn:aws:iam::123456789012:role/sfn-local"

TERMINAL = ("SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED")

#: Executions the helpers saw end, as (endpoint, executionArn), since ``take_ended()`` last ran:
#: the pytest plugin explains those of a failed test in its report.
_ENDED: List[Tuple[str, str]] = []


def take_ended() -> List[Tuple[str, str]]:
    """The executions ``wait_for_execution`` and ``start_and_wait`` saw end since the last call,
    as (endpoint, executionArn), oldest first; forgets them."""
    ended = list(_ENDED)
    del _ENDED[: len(ended)]
    return ended


class SfnLocalError(RuntimeError):
    """sfn-local could not be found, did not start, or an awaited thing did not happen in time."""


def find_binary(explicit: Optional[PathLike] = None) -> str:
    """The ``sfn-local`` program: ``explicit``, else ``$SFN_LOCAL_BIN``, else the one this
    package installed (the environment's scripts folder), else the first on ``PATH``."""
    for candidate in (explicit, os.environ.get("SFN_LOCAL_BIN")):
        if candidate:
            if not Path(candidate).is_file():
                raise SfnLocalError(f"sfn-local binary not found at {candidate}")
            return str(candidate)
    exe = "sfn-local.exe" if sys.platform == "win32" else "sfn-local"
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        if folder and Path(folder, exe).is_file():
            return str(Path(folder, exe))
    found = shutil.which("sfn-local")
    if not found:
        raise SfnLocalError(
            "sfn-local is not installed: `pip install sfn-local`, or set SFN_LOCAL_BIN to the binary"
        )
    return found


@dataclass
class ServeOptions:
    """How ``serve`` runs; every field maps to a flag of ``sfn-local serve``.

    ``tasks``/``workers`` are ``MACHINE:STATE=COMMAND`` bindings; ``definitions`` maps state machine
    names to definition files (or dicts) created through the API once the server is up;
    ``templates`` are SAM or CloudFormation templates whose state machines are created at start
    (``--template``), with ``substitutions`` as their ``${NAME}`` values (``--sub NAME=VALUE``);
    ``args`` are extra flags passed as they are.

    ``clock`` is ``"virtual"`` by default: time moves only when a test asks (``advance_time``,
    ``skip_to_next_deadline``; ``start_and_wait`` skips it while it waits), every deadline in
    AWS's order. ``"real"`` runs on the system clock, scaled by ``time_scale`` (0 means virtual).
    ``clock_start`` (RFC 3339) and ``seed`` make runs repeat byte for byte.
    """

    tasks: Sequence[str] = ()
    workers: Sequence[str] = ()
    mock_config: Optional[PathLike] = None
    clock: Optional[str] = None
    clock_start: Optional[str] = None
    seed: Optional[int] = None
    time_scale: Optional[float] = None
    definitions: Mapping[str, Union[PathLike, Mapping[str, Any]]] = field(default_factory=dict)
    templates: Sequence[PathLike] = ()
    substitutions: Mapping[str, str] = field(default_factory=dict)
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    region: str = "us-east-1"
    binary: Optional[PathLike] = None
    start_timeout: float = 30.0

    def command(self, binary: str, db: Path, ready_file: Path) -> List[str]:
        """The ``sfn-local serve`` command line for a private database and a free port."""
        cmd = [binary, "serve", "--port", "0", "--db", str(db), "--ready-file", str(ready_file)]
        cmd += ["--region", self.region]
        for binding in self.tasks:
            cmd += ["--task", binding]
        for binding in self.workers:
            cmd += ["--worker", binding]
        if self.mock_config is not None:
            cmd += ["--mock-config", str(self.mock_config)]
        cmd += self.clock_args()
        cmd += self.template_args()
        return cmd + [str(a) for a in self.args]

    def clock_args(self) -> List[str]:
        """``--clock`` (virtual unless ``clock="real"`` or a ``time_scale`` above 0 says
        otherwise), ``--clock-start``, ``--seed`` and ``--time-scale``."""
        scaled = self.time_scale is not None and float(self.time_scale) > 0
        clock = self.clock or ("real" if scaled else "virtual")
        if clock not in ("real", "virtual"):
            raise SfnLocalError(f"clock={clock!r}: expected 'virtual' or 'real'")
        args = ["--clock", clock]
        if clock == "real" and scaled:
            args += ["--time-scale", repr(float(self.time_scale))]
        if self.clock_start is not None:
            args += ["--clock-start", str(self.clock_start)]
        if self.seed is not None:
            args += ["--seed", str(int(self.seed))]
        return args

    def template_args(self) -> List[str]:
        """``--template`` and ``--sub`` flags: what ``serve`` creates its machines from, and what
        ``coverage`` needs to find the same machines again."""
        args: List[str] = []
        for template in self.templates:
            args += ["--template", str(template)]
        for name, value in self.substitutions.items():
            args += ["--sub", f"{name}={value}"]
        return args


class SfnLocal:
    """A running ``sfn-local serve``: its endpoint, database and log. Stop it with ``stop()`` (or
    use it as a context manager)."""

    def __init__(self, process: subprocess.Popen, ready: Dict[str, Any], workdir: Path, log_path: Path,
                 binary: str, options: ServeOptions, owns_workdir: bool):
        self.process = process
        self.endpoint: str = ready["endpoint"]
        self.port: int = ready["port"]
        self.db = Path(ready["database"])
        self.workdir = workdir
        self.log_path = log_path
        self.binary = binary
        self.options = options
        self._owns_workdir = owns_workdir

    def log(self, since: int = 0) -> str:
        """What serve printed (stdout and stderr), from byte ``since`` on."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(since)
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_size(self) -> int:
        """How many bytes of log there are now (a mark for ``log(since=...)``)."""
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def client(self, **kwargs: Any):
        """A boto3 Step Functions client pointed at this server (fake credentials)."""
        try:
            import boto3
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise SfnLocalError("the client needs boto3: pip install 'sfn-local[boto3]'") from e
        settings = dict(
            endpoint_url=self.endpoint,
            region_name=self.options.region,
            aws_access_key_id="test",
            aws_secret_access_key="test",
        )
        settings.update(kwargs)
        return boto3.client("stepfunctions", **settings)

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """Runs another ``sfn-local`` command on this server's database (``--db`` added)."""
        cmd = [self.binary, *args, "--db", str(self.db)]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if check and result.returncode != 0:
            raise SfnLocalError(f"{' '.join(cmd)} exited {result.returncode}: {result.stderr.strip()}")
        return result

    def stop(self, timeout: float = 10.0) -> int:
        """Stops serve as Ctrl-C does (SIGTERM; killed after ``timeout``) and returns its exit code."""
        if self.process.poll() is None:
            if sys.platform == "win32":
                self.process.terminate()
            else:
                self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return self.process.returncode

    def __enter__(self) -> "SfnLocal":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve(options: Optional[ServeOptions] = None, workdir: Optional[PathLike] = None, **overrides: Any) -> SfnLocal:
    """Starts ``sfn-local serve`` on a free port with a private database in ``workdir`` (a fresh
    temporary folder when not given, removed by ``stop()``), waits until it accepts connections
    and creates ``options.definitions``. Keyword arguments override fields of ``options``."""
    options = options or ServeOptions()
    if overrides:
        options = ServeOptions(**{**options.__dict__, **overrides})
    binary = find_binary(options.binary)
    owns = workdir is None
    folder = Path(tempfile.mkdtemp(prefix="sfn-local-")) if owns else Path(workdir)
    folder.mkdir(parents=True, exist_ok=True)
    ready_file, log_path = folder / "ready.json", folder / "serve.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            options.command(binary, folder / "sfn-local.db", ready_file),
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, **options.env},
        )
    ready = _wait_ready(process, ready_file, log_path, options.start_timeout)
    server = SfnLocal(process, ready, folder, log_path, binary, options, owns)
    try:
        for name, definition in options.definitions.items():
            create_state_machine(server.client(), name, definition)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(process: subprocess.Popen, ready_file: Path, log_path: Path, timeout: float) -> Dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready_file.exists():
            return json.loads(ready_file.read_text())
        if process.poll() is not None:
            raise SfnLocalError(
                f"sfn-local serve exited {process.returncode} before it was ready:\n{log_path.read_text(errors='replace')}"
            )
        time.sleep(0.02)
    process.kill()
    process.wait()
    raise SfnLocalError(f"sfn-local serve was not ready after {timeout}s:\n{log_path.read_text(errors='replace')}")


def create_state_machine(client, name: str, definition: Union[PathLike, Mapping[str, Any], str],
                         role_arn: str = ANY_ROLE, **kwargs: Any) -> str:
    """Creates a state machine from a file path, a dict or JSON text and returns its ARN."""
    if isinstance(definition, Mapping):
        text = json.dumps(definition)
    elif isinstance(definition, str) and definition.lstrip().startswith("{"):
        text = definition
    else:
        text = Path(definition).read_text()
    return client.create_state_machine(name=name, definition=text, roleArn=role_arn, **kwargs)["stateMachineArn"]


def start_and_wait(client, state_machine_arn: str, input: Any = None, name: Optional[str] = None,
                   timeout: float = 30.0, poll: float = 0.05, skip_time: bool = True) -> Dict[str, Any]:
    """Starts an execution and waits for its end; returns DescribeExecution's answer with
    ``output`` decoded (``output_json``). On a virtual clock it skips from deadline to deadline
    while it waits (``skip_time=False`` leaves the clock alone), as Temporal's client does while it
    awaits a result. Raises ``SfnLocalError`` if it is still running after ``timeout`` seconds."""
    kwargs: Dict[str, Any] = {"stateMachineArn": state_machine_arn}
    if input is not None:
        kwargs["input"] = input if isinstance(input, str) else json.dumps(input)
    if name is not None:
        kwargs["name"] = name
    arn = client.start_execution(**kwargs)["executionArn"]
    return wait_for_execution(client, arn, timeout=timeout, poll=poll, skip_time=skip_time)


def wait_for_execution(client, execution_arn: str, timeout: float = 30.0, poll: float = 0.05,
                       skip_time: bool = False) -> Dict[str, Any]:
    """Waits for an execution to end; returns DescribeExecution's answer (``output_json`` added).
    With ``skip_time`` on a virtual clock, jumps to the next deadline whenever it is still
    running."""
    deadline = time.monotonic() + timeout
    skipping = skip_time and _clock(client, "now").get("clock") == "virtual"
    while True:
        described = client.describe_execution(executionArn=execution_arn)
        if described["status"] in TERMINAL:
            if "output" in described:
                described["output_json"] = json.loads(described["output"])
            endpoint = getattr(getattr(client, "meta", None), "endpoint_url", None)
            if endpoint:
                _ENDED.append((endpoint, execution_arn))
            return described
        if time.monotonic() >= deadline:
            raise SfnLocalError(f"{execution_arn} is still {described['status']} after {timeout}s")
        # Nothing to skip to (it waits on a token or a command): wait in wall time.
        if not (skipping and _clock(client, "next").get("skippedTo")):
            time.sleep(poll)


def wait_for_task_token(server: SfnLocal, execution_arn: str, state: str, timeout: float = 30.0,
                        poll: float = 0.05, skip_time: bool = True) -> str:
    """Waits until the state ``state`` of the execution waits for a task token
    (``.waitForTaskToken`` or an activity) and returns the token. It asks ``sfn-local list-tasks``
    on the server's database: the API has no call that lists tokens. On a virtual clock it skips
    time (a Wait before the state) only once everything has settled and the token is not there,
    so it never skips past the token's own deadlines."""
    deadline = time.monotonic() + timeout
    skipping = skip_time and _clock(server, "now").get("clock") == "virtual"
    while True:
        if skipping:
            _clock(server, "settle")
        listed = server.cli("list-tasks", "--execution-arn", execution_arn, "--format", "json", check=False)
        if listed.returncode == 0:
            for task in json.loads(listed.stdout)["tasks"]:
                if task["stateName"] == state:  # list-tasks lists only tokens still open
                    return task["taskToken"]
        status = server.client().describe_execution(executionArn=execution_arn)["status"]
        if status in TERMINAL:
            raise SfnLocalError(f"{execution_arn} ended {status} before {state} waited for a token")
        if time.monotonic() >= deadline:
            raise SfnLocalError(f"no task token for state {state} of {execution_arn} after {timeout}s")
        if not (skipping and _clock(server, "next").get("skippedTo")):
            time.sleep(poll)


def _endpoint(target: Any) -> str:
    """The server's URL from an ``SfnLocal``, a boto3 client or the URL itself."""
    if isinstance(target, str):
        return target
    if isinstance(target, SfnLocal):
        return target.endpoint
    return target.meta.endpoint_url


def _clock(target: Any, action: str, duration: Optional[str] = None) -> Dict[str, Any]:
    """One call of the virtual clock's extension (``POST /sfn-local/clock``)."""
    body: Dict[str, Any] = {"action": action}
    if duration is not None:
        body["duration"] = duration
    request = urllib.request.Request(
        _endpoint(target).rstrip("/") + "/sfn-local/clock", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as e:
        message = e.read().decode("utf-8", "replace")
        raise SfnLocalError(f"sfn-local clock {action}: {message}") from e


def clock_now(target: Any) -> Dict[str, Any]:
    """Where the server's clock stands: ``{"clock", "now", "nowMillis", "nextDeadline",
    "pendingDeadlines"}`` (``target``: an ``SfnLocal``, a boto3 client or the endpoint URL)."""
    return _clock(target, "now")


def advance_time(target: Any, duration: Union[str, float]) -> Dict[str, Any]:
    """Moves a virtual clock forward by ``duration`` (``"61s"``, ``"1h 30m"``, or seconds), firing
    every deadline on the way in order; returns where the clock stands."""
    return _clock(target, "advance", duration if isinstance(duration, str) else f"{float(duration)}")


def skip_to_next_deadline(target: Any) -> Dict[str, Any]:
    """Jumps a virtual clock to its next deadline and fires every one due then; returns where the
    clock stands (``nextDeadline`` is None when nothing waits on time)."""
    return _clock(target, "next")


def answer_task(client, token: str, output: Any = None, error: Optional[str] = None,
                cause: Optional[str] = None) -> None:
    """Answers a task token: SendTaskFailure when ``error`` is given, else SendTaskSuccess with
    ``output`` (JSON text, or a value encoded as JSON)."""
    if error is not None:
        kwargs = {"taskToken": token, "error": error}
        if cause is not None:
            kwargs["cause"] = cause
        client.send_task_failure(**kwargs)
    else:
        text = output if isinstance(output, str) else json.dumps(output if output is not None else {})
        client.send_task_success(taskToken=token, output=text)


def explain_execution(server: SfnLocal, execution_arn: str) -> Optional[str]:
    """Why an execution failed or took a Catch, or None when nothing failed in it: the ``why`` line
    of ``describe-execution --format text`` and, when Lambda code failed, the ``handler`` lines
    under it (the handler's error type, message and stack trace, file and line)."""
    described = server.cli("describe-execution", "--execution-arn", execution_arn, "--format", "text",
                           check=False).stdout.splitlines()
    start = next((i for i, line in enumerate(described) if line.startswith("why ")), None)
    if start is None:
        return None
    block = [described[start]]
    for line in described[start + 1:]:
        if not line.startswith(("handler ", " ")):
            break
        block.append(line)
    status = described[0].rsplit("(", 1)[-1].rstrip(")")
    return "\n".join([f"{execution_arn} ({status})", *("  " + line for line in block)])


def replay(history: Union[PathLike, Mapping[str, Any], Sequence[Any], str],
           definition: Union[PathLike, Mapping[str, Any]], binary: Optional[PathLike] = None,
           write_test: Optional[PathLike] = None) -> Dict[str, Any]:
    """Replays a recorded execution against ``definition`` (``sfn-local replay --format json``).

    ``history``: a file (``aws stepfunctions get-execution-history --output json``, pages
    concatenated, or sfn-local's own), or the parsed history (``{"events": [...]}`` or the list of
    events, e.g. boto3's ``get_execution_history(...)["events"]``). ``definition``: a file,
    ``template.yaml#LogicalId``, ``cdk.out#LogicalId``, or the definition itself as a dict.
    Returns the verdict: ``{"identical": bool, "divergence": {"event", "state", "what",
    "recorded", "replayed", "path"} or None, "masked", "notCompared", ...}``. With
    ``write_test``, an identical replay is also written there as a ``sfn-local test`` suite.
    Raises ``SfnLocalError`` when the history or the definition cannot be read."""
    with tempfile.TemporaryDirectory(prefix="sfn-local-replay-") as scratch:
        history_path = _as_file(history, Path(scratch, "history.json"))
        definition_path = _as_file(definition, Path(scratch, "definition.asl.json"))
        args = [find_binary(binary), "replay", history_path, "--definition", definition_path,
                "--format", "json"]
        if write_test is not None:
            args += ["--write-test", str(write_test)]
        done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SfnLocalError(f"sfn-local replay: {done.stderr.strip()}")
    return json.loads(done.stdout)


def _as_file(value: Any, scratch: Path) -> str:
    """A path as it is; a parsed value (dict, list, or boto3's datetimes inside) written as JSON."""
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    if isinstance(value, list):
        value = {"events": value}
    scratch.write_text(json.dumps(value, default=_json_default))
    return str(scratch)


def _json_default(value: Any) -> Any:
    """boto3 returns timestamps as datetimes; the history keeps them as ISO 8601 text."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
