// Jest `testEnvironment`: Node's, and a failed test's report also explains each execution the
// helpers (`startAndWait`, `waitForExecution`) saw end in it that failed or took a Catch: its why
// line and, when Lambda code failed, the handler's error and stack trace. Without it a test
// fails on `expect(received).toBe(expected)` with "FAILED" and nothing of why.
"use strict";
const { TestEnvironment } = require("jest-environment-node");
const { explainEnded } = require(".");

class SfnLocalEnvironment extends TestEnvironment {
  async handleTestEvent(event, state) {
    if (super.handleTestEvent) await super.handleTestEvent(event, state);
    // The helpers run inside the test's context, whose global this is.
    if (event.name === "test_start") this.global.__sfnLocalEnded = [];
    if (event.name !== "test_done" || event.test.errors.length === 0) return;
    const text = explainEnded(this.global.__sfnLocalEnded ?? [], this.global.__sfnLocalServers ?? {});
    if (!text) return;
    // Its own entry in the test's failure, printed as it is (no JavaScript stack).
    const explained = new Error(text);
    explained.stack = text;
    event.test.errors.push(explained);
  }
}

module.exports = SfnLocalEnvironment;
