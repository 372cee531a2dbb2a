// Histories as a Jest snapshot of Step Functions Local's sees them, against
// `sfn-local serve --compat stepfunctions-local` (SFN_ENDPOINT; tests/compat_sfl.rs starts it
// with this folder's MockConfigFile.json). The committed snapshots are written from Step
// Functions Local's behaviour, not recorded from sfn-local: its JSON is a Java program's
// (numbers with a fraction in Double.toString's form, members in java.util.HashMap's order,
// both taken from the JDK: JavaRef.java, java_reference.txt), and a Task's TaskSucceeded
// carries its result after ResultSelector and ResultPath.
const {
  SFNClient,
  CreateStateMachineCommand,
  StartExecutionCommand,
  DescribeExecutionCommand,
  GetExecutionHistoryCommand,
} = require("@aws-sdk/client-sfn");

const sfn = new SFNClient({
  endpoint: process.env.SFN_ENDPOINT,
  region: "us-east-1",
  credentials: { accessKeyId: "DUMMYIDEXAMPLE", secretAccessKey: "DUMMYEXAMPLEKEY" },
});

const analyse = {
  Type: "Task",
  Resource: "arn:aws:states:::lambda:invoke",
  Parameters: { FunctionName: "analyse", Payload: { "text.$": "$.text" } },
  End: true,
};

const machines = {
  // Written as text: 10000000.0 and 100.0 are doubles, 3 an integer.
  Numbers:
    '{"StartAt":"Measure","States":{"Measure":{"Type":"Pass","End":true,' +
    '"Result":{"small":0.00012647535,"big":10000000.0,"hundred":100.0,"count":3,"ratio":0.5}}}}',
  Sentiment: JSON.stringify({
    StartAt: "Analyse",
    States: {
      Analyse: {
        ...analyse,
        ResultSelector: { "sentiment.$": "$.Payload.Sentiment", "score.$": "$.Payload.SentimentScore.Positive" },
        ResultPath: "$.result",
      },
    },
  }),
  Raw: JSON.stringify({ StartAt: "Analyse", States: { Analyse: analyse } }),
};

async function history(name, testCase, input) {
  const { stateMachineArn } = await sfn.send(
    new CreateStateMachineCommand({
      name,
      definition: machines[name],
      roleArn: "arn:aws:iam::123456789012:role/DummyRole",
    })
  );
  const { executionArn } = await sfn.send(
    new StartExecutionCommand({
      stateMachineArn: testCase ? `${stateMachineArn}#${testCase}` : stateMachineArn,
      name: `${name}-1`,
      input,
    })
  );
  for (let i = 0; i < 300; i++) {
    const { status } = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    if (status !== "RUNNING") {
      const { events } = await sfn.send(new GetExecutionHistoryCommand({ executionArn }));
      return events.map(line);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${executionArn} is still running`);
}

// One line per event: its links, type, state, resource and JSON payloads as written.
function line(e) {
  const key = Object.keys(e).find((k) => k.endsWith("EventDetails"));
  const d = key ? e[key] : {};
  const parts = [e.id, e.previousEventId, e.type];
  if (d.name) parts.push(d.name);
  if (d.resourceType) parts.push(`${d.resourceType}:${d.resource}`);
  for (const k of ["input", "parameters", "output"]) {
    if (d[k] !== undefined) parts.push(`${k}=${d[k]}`);
  }
  return parts.join(" ");
}

test("numbers with a fraction are written as Java writes doubles", async () => {
  expect(await history("Numbers", null, "{}")).toMatchSnapshot();
});

test("TaskSucceeded carries the result after ResultSelector and ResultPath", async () => {
  expect(await history("Sentiment", "Positive", '{"id": 7, "text": "great"}')).toMatchSnapshot();
});

// "id" and "text" share a bucket of the 16 (so they keep the order they were put in); the
// members of the result spread over buckets ("ExecutedVersion" 3, "Payload" 5, "StatusCode"
// 12, ...), whatever order the result gave them in.
test("object members follow java.util.HashMap's order", async () => {
  expect(await history("Raw", "Positive", '{"text": "great", "id": 7}')).toMatchSnapshot();
});
