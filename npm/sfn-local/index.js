// sfn-local for Node: where the binary is, `serve()` on a free port with a private database,
// and the helpers tests write by hand otherwise (start and wait, wait for a task token, answer
// it). The Jest and Vitest global setups build on `serve()`.
"use strict";
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { spawn, execFile, execFileSync } = require("node:child_process");

const ANY_ROLE = "arn:aws:iam::123456789012:role/sfn-local";
const TERMINAL = ["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"];

/** The binary: $SFN_LOCAL_BIN, else the one of this platform's package (@sfn-local/OS-CPU). */
function binaryPath() {
  if (process.env.SFN_LOCAL_BIN) {
    return process.env.SFN_LOCAL_BIN;
  }
  const platform = `${process.platform}-${process.arch}`;
  const exe = process.platform === "win32" ? "sfn-local.exe" : "sfn-local";
  try {
    return require.resolve(`@sfn-local/${platform}/bin/${exe}`);
  } catch {
    throw new Error(
      `sfn-local: no binary for ${platform}: the package @sfn-local/${platform} is not installed ` +
        "(npm skips optional dependencies with --omit=optional or --no-optional), or sfn-local " +
        "has no build for this platform; set SFN_LOCAL_BIN to a binary to use another one",
    );
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The `sfn-local serve` arguments of the options (see index.d.ts). */
function serveArgs(options, db, readyFile) {
  const args = ["serve", "--port", "0", "--db", db, "--ready-file", readyFile];
  args.push("--region", options.region ?? "us-east-1");
  for (const t of options.tasks ?? []) args.push("--task", t);
  for (const w of options.workers ?? []) args.push("--worker", w);
  if (options.mockConfig) args.push("--mock-config", options.mockConfig);
  args.push(...clockArgs(options));
  for (const t of options.templates ?? []) args.push("--template", t);
  return args.concat(substitutionArgs(options), options.args ?? []);
}

/**
 * `--clock`: virtual unless `clock: "real"` or a `timeScale` above 0 says otherwise (time then
 * moves when a test asks, every deadline in AWS's order); `--clock-start`, `--seed`.
 */
function clockArgs(options) {
  const scaled = options.timeScale !== undefined && Number(options.timeScale) > 0;
  const clock = options.clock ?? (scaled ? "real" : "virtual");
  if (clock !== "real" && clock !== "virtual") throw new Error(`sfn-local: clock ${clock}: expected "virtual" or "real"`);
  const args = ["--clock", clock];
  if (clock === "real" && scaled) args.push("--time-scale", String(options.timeScale));
  if (options.clockStart !== undefined) args.push("--clock-start", String(options.clockStart));
  if (options.seed !== undefined) args.push("--seed", String(options.seed));
  return args;
}

/** `--sub NAME=VALUE` for each of `options.substitutions`: serve and coverage take the same. */
function substitutionArgs(options) {
  return Object.entries(options.substitutions ?? {}).flatMap(([name, value]) => ["--sub", `${name}=${value}`]);
}

/**
 * Starts `sfn-local serve` on a free port with a private database and resolves once it accepts
 * connections; then creates `options.definitions` ({name: file path or object}).
 */
async function serve(options = {}) {
  const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), "sfn-local-"));
  fs.mkdirSync(dir, { recursive: true });
  const readyFile = path.join(dir, "ready.json");
  const logPath = path.join(dir, "serve.log");
  const log = fs.openSync(logPath, "w");
  const child = spawn(options.binary ?? binaryPath(), serveArgs(options, path.join(dir, "sfn-local.db"), readyFile), {
    stdio: ["ignore", log, log],
    env: { ...process.env, ...(options.env ?? {}) },
    windowsHide: true,
  });
  fs.closeSync(log);
  let exited = null;
  child.on("exit", (code, signal) => (exited = { code, signal }));
  const readLog = () => fs.readFileSync(logPath, "utf8");
  const deadline = Date.now() + (options.startTimeout ?? 30000);
  while (!fs.existsSync(readyFile)) {
    if (exited) throw new Error(`sfn-local serve exited ${exited.code ?? exited.signal} before it was ready:\n${readLog()}`);
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`sfn-local serve was not ready in time:\n${readLog()}`);
    }
    await sleep(20);
  }
  const ready = JSON.parse(fs.readFileSync(readyFile, "utf8"));
  // Known by its endpoint to a test environment that explains a failed test's executions.
  (globalThis.__sfnLocalServers ??= {})[ready.endpoint] = { db: ready.database, binary: options.binary ?? binaryPath() };
  const server = {
    endpoint: ready.endpoint,
    port: ready.port,
    db: ready.database,
    dir,
    process: child,
    log: readLog,
    /** Stops it as Ctrl-C does (SIGTERM; SIGKILL after `timeout` ms); resolves to its exit code. */
    stop(timeout = 10000) {
      if (exited) return Promise.resolve(exited.code);
      return new Promise((resolve) => {
        const kill = setTimeout(() => child.kill("SIGKILL"), timeout);
        child.once("exit", (code) => {
          clearTimeout(kill);
          if (!options.dir) fs.rmSync(dir, { recursive: true, force: true });
          resolve(code);
        });
        child.kill("SIGTERM");
      });
    },
    /** The binary serving. */
    binary: options.binary ?? binaryPath(),
    /** Another sfn-local command on this server's database; resolves to its stdout. */
    cli: (...args) => runCli(options.binary ?? binaryPath(), ready.database, args),
    /** An SFNClient for this server. */
    client: () => sfnClient(ready.endpoint, options.region),
  };
  if (options.definitions && Object.keys(options.definitions).length > 0) {
    try {
      const client = sfnClient(server.endpoint, options.region);
      for (const [name, definition] of Object.entries(options.definitions)) {
        await createStateMachine(client, name, definition);
      }
    } catch (e) {
      await server.stop();
      throw e;
    }
  }
  return server;
}

