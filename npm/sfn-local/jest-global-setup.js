// Jest `globalSetup`: starts `sfn-local serve` once for the run and exports its endpoint as
// process.env.SFN_LOCAL_ENDPOINT (and its database as SFN_LOCAL_DB). Options come from the
// project's `globals.sfnLocal` (see index.d.ts); pair it with `sfn-local/jest-global-teardown`.
"use strict";
const { globalServer } = require(".");

module.exports = async function globalSetup(globalConfig, projectConfig) {
  const options = projectConfig?.globals?.sfnLocal ?? {};
  const { server, teardown } = await globalServer(options, projectConfig?.rootDir ?? globalConfig.rootDir);
  // Jest runs the teardown module in this same context.
  globalThis.__SFN_LOCAL__ = { server, teardown };
};
