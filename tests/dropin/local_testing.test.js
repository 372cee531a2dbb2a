// A Jest suite in the style of those written for Step Functions Local: @aws-sdk/client-sfn
// against the emulator's endpoint (SFN_ENDPOINT), a mocked test case per test
// (`stateMachineArn#TestCase`), assertions on the history. SUITE_DIR is this folder.
const fs = require("fs");
const path = require("path");
const {
  SFNClient,
  CreateStateMachineCommand,
  StartExecutionCommand,
  DescribeExecutionCommand,
  GetExecutionHistoryCommand,
} = require("@aws-sdk/client-sfn");

const here = process.env.SUITE_DIR || __dirname;
const sfn = new SFNClient({
  endpoint: process.env.SFN_ENDPOINT,
  region: "us-east-1",
  credentials: { accessKeyId: "DUMMYIDEXAMPLE", secretAccessKey: "DUMMYEXAMPLEKEY" },
});
let machine;

beforeAll(async () => {
  const definition = fs.readFileSync(path.join(here, "LocalTesting.asl.json"), "utf8");
  ({ stateMachineArn: machine } = await sfn.send(
    new CreateStateMachineCommand({
      name: "LocalTesting",
      definition,
      roleArn: "arn:aws:iam::123456789012:role/DummyRole",
    })
  ));
});

async function runCase(testCase) {
  const input = fs.readFileSync(path.join(here, "events.json"), "utf8");
  const { executionArn } = await sfn.send(
    new StartExecutionCommand({
      stateMachineArn: `${machine}#${testCase}`,
      name: `${testCase}-jest-${Date.now()}`,
      input,
    })
  );
  for (let i = 0; i < 300; i++) {
    const described = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    if (described.status !== "RUNNING") {
      const { events } = await sfn.send(new GetExecutionHistoryCommand({ executionArn, maxResults: 1000 }));
      return { described, events };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${executionArn} is still running`);
}

test("HappyPathTest exits CustomerAddedToFollowup", async () => {
  const { described, events } = await runCase("HappyPathTest");
  expect(described.status).toBe("SUCCEEDED");
  const exited = events.filter(
    (e) => e.type === "TaskStateExited" && e.stateExitedEventDetails.name === "CustomerAddedToFollowup"
  );
  expect(exited).toHaveLength(1);
  expect(JSON.parse(exited[0].stateExitedEventDetails.output).FailedEntryCount).toBe(0);
});

test("RetryOnServiceExceptionTest fails three times, then detectSentiment succeeds", async () => {
  const { described, events } = await runCase("RetryOnServiceExceptionTest");
  expect(described.status).toBe("SUCCEEDED");
  const failed = events.filter(
    (e) => e.type === "TaskFailed" && e.taskFailedEventDetails.error === "InternalServerException"
  );
  expect(failed).toHaveLength(3);
  const succeeded = events.filter(
    (e) => e.type === "TaskSucceeded" && e.taskSucceededEventDetails.resource === "comprehend:detectSentiment"
  );
  expect(succeeded).toHaveLength(1);
  expect(succeeded[0].taskSucceededEventDetails.resourceType).toBe("aws-sdk");
});

test("CustomValidationFailedCatchTest fails the execution", async () => {
  const { described } = await runCase("CustomValidationFailedCatchTest");
  expect(described.status).toBe("FAILED");
  expect(described.error).toBe("ValidationFailed");
});
