// The same machines against `sfn-local serve` in its default mode (AWS's behaviour): each of
// issue #50's rules that differs from AWS applies only under --compat stepfunctions-local.
// Rules 1 and 2 (source key order, {"Error", "Cause"}) are AWS's own behaviour too.
const { history } = require("./sfn");

const find = (events, pattern) => {
  const e = events.find((l) => pattern.test(l));
  if (!e) throw new Error(`no event matching ${pattern} in\n${events.join("\n")}`);
  return e;
};
// An event's id and the id it links to.
const links = (event) => event.split(" ").slice(0, 2).map(Number);

test("Parameters keep the template's order (rule 3 is the emulator's)", async () => {
  const events = await history("Shape");
  expect(find(events, /PassStateExited/)).toContain(
    'output={"Payload":{"id":7,"b":2.5},"FunctionName":"HelloWorldFunction","Message":"Your order shipped",' +
      '"EmailAddress":"jane@example.com","Entries":[{"Detail":"order","DetailType":"shipped","Source":"shop"}],' +
      '"Nested":{"b":2.5,"a":1},"parsed":{"zeta":1,"alpha":{"y":0.5,"x":2}}}'
  );
});

test("a succeeding Parallel links both its last events to the last branch event (rule 7 is the emulator's)", async () => {
  const events = await history("Verify", "HappyPath");
  // The first branch (one state more) writes the last branch event.
  const [lastBranchEvent] = links(find(events, /PassStateExited Recorded/));
  expect(links(find(events, /ParallelStateSucceeded/))[1]).toBe(lastBranchEvent);
  expect(links(find(events, /ParallelStateExited Verify/))[1]).toBe(lastBranchEvent);
});

test("a caught branch failure aborts the other branch and exits as a Parallel (rule 8 is the emulator's)", async () => {
  const events = await history("Verify", "AddressFails");
  const [failed] = links(find(events, /TaskFailed/));
  expect(links(find(events, /TaskStateAborted/))[1]).toBe(failed);
  // The other branch is aborted: its Pass state never exits.
  expect(events.some((l) => /PassStateExited Recorded/.test(l))).toBe(false);
  const [parallelFailed] = links(find(events, /ParallelStateFailed/));
  const [, exitedAfter] = links(find(events, /ParallelStateExited Verify/));
  expect(exitedAfter).toBe(parallelFailed);
  expect(events.some((l) => / TaskStateExited Verify /.test(l))).toBe(false);
  expect(find(events, /ParallelStateExited Verify/)).toContain(
    ',"error":{"Error":"AddressValidationError","Cause":"zip code not found"}}'
  );
});

test("numbers stay as JSON writes them, aws-sdk events name AWS's resource, TaskSucceeded the raw result (rules 4, 5, 6 are the emulator's)", async () => {
  const events = await history("Scores", "Mixed");
  expect(find(events, /TaskScheduled/)).toContain('aws-sdk:comprehend/detectSentiment parameters={"Text":"great","LanguageCode":"en"}');
  expect(find(events, /TaskSucceeded/)).toContain(
    'output={"Sentiment":"POSITIVE","SentimentScore":{"Mixed":0.00012647535,"Positive":0.9951454515,"Neutral":0.0047,"Negative":0.0000123}}'
  );
});