function runCli(binary, db, args) {
  return new Promise((resolve, reject) => {
    execFile(binary, [...args, "--db", db], (err, stdout, stderr) =>
      err ? reject(new Error(`sfn-local ${args.join(" ")}: ${stderr || err.message}`)) : resolve(stdout),
    );
  });
}

/**
 * The server a global setup started, from inside a test (SFN_LOCAL_ENDPOINT and SFN_LOCAL_DB):
 * `{endpoint, db, cli(...), client()}`, enough for waitForTaskToken.
 */
function connect(env = process.env) {
  const endpoint = env.SFN_LOCAL_ENDPOINT;
  const db = env.SFN_LOCAL_DB;
  if (!endpoint || !db) {
    throw new Error("sfn-local: SFN_LOCAL_ENDPOINT is not set: add sfn-local/jest-global-setup (or the Vitest one) to the test runner's globalSetup");
  }
  return { endpoint, db, cli: (...args) => runCli(binaryPath(), db, args), client: () => sfnClient(endpoint) };
}

function sdk() {
  try {
    return require("@aws-sdk/client-sfn");
  } catch {
    throw new Error("sfn-local: this helper needs @aws-sdk/client-sfn: npm i -D @aws-sdk/client-sfn");
  }
}

/** An SFNClient for an endpoint (fake credentials). */
function sfnClient(endpoint, region = "us-east-1") {
  const { SFNClient } = sdk();
  return new SFNClient({ endpoint, region, credentials: { accessKeyId: "test", secretAccessKey: "test" } });
}

/** Creates a state machine from a file path, an object or JSON text; resolves to its ARN. */
async function createStateMachine(client, name, definition, roleArn = ANY_ROLE) {
  const { CreateStateMachineCommand } = sdk();
  let text;
  if (typeof definition === "object") text = JSON.stringify(definition);
  else if (definition.trimStart().startsWith("{")) text = definition;
  else text = fs.readFileSync(definition, "utf8");
  const out = await client.send(new CreateStateMachineCommand({ name, definition: text, roleArn }));
  return out.stateMachineArn;
}

