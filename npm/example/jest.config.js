// An example project's Jest configuration: one sfn-local server for the run, with state
// machines created at start, on a virtual clock: time moves only when a test asks
// (advanceTime, skipToNextDeadline) or waits for an end (startAndWait skips it), so a day's Wait
// takes no time and every deadline keeps AWS's order.
module.exports = {
  // Node's environment; a failed test's report also explains its executions that failed or
  // took a Catch (why, and a Lambda handler's error and stack trace).
  testEnvironment: "sfn-local/jest-environment",
  globalSetup: "sfn-local/jest-global-setup",
  globalTeardown: "sfn-local/jest-global-teardown",
  globals: {
    sfnLocal: {
      clock: "virtual",
      definitions: { Approval: "approval.asl.json", Reminder: "reminder.asl.json" },
      // A SAM template's machine, its ${Greeting} given as `sam deploy` would take it.
      templates: ["template.yaml"],
      substitutions: { Greeting: "Hello" },
      // The coverage of approval.asl.json and the template's machine, for Codecov or an
      // editor's gutter.
      lcov: "coverage/sfn-local.lcov",
    },
  },
};
