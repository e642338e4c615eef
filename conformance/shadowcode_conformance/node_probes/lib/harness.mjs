// Shared machinery for the stdio probes: argument parsing, a single deadline for the whole
// run, a check recorder that prints exactly one JSON report, child clean-up, and the
// checks that every SDK runs against `shadowcode ... mcp serve` on a sample project.
//
// A probe module supplies an adapter over its SDK's Client (see `runStdioProbe`); the
// checks here only use that adapter, so SDK 1.x and 2.x are held to the same contract.

import { createHash } from "node:crypto";
import { readFileSync, realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

export const PROBES_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The seventeen tool names the server must list (SRV-04), sorted. */
export const EXPECTED_TOOLS = Object.freeze([
  "shadow_approve",
  "shadow_checkpoint",
  "shadow_doctor",
  "shadow_goal",
  "shadow_jobs",
  "shadow_memory",
  "shadow_models",
  "shadow_review",
  "shadow_rollback",
  "shadow_run",
  "shadow_sessions",
  "shadow_sqlite",
  "shadow_status",
  "shadow_test",
  "shadow_tools",
  "shadow_understand",
  "shadow_why",
]);

/** Tools that only inspect: their annotations must say read-only (SRV-04 truthful annotations). */
export const READ_ONLY_TOOLS = Object.freeze([
  "shadow_checkpoint",
  "shadow_doctor",
  "shadow_models",
  "shadow_review",
  "shadow_sessions",
  "shadow_sqlite",
  "shadow_status",
  "shadow_tools",
  "shadow_why",
]);

/** Tools that can change state: their annotations must not claim read-only. */
export const WRITING_TOOLS = Object.freeze([
  "shadow_approve",
  "shadow_goal",
  "shadow_jobs",
  "shadow_memory",
  "shadow_rollback",
  "shadow_run",
  "shadow_test",
]);

export const EXPECTED_RESOURCES = Object.freeze(["shadow://memory", "shadow://plan", "shadow://project", "shadow://sessions"]);

/** Rows in `notes` of the sample project's data/app.db (conformance/shadowcode_conformance/fixtures/sample_project.py). */
export const SAMPLE_NOTE_COUNT = 5;

export const LEGACY_PROTOCOL_VERSIONS = Object.freeze(["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]);
export const MODERN_PROTOCOL_VERSION = "2026-07-28";

const STDERR_TAIL_BYTES = 8192;
export const CLOSE_GRACE_MS = 5000;
const DEFAULT_TIMEOUT_MS = 30000;
const MAX_LIST_PAGES = 16;

export const EXIT_OK = 0;
export const EXIT_CHECK_FAILED = 1;
export const EXIT_USAGE = 2;

export class UsageError extends Error {}

/** A check's expectation did not hold; the message becomes the check's detail. */
export class CheckFailure extends Error {}

export function expect(condition, message) {
  if (!condition) throw new CheckFailure(message);
}

/** Installed version of an npm package under conformance/shadowcode_conformance/node_probes/node_modules. */
export function installedVersion(pkg) {
  const file = path.join(PROBES_ROOT, "node_modules", ...pkg.split("/"), "package.json");
  return JSON.parse(readFileSync(file, "utf8")).version;
}

export function sha256Hex(text) {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** Structural equality for JSON values (object key order ignored). */
export function jsonEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return jsonEqual(ka, kb) && ka.every((k) => jsonEqual(a[k], b[k]));
}

function short(value, limit = 300) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  if (text === undefined) return String(value);
  return text.length > limit ? `${text.slice(0, limit)}...` : text;
}

/**
 * Parse `[--timeout-ms N] [--mode auto|legacy] -- CMD ARG...`.
 *
 * @param {string[]} argv arguments after the script name
 * @param {{modes?: string[], defaultMode?: string}} opts which `--mode` values are accepted
 * @returns {{timeoutMs: number, mode: string|undefined, command: string, args: string[]}}
 * @throws {UsageError} on anything else
 */
export function parseArgs(argv, opts = {}) {
  let timeoutMs = DEFAULT_TIMEOUT_MS;
  let mode = opts.defaultMode;
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") break;
    if (arg === "--timeout-ms") {
      const value = Number(argv[++i]);
      if (!Number.isInteger(value) || value <= 0) throw new UsageError("--timeout-ms needs a positive integer");
      timeoutMs = value;
    } else if (arg === "--mode" && opts.modes) {
      mode = argv[++i];
      if (!opts.modes.includes(mode)) throw new UsageError(`--mode must be one of ${opts.modes.join("|")}`);
    } else {
      throw new UsageError(`unknown argument: ${arg}`);
    }
  }
  const rest = argv.slice(i + 1);
  if (i >= argv.length || rest.length === 0) throw new UsageError("missing `-- CMD ARG...`");
  return { timeoutMs, mode, command: rest[0], args: rest.slice(1) };
}

/** The `--workspace DIR` value in the server command, canonicalized when it exists. */
export function workspaceFromArgs(args) {
  let value;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--workspace" && i + 1 < args.length) value = args[i + 1];
    else if (args[i].startsWith("--workspace=")) value = args[i].slice("--workspace=".length);
  }
  if (value === undefined) return undefined;
  try {
    return realpathSync(value);
  } catch {
    return path.resolve(value);
  }
}

