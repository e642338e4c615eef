// Delegated work seen through an official TypeScript SDK client: the checks shared by
// probes/jobs_sdk1.mjs and probes/jobs_sdk2.mjs.
//
// The server under test is `<target> [--profile P] --workspace DIR mcp serve --allow-write
// --allow-approvals` on a project trusted at `workspace`, whose default model is the
// `scripted` provider replaying conformance/shadowcode_conformance/fixtures/scripts/conformance_jobs.yaml. The probe delegates a
// Build task (read, write, one command approved through shadow_approve, a verification
// command approved through the target's own `approve ID` command), rolls it back, runs an
// approved shadow_test job and checks that it made no model request (by counting the lines
// of the model's request log, given with --request-log), and checks the permission ceiling
// of shadow_run. A second connection proves that approvals and jobs stay with their owner.
//
// The CLI of the target is the server command up to `mcp serve`, so `<target> --workspace
// DIR approve ID` is run with the same program, profile and workspace.

import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

import {
  CLOSE_GRACE_MS,
  CheckFailure,
  EXIT_CHECK_FAILED,
  EXIT_USAGE,
  ProbeRun,
  UsageError,
  collectTail,
  expect,
  guardProbe,
  jsonEqual,
  workspaceFromArgs,
} from "./harness.mjs";

/** The scripted Build task; keep in step with conformance/shadowcode_conformance/fixtures/scripts/conformance_jobs.yaml. */
export const BUILD = Object.freeze({
  prompt: "conformance build: rewrite the store module and check it",
  readPath: "README.md",
  writePath: "notebook/store.py",
  marker: "conformance-write-5e1c",
  firstArgv: Object.freeze(["python3", "-c", "print('conformance command ran')"]),
  firstOutput: "conformance command ran",
  verifyArgv: Object.freeze(["grep", "-c", "conformance-write-5e1c", "notebook/store.py"]),
  modelRequests: 5,
});

/** Prompts answered at once by the script. */
export const QUICK_PROMPT = "conformance quick: nothing to change";

/** The test job's command: known output and a non-zero status, so both are seen to be real. */
export const TEST_MARKER = "conformance-test-output-9b2d";
export const TEST_EXIT_CODE = 3;
export const TEST_COMMAND = Object.freeze([
  "python3",
  "-c",
  `print('${TEST_MARKER}'); raise SystemExit(${TEST_EXIT_CODE})`,
]);

const DEFAULT_TIMEOUT_MS = 120000;
const WAIT_STEP_MS = 100;
const WAIT_BOUND_MS = 45000;
const CLI_BOUND_MS = 30000;
const EOF_EXIT_WAIT_MS = 15000;
const MAX_EVENT_PAGES = 40;
const FINISHED = new Set(["done", "failed", "cancelled", "interrupted"]);

function short(value, limit = 300) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  if (text === undefined) return String(value);
  return text.length > limit ? `${text.slice(0, limit)}...` : text;
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Parse `[--timeout-ms N] [--request-log FILE] -- CMD ARG...`.
 *
 * @returns {{timeoutMs: number, requestLog: string|undefined, command: string, args: string[]}}
 * @throws {UsageError} on anything else
 */
export function parseJobsArgs(argv) {
  let timeoutMs = DEFAULT_TIMEOUT_MS;
  let requestLog;
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") break;
    if (arg === "--timeout-ms") {
      const value = Number(argv[++i]);
      if (!Number.isInteger(value) || value <= 0) throw new UsageError("--timeout-ms needs a positive integer");
      timeoutMs = value;
    } else if (arg === "--request-log") {
      requestLog = argv[++i];
      if (!requestLog) throw new UsageError("--request-log needs a file");
    } else {
      throw new UsageError(`unknown argument: ${arg}`);
    }
  }
  const rest = argv.slice(i + 1);
  if (i >= argv.length || rest.length === 0) throw new UsageError("missing `-- CMD ARG...`");
  return { timeoutMs, requestLog, command: rest[0], args: rest.slice(1) };
}

/** Parse arguments, printing a usage error and exiting 2 on failure. */
export function parseJobsOrExit(meta, argv) {
  try {
    return parseJobsArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`usage: node ${meta.probe}.mjs [--timeout-ms N] [--request-log FILE] -- CMD ARG...\n${err.message}\n`);
    process.exit(EXIT_USAGE);
  }
}

