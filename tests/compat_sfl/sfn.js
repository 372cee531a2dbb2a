// Shared by the Jest files of this folder: the machines, and their histories read through
// @aws-sdk/client-sfn from the server at SFN_ENDPOINT (tests/compat_sfl.rs starts it with this
// folder's MockConfigFile.json, with or without --compat stepfunctions-local).
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

// A Lambda Task whose Parameters put a `.$` key before or after the plain one.
const check = (functionName, payloadPath, resultKey, dollarFirst) => ({
  Type: "Task",
  Resource: "arn:aws:states:::lambda:invoke",
  Parameters: dollarFirst
    ? { "Payload.$": payloadPath, FunctionName: functionName }
    : { FunctionName: functionName, "Payload.$": payloadPath },
  ResultSelector: { [`${resultKey}.$`]: "$.Payload" },
  End: true,
});

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
  // A Parallel of two Lambda Tasks; the mock case decides whether CheckAddress throws.
  Verify: JSON.stringify({
    StartAt: "Verify",
    States: {
      Verify: {
        Type: "Parallel",
        Branches: [
          // The first branch has one more state, so that it ends after the second.
          {
            StartAt: "CheckIdentity",
            States: {
              CheckIdentity: { ...check("check-identity", "$.identity", "identity", true), End: undefined, Next: "Recorded" },
              Recorded: { Type: "Pass", End: true },
            },
          },
          { StartAt: "CheckAddress", States: { CheckAddress: check("check-address", "$.address", "address", false) } },
        ],
        ResultSelector: { "identityResult.$": "$[0].identity", "addressResult.$": "$[1].address" },
        ResultPath: "$.results",
        Catch: [{ ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: "Rejected" }],
        Next: "Approved",
      },
      Approved: { Type: "Pass", End: true },
      Rejected: { Type: "Pass", End: true },
    },
  }),
  Retrying: JSON.stringify({
    StartAt: "CheckIdentity",
    States: {
      CheckIdentity: {
        Type: "Task",
        Resource: "arn:aws:states:::lambda:invoke",
        Parameters: { FunctionName: "check-identity", "Payload.$": "$" },
        Retry: [{ ErrorEquals: ["Lambda.ServiceException"], IntervalSeconds: 0, MaxAttempts: 3 }],
        End: true,
      },
    },
  }),
  Shape: JSON.stringify({
    StartAt: "Shape",
    States: {
      Shape: {
        Type: "Pass",
        Parameters: {
          "Payload.$": "$.order",
          FunctionName: "HelloWorldFunction",
          Message: "Your order shipped",
          "EmailAddress.$": "$.email",
          Entries: [{ Detail: "order", DetailType: "shipped", Source: "shop" }],
          Nested: { "b.$": "$.order.b", a: 1 },
          "parsed.$": "States.StringToJson($.json)",
        },
        End: true,
      },
    },
  }),
  Nested: JSON.stringify({
    StartAt: "Select",
    States: { Select: { Type: "Pass", InputPath: "$.customer.address", ResultPath: "$.selected", End: true } },
  }),
  Scores: JSON.stringify({
    StartAt: "DetectSentiment",
    States: {
      DetectSentiment: {
        Type: "Task",
        Resource: "arn:aws:states:::aws-sdk:comprehend:detectSentiment",
        Parameters: { "Text.$": "$.text", LanguageCode: "en" },
        ResultPath: "$.sentiment",
        End: true,
      },
    },
  }),
};

// The inputs, as text: their key order is part of what is checked.
const customer =
  '{"firstname":"Jane","lastname":"Doe","identity":{"email":"jane@example.com","ssn":"123-45-6789"},' +
  '"address":{"street":"1 Main St","city":"Springfield","state":"IL","zip":"62701"},"comments":"none"}';

const inputs = {
  Verify: customer,
  Retrying: '{"name":"Jane"}',
  Shape: '{"order":{"id":7,"b":2.5},"email":"jane@example.com","json":"{\\"zeta\\":1,\\"alpha\\":{\\"y\\":0.5,\\"x\\":2}}"}',
  Nested: `{"customer":${customer}}`,
  Scores: '{"text":"great"}',
};

// Each machine is created once; its executions are counted for their names.
const created = {};
let executions = 0;

async function machineArn(name) {
  if (!created[name]) {
    const { stateMachineArn } = await sfn.send(
      new CreateStateMachineCommand({
        name,
        definition: machines[name],
        roleArn: "arn:aws:iam::123456789012:role/DummyRole",
      })
    );
    created[name] = stateMachineArn;
  }
  return created[name];
}

// The history of one execution of machine `name` (mock case `testCase`, or none; the input
// given, or the machine's own), one line per event (see `line`).
async function history(name, testCase, input) {
  const stateMachineArn = await machineArn(name);
  executions += 1;
  const { executionArn } = await sfn.send(
    new StartExecutionCommand({
      stateMachineArn: testCase ? `${stateMachineArn}#${testCase}` : stateMachineArn,
      name: `${name}-${executions}`,
      input: input === undefined ? inputs[name] : input,
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

// One line per event: its links, type, state, resource, error and JSON payloads as written.
function line(e) {
  const key = Object.keys(e).find((k) => k.endsWith("EventDetails"));
  const d = key ? e[key] : {};
  const parts = [e.id, e.previousEventId, e.type];
  if (d.name) parts.push(d.name);
  if (d.resourceType) parts.push(`${d.resourceType}/${d.resource}`);
  if (d.error) parts.push(`error=${d.error}`);
  for (const k of ["input", "parameters", "output"]) {
    if (d[k] !== undefined) parts.push(`${k}=${d[k]}`);
  }
  return parts.join(" ");
}

module.exports = { history };