/** The child's environment: everything this process has, SHADOWCODE_HOME included. */
export function childEnvironment() {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  return env;
}

/**
 * Records checks and prints one JSON document. All waits share one deadline.
 */
export class ProbeRun {
  constructor(meta, timeoutMs) {
    this.meta = meta;
    this.timeoutMs = timeoutMs;
    this.deadline = Date.now() + timeoutMs;
    this.checks = [];
    this.protocolVersion = null;
    this.extra = {};
    this.emitted = false;
  }

  remainingMs() {
    return Math.max(1, this.deadline - Date.now());
  }

  /** Reject when `promise` outlives the shared deadline. */
  bounded(promise, label) {
    const ms = this.remainingMs();
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new CheckFailure(`${label}: no answer within ${ms} ms`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  }

  record(name, covers, ok, detail) {
    this.checks.push({ name, covers, ok, detail: short(detail, 1000) });
  }

  /** Run one check; `fn` returns a detail string or throws. */
  async check(name, covers, fn) {
    try {
      const detail = await this.bounded(Promise.resolve().then(fn), name);
      this.record(name, covers, true, detail ?? "ok");
      return true;
    } catch (err) {
      this.record(name, covers, false, err instanceof CheckFailure ? err.message : `${err?.name ?? "Error"}: ${err?.message ?? err}`);
      return false;
    }
  }

  report() {
    const ok = this.checks.length > 0 && this.checks.every((c) => c.ok);
    return {
      ...this.meta,
      protocol_version: this.protocolVersion,
      ok,
      checks: this.checks,
      ...this.extra,
    };
  }

  /** Print the report once; later calls do nothing. Returns the exit code. */
  emit() {
    const report = this.report();
    if (!this.emitted) {
      this.emitted = true;
      process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    }
    return report.ok ? EXIT_OK : EXIT_CHECK_FAILED;
  }
}

/** Keeps the last bytes of a stream (the server's stderr) for the report. */
export function collectTail(stream, limit = STDERR_TAIL_BYTES) {
  const state = { text: "" };
  if (!stream) return state;
  stream.on("data", (chunk) => {
    state.text = (state.text + chunk.toString("utf8")).slice(-limit);
  });
  stream.on("error", () => {});
  return state;
}

/**
 * Watch the JSON-RPC traffic of a transport without changing it: remembers the
 * negotiated version from an `initialize` answer and counts transport errors
 * (a non-JSON line on the server's stdout surfaces as one).
 */
export function tapTransport(transport) {
  const tap = { initializeVersion: null, transportErrors: [], received: 0 };
  let inner;
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => inner,
    set: (handler) => {
      inner = handler
        ? (message, extra) => {
            tap.received += 1;
            const v = message?.result?.protocolVersion;
            if (typeof v === "string" && message?.result?.serverInfo) tap.initializeVersion = v;
            return handler(message, extra);
          }
        : handler;
    },
  });
  let innerError;
  Object.defineProperty(transport, "onerror", {
    configurable: true,
    get: () => innerError,
    set: (handler) => {
      innerError = (err) => {
        tap.transportErrors.push(String(err?.message ?? err));
        if (handler) handler(err);
      };
    },
  });
  transport.onerror = undefined;
  return tap;
}