/** The endpoint of a server (`serve()` or `connect()`), an SFNClient, or the URL itself. */
async function endpointOf(target) {
  if (typeof target === "string") return target;
  if (target.endpoint && typeof target.endpoint === "string") return target.endpoint;
  const endpoint = await target.config.endpoint();
  return `${endpoint.protocol}//${endpoint.hostname}${endpoint.port ? `:${endpoint.port}` : ""}${endpoint.path ?? ""}`;
}

/** One call of the virtual clock's extension (`POST /sfn-local/clock`, an sfn-local addition to the API). */
async function clockCall(target, action, duration) {
  const url = (await endpointOf(target)).replace(/\/+$/, "") + "/sfn-local/clock";
  const body = duration === undefined ? { action } : { action, duration: typeof duration === "number" ? String(duration) : duration };
  const answer = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const json = await answer.json();
  if (!answer.ok) throw new Error(`sfn-local clock ${action}: ${json.message ?? JSON.stringify(json)}`);
  return json;
}

/** Where the server's clock stands: `{clock, now, nowMillis, nextDeadline, pendingDeadlines}`. */
function clockNow(target) {
  return clockCall(target, "now");
}

/** Moves a virtual clock forward by `duration` ("61s", "1h 30m", or seconds), firing every deadline on the way in order. */
function advanceTime(target, duration) {
  return clockCall(target, "advance", duration);
}

/** Jumps a virtual clock to its next deadline and fires every one due then (`nextDeadline` is null when nothing waits on time). */
function skipToNextDeadline(target) {
  return clockCall(target, "next");
}

/**
 * Waits for an execution's end; resolves to DescribeExecution's answer (`outputJson` added).
 * With `skipTime` on a virtual clock it jumps to the next deadline whenever it is still running.
 */
async function waitForExecution(client, executionArn, { timeout = 30000, poll = 50, skipTime = false } = {}) {
  if (!executionArn) throw new TypeError("waitForExecution: no executionArn");
  const { DescribeExecutionCommand } = sdk();
  const deadline = Date.now() + timeout;
  const skipping = skipTime && (await clockNow(client)).clock === "virtual";
  for (;;) {
    const d = await client.send(new DescribeExecutionCommand({ executionArn }));
    if (TERMINAL.includes(d.status)) {
      if (d.output !== undefined) d.outputJson = JSON.parse(d.output);
      (globalThis.__sfnLocalEnded ??= []).push({ endpoint: await endpointOf(client), executionArn });
      return d;
    }
    if (Date.now() > deadline) throw new Error(`${executionArn} is still ${d.status} after ${timeout} ms`);
    // Nothing to skip to (it waits on a token or a command): wait in wall time.
    if (!(skipping && (await skipToNextDeadline(client)).skippedTo)) await sleep(poll);
  }
}

/**
 * Starts an execution and waits for its end (see waitForExecution); on a virtual clock it skips
 * time while it waits (`skipTime: false` leaves the clock alone), as Temporal's client does.
 */
async function startAndWait(client, stateMachineArn, input, { name, timeout, poll, skipTime = true } = {}) {
  if (!stateMachineArn) throw new TypeError("startAndWait: no stateMachineArn");
  const { StartExecutionCommand } = sdk();
  const text = input === undefined ? undefined : typeof input === "string" ? input : JSON.stringify(input);
  const { executionArn } = await client.send(new StartExecutionCommand({ stateMachineArn, input: text, name }));
  return waitForExecution(client, executionArn, { timeout, poll, skipTime });
}

/**
 * Waits until the state `state` of the execution waits for a task token and resolves to it.
 * It asks `sfn-local list-tasks` on the server's database: the API has no call that lists tokens.
 * On a virtual clock it skips time (a Wait before the state) only once everything has settled
 * and the token is not there, so it never skips past the token's own deadlines.
 */
