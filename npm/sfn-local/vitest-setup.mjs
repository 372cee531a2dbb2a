// Vitest `setupFiles`: a failed test's report also explains each execution the helpers
// (`startAndWait`, `waitForExecution`) saw end in it that failed or took a Catch: its why line
// and, when Lambda code failed, the handler's error and stack trace.
import { beforeEach } from "vitest";
import sfnLocal from "./index.js";

beforeEach((context) => {
  globalThis.__sfnLocalEnded = [];
  context.onTestFailed(({ task }) => {
    const text = sfnLocal.explainEnded(globalThis.__sfnLocalEnded ?? [], globalThis.__sfnLocalServers ?? {});
    if (!text || !task.result) return;
    task.result.errors = [...(task.result.errors ?? []), { name: "sfn-local", message: text, stack: text }];
  });
});
