// Vitest `globalSetup`: starts `sfn-local serve` once for the run, exports its endpoint as
// process.env.SFN_LOCAL_ENDPOINT and to `inject("sfnLocalEndpoint")`, and stops it at the end.
// Options: JSON in SFN_LOCAL_OPTIONS (see index.d.ts), or write your own setup with
// `globalServer(options)` from "sfn-local".
"use strict";
const { globalServer } = require(".");

module.exports = async function setup(project) {
  const options = process.env.SFN_LOCAL_OPTIONS ? JSON.parse(process.env.SFN_LOCAL_OPTIONS) : {};
  const root = project?.config?.root ?? process.cwd();
  const { server, teardown } = await globalServer(options, root);
  project?.provide?.("sfnLocalEndpoint", server.endpoint);
  return teardown;
};
