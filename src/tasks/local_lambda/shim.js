// sfn-local's Node.js runtime for a template's Lambda function: one warm process per function,
// as Lambda keeps a container warm. Lines on stdin are invocations; each answer is one line on
// stdout after MARK; console output goes to stderr (its logs), ended by END after each
// invocation. A thrown error becomes Lambda's error payload (errorType, errorMessage, trace),
// as Lambda's Node.js runtime writes it.
const fs = require("fs");
const path = require("path");
const readline = require("readline");
const url = require("url");

const MARK = "\x1esfn-local:";
const END = "\x1esfn-local:end";
const [codeDir, handlerSpec] = process.argv.slice(1);
const answer = (value) => fs.writeSync(1, MARK + JSON.stringify(value) + "\n");
for (const level of ["log", "info", "debug", "warn", "trace"]) {
  console[level] = (...args) => console.error(...args);
}

function fail(errorType, errorMessage) {
  return Object.assign(new Error(errorMessage), { name: errorType });
}

async function load() {
  const dot = handlerSpec.lastIndexOf(".");
  if (dot < 1) throw fail("Runtime.MalformedHandlerName", `Bad handler ${handlerSpec}`);
  const modulePath = handlerSpec.slice(0, dot);
  const name = handlerSpec.slice(dot + 1);
  const base = path.resolve(codeDir, modulePath);
  const file = [".js", ".mjs", ".cjs"].map((ext) => base + ext).find((f) => fs.existsSync(f));
  if (!file) throw fail("Runtime.ImportModuleError", `Error: Cannot find module '${modulePath}'`);
  let module;
  try {
    module = await import(url.pathToFileURL(file).href);
  } catch (error) {
    throw fail("Runtime.ImportModuleError", `${error.name}: ${error.message}`);
  }
  const handler = module[name] ?? module.default?.[name];
  if (typeof handler !== "function") {
    throw fail("Runtime.HandlerNotFound", `${modulePath}.${name} is undefined or not exported`);
  }
  return handler;
}

function context(request) {
  const name = process.env.AWS_LAMBDA_FUNCTION_NAME;
  return {
    functionName: name,
    functionVersion: "$LATEST",
    invokedFunctionArn: request.invokedFunctionArn,
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    awsRequestId: request.requestId,
    logGroupName: `/aws/lambda/${name}`,
    logStreamName: process.env.AWS_LAMBDA_LOG_STREAM_NAME,
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, request.deadlineMs - Date.now()),
  };
}

function errorPayload(error) {
  if (error instanceof Error || (error && error.name && error.message !== undefined)) {
    return { errorType: error.name, errorMessage: error.message, trace: String(error.stack || "").split("\n") };
  }
  return { errorType: typeof error, errorMessage: String(error), trace: [] };
}

async function invoke(handler, request) {
  const ctx = context(request);
  try {
    const result = handler.length >= 3
      ? await new Promise((resolve, reject) =>
          handler(request.event, ctx, (error, value) => (error ? reject(error) : resolve(value))))
      : await handler(request.event, ctx);
    return { ok: result === undefined ? null : result };
  } catch (error) {
    return { error: errorPayload(error) };
  }
}

async function main() {
  let handler, failed;
  try {
    handler = await load();
  } catch (error) {
    failed = error;
  }
  answer({ ready: true, version: process.versions.node });
  const lines = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {
    const request = JSON.parse(line);
    const reply = failed ? { error: errorPayload(failed) } : await invoke(handler, request);
    process.stderr.write(END + "\n");
    answer(reply);
  }
}

main();
