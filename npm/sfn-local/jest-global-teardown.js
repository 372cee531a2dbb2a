// Jest `globalTeardown`: stops the server `sfn-local/jest-global-setup` started, as Ctrl-C does.
// With SFN_LOCAL_LOG=1 it prints the server's log first (Jest's teardown does not learn whether
// tests failed; the log's path is in SFN_LOCAL_LOG_FILE meanwhile).
"use strict";

module.exports = async function globalTeardown() {
  const started = globalThis.__SFN_LOCAL__;
  if (!started) return;
  delete globalThis.__SFN_LOCAL__;
  if (process.env.SFN_LOCAL_LOG === "1") process.stderr.write(`sfn-local serve log:\n${started.server.log()}\n`);
  await started.teardown();
};
