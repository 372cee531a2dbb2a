// The order workflow end to end: its Lambda functions run as they are, with no binding.
const { GetExecutionHistoryCommand } = require("@aws-sdk/client-sfn");
const { connect, startAndWait } = require("sfn-local");

const sfn = connect().client();
const orders = "arn:aws:states:us-east-1:123456789012:stateMachine:orders";

test("a paid order is charged, shipped and notified", async () => {
  const done = await startAndWait(sfn, orders, { orderId: "o-1", amount: 42, card: "4111111111111111" });
  expect(done.status).toBe("SUCCEEDED");
  expect(done.outputJson.charge).toEqual({ charged: 42 });
  expect(done.outputJson.notification.by).toBe("NotifyFunction");
});

test("a declined card fails with the function's error name", async () => {
  const done = await startAndWait(sfn, orders, { orderId: "o-2", amount: 1, card: "4000000000000000" });
  expect([done.status, done.error]).toEqual(["FAILED", "OrderDeclined"]);
  const { events } = await sfn.send(new GetExecutionHistoryCommand({ executionArn: done.executionArn }));
  const failed = (events ?? []).filter((e) => e.type === "TaskFailed").map((e) => e.taskFailedEventDetails?.error);
  expect(failed).toEqual(["CardDeclined"]);
});
