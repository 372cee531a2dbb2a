// A thin client: VS Code starts the installed `sfn-local lsp` and shows what it says. Every
// rule, message and place comes from sfn-local itself, so the editor and `sfn-local validate`
// in CI always agree.
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");
const { findServer, notFound } = require("./find");

let client;

async function activate(context) {
  const config = vscode.workspace.getConfiguration("sfnLocal");
  const folders = (vscode.workspace.workspaceFolders || []).map((f) => f.uri.fsPath);
  const { command, looked } = findServer(config.get("path"), folders);
  if (!command) {
    vscode.window.showErrorMessage(notFound(looked));
    return;
  }
  const serverOptions = { command, args: ["lsp"] };
  const clientOptions = {
    // Definitions by name, and any JSON or YAML file: the server decides what is a
    // definition or a SAM/CloudFormation template (cdk.out included) and ignores the rest.
    documentSelector: [
      { scheme: "file", pattern: "**/*.asl.{json,yaml,yml}" },
      { scheme: "file", language: "json" },
      { scheme: "file", language: "jsonc" },
      { scheme: "file", language: "yaml" },
    ],
    initializationOptions: { machineType: config.get("machineType") },
  };
  client = new LanguageClient("sfnLocal", "sfn-local", serverOptions, clientOptions);
  context.subscriptions.push(client);
  await client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