/** Page through a list call (`fn(params)` returns `{[key]: [...], nextCursor?}`). */
export async function listAll(fn, key) {
  const items = [];
  let cursor;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const result = await fn(cursor === undefined ? undefined : { cursor });
    items.push(...(result?.[key] ?? []));
    cursor = result?.nextCursor;
    if (!cursor) return items;
  }
  throw new CheckFailure(`${key}: more than ${MAX_LIST_PAGES} pages`);
}

function textBlocks(result) {
  return (result?.content ?? []).filter((block) => block?.type === "text").map((block) => block.text);
}

/**
 * Call a tool and check the result envelope: not an error, `structuredContent` is an
 * object (the SDK client checks it against the tool's outputSchema), and one text block
 * holds a short summary rather than the same JSON again (SRV-04).
 */
async function callOk(api, name, args) {
  const result = await api.callTool(name, args);
  const texts = textBlocks(result);
  expect(!result.isError, `${name} ${short(args)} answered isError: ${short(texts.join(" "))}`);
  const sc = result.structuredContent;
  expect(sc && typeof sc === "object" && !Array.isArray(sc), `${name}: structuredContent is not an object: ${short(sc)}`);
  expect(texts.length === 1 && texts[0].trim() !== "", `${name}: expected one text block, got ${texts.length}`);
  let repeated = true;
  try {
    JSON.parse(texts[0]);
  } catch {
    repeated = false;
  }
  expect(!repeated, `${name}: the text block repeats the JSON instead of summarizing it: ${short(texts[0])}`);
  return sc;
}

const isBool = (v) => typeof v === "boolean";
const isInt = (v) => Number.isInteger(v);
const isStr = (v) => typeof v === "string";
const HEX64 = /^[0-9a-f]{64}$/;

/**
 * The checks every stdio probe makes once connected.
 *
 * @param {ProbeRun} run the recorder
 * @param {object} api adapter: listTools(params), listResources(params), readResource(uri),
 *   listPrompts(params), getPrompt(name, args), callTool(name, args)
 * @param {{workspace?: string}} ctx what the caller knows about the project
 */
