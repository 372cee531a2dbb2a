// Histories as a Jest snapshot of Step Functions Local's sees them, against
// `sfn-local serve --compat stepfunctions-local` (SFN_ENDPOINT; tests/compat_sfl.rs starts it
// with this folder's MockConfigFile.json). The committed snapshots state Step Functions
// Local's behaviour: every line was checked against issue #50's rules (each case names the
// rules it shows) and its payloads against orders worked out from them, not taken on trust
// from sfn-local's output:
//  1. data keeps the key order of the text it came from; ResultPath adds a key at the end;
//  2. a caught error's object is {"Error", "Cause"};
//  3. Parameters and ResultSelector: plain keys first in the template's order, then the `.$`
//     keys, among themselves in java.util.HashMap's order of their names;
//  4. numbers with a fraction in Java's Double.toString form (JavaRef.java, java_reference.txt);
//  5. TaskSucceeded carries the result after ResultSelector and ResultPath;
//  6. aws-sdk tasks: resourceType "aws-sdk", resource "SERVICE:ACTION";
//  7. a succeeding Parallel: ParallelStateSucceeded after the last event of the last branch by
//     index, ParallelStateExited after ParallelStateSucceeded;
//  8. a branch's Task failure caught by the Parallel: ParallelStateFailed after the TaskFailed,
//     a TaskStateExited named after the Parallel linked to its entry, no aborted events;
//  9. retries: TaskFailed, then TaskScheduled linked to it; MaxAttempts 3 is 4 attempts.
const { history } = require("./sfn");

test("numbers with a fraction are written as Java writes doubles (rule 4)", async () => {
  expect(await history("Numbers", null, "{}")).toMatchSnapshot();
});

test("TaskSucceeded carries the result after ResultSelector and ResultPath (rules 1, 3, 5)", async () => {
  expect(await history("Sentiment", "Positive", '{"id": 7, "text": "great"}')).toMatchSnapshot();
});

test("a mocked result keeps the order it is written in (rule 1)", async () => {
  expect(await history("Raw", "Positive", '{"text": "great", "id": 7}')).toMatchSnapshot();
});

test("a Parallel of two Lambda Tasks that succeeds (rules 1, 3, 5, 7)", async () => {
  expect(await history("Verify", "HappyPath")).toMatchSnapshot();
});

test("a Parallel whose branch throws, caught by the Parallel (rules 1, 2, 8)", async () => {
  expect(await history("Verify", "AddressFails")).toMatchSnapshot();
});

test("a Task retried three times at once succeeds on its fourth attempt (rule 9)", async () => {
  expect(await history("Retrying", "FourthTime")).toMatchSnapshot();
});

test("Parameters mixing plain and .$ keys, with a StringToJson result (rules 1, 3, 4)", async () => {
  expect(await history("Shape")).toMatchSnapshot();
});

test("nested input objects and an InputPath selection keep their order (rule 1)", async () => {
  expect(await history("Nested")).toMatchSnapshot();
});

test("a mocked aws-sdk Return with fractions (rules 1, 4, 5, 6)", async () => {
  expect(await history("Scores", "Mixed")).toMatchSnapshot();
});