/**
 * The target's CLI argv for `verb...`: the server command up to its `mcp serve`.
 *
 * @throws {UsageError} when the server command has no `mcp serve`
 */
export function cliArgv(options, ...verb) {
  const all = [options.command, ...options.args];
  for (let i = all.length - 2; i >= 1; i--) {
    if (all[i] === "mcp" && all[i + 1] === "serve") return [...all.slice(0, i), ...verb];
  }
  throw new UsageError("the server command does not contain `mcp serve`");
}

/** Run a CLI command of the target within `boundMs`; resolves `{code, signal, stdout, stderr}`. */
export function runCli(argv, boundMs) {
  return new Promise((resolve) => {
    execFile(
      argv[0],
      argv.slice(1),
      { timeout: boundMs, killSignal: "SIGKILL", maxBuffer: 4 * 1024 * 1024, env: process.env, encoding: "utf8" },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : null) : 0;
        resolve({ code, signal: err?.signal ?? null, stdout: stdout ?? "", stderr: stderr ?? "" });
      },
    );
  });
}

/** Non-empty lines of the request log (0 when it does not exist yet); with `taskId`, that task's lines only. */
export function countLines(file, taskId) {
  if (!file || !existsSync(file)) return 0;
  const lines = readFileSync(file, "utf8").split("\n").filter((line) => line.trim() !== "");
  if (taskId === undefined) return lines.length;
  return lines.filter((line) => {
    try {
      return JSON.parse(line)?.task_id === taskId;
    } catch {
      return false;
    }
  }).length;
}

function textOf(result) {
  return (result?.content ?? []).filter((b) => b?.type === "text").map((b) => b.text).join(" ");
}

/** A connected session's tool calls, with the result split into error flag, object and text. */
class Tools {
  constructor(api, label) {
    this.api = api;
    this.label = label;
  }

  async call(name, args) {
    const result = await this.api.callTool(name, args);
    const sc = result?.structuredContent;
    return { isError: result?.isError === true, sc: sc && typeof sc === "object" ? sc : {}, text: textOf(result) };
  }

  async ok(name, args) {
    const reply = await this.call(name, args);
    if (reply.isError) throw new CheckFailure(`${this.label}: ${name} ${short(args)} answered isError: ${short(reply.text)}`);
    return reply.sc;
  }

  async refused(name, args, why) {
    const reply = await this.call(name, args);
    if (!reply.isError) throw new CheckFailure(`${this.label}: ${name} ${short(args)} succeeded although ${why}: ${short(reply.sc)}`);
    return reply.text;
  }

  /** One job with all its events (pages followed) and its pending approvals. */
  async job(jobId) {
    const first = await this.ok("shadow_jobs", { action: "get", job_id: jobId });
    const events = [...(first.events ?? [])];
    let cursor = first.next_cursor;
    for (let page = 0; cursor !== null && cursor !== undefined && page < MAX_EVENT_PAGES; page++) {
      const next = await this.ok("shadow_jobs", { action: "get", job_id: jobId, cursor: String(cursor) });
      events.push(...(next.events ?? []));
      cursor = next.next_cursor;
    }
    return { job: first.job ?? {}, events, pending: first.pending_approvals ?? [] };
  }

  /** Poll the job until `predicate(state)` holds; throws after `boundMs`. */
  async waitJob(run, jobId, predicate, what, boundMs = WAIT_BOUND_MS) {
    const until = Date.now() + Math.min(boundMs, run.remainingMs());
    let state;
    while (Date.now() < until) {
      state = await this.job(jobId);
      if (predicate(state)) return state;
      await pause(WAIT_STEP_MS);
    }
    throw new CheckFailure(`job ${jobId}: ${what} did not happen within ${boundMs} ms (status ${short(state?.job?.status)})`);
  }
}

const argvOf = (approval) => approval?.action?.argv ?? approval?.argv;
const cwdOf = (approval) => approval?.action?.cwd ?? approval?.cwd;
const commandResults = (events) =>
  events.map((e) => e?.data ?? {}).filter((d) => Array.isArray(d.argv) && typeof d.exit_code === "number");
const toolCalls = (events, name) => events.filter((e) => e?.data?.name === name);

