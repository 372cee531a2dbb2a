// An example project's Jest configuration: one sfn-local server for the run, with a state
// machine created at start and Wait states that take no time.
module.exports = {
  testEnvironment: "node",
  globalSetup: "sfn-local/jest-global-setup",
  globalTeardown: "sfn-local/jest-global-teardown",
  globals: {
    sfnLocal: {
      timeScale: 0,
      definitions: { Approval: "approval.asl.json" },
      // A SAM template's machine, its ${Greeting} given as `sam deploy` would take it.
      templates: ["template.yaml"],
      substitutions: { Greeting: "Hello" },
      // The coverage of approval.asl.json and the template's machine, for Codecov or an
      // editor's gutter.
      lcov: "coverage/sfn-local.lcov",
    },
  },
};
