// The same example under Vitest (`npx vitest run`): the global setup starts one server for the
// run, with its options as JSON in SFN_LOCAL_OPTIONS (set here, before the setup runs).
process.env.SFN_LOCAL_OPTIONS = JSON.stringify({
  clock: "virtual",
  definitions: { Approval: "approval.asl.json", Reminder: "reminder.asl.json" },
  templates: ["template.yaml"],
  substitutions: { Greeting: "Hello" },
  lcov: "coverage/sfn-local-vitest.lcov",
});

export default {
  test: {
    // approval.test.js uses Jest's globals (test, expect); Vitest provides them with this.
    globals: true,
    globalSetup: ["sfn-local/vitest-global-setup"],
    // A failed test's report also explains its executions that failed or took a Catch.
    setupFiles: ["sfn-local/vitest-setup"],
  },
};