/** A stand-in recorded when an earlier step did not produce what a check needs. */
function need(value, what) {
  if (value === undefined || value === null) throw new CheckFailure(`skipped: ${what} is missing (an earlier check failed)`);
  return value;
}

/**
 * The job checks, on an open primary session.
 *
 * @param {ProbeRun} run the recorder
 * @param {Tools} s the primary session
 * @param {object} ctx `{options, workspace, openSecond: () => Promise<session>}`
 */
async function runJobChecks(run, s, ctx) {
  const { options, workspace } = ctx;
  const ids = {};
  const writeFile = path.join(workspace, BUILD.writePath);
  const original = existsSync(writeFile) ? readFileSync(writeFile, "utf8") : null;

  await run.check("run_default_level_read_only", ["SRV-10", "SRV-15"], async () => {
    const job = await s.ok("shadow_run", { prompt: QUICK_PROMPT });
    expect(typeof job.job_id === "string" && job.job_id !== "", `no job id: ${short(job)}`);
    ids.quickDefault = job.job_id;
    expect(job.permission_level === "read_only", `permission_level ${short(job.permission_level)} without asking`);
    expect(!FINISHED.has(job.status), `the submission already claims status ${short(job.status)}`);
    return `${job.job_id} ${job.status} at read_only`;
  });

  await run.check("run_elevated_lowered_to_workspace", ["SRV-10"], async () => {
    const job = await s.ok("shadow_run", { prompt: QUICK_PROMPT, permission_level: "elevated" });
    ids.quickElevated = job.job_id;
    expect(job.permission_level === "workspace", `elevated on a workspace project ran at ${short(job.permission_level)}`);
    const said = JSON.stringify(job.notes ?? job);
    expect(/lower/i.test(said) && said.includes("elevated"), `the answer does not say it was lowered: ${short(job)}`);
    return short(job.notes ?? job, 200);
  });

  await run.check("quick_jobs_finish", ["SRV-15", "SRV-16", "ENG-04"], async () => {
    for (const id of [need(ids.quickDefault, "the read_only job"), need(ids.quickElevated, "the lowered job")]) {
      const state = await s.waitJob(run, id, (st) => FINISHED.has(st.job.status), "finishing");
      expect(state.job.status === "done", `job ${id} ended ${state.job.status}: ${short(state.job.error)}`);
    }
    const status = await s.ok("shadow_status", {});
    expect(status.project?.level === "workspace", `the project's level changed to ${short(status.project?.level)}`);
    return "both done; the project's configured level is unchanged";
  });

  let firstApproval;
  await run.check("build_job_reads_and_writes", ["ENG-04", "ENG-06", "SRV-15"], async () => {
    expect(original !== null, `${BUILD.writePath} is missing from the sample project`);
    const job = await s.ok("shadow_run", { prompt: BUILD.prompt, permission_level: "workspace" });
    ids.build = job.job_id;
    expect(job.permission_level === "workspace", `ran at ${short(job.permission_level)}`);
    const state = await s.waitJob(run, ids.build, (st) => st.pending.length > 0 || FINISHED.has(st.job.status), "an approval request");
    expect(state.pending.length === 1, `expected one pending approval, job ${state.job.status}: ${short(state.pending)}`);
    firstApproval = state.pending[0];
    expect(toolCalls(state.events, "read_file").length > 0, "no read_file call among the job's events");
    expect(toolCalls(state.events, "write_file").length > 0, "no write_file call among the job's events");
    const now = readFileSync(writeFile, "utf8");
    expect(now.includes(BUILD.marker), `${BUILD.writePath} was not written: ${short(now, 120)}`);
    return `job ${ids.build} read ${BUILD.readPath}, wrote ${BUILD.writePath}, waits on ${firstApproval.id}`;
  });

  await run.check("approval_names_exact_command", ["ENG-07", "SRV-16"], () => {
    const a = need(firstApproval, "the build job's approval");
    expect(jsonEqual(argvOf(a), [...BUILD.firstArgv]), `argv ${short(argvOf(a))}`);
    expect(cwdOf(a) === workspace, `cwd ${short(cwdOf(a))}, expected ${workspace}`);
    return `${short(argvOf(a))} in ${cwdOf(a)}`;
  });

  await run.check("other_owner_cannot_approve_or_see", ["SRV-11", "SRV-16"], async () => {
    const a = need(firstApproval, "the build job's approval");
    const second = await ctx.openSecond();
    try {
      const t = new Tools(second.api, "second connection");
      const own = await t.ok("shadow_run", { prompt: QUICK_PROMPT });
      await t.refused("shadow_approve", { approval_id: a.id, decision: "approve" }, "the approval belongs to another connection");
      await t.refused("shadow_approve", { approval_id: a.id, decision: "deny" }, "the approval belongs to another connection");
      await t.refused("shadow_jobs", { action: "get", job_id: ids.build }, "the job belongs to another connection");
      await t.refused("shadow_jobs", { action: "cancel", job_id: ids.build }, "the job belongs to another connection");
      const listed = (await t.ok("shadow_jobs", { action: "list" })).jobs ?? [];
      expect(!listed.some((j) => j?.id === ids.build), "the second connection lists the first one's job");
      expect(listed.some((j) => j?.id === own.job_id), "the second connection does not list its own job");
      await t.waitJob(run, own.job_id, (st) => FINISHED.has(st.job.status), "finishing");
    } finally {
      await second.close();
    }
    const state = await s.job(ids.build);
    expect(state.pending.some((p) => p.id === a.id), `approval ${a.id} is no longer pending after the other owner's attempts`);
    return "approve, deny, get and cancel refused; the approval is still pending";
  });

  await run.check("approve_unknown_id_refused", ["SRV-11"], async () => {
    const text = await s.refused("shadow_approve", { approval_id: "appr_000000000000", decision: "approve" }, "no such approval exists");
    return short(text, 160);
  });

  let secondApproval;
  await run.check("approve_through_shadow_approve", ["SRV-11", "ENG-07"], async () => {
    const a = need(firstApproval, "the build job's approval");
    const done = await s.ok("shadow_approve", { approval_id: a.id, decision: "approve" });
    const status = done.approval?.status ?? done.status;
    expect(status === "approved", `approval status ${short(status)}`);
    await run.bounded(s.refused("shadow_approve", { approval_id: a.id, decision: "approve" }, "it is already approved"), "re-approve");
    const state = await s.waitJob(run, ids.build, (st) => st.pending.some((p) => p.id !== a.id) || FINISHED.has(st.job.status), "the second approval");
    secondApproval = state.pending.find((p) => p.id !== a.id);
    expect(secondApproval, `no second approval; job ${state.job.status}: ${short(state.job.error)}`);
    const first = commandResults(state.events).find((r) => jsonEqual(r.argv, [...BUILD.firstArgv]));
    expect(first && first.exit_code === 0 && String(first.output ?? "").includes(BUILD.firstOutput), `first command result: ${short(first)}`);
    return `${a.id} approved; the command ran (exit 0)`;
  });

  await run.check("approve_through_cli", ["ENG-07"], async () => {
    const a = need(secondApproval, "the verification approval");
    expect(jsonEqual(argvOf(a), [...BUILD.verifyArgv]) && cwdOf(a) === workspace, `second approval: ${short(a)}`);
    const argv = cliArgv(options, "approve", a.id);
    const out = await runCli(argv, Math.min(CLI_BOUND_MS, run.remainingMs()));
    expect(out.code === 0, `\`approve ${a.id}\` exited ${out.code} (signal ${out.signal}): ${short(out.stderr)}`);
    return `\`approve ${a.id}\` exited 0`;
  });

  await run.check("build_job_done_with_verified_write", ["ENG-04", "ENG-07", "SRV-16"], async () => {
    need(secondApproval, "the verification approval");
    const state = await s.waitJob(run, ids.build, (st) => FINISHED.has(st.job.status), "finishing");
    expect(state.job.status === "done", `job ended ${state.job.status}: ${short(state.job.error)}`);
    const verify = commandResults(state.events).find((r) => jsonEqual(r.argv, [...BUILD.verifyArgv]));
    expect(verify, "no result of the verification command among the events");
    expect(verify.exit_code === 0 && String(verify.output ?? "").trim() === "1", `verification: ${short(verify)}`);
    return "the verification command found the written marker";
  });

  await run.check("build_model_requests_logged", ["ENG-05"], () => {
    need(ids.build, "the build job");
    expect(options.requestLog, "no --request-log given");
    const logged = countLines(options.requestLog, ids.build);
    expect(logged === BUILD.modelRequests, `the request log holds ${logged} line(s) of the build job, expected ${BUILD.modelRequests}`);
    return `${logged} model requests logged for the build job`;
  });

  await run.check("why_shows_the_write", ["SRV-19", "ENG-06"], async () => {
    const why = await s.ok("shadow_why", { path: BUILD.writePath });
    const entries = why.entries ?? [];
    expect(entries.some((e) => e?.task_id === need(ids.build, "the build job")), `no entry of ${ids.build}: ${short(entries)}`);
    return `${entries.length} entr(ies) for ${BUILD.writePath}`;
  });

  await run.check("checkpoint_of_the_task", ["SRV-18", "ENG-06"], async () => {
    const sc = await s.ok("shadow_checkpoint", { task_id: need(ids.build, "the build job") });
    expect(Array.isArray(sc.checkpoints) && sc.checkpoints.length > 0, `checkpoints: ${short(sc.checkpoints)}`);
    return `${sc.checkpoints.length} checkpoint(s)`;
  });

  await run.check("rollback_needs_confirm", ["SRV-18"], async () => {
    await s.refused("shadow_rollback", { task_id: need(ids.build, "the build job"), confirm: false }, "confirm is false");
    expect(readFileSync(writeFile, "utf8").includes(BUILD.marker), "the file changed although the rollback was refused");
    return "refused without confirm: true; nothing changed";
  });

  await run.check("rollback_restores_the_file", ["SRV-18", "ENG-06"], async () => {
    const before = readFileSync(writeFile, "utf8");
    expect(before.includes(BUILD.marker) && before !== original, `${BUILD.writePath} does not hold the task's write to undo`);
    const done = await s.ok("shadow_rollback", { task_id: need(ids.build, "the build job"), confirm: true });
    const now = readFileSync(writeFile, "utf8");
    expect(now === original, `${BUILD.writePath} after rollback: ${short(now, 120)}`);
    return short(done, 200);
  });

  await run.check("test_without_command_lists_candidates", ["SRV-17"], async () => {
    const text = await s.refused("shadow_test", {}, "the sample project has two test candidates (pytest, make test)");
    expect(/pytest/.test(text) && /make test/.test(text), `the error does not list both candidates: ${short(text)}`);
    return short(text, 160);
  });

  const logBeforeTest = countLines(options.requestLog);
  await run.check("test_job_needs_exact_approval", ["SRV-17", "SRV-11"], async () => {
    const job = await s.ok("shadow_test", { command: [...TEST_COMMAND] });
    ids.test = job.job_id;
    expect(typeof ids.test === "string", `no job id: ${short(job)}`);
    const state = await s.waitJob(run, ids.test, (st) => st.pending.length > 0 || FINISHED.has(st.job.status), "an approval request");
    const a = state.pending[0];
    expect(a, `no approval requested; job ${state.job.status}`);
    expect(jsonEqual(argvOf(a), [...TEST_COMMAND]) && cwdOf(a) === workspace, `approval: ${short(a)}`);
    const done = await s.ok("shadow_approve", { approval_id: a.id, decision: "approve" });
    expect((done.approval?.status ?? done.status) === "approved", `approve answered ${short(done)}`);
    return `${a.id} approved`;
  });

  await run.check("test_job_real_output_and_status", ["SRV-17"], async () => {
    const state = await s.waitJob(run, need(ids.test, "the test job"), (st) => FINISHED.has(st.job.status), "finishing");
    const result = commandResults(state.events).find((r) => jsonEqual(r.argv, [...TEST_COMMAND]));
    expect(result, `no command result among the events (job ${state.job.status})`);
    expect(result.exit_code === TEST_EXIT_CODE, `exit code ${short(result.exit_code)}, expected ${TEST_EXIT_CODE}`);
    expect(String(result.output ?? "").includes(TEST_MARKER), `output: ${short(result.output)}`);
    return `job ${state.job.status}; exit ${result.exit_code}; output carries the marker`;
  });

  await run.check("test_job_calls_no_model", ["SRV-17", "ENG-05"], () => {
    need(ids.test, "the test job");
    expect(options.requestLog, "no --request-log given");
    const grown = countLines(options.requestLog) - logBeforeTest;
    expect(grown === 0, `the request log grew by ${grown} line(s) during the test job`);
    return "no model request during the test job";
  });

  await run.check("jobs_list_owned", ["SRV-16"], async () => {
    const listed = ((await s.ok("shadow_jobs", { action: "list" })).jobs ?? []).map((j) => j?.id);
    const mine = [ids.quickDefault, ids.quickElevated, ids.build, ids.test].filter(Boolean);
    const missing = mine.filter((id) => !listed.includes(id));
    expect(missing.length === 0, `not listed: ${missing.join(", ")}`);
    expect(listed.length === mine.length, `listed ${listed.length} jobs, this connection created ${mine.length}`);
    return `${listed.length} job(s)`;
  });
}

