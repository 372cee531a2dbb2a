"""pytest fixtures for sfn-local (loaded through the ``pytest11`` entry point).

- ``sfn_local``: a running ``sfn-local serve`` on a free port with a private database, shared by
  the session (``sfn_local_scope = module`` or ``function`` in the ini file narrows it).
  Configure it by overriding the ``sfn_local_options`` fixture, or in the ini file.
- ``sfn_client``: a boto3 Step Functions client pointed at it.
- The server runs on a virtual clock unless ``sfn_local_clock = real``: time moves when a test
  asks (``advance_time``, ``skip_to_next_deadline``), and ``start_and_wait`` skips it.
- ``sfn_local_factory``: starts more servers inside one test, each with its own options; stopped
  at the test's end.

A failing test that used a server gets the server's log of that test in its report, and each
execution its helpers (``start_and_wait``, ``wait_for_execution``) saw end that failed or took a
Catch: the why line and, for Lambda code, the handler's error and stack trace. Servers stop
as Ctrl-C stops them (SIGTERM), so a stop is clean and the database stays readable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator, List, Mapping

import pytest

from . import ServeOptions, SfnLocal, explain_execution, serve, take_ended

_SCOPES = ("session", "package", "module", "class", "function")
_SERVERS = pytest.StashKey[List[SfnLocal]]()  # every server of the session, for coverage
_STARTED = pytest.StashKey[List[SfnLocal]]()  # the servers a test started with the factory
_MARKS = pytest.StashKey[dict]()  # each server's log size when a test began
_ENDED = pytest.StashKey[list]()  # the executions a test's helpers saw end: (endpoint, arn)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sfn-local")
    group.addoption("--sfn-local-bin", metavar="PATH",
                    help="the sfn-local binary (default: $SFN_LOCAL_BIN, the installed one, PATH)")
    group.addoption("--sfn-local-lcov", metavar="PATH",
                    help="at the session's end, write the state machines' coverage by the "
                         "session's executions as LCOV to PATH (`sfn-local coverage`)")
    parser.addini("sfn_local_scope", "scope of the sfn_local fixture: session (default), package, "
                  "module, class or function", default="session")
    parser.addini("sfn_local_clock", "serve --clock: virtual (default: time moves when a test asks, "
                  "every deadline in AWS's order) or real", default="")
    parser.addini("sfn_local_clock_start", "serve --clock-start: where a virtual clock starts (RFC 3339)",
                  default="")
    parser.addini("sfn_local_seed", "serve --seed: generated names, ARNs and tokens repeat", default="")
    parser.addini("sfn_local_time_scale", "serve --time-scale on the real clock (0: the virtual clock)",
                  default="")
    parser.addini("sfn_local_mock_config", "serve --mock-config: Step Functions Local's MockConfigFile",
                  default="")
    parser.addini("sfn_local_tasks", "serve --task bindings, MACHINE:STATE=COMMAND, one a line", type="linelist")
    parser.addini("sfn_local_workers", "serve --worker bindings, MACHINE:STATE=COMMAND, one a line",
                  type="linelist")
    parser.addini("sfn_local_templates", "serve --template: SAM or CloudFormation templates whose state "
                  "machines are created at start, one a line", type="linelist")
    parser.addini("sfn_local_substitutions", "serve --sub: the templates' ${NAME} values, NAME=VALUE, "
                  "one a line", type="linelist")
    parser.addini("sfn_local_args", "more serve flags, as on a command line", type="args")


def _scope(fixture_name: str, config: pytest.Config) -> str:
    scope = config.getini("sfn_local_scope") or "session"
    if scope not in _SCOPES:
        raise pytest.UsageError(f"sfn_local_scope = {scope}: expected one of {', '.join(_SCOPES)}")
    return scope


@pytest.fixture(scope="session")
def sfn_local_options(pytestconfig: pytest.Config) -> ServeOptions:
    """How the ``sfn_local`` server runs. Override it in a conftest.py for bindings, mocks and
    state machines created at start; relative paths in the ini file are from the rootdir."""
    root = Path(pytestconfig.rootpath)
    time_scale = pytestconfig.getini("sfn_local_time_scale")
    seed = pytestconfig.getini("sfn_local_seed")
    mock_config = pytestconfig.getini("sfn_local_mock_config")
    substitutions = dict(line.split("=", 1) for line in pytestconfig.getini("sfn_local_substitutions"))
    return ServeOptions(
        tasks=list(pytestconfig.getini("sfn_local_tasks")),
        workers=list(pytestconfig.getini("sfn_local_workers")),
        mock_config=str(root / mock_config) if mock_config else None,
        clock=pytestconfig.getini("sfn_local_clock") or None,
        clock_start=pytestconfig.getini("sfn_local_clock_start") or None,
        seed=int(seed) if seed else None,
        time_scale=float(time_scale) if time_scale else None,
        templates=[str(root / t) for t in pytestconfig.getini("sfn_local_templates")],
        substitutions=substitutions,
        args=list(pytestconfig.getini("sfn_local_args")),
        binary=pytestconfig.getoption("sfn_local_bin"),
    )


def _start(request: pytest.FixtureRequest, options: ServeOptions, tmp_path_factory: pytest.TempPathFactory) -> SfnLocal:
    server = serve(options, workdir=tmp_path_factory.mktemp("sfn-local"))
    request.config.stash.setdefault(_SERVERS, []).append(server)
    return server


@pytest.fixture(scope=_scope)
def sfn_local(request: pytest.FixtureRequest, sfn_local_options: ServeOptions,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[SfnLocal]:
    """A running ``sfn-local serve`` (see ``sfn_local_options``); ``.endpoint`` is its URL."""
    server = _start(request, sfn_local_options, tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture
def sfn_client(sfn_local: SfnLocal):
    """A boto3 Step Functions client pointed at ``sfn_local``."""
    return sfn_local.client()


@pytest.fixture
def sfn_local_factory(request: pytest.FixtureRequest, sfn_local_options: ServeOptions,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., SfnLocal]]:
    """``sfn_local_factory(**options)`` starts another server for this test (options override
    ``sfn_local_options``); every one is stopped when the test ends."""
    started: List[SfnLocal] = []

    def start(**overrides: Any) -> SfnLocal:
        options = ServeOptions(**{**sfn_local_options.__dict__, **overrides})
        server = _start(request, options, tmp_path_factory)
        started.append(server)
        request.node.stash.setdefault(_STARTED, []).append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    # Where each server's log stood when the test began, to show only the test's part.
    servers = item.config.stash.get(_SERVERS, [])
    item.stash[_MARKS] = {id(s): s.log_size() for s in servers}
    take_ended()  # executions of earlier tests are not this one's
    yield
    item.stash[_ENDED] = take_ended()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    if report.when == "call":
        _explain_executions(item, report)
    marks = item.stash.get(_MARKS, {})
    for server in item.config.stash.get(_SERVERS, []):
        if not _used_by(item, server):
            continue
        since = marks.get(id(server), 0) if report.when == "call" else 0
        text = server.log(since).strip()
        if not text:
            tail = "\n".join(server.log().strip().splitlines()[-50:])
            text = f"(nothing during this test; the log so far, {server.log_path}:)\n{tail}"
        report.sections.append((f"sfn-local serve log ({server.endpoint}, {report.when})", text))


def _explain_executions(item: pytest.Item, report: pytest.TestReport) -> None:
    # Each execution the test's helpers saw end that failed or took a Catch: why, and the
    # handler's error. An `assert "FAILED" == "SUCCEEDED"` alone says nothing of either.
    by_endpoint = {s.endpoint.rstrip("/"): s for s in item.config.stash.get(_SERVERS, [])}
    explained = []
    for endpoint, arn in item.stash.get(_ENDED, []):
        server = by_endpoint.get(endpoint.rstrip("/"))
        text = explain_execution(server, arn) if server is not None else None
        if text and text not in explained:
            explained.append(text)
    if explained:
        report.sections.append(("sfn-local executions that failed or took a Catch", "\n\n".join(explained)))


def _used_by(item: pytest.Item, server: SfnLocal) -> bool:
    # funcargs holds every fixture the test needed, directly or through another fixture.
    funcargs = getattr(item, "funcargs", {}) or {}
    return any(value is server for value in funcargs.values()) or any(
        started is server for started in item.stash.get(_STARTED, [])
    )


def servers(config: pytest.Config) -> List[SfnLocal]:
    """Every server this session started (running or stopped; their databases stay until pytest
    cleans its temporary folders). The hook for coverage: a plugin or conftest can run
    ``sfn-local`` commands on each ``server.db`` in ``pytest_sessionfinish``."""
    return list(config.stash.get(_SERVERS, []))


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = session.config.getoption("sfn_local_lcov")
    if not target:
        return
    # One LCOV tracefile: each server's records one after the other (the format allows it).
    # LCOV points at lines of files: the definitions given to a server as files are measured,
    # and the templates' machines (with the substitutions they were created with).
    parts = []
    for server in servers(session.config):
        options = server.options
        files = [str(d) for d in options.definitions.values()
                 if not isinstance(d, Mapping) and not str(d).lstrip().startswith("{")]
        files += [str(t) for t in options.templates]
        if server.process.poll() is None:
            server.stop()
        if files:
            subs = [a for name, value in options.substitutions.items() for a in ("--sub", f"{name}={value}")]
            parts.append(server.cli("coverage", "--format", "lcov", *files, *subs).stdout)
    # Its folder is made as a report's is (`--junitxml out/junit.xml` makes out/).
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    Path(target).write_text("".join(parts))
