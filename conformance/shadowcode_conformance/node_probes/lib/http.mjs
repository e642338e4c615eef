// Shared machinery for the HTTP probes (probes/http_sdk1.mjs, probes/http_sdk2.mjs): an
// official TypeScript SDK client against a running `mcp serve --http` gateway with the
// bearer token read from an environment variable (never from argv).
//
// usage: node probes/http_sdkN.mjs --url URL --token-env NAME --workspace DIR [--timeout-ms N]
//
// The gateway must run with --allow-write --allow-approvals for a project trusted at
// `workspace` with no model configured. Checks: the discovery and tool checks every stdio
// probe makes (lib/harness.mjs), then an approved native test job through exact approvals,
// its real output and status, and a second connection that sees the same job (GW-06).

import { EXPECTED_TOOLS, ProbeRun, UsageError, EXIT_CHECK_FAILED, EXIT_USAGE, expect, jsonEqual, listAll, runServerChecks } from "./harness.mjs";

const DEFAULT_TIMEOUT_MS = 90000;
const CLOSE_GRACE_MS = 5000;
const WAIT_STEP_MS = 100;
const FINISHED = new Set(["done", "failed", "cancelled", "interrupted"]);

/** The test job's command: known output and a non-zero status, so both are seen to be real. */
const TEST_MARKER = "gateway-test-output-4c7e";
const TEST_EXIT_CODE = 3;
const TEST_COMMAND = Object.freeze(["python3", "-c", `print('${TEST_MARKER}'); raise SystemExit(${TEST_EXIT_CODE})`]);

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function short(value, limit = 300) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  if (text === undefined) return String(value);
  return text.length > limit ? `${text.slice(0, limit)}...` : text;
}

/** Parse `--url URL --token-env NAME --workspace DIR [--timeout-ms N]`; the token is read from the environment. */
export function parseHttpArgs(argv) {
  const options = { timeoutMs: DEFAULT_TIMEOUT_MS, url: undefined, tokenEnv: undefined, workspace: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = argv[i + 1];
    if (arg === "--timeout-ms") {
      options.timeoutMs = Number(value);
      if (!Number.isInteger(options.timeoutMs) || options.timeoutMs <= 0) throw new UsageError("--timeout-ms needs a positive integer");
    } else if (arg === "--url") options.url = value;
    else if (arg === "--token-env") options.tokenEnv = value;
    else if (arg === "--workspace") options.workspace = value;
    else throw new UsageError(`unknown argument: ${arg}`);
    i++;
  }
  if (!options.url || !options.tokenEnv || !options.workspace) throw new UsageError("--url, --token-env and --workspace are required");
  options.token = process.env[options.tokenEnv];
  if (!options.token) throw new UsageError(`the environment variable ${options.tokenEnv} is empty`);
  return options;
}

export function parseHttpOrExit(meta, argv) {
  try {
    return parseHttpArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`usage: node ${meta.probe}.mjs --url URL --token-env NAME --workspace DIR [--timeout-ms N]\n${err.message}\n`);
    process.exit(EXIT_USAGE);
  }
}

function textOf(result) {
  return (result?.content ?? []).filter((b) => b?.type === "text").map((b) => b.text).join(" ");
}

async function ok(api, name, args) {
  const result = await api.callTool(name, args);
  expect(!result.isError, `${name} answered isError: ${short(textOf(result))}`);
  return result.structuredContent ?? {};
}

async function waitJob(run, api, jobId, done, what) {
  for (;;) {
    const state = await ok(api, "shadow_jobs", { action: "get", job_id: jobId });
    if (done(state)) return state;
    if (run.remainingMs() <= WAIT_STEP_MS) throw new Error(`job ${jobId}: no ${what} in time (status ${state?.job?.status})`);
    await pause(WAIT_STEP_MS);
  }
}

async function allEvents(api, jobId) {
  const events = [];
  let cursor;
  for (let page = 0; page < 40; page++) {
    const state = await ok(api, "shadow_jobs", { action: "get", job_id: jobId, ...(cursor ? { cursor } : {}) });
    events.push(...(state.events ?? []));
    if (state.next_cursor === null || state.next_cursor === undefined) return events;
    cursor = String(state.next_cursor);
  }
  return events;
}

