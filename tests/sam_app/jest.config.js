// The app's Jest suite: sfn-local's global setup serves the template's state machine, whose
// Python and Node.js functions sfn-local runs itself.
module.exports = {
  testEnvironment: "sfn-local/jest-environment",
  globalSetup: "sfn-local/jest-global-setup",
  globalTeardown: "sfn-local/jest-global-teardown",
  globals: { sfnLocal: { timeScale: 0, templates: ["template.yaml"] } },
};