async function waitForTaskToken(server, executionArn, state, { timeout = 30000, poll = 50, skipTime = true } = {}) {
  if (!executionArn) throw new TypeError("waitForTaskToken: no executionArn");
  const deadline = Date.now() + timeout;
  const skipping = skipTime && (await clockNow(server)).clock === "virtual";
  for (;;) {
    if (skipping) await clockCall(server, "settle");
    const listed = JSON.parse(await server.cli("list-tasks", "--execution-arn", executionArn, "--format", "json"));
    const task = listed.tasks.find((t) => t.stateName === state);
    if (task) return task.taskToken;
    const { DescribeExecutionCommand } = sdk();
    const { status } = await sfnClient(server.endpoint).send(new DescribeExecutionCommand({ executionArn }));
    if (TERMINAL.includes(status)) throw new Error(`${executionArn} ended ${status} before ${state} waited for a token`);
    if (Date.now() > deadline) throw new Error(`no task token for state ${state} of ${executionArn} after ${timeout} ms`);
    if (!(skipping && (await skipToNextDeadline(server)).skippedTo)) await sleep(poll);
  }
}

/** Answers a task token: SendTaskFailure with `{error, cause}`, else SendTaskSuccess with `output`. */
async function answerTask(client, taskToken, output = {}, { error, cause } = {}) {
  const { SendTaskSuccessCommand, SendTaskFailureCommand } = sdk();
  if (error !== undefined) {
    await client.send(new SendTaskFailureCommand({ taskToken, error, cause }));
  } else {
    const text = typeof output === "string" ? output : JSON.stringify(output);
    await client.send(new SendTaskSuccessCommand({ taskToken, output: text }));
  }
}

/**
 * Why an execution failed or took a Catch, or null when nothing failed in it: the `why` line of
 * `describe-execution --format text` and, when Lambda code failed, the `handler` lines under it
 * (the handler's error type, message and stack trace, file and line).
 */
function explainExecution(binary, db, executionArn) {
  let text;
  try {
    text = execFileSync(binary, ["describe-execution", "--execution-arn", executionArn, "--format", "text", "--db", db], { encoding: "utf8" });
  } catch {
    return null;
  }
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l.startsWith("why "));
  if (start < 0) return null;
  const block = [lines[start]];
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith("handler ") && !line.startsWith(" ")) break;
    block.push(line);
  }
  const status = lines[0].slice(lines[0].lastIndexOf("(") + 1).replace(/\)$/, "");
  return [`${executionArn} (${status})`, ...block.map((l) => `  ${l}`)].join("\n");
}

/**
 * The explanations of the executions the helpers saw end in a test (`globalThis.__sfnLocalEnded`
 * of its context), one block each, for those that failed or took a Catch; null when none did.
 * `servers` maps endpoints to {db, binary} (serve() records its own; the global setup's comes
 * from SFN_LOCAL_ENDPOINT and SFN_LOCAL_DB).
 */
function explainEnded(ended, servers = {}) {
  const known = { ...servers };
  if (process.env.SFN_LOCAL_ENDPOINT && process.env.SFN_LOCAL_DB) {
    known[process.env.SFN_LOCAL_ENDPOINT] ??= { db: process.env.SFN_LOCAL_DB, binary: binaryPath() };
  }
  const trim = (e) => e.replace(/\/+$/, "");
  const byEndpoint = Object.fromEntries(Object.entries(known).map(([e, s]) => [trim(e), s]));
  const blocks = [];
  for (const { endpoint, executionArn } of ended) {
    const server = byEndpoint[trim(endpoint)];
    const text = server && explainExecution(server.binary, server.db, executionArn);
    if (text && !blocks.includes(text)) blocks.push(text);
  }
  return blocks.length ? `sfn-local executions that failed or took a Catch:\n\n${blocks.join("\n\n")}` : null;
}

/**
 * Writes to `target` the coverage (`sfn-local coverage --format lcov`) of the definition files
 * and templates given to the server (`subs`: their `--sub` flags), run in `rootDir` so the
 * tracefile names them as the project does.
 */
