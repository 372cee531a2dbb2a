import type { ChildProcess } from "node:child_process";
import type { DescribeExecutionCommandOutput, SFNClient } from "@aws-sdk/client-sfn";

/**
 * DescribeExecution's answer for an execution that ended (the AWS SDK's output type), with its
 * `output` parsed: `outputJson` is absent when the execution gave no output. Name the output's
 * shape with the type parameter (`startAndWait<{ orderId: string }>(...)`) to have it checked.
 */
export type FinishedExecution<Output = any> = DescribeExecutionCommandOutput & {
  /** `output`, parsed as JSON. */
  outputJson?: Output;
};

/** How `serve` runs; each field maps to a flag of `sfn-local serve`. */
export interface ServeOptions {
  /** `--task` bindings, `MACHINE:STATE=COMMAND`. */
  tasks?: string[];
  /** `--worker` bindings, `MACHINE:STATE=COMMAND`. */
  workers?: string[];
  /** `--mock-config`: Step Functions Local's MockConfigFile. */
  mockConfig?: string;
  /**
   * `--clock`: "virtual" (the default) moves time only when a test asks (`advanceTime`,
   * `skipToNextDeadline`; `startAndWait` skips it), every deadline in AWS's order; "real" is
   * the system clock, scaled by `timeScale`.
   */
  clock?: "virtual" | "real";
  /** `--clock-start`: where a virtual clock starts (RFC 3339). */
  clockStart?: string;
  /** `--seed`: generated names, ARNs and task tokens repeat from run to run. */
  seed?: number;
  /** `--time-scale` on the real clock (0 means the virtual clock). */
  timeScale?: number;
  /** State machines created once the server is up: name -> definition file, JSON text or object. */
  definitions?: Record<string, string | object>;
  /** SAM or CloudFormation templates whose state machines are created at start (`--template`). */
  templates?: string[];
  /** The templates' `${NAME}` values (`--sub NAME=VALUE`), also given to coverage. */
  substitutions?: Record<string, string>;
  /** More `serve` flags, as on a command line. */
  args?: string[];
  env?: Record<string, string>;
  region?: string;
  /** The binary (default: $SFN_LOCAL_BIN, else this platform's package). */
  binary?: string;
  /**
   * Global setups only: at teardown, write the coverage of the `definitions` given as files and
   * of the `templates`' machines (`sfn-local coverage --format lcov`) to this path, relative to
   * the project (default: $SFN_LOCAL_LCOV; none when neither is set).
   */
  lcov?: string;
  /** The folder of the database, ready file and log (default: a fresh temporary one). */
  dir?: string;
  /** Milliseconds to wait for the server (default 30000). */
  startTimeout?: number;
}

export interface Server {
  endpoint: string;
  port: number;
  db: string;
  dir: string;
  /** The binary serving. */
  binary: string;
  process: ChildProcess;
  log(): string;
  stop(timeoutMs?: number): Promise<number | null>;
  cli(...args: string[]): Promise<string>;
  client(): SFNClient;
}

/** The server a global setup started, seen from a test (SFN_LOCAL_ENDPOINT, SFN_LOCAL_DB). */
export function connect(env?: Record<string, string | undefined>): Pick<Server, "endpoint" | "db" | "cli" | "client">;

export const ANY_ROLE: string;
export function binaryPath(): string;
export function serve(options?: ServeOptions): Promise<Server>;
export function globalServer(options?: ServeOptions, rootDir?: string): Promise<{ server: Server; teardown(): Promise<void> }>;
export function sfnClient(endpoint: string, region?: string): SFNClient;
/** Resolves to the new machine's ARN (CreateStateMachine's `stateMachineArn`). */
export function createStateMachine(client: SFNClient, name: string, definition: string | object, roleArn?: string): Promise<string>;
/**
 * ARNs are typed as the AWS SDK's outputs give them (`string | undefined`), so
 * `(await sfn.send(new StartExecutionCommand(...))).executionArn` passes as it is; a missing one
 * is refused at run time.
 */
export function waitForExecution<Output = any>(client: SFNClient, executionArn: string | undefined, opts?: { timeout?: number; poll?: number; skipTime?: boolean }): Promise<FinishedExecution<Output>>;
export function startAndWait<Output = any>(client: SFNClient, stateMachineArn: string | undefined, input?: unknown, opts?: { name?: string; timeout?: number; poll?: number; skipTime?: boolean }): Promise<FinishedExecution<Output>>;
export function waitForTaskToken(server: Pick<Server, "endpoint" | "cli">, executionArn: string | undefined, state: string, opts?: { timeout?: number; poll?: number; skipTime?: boolean }): Promise<string>;

/** Where a server's clock stands (the sfn-local extension `POST /sfn-local/clock`). */
export interface ClockState {
  clock: "virtual" | "real";
  now: string;
  nowMillis: number;
  nextDeadline?: string | null;
  pendingDeadlines?: number;
  /** `skipToNextDeadline` only: the instant it jumped to, null when nothing waited on time. */
  skippedTo?: string | null;
}
/** A server (`serve()`, `connect()`), an SFNClient pointed at one, or its endpoint URL. */
export type ClockTarget = string | { endpoint: string } | SFNClient;
export function clockNow(target: ClockTarget): Promise<ClockState>;
export function advanceTime(target: ClockTarget, duration: string | number): Promise<ClockState>;
export function skipToNextDeadline(target: ClockTarget): Promise<ClockState>;
/**
 * Why an execution failed or took a Catch (the `why` line of `describe-execution --format text`
 * and, for Lambda code, the `handler` lines: error type, message, stack trace), or null when
 * nothing failed in it. `binary` is sfn-local, `db` the server's database.
 */
export function explainExecution(binary: string, db: string, executionArn: string): string | null;
/**
 * The explanations of the executions the helpers saw end in a test, for those that failed or
 * took a Catch (what `sfn-local/jest-environment` and `sfn-local/vitest-setup` add to a failed
 * test's report); null when none did.
 */
export function explainEnded(
  ended: { endpoint: string; executionArn: string }[],
  servers?: Record<string, { db: string; binary: string }>,
): string | null;
export function answerTask(client: SFNClient, taskToken: string, output?: unknown, failure?: { error?: string; cause?: string }): Promise<void>;

/** Where a replay first did something else than the recording (`sfn-local replay`). */
export interface Divergence {
  /** The recorded event's id. */
  event: number;
  state: string | null;
  /** What differs, in a sentence. */
  what: string;
  recorded: string;
  replayed: string;
  /** The states that led there, outermost first. */
  path: string[];
}
/** The verdict of `replay`. */
export interface ReplayVerdict {
  identical: boolean;
  divergence: Divergence | null;
  /** Why the replay could not go on (a part of the recording AWS masked), if so. */
  masked: string | null;
  notCompared: string[];
  recordedEvents: number;
  replayedEvents: number;
  status: string;
}
/** Replays a recorded history (a file, `{events}` or the events) against a definition (a file or an object). */
export function replay(history: string | object | any[], definition: string | object, opts?: { writeTest?: string }): Promise<ReplayVerdict>;
