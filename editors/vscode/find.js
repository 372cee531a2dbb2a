// Which sfn-local the extension runs. The `sfnLocal.path` setting when it is set; else one
// installed in the workspace (npm's `node_modules/.bin`, a project's `.venv` or `venv`), then
// the activated virtual environment (`VIRTUAL_ENV`), then `PATH`. VS Code started from a desktop
// launcher sees neither the project's `node_modules/.bin` nor an activated venv on its PATH,
// so the workspace is searched first. Pure (no `vscode` import), so tests run it under Node.
const fs = require("fs");
const path = require("path");

const WINDOWS = process.platform === "win32";
const NAMES = WINDOWS ? ["sfn-local.cmd", "sfn-local.exe", "sfn-local"] : ["sfn-local"];

function executable(file) {
  try {
    fs.accessSync(file, WINDOWS ? fs.constants.F_OK : fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

// The folders to look in, in order, each with why it is looked at.
function places(folders, env) {
  const bin = WINDOWS ? "Scripts" : "bin";
  const out = [];
  for (const folder of folders) {
    out.push(path.join(folder, "node_modules", ".bin"));
    out.push(path.join(folder, ".venv", bin));
    out.push(path.join(folder, "venv", bin));
  }
  if (env.VIRTUAL_ENV) out.push(path.join(env.VIRTUAL_ENV, bin));
  for (const dir of (env.PATH || "").split(path.delimiter)) if (dir) out.push(dir);
  return out;
}

// `{ command, looked }`: the binary to run (null when none was found) and where it looked.
function findServer(setting, folders, env = process.env) {
  if (setting && setting !== "sfn-local") return { command: setting, looked: [setting] };
  const looked = places(folders, env);
  for (const dir of looked) {
    for (const name of NAMES) {
      const file = path.join(dir, name);
      if (executable(file)) return { command: file, looked };
    }
  }
  return { command: null, looked };
}

// What the editor says when there is none.
function notFound(looked) {
  return (
    "sfn-local was not found (looked in the workspace's node_modules/.bin, .venv and venv, " +
    "the activated virtual environment and PATH: " +
    looked.join(", ") +
    "). Install it in the project (npm i -D sfn-local, or pip install sfn-local in its venv) " +
    "or set sfnLocal.path to the binary."
  );
}

module.exports = { findServer, notFound };
