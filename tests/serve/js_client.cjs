// Drives `sfn-local serve` with the AWS SDK for JavaScript v3, unchanged but for the endpoint
// (argv[2]). Run with NODE_PATH pointing at the node_modules that holds @aws-sdk/client-sfn.
const {
  SFNClient, CreateStateMachineCommand, StartExecutionCommand, DescribeExecutionCommand,
  GetExecutionHistoryCommand, StartSyncExecutionCommand, paginateGetExecutionHistory,
} = require("@aws-sdk/client-sfn");
const fs = require("fs");
const assert = require("assert");

const endpoint = process.argv[2];
const here = process.argv[3];
const credentials = { accessKeyId: "test", secretAccessKey: "test" };
const sfn = new SFNClient({ endpoint, region: "us-east-1", credentials });
const role = "arn:aws:iam::123456789012:role/test";

async function final(executionArn) {
  for (let i = 0; i < 600; i++) {
    const d = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    if (d.status !== "RUNNING") return d;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${executionArn} still running`);
}

(async () => {
  const definition = fs.readFileSync(`${here}/pass.asl.json`, "utf8");
  const { stateMachineArn } = await sfn.send(new CreateStateMachineCommand({ name: "Js", definition, roleArn: role }));
  const { executionArn, startDate } = await sfn.send(new StartExecutionCommand({
    stateMachineArn, name: "js-1", input: JSON.stringify({ who: "js" }),
  }));
  assert.ok(startDate instanceof Date);
  const d = await final(executionArn);
  assert.strictEqual(d.status, "SUCCEEDED");
  assert.deepStrictEqual(JSON.parse(d.output), { greeting: "hello js" });
  assert.ok(d.stopDate instanceof Date);

  const types = [];
  for await (const page of paginateGetExecutionHistory({ client: sfn, pageSize: 2 }, { executionArn })) {
    types.push(...page.events.map((e) => e.type));
  }
  const whole = (await sfn.send(new GetExecutionHistoryCommand({ executionArn }))).events.map((e) => e.type);
  assert.deepStrictEqual(types, whole);
  assert.strictEqual(types[types.length - 1], "ExecutionSucceeded");

  try {
    await sfn.send(new DescribeExecutionCommand({ executionArn: executionArn + "-nope" }));
    assert.fail("no error");
  } catch (e) {
    assert.strictEqual(e.name, "ExecutionDoesNotExist", String(e));
    assert.strictEqual(e.$metadata.httpStatusCode, 400);
  }

  // StartSyncExecution (the SDK's sync- host prefix is turned off for a local endpoint).
  const sync = new SFNClient({ endpoint, region: "us-east-1", credentials, disableHostPrefix: true });
  const x = await sync.send(new CreateStateMachineCommand({ name: "JsExpress", definition, roleArn: role, type: "EXPRESS" }));
  const r = await sync.send(new StartSyncExecutionCommand({ stateMachineArn: x.stateMachineArn, input: '{"who":"sync"}' }));
  assert.strictEqual(r.status, "SUCCEEDED");
  assert.deepStrictEqual(JSON.parse(r.output), { greeting: "hello sync" });
  console.log("js: all checks passed");
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