function writeLcov(server, files, subs, rootDir, target) {
  return new Promise((resolve, reject) => {
    const args = ["coverage", "--format", "lcov", "--db", server.db, ...files, ...subs];
    execFile(server.binary, args, { cwd: rootDir }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`sfn-local coverage: ${stderr || err.message}`));
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, stdout);
      resolve();
    });
  });
}

/**
 * A global setup for a test runner: starts a server with `options` (paths relative to `rootDir`),
 * exports SFN_LOCAL_ENDPOINT and SFN_LOCAL_DB to the tests, and resolves to a teardown, which
 * writes the LCOV file `options.lcov` (or $SFN_LOCAL_LCOV) before it stops the server.
 */
async function globalServer(options = {}, rootDir = process.cwd()) {
  const resolved = { ...options, definitions: {} };
  for (const [name, d] of Object.entries(options.definitions ?? {})) {
    resolved.definitions[name] = typeof d === "string" && !d.trimStart().startsWith("{") ? path.resolve(rootDir, d) : d;
  }
  if (options.mockConfig) resolved.mockConfig = path.resolve(rootDir, options.mockConfig);
  resolved.templates = (options.templates ?? []).map((t) => path.resolve(rootDir, t));
  const server = await serve(resolved);
  process.env.SFN_LOCAL_ENDPOINT = server.endpoint;
  process.env.SFN_LOCAL_DB = server.db;
  process.env.SFN_LOCAL_LOG_FILE = path.join(server.dir, "serve.log");
  const lcov = options.lcov ?? process.env.SFN_LOCAL_LCOV;
  // LCOV points at lines of files: the definitions given as files are measured, and the
  // templates' machines (found again with the substitutions they were created with).
  const files = Object.values(options.definitions ?? {})
    .filter((d) => typeof d === "string" && !d.trimStart().startsWith("{"))
    .concat(options.templates ?? []);
  const teardown = async () => {
    try {
      if (lcov && files.length > 0) {
        await writeLcov(server, files, substitutionArgs(options), rootDir, path.resolve(rootDir, lcov));
      }
    } finally {
      await server.stop();
    }
  };
  return { server, teardown };
}

/** A path as it is; a parsed value (an object, or a list of events) written as JSON in `dir`. */
function asFile(value, dir, name) {
  if (typeof value === "string") return value;
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify(Array.isArray(value) ? { events: value } : value));
  return file;
}

/**
 * Replays a recorded execution against `definition` (`sfn-local replay --format json`): the
 * verdict `{identical, divergence: {event, state, what, recorded, replayed, path} | null, ...}`.
 * `history`: a file (the AWS CLI's get-execution-history output, pages concatenated), or the
 * parsed history (`{events: [...]}` or the events, e.g. the SDK's GetExecutionHistory pages'
 * events); `definition`: a file, `template.yaml#LogicalId`, `cdk.out#LogicalId`, or the
 * definition as an object. `writeTest`: a folder to keep an identical replay in as a test.
 */
async function replay(history, definition, { writeTest } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sfn-local-replay-"));
  try {
    const args = ["replay", asFile(history, dir, "history.json")];
    args.push("--definition", asFile(definition, dir, "definition.asl.json"), "--format", "json");
    if (writeTest) args.push("--write-test", writeTest);
    const stdout = await new Promise((resolve, reject) => {
      execFile(binaryPath(), args, { maxBuffer: 64 * 1024 * 1024 }, (err, out, stderr) =>
        err && err.code !== 1 ? reject(new Error(`sfn-local replay: ${stderr || err.message}`)) : resolve(out),
      );
    });
    return JSON.parse(stdout);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

module.exports = {
  ANY_ROLE,
  explainEnded,
  explainExecution,
  globalServer,
  advanceTime,
  answerTask,
  binaryPath,
  clockNow,
  connect,
  createStateMachine,
  replay,
  serve,
  sfnClient,
  skipToNextDeadline,
  startAndWait,
  waitForExecution,
  waitForTaskToken,
};