/** The checks made over HTTP once connected (discovery is done by runServerChecks). */
async function runGatewayChecks(run, api, options, openSecond) {
  let jobId;
  await run.check("test_job_exact_approval", ["CONF-02", "SRV-17", "SRV-11", "GW-05"], async () => {
    const job = await ok(api, "shadow_test", { command: [...TEST_COMMAND] });
    jobId = job.job_id;
    expect(typeof jobId === "string", `no job id: ${short(job)}`);
    const state = await waitJob(run, api, jobId, (st) => (st.pending_approvals ?? []).length > 0 || FINISHED.has(st.job?.status), "approval request");
    const approval = (state.pending_approvals ?? [])[0];
    expect(approval, `no approval requested; job ${state.job?.status}`);
    const action = approval.action ?? approval;
    const argv = action.argv ?? action.command;
    expect(jsonEqual(argv, [...TEST_COMMAND]), `the approval names ${short(argv)}, not the exact command`);
    expect(action.cwd === options.workspace, `the approval's cwd is ${short(action.cwd)}, not ${options.workspace}`);
    const decided = await ok(api, "shadow_approve", { approval_id: approval.id, decision: "approve" });
    expect((decided.approval?.status ?? decided.status) === "approved", `approve answered ${short(decided)}`);
    return `${approval.id} approved for ${short(argv, 80)}`;
  });

  await run.check("test_job_real_output_and_status", ["CONF-02", "SRV-17"], async () => {
    expect(jobId, "no test job");
    const state = await waitJob(run, api, jobId, (st) => FINISHED.has(st.job?.status), "finish");
    const text = JSON.stringify(await allEvents(api, jobId));
    expect(text.includes(TEST_MARKER), `the job's events do not carry the command's output (${state.job.status})`);
    expect(new RegExp(`"exit_code":\\s*${TEST_EXIT_CODE}`).test(text), `no exit code ${TEST_EXIT_CODE} among the events`);
    return `job ${state.job.status}, exit ${TEST_EXIT_CODE}, output seen`;
  });

  await run.check("approving_an_unknown_id_is_refused", ["SRV-11"], async () => {
    const result = await api.callTool("shadow_approve", { approval_id: "no-such-approval", decision: "approve" });
    expect(result.isError === true, `an unknown approval was not refused: ${short(result.structuredContent)}`);
    return short(textOf(result), 120);
  });

  await run.check("second_connection_sees_the_same_job", ["GW-06"], async () => {
    expect(jobId, "no test job");
    const second = await openSecond();
    try {
      const listed = ((await ok(second.api, "shadow_jobs", { action: "list" })).jobs ?? []).map((j) => j?.id ?? j?.job_id);
      expect(listed.includes(jobId), `a new connection lists ${short(listed)}, not ${jobId}`);
      return `${listed.length} job(s) seen again`;
    } finally {
      await second.close();
    }
  });
}

/**
 * Run an HTTP probe end to end and exit with its status.
 *
 * @param {object} meta `{probe, sdk, sdk_version, transport}`
 * @param {object} options from {@link parseHttpArgs}
 * @param {(run: ProbeRun) => Promise<{api: object, close: () => Promise<void>, sessionId: () => string|undefined}>} open
 * @param {(run: ProbeRun) => Promise<void>} afterConnect extra checks once connected (revision)
 */
export async function runHttpProbe(meta, options, open, afterConnect) {
  const run = new ProbeRun(meta, options.timeoutMs);
  const finish = () => process.exit(run.emit());
  const watchdog = setTimeout(() => {
    run.record("deadline", [], false, `probe did not finish within ${options.timeoutMs} ms`);
    process.exit(run.emit() || EXIT_CHECK_FAILED);
  }, options.timeoutMs + CLOSE_GRACE_MS);
  watchdog.unref();
  let session;
  try {
    const connected = await run.check("connect", ["GW-03", "GW-05", "SRV-03"], async () => {
      session = await run.bounded(open(run), "connect");
      return `connected over HTTP, protocol ${run.protocolVersion}`;
    });
    if (connected) {
      await afterConnect(run);
      await run.check("no_session_id", ["GW-05"], () => {
        expect(!session.sessionId(), `the gateway issued a session id`);
        return "stateless: no Mcp-Session-Id";
      });
      await run.check("tools_list_over_http", ["GW-05", "SRV-04"], async () => {
        const names = (await listAll((p) => session.api.listTools(p), "tools")).map((t) => t.name).sort();
        expect(jsonEqual(names, [...EXPECTED_TOOLS]), `tools: ${names.join(",")}`);
        return `${names.length} tools`;
      });
      await runServerChecks(run, session.api, { workspace: options.workspace });
      await runGatewayChecks(run, session.api, options, async () => {
        const s = await run.bounded(open(run), "second connection");
        return { api: s.api, close: () => s.close() };
      });
    }
  } catch (err) {
    run.record("crash", [], false, `${err?.name ?? "Error"}: ${err?.message ?? err}`);
  }
  if (session) {
    let timer;
    await Promise.race([
      Promise.resolve().then(() => session.close()).catch(() => {}),
      new Promise((resolve) => {
        timer = setTimeout(resolve, CLOSE_GRACE_MS);
      }),
    ]);
    clearTimeout(timer);
  }
  finish();
}
