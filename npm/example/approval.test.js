// Uses only the installed packages: sfn-local (its global setup started the server) and the
// AWS SDK.
const { StartExecutionCommand, ListStateMachinesCommand } = require("@aws-sdk/client-sfn");
const {
  advanceTime,
  answerTask,
  clockNow,
  connect,
  startAndWait,
  waitForExecution,
  waitForTaskToken,
} = require("sfn-local");

// The server the global setup started: its endpoint and database.
const server = connect();
const sfn = server.client();
const arn = "arn:aws:states:us-east-1:123456789012:stateMachine:Approval";

test("the global setup created the state machines", async () => {
  const { stateMachines } = await sfn.send(new ListStateMachinesCommand({}));
  expect((stateMachines ?? []).map((m) => m.name).sort()).toEqual(["Approval", "Greeter", "Reminder"]);
});

test("a template's machine with its substitution", async () => {
  const greeter = "arn:aws:states:us-east-1:123456789012:stateMachine:Greeter";
  const done = await startAndWait(sfn, greeter, { name: "Ada" });
  expect(done.outputJson).toEqual({ greeting: "Hello", name: "Ada" });
});

test("an approval answered with its task token", async () => {
  const { executionArn } = await sfn.send(new StartExecutionCommand({ stateMachineArn: arn, input: '{"order":"o-1"}' }));
  const token = await waitForTaskToken(server, executionArn, "AskForApproval");
  await answerTask(sfn, token, { approved: true });
  const done = await waitForExecution(sfn, executionArn);
  expect([done.status, done.outputJson]).toEqual(["SUCCEEDED", { approved: true }]);
});

test("a refusal fails the execution", async () => {
  const { executionArn } = await sfn.send(new StartExecutionCommand({ stateMachineArn: arn, input: '{"order":"o-2"}' }));
  await answerTask(sfn, await waitForTaskToken(server, executionArn, "AskForApproval"), undefined, { error: "Refused" });
  const done = await waitForExecution(sfn, executionArn);
  expect([done.status, done.error]).toEqual(["FAILED", "Refused"]);
});

test("startAndWait on a machine that ends by itself", async () => {
  // A Wait-only machine from the API, so the test shows startAndWait's whole round trip.
  const { CreateStateMachineCommand } = require("@aws-sdk/client-sfn");
  const definition = JSON.stringify({ StartAt: "W", States: { W: { Type: "Wait", Seconds: 60, End: true } } });
  const { stateMachineArn } = await sfn.send(new CreateStateMachineCommand({ name: "Waits", definition, roleArn: "arn:aws:iam::123456789012:role/r" }));
  const done = await startAndWait(sfn, stateMachineArn, { a: 1 });
  expect([done.status, done.outputJson]).toEqual(["SUCCEEDED", { a: 1 }]);
});

const reminder = "arn:aws:states:us-east-1:123456789012:stateMachine:Reminder";

test("a silent approver is caught by the heartbeat, not the hour's budget", async () => {
  const { executionArn } = await sfn.send(new StartExecutionCommand({ stateMachineArn: reminder, input: '{"order":"o-3"}' }));
  await waitForTaskToken(server, executionArn, "AskForApproval");
  // Nothing moves by itself on the virtual clock: 61 s pass when the test says so.
  await advanceTime(sfn, "61s");
  const done = await waitForExecution(sfn, executionArn);
  expect([done.status, done.outputJson]).toEqual(["SUCCEEDED", "silent"]);
});

test("a heartbeat sent before the advance keeps the approval alive", async () => {
  const { SendTaskHeartbeatCommand, DescribeExecutionCommand } = require("@aws-sdk/client-sfn");
  const { executionArn } = await sfn.send(new StartExecutionCommand({ stateMachineArn: reminder, input: '{"order":"o-4"}' }));
  const token = await waitForTaskToken(server, executionArn, "AskForApproval");
  const before = (await clockNow(server)).nowMillis;
  await advanceTime(sfn, "50s");
  await sfn.send(new SendTaskHeartbeatCommand({ taskToken: token }));
  await advanceTime(sfn, "50s");
  expect((await clockNow(server)).nowMillis - before).toBe(100000);
  expect((await sfn.send(new DescribeExecutionCommand({ executionArn }))).status).toBe("RUNNING");
  await answerTask(sfn, token, { approved: true });
  expect((await waitForExecution(sfn, executionArn)).outputJson).toEqual({ approved: true });
});

test("an approver who beats but never answers runs out of the hour's budget", async () => {
  const { SendTaskHeartbeatCommand, DescribeExecutionCommand } = require("@aws-sdk/client-sfn");
  const { executionArn } = await sfn.send(new StartExecutionCommand({ stateMachineArn: reminder, input: '{"order":"o-5"}' }));
  const token = await waitForTaskToken(server, executionArn, "AskForApproval");
  // Every 50 s a beat: the heartbeat never runs out, the other clock does.
  while ((await sfn.send(new DescribeExecutionCommand({ executionArn }))).status === "RUNNING") {
    await sfn.send(new SendTaskHeartbeatCommand({ taskToken: token }));
    await advanceTime(sfn, "50s");
  }
  expect((await waitForExecution(sfn, executionArn)).outputJson).toBe("late");
});