export async function runServerChecks(run, api, ctx) {
  let tools = [];
  await run.check("tools_list_seventeen", ["SRV-04"], async () => {
    tools = await listAll((p) => api.listTools(p), "tools");
    const names = tools.map((t) => t.name).sort();
    expect(new Set(names).size === names.length, `duplicate tool names: ${names.join(",")}`);
    const missing = EXPECTED_TOOLS.filter((n) => !names.includes(n));
    const extra = names.filter((n) => !EXPECTED_TOOLS.includes(n));
    expect(missing.length === 0 && extra.length === 0, `missing [${missing}] extra [${extra}]`);
    return `${names.length} tools`;
  });

  await run.check("tools_have_description_schema_annotations", ["SRV-04"], () => {
    expect(tools.length > 0, "no tools listed");
    const bad = [];
    for (const t of tools) {
      if (!isStr(t.description) || t.description.trim() === "") bad.push(`${t.name}: no description`);
      if (t.inputSchema?.type !== "object") bad.push(`${t.name}: inputSchema.type=${short(t.inputSchema?.type)}`);
      if (!t.annotations || typeof t.annotations !== "object") bad.push(`${t.name}: no annotations`);
      if (t.outputSchema?.type !== "object") bad.push(`${t.name}: outputSchema.type=${short(t.outputSchema?.type)}`);
    }
    expect(bad.length === 0, bad.join("; "));
    return "every tool has a description, object input and output schemas, and annotations";
  });

  await run.check("tools_annotations_truthful", ["SRV-04"], () => {
    const byName = new Map(tools.map((t) => [t.name, t]));
    const bad = [];
    for (const n of READ_ONLY_TOOLS) {
      if (!byName.has(n)) bad.push(`${n} not listed`);
      else if (byName.get(n).annotations?.readOnlyHint !== true) bad.push(`${n} should be readOnlyHint=true`);
    }
    for (const n of WRITING_TOOLS) {
      if (!byName.has(n)) bad.push(`${n} not listed`);
      else if (byName.get(n).annotations?.readOnlyHint === true) bad.push(`${n} claims readOnlyHint=true`);
    }
    expect(bad.length === 0, bad.join("; "));
    return "inspection tools read-only, writing tools not";
  });

  const contents = new Map();
  await run.check("resources_list_four", ["SRV-05"], async () => {
    const resources = await listAll((p) => api.listResources(p), "resources");
    const uris = resources.map((r) => r.uri).sort();
    expect(jsonEqual(uris, [...EXPECTED_RESOURCES]), `resources: ${uris.join(", ")}`);
    return uris.join(", ");
  });

  await run.check("resources_read_each", ["SRV-05"], async () => {
    const bad = [];
    for (const uri of EXPECTED_RESOURCES) {
      const result = await api.readResource(uri);
      const item = (result?.contents ?? []).find((c) => c.uri === uri) ?? result?.contents?.[0];
      if (!item || !isStr(item.text)) {
        bad.push(`${uri}: no text contents`);
        continue;
      }
      contents.set(uri, item);
      try {
        JSON.parse(item.text);
      } catch {
        bad.push(`${uri}: text is not JSON: ${short(item.text, 80)}`);
      }
      if (uri !== "shadow://plan" && item.mimeType !== "application/json") bad.push(`${uri}: mimeType ${item.mimeType}`);
    }
    expect(bad.length === 0, bad.join("; "));
    return "four resources read as JSON text";
  });

  await run.check("resource_plan_null_without_plan", ["SRV-05"], () => {
    const item = contents.get("shadow://plan");
    expect(item, "shadow://plan was not read");
    expect(item.text.trim() === "null", `plan text: ${short(item.text, 120)}`);
    return "plan reads null on a fresh project";
  });

  await run.check("resource_project_names_workspace", ["SRV-05"], () => {
    const item = contents.get("shadow://project");
    expect(item, "shadow://project was not read");
    const doc = JSON.parse(item.text);
    if (ctx.workspace) {
      expect(JSON.stringify(doc).includes(JSON.stringify(ctx.workspace)), `workspace ${ctx.workspace} not in ${short(doc)}`);
    }
    return short(doc, 200);
  });

  await run.check("prompts_list_two", ["SRV-06"], async () => {
    const prompts = await listAll((p) => api.listPrompts(p), "prompts");
    const names = prompts.map((p) => p.name).sort();
    expect(jsonEqual(names, ["delegate", "understand"]), `prompts: ${names.join(", ")}`);
    const delegate = prompts.find((p) => p.name === "delegate");
    const task = (delegate.arguments ?? []).find((a) => a.name === "task");
    expect(task && task.required === true, `delegate arguments: ${short(delegate.arguments)}`);
    const understand = prompts.find((p) => p.name === "understand");
    expect(!(understand.arguments ?? []).some((a) => a.required), `understand has required arguments`);
    return "delegate(task required), understand()";
  });

  await run.check("prompt_get_delegate", ["SRV-06"], async () => {
    const task = "Summarise the notebook package for a new contributor";
    const result = await api.getPrompt("delegate", { task });
    const texts = (result?.messages ?? []).map((m) => m?.content?.text ?? "").join("\n");
    expect(result?.messages?.length > 0, "no messages");
    expect(texts.includes(task), `task text not in prompt: ${short(texts)}`);
    return `${result.messages.length} message(s)`;
  });

  await run.check("prompt_get_understand", ["SRV-06"], async () => {
    const result = await api.getPrompt("understand", {});
    const texts = (result?.messages ?? []).map((m) => m?.content?.text ?? "").join("\n");
    expect(result?.messages?.length > 0 && texts.trim() !== "", "no message text");
    return `${result.messages.length} message(s)`;
  });

  await run.check("tool_status", ["SRV-20"], async () => {
    const sc = await callOk(api, "shadow_status", {});
    const p = sc.project ?? {};
    expect(isStr(p.path), `project.path: ${short(p.path)}`);
    if (ctx.workspace) expect(p.path === ctx.workspace, `project.path ${p.path} != ${ctx.workspace}`);
    expect(p.trusted === true, `project.trusted: ${short(p.trusted)}`);
    expect(p.level === "workspace", `project.level: ${short(p.level)}`);
    expect(sc.server?.allow_write === true, `server.allow_write: ${short(sc.server?.allow_write)}`);
    expect(isBool(sc.server?.allow_approvals), `server.allow_approvals: ${short(sc.server?.allow_approvals)}`);
    expect(isStr(sc.version), `version: ${short(sc.version)}`);
    expect("profile" in sc && "engine" in sc, `missing profile/engine: ${Object.keys(sc)}`);
    return short(sc, 200);
  });

  await run.check("tool_models", ["SRV-20"], async () => {
    const sc = await callOk(api, "shadow_models", {});
    expect(Array.isArray(sc.models), `models: ${short(sc.models)}`);
    expect(sc.default === null || isStr(sc.default), `default: ${short(sc.default)}`);
    return `${sc.models.length} model(s)`;
  });

  await run.check("tool_sessions", ["SRV-20"], async () => {
    const sc = await callOk(api, "shadow_sessions", { limit: 5 });
    expect(Array.isArray(sc.sessions), `sessions: ${short(sc.sessions)}`);
    return `${sc.sessions.length} session(s)`;
  });

  await run.check("tool_review", ["SRV-20"], async () => {
    const sc = await callOk(api, "shadow_review", {});
    expect(isBool(sc.git) && Array.isArray(sc.changes), `review: ${short(sc)}`);
    return `git=${sc.git} changes=${sc.changes.length}`;
  });

  await run.check("tool_tools", ["SRV-20"], async () => {
    const sc = await callOk(api, "shadow_tools", {});
    expect(Array.isArray(sc.tools) && sc.tools.length > 0, `tools: ${short(sc.tools)}`);
    const bad = sc.tools.filter((t) => !isStr(t?.name) || !isStr(t?.level) || !isStr(t?.description));
    expect(bad.length === 0, `entries without name/level/description: ${short(bad)}`);
    return `${sc.tools.length} native tool(s)`;
  });

  await run.check("tool_understand", ["SRV-19"], async () => {
    const sc = await callOk(api, "shadow_understand", {});
    expect(isStr(sc.map) && sc.map.includes("#"), `map is not markdown: ${short(sc.map, 120)}`);
    expect(isInt(sc.files) && sc.files > 0, `files: ${short(sc.files)}`);
    expect(isBool(sc.truncated), `truncated: ${short(sc.truncated)}`);
    expect(sc.saved === false, `saved without being asked: ${short(sc.saved)}`);
    expect(sc.languages && typeof sc.languages === "object", `languages: ${short(sc.languages)}`);
    expect(sc.map.includes("notebook"), "map does not mention the notebook package");
    return `files=${sc.files} truncated=${sc.truncated}`;
  });

  await run.check("tool_doctor", ["SRV-19"], async () => {
    const sc = await callOk(api, "shadow_doctor", {});
    expect(Array.isArray(sc.checks) && sc.checks.length > 0, `checks: ${short(sc.checks)}`);
    const bad = sc.checks.filter((c) => !isStr(c?.name) || !["ok", "warn", "fail"].includes(c?.status));
    expect(bad.length === 0, `malformed checks: ${short(bad)}`);
    return sc.checks.map((c) => `${c.name}=${c.status}`).join(", ");
  });

  await run.check("tool_why", ["SRV-19"], async () => {
    const sc = await callOk(api, "shadow_why", { path: "notebook/store.py" });
    expect(Array.isArray(sc.entries), `entries: ${short(sc.entries)}`);
    return `${sc.entries.length} entr(ies)`;
  });

  await run.check("tool_checkpoint", ["SRV-18"], async () => {
    const sc = await callOk(api, "shadow_checkpoint", {});
    expect(Array.isArray(sc.checkpoints), `checkpoints: ${short(sc.checkpoints)}`);
    return `${sc.checkpoints.length} checkpoint(s)`;
  });

  await run.check("tool_memory_append_read", ["SRV-12"], async () => {
    const marker = `probe note ${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    const appended = await callOk(api, "shadow_memory", { action: "append", text: marker });
    expect(HEX64.test(appended.hash ?? ""), `append hash: ${short(appended.hash)}`);
    expect(isStr(appended.content) && appended.content.includes(marker), "appended text not in content");
    expect(appended.hash === sha256Hex(appended.content), "append hash is not sha256 of content");
    expect(appended.scope === "project", `scope: ${short(appended.scope)}`);
    const read = await callOk(api, "shadow_memory", { action: "read" });
    expect(isStr(read.content) && read.content.includes(marker), `read content lacks the note: ${short(read.content)}`);
    expect(HEX64.test(read.hash ?? "") && read.hash === sha256Hex(read.content), `read hash: ${short(read.hash)}`);
    expect(read.hash === appended.hash, "read hash differs from the append answer");
    return `hash ${read.hash.slice(0, 12)}...`;
  });

  await run.check("tool_goal_create_advance_list", ["SRV-14"], async () => {
    const title = "Document the notebook CLI";
    const created = (await callOk(api, "shadow_goal", { action: "create", title })).goal;
    expect(created && isStr(created.id) && created.title === title, `create: ${short(created)}`);
    expect(created.status === "active" && Array.isArray(created.progress), `created goal: ${short(created)}`);
    const step = (await callOk(api, "shadow_goal", { action: "advance", goal_id: created.id, note: "outlined sections" })).goal;
    expect(step?.status === "active", `after advance status ${short(step?.status)}`);
    expect(step.progress.some((p) => p?.note === "outlined sections"), `progress: ${short(step.progress)}`);
    const done = (await callOk(api, "shadow_goal", { action: "advance", goal_id: created.id, note: "written", done: true })).goal;
    expect(done?.status === "done", `after advance done=true status ${short(done?.status)}`);
    const listed = (await callOk(api, "shadow_goal", { action: "list" })).goals ?? [];
    const mine = listed.find((g) => g?.id === created.id);
    expect(mine, `goal ${created.id} not in list`);
    expect(mine.status === "done", `listed goal status: ${short(mine)}`);
    // A listing may leave progress notes out; when it carries them they must be current.
    expect(mine.progress === undefined || mine.progress.length === 2, `listed goal progress: ${short(mine.progress)}`);
    const got = (await callOk(api, "shadow_goal", { action: "get", goal_id: created.id })).goal;
    const notes = (got?.progress ?? []).map((p) => p?.note);
    expect(got?.status === "done" && jsonEqual(notes, ["outlined sections", "written"]), `get: ${short(got)}`);
    expect(got.progress.every((p) => isInt(p?.at)), `progress times: ${short(got.progress)}`);
    const withNotes = mine.progress === undefined ? "list omits progress" : "list carries progress";
    return `goal ${created.id} done with 2 progress notes (${withNotes})`;
  });

  await run.check("tool_sqlite_tables", ["SRV-13"], async () => {
    const sc = await callOk(api, "shadow_sqlite", { action: "tables", path: "data/app.db" });
    const notes = (sc.tables ?? []).find((t) => t?.name === "notes");
    expect(notes, `tables: ${short(sc.tables)}`);
    const cols = (notes.columns ?? []).map((c) => (isStr(c) ? c : c?.name));
    expect(["id", "title", "body"].every((c) => cols.includes(c)), `notes columns: ${short(notes.columns)}`);
    return `tables: ${(sc.tables ?? []).map((t) => t.name).join(", ")}`;
  });

  await run.check("tool_sqlite_query_bound_param_sees_wal", ["SRV-13"], async () => {
    const sc = await callOk(api, "shadow_sqlite", {
      action: "query",
      path: "data/app.db",
      sql: "SELECT title FROM notes WHERE title = ?",
      params: ["from-wal"],
    });
    expect(jsonEqual(sc.columns, ["title"]), `columns: ${short(sc.columns)}`);
    expect(jsonEqual(sc.rows, [["from-wal"]]), `rows: ${short(sc.rows)}`);
    expect(sc.row_count === 1 && sc.truncated === false, `row_count=${sc.row_count} truncated=${sc.truncated}`);
    return "one row from the WAL";
  });

  await run.check("tool_sqlite_refuses_write", ["SRV-13"], async () => {
    const result = await api.callTool("shadow_sqlite", {
      action: "query",
      path: "data/app.db",
      sql: "DELETE FROM notes",
    });
    expect(tools.some((t) => t.name === "shadow_sqlite"), "shadow_sqlite is not listed");
    expect(result.isError === true, `DELETE was not refused: ${short(result.structuredContent ?? result.content)}`);
    const count = await callOk(api, "shadow_sqlite", {
      action: "query",
      path: "data/app.db",
      sql: "SELECT count(*) AS n FROM notes",
    });
    expect(jsonEqual(count.rows, [[SAMPLE_NOTE_COUNT]]), `rows after the refused DELETE: ${short(count.rows)}`);
    return short(textBlocks(result).join(" "), 160);
  });

  await run.check("tool_run_without_model_names_the_fix", ["SRV-15", "ENG-05"], async () => {
    const result = await api.callTool("shadow_run", { prompt: "list the files" });
    const text = textBlocks(result).join(" ");
    expect(result.isError === true, `shadow_run did not answer isError: ${short(result)}`);
    expect(/no model is configured/i.test(text) && /models add/.test(text),
      `message does not name the missing model and the fix: ${short(text)}`);
    return short(text, 160);
  });
}

/**
 * Make sure a probe always ends with its report: kill its servers on exit, turn SIGINT, SIGTERM
 * and the deadline (`options.timeoutMs` plus the close grace) into a failed check.
 *
 * @param {ProbeRun} run the probe's report
 * @param {{timeoutMs: number}} options parsed arguments
 * @param {() => Array<number|null|undefined>} pids the server pids to SIGKILL on exit
 * @param {() => string} stderrTail the servers' stderr tail, added to a failed report
 * @returns {(code?: number) => never} ends the probe: kills servers, prints the report, exits
 */
export function guardProbe(run, options, pids, stderrTail) {
  const killChildren = () => {
    for (const pid of pids()) {
      if (!pid) continue;
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  };
  process.on("exit", killChildren);
  const finish = (code) => {
    killChildren();
    const tail = stderrTail();
    if (!run.report().ok && tail) run.extra.server_stderr_tail = tail;
    const status = run.emit();
    process.exit(code ?? status);
  };
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.on(signal, () => {
      run.record("interrupted", [], false, `received ${signal}`);
      finish(EXIT_CHECK_FAILED);
    });
  }
  const watchdog = setTimeout(() => {
    run.record("deadline", [], false, `probe did not finish within ${options.timeoutMs} ms`);
    finish(EXIT_CHECK_FAILED);
  }, options.timeoutMs + CLOSE_GRACE_MS);
  watchdog.unref();
  return finish;
}

/**
 * Run a stdio probe end to end and exit the process with its status.
 *
 * @param {object} meta `{probe, sdk, sdk_version, transport}` copied into the report
 * @param {{timeoutMs: number, command: string, args: string[]}} options parsed arguments
 * @param {(run: ProbeRun, hooks: object) => Promise<{api: object, close: () => Promise<void>, pid: () => number|null}>} open
 *   spawns the server and connects; `hooks.stderr(stream)` should be given the child's stderr
 * @param {(run: ProbeRun, session: object) => void} [afterConnect] extra checks after connecting
 */
export async function runStdioProbe(meta, options, open, afterConnect) {
  const run = new ProbeRun(meta, options.timeoutMs);
  let session;
  let stderrTail = { text: "" };
  const finish = guardProbe(run, options, () => [session?.pid?.()], () => stderrTail.text);

  try {
    const hooks = { stderr: (stream) => (stderrTail = collectTail(stream)) };
    const connected = await run.check("connect", ["SRV-01", "SRV-03"], async () => {
      session = await run.bounded(open(run, hooks), "connect");
      return `connected, protocol ${run.protocolVersion}`;
    });
    if (connected) {
      if (afterConnect) await afterConnect(run, session);
      await runServerChecks(run, session.api, { workspace: workspaceFromArgs(options.args) });
      await run.check("stdout_only_jsonrpc", ["SRV-01"], () => {
        const errors = session.transportErrors?.() ?? [];
        expect(errors.length === 0, `transport errors: ${errors.join(" | ")}`);
        return "no malformed output on stdout";
      });
    }
  } catch (err) {
    run.record("crash", [], false, `${err?.name ?? "Error"}: ${err?.message ?? err}`);
  }
  try {
    if (session) {
      const child = session.child?.();
      let timer;
      await Promise.race([
        session.close(),
        new Promise((resolve) => {
          timer = setTimeout(resolve, CLOSE_GRACE_MS);
        }),
      ]);
      clearTimeout(timer);
      if (child && run.checks.every((c) => c.name !== "crash")) {
        run.record(
          "server_exits_on_stdin_eof",
          ["SRV-01", "SRV-07"],
          child.exitCode === 0 && child.signalCode === null,
          `exit code ${child.exitCode}, signal ${child.signalCode} after the client closed stdin`,
        );
      }
    }
  } catch {
    // the child is killed below either way
  }
  finish();
}

/** Parse arguments, printing a usage error and exiting 2 on failure. */
export function parseOrExit(meta, argv, opts) {
  try {
    return parseArgs(argv, opts);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    const modes = opts?.modes ? ` [--mode ${opts.modes.join("|")}]` : "";
    process.stderr.write(`usage: node ${meta.probe}.mjs [--timeout-ms N]${modes} -- CMD ARG...\n${err.message}\n`);
    process.exit(EXIT_USAGE);
  }
}