/**
 * Run a jobs probe end to end and exit the process with its status.
 *
 * @param {object} meta `{probe, sdk, sdk_version, transport}` copied into the report
 * @param {object} options from {@link parseJobsArgs}
 * @param {(run: ProbeRun, hooks: object) => Promise<object>} open spawns a server and
 *   connects; returns `{api: {callTool}, close, pid, child, transportErrors}`
 * @param {(run: ProbeRun) => Promise<void>} [afterConnect] extra checks once connected
 */
export async function runJobsProbe(meta, options, open, afterConnect) {
  const run = new ProbeRun(meta, options.timeoutMs);
  const sessions = [];
  let stderrTail = { text: "" };
  const finish = guardProbe(run, options, () => sessions.map((session) => session?.pid?.()), () => stderrTail.text);

  const openTracked = async (hooks) => {
    const session = await run.bounded(open(run, hooks), "connect");
    sessions.push(session);
    return session;
  };
  const closeBounded = async (session) => {
    let timer;
    await Promise.race([
      Promise.resolve().then(() => session.close()).catch(() => {}),
      new Promise((resolve) => {
        timer = setTimeout(resolve, CLOSE_GRACE_MS);
      }),
    ]);
    clearTimeout(timer);
  };

  let primary;
  try {
    const connected = await run.check("connect", ["SRV-01", "SRV-03"], async () => {
      primary = await openTracked({ stderr: (stream) => (stderrTail = collectTail(stream)) });
      return `connected, protocol ${run.protocolVersion}`;
    });
    if (connected) {
      if (afterConnect) await afterConnect(run);
      const workspace = workspaceFromArgs(options.args);
      const openSecond = async () => {
        const session = await openTracked({ stderr: (stream) => collectTail(stream) });
        return { api: session.api, close: () => closeBounded(session) };
      };
      await runJobChecks(run, new Tools(primary.api, "first connection"), { options, workspace, openSecond });
      await run.check("stdout_only_jsonrpc", ["SRV-01"], () => {
        const errors = primary.transportErrors?.() ?? [];
        expect(errors.length === 0, `transport errors: ${errors.join(" | ")}`);
        return "no malformed output on stdout";
      });
    }
  } catch (err) {
    run.record("crash", [], false, `${err?.name ?? "Error"}: ${err?.message ?? err}`);
  }
  if (primary) {
    // End stdin ourselves and give the server EOF_EXIT_WAIT_MS to clean up and exit: the SDK's
    // own close() sends SIGTERM after two seconds, which would hide a slow but orderly exit.
    const child = primary.child?.();
    let waited = 0;
    if (child && child.exitCode === null && child.signalCode === null) {
      const started = Date.now();
      const exited = new Promise((resolve) => child.once("exit", resolve));
      try {
        child.stdin?.end();
      } catch {
        // already closed
      }
      let timer;
      await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, EOF_EXIT_WAIT_MS)))]);
      clearTimeout(timer);
      waited = Date.now() - started;
    }
    await closeBounded(primary);
    if (child && run.checks.every((c) => c.name !== "crash")) {
      run.record(
        "server_exits_on_stdin_eof",
        ["SRV-01", "SRV-21"],
        child.exitCode === 0 && child.signalCode === null,
        `exit code ${child.exitCode}, signal ${child.signalCode}, ${waited} ms after the client closed stdin`,
      );
    }
  }
  finish();
}
