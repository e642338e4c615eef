// Time a stdio MCP server from the outside with the official TypeScript SDK 1.x client.
//
// usage:
//   node bench/driver.mjs startup [options] -- CMD ARG...
//     Spawns CMD `--runs` times (after `--warmup` untimed spawns) and times each one from
//     just before the spawn to the answer of the first `tools/list` (initialize included).
//   node bench/driver.mjs calls [options] -- CMD ARG...
//     Spawns CMD once, makes one untimed `tools/call` (its latency and spawn → its answer are
//     reported apart: a server may still be starting behind a front), then times `--calls`
//     sequential `tools/call` round trips and `--burst-calls` calls kept `--inflight` at a
//     time on the same connection.
//
// options:
//   --runs N             startup: timed spawns (default 5)
//   --warmup N           startup: untimed spawns first (default 1)
//   --fresh-dir-env VAR  startup: point VAR at a new empty temporary folder for every spawn
//                        (repeatable: every VAR named points at the same new folder)
//                        (removed afterwards), e.g. SHIV_ROOT for an empty zipapp cache
//   --tool NAME          the tool to call (default echo)
//   --args JSON          its arguments (default {})
//   --expect-text TEXT   check which server answered: startup calls the tool once per spawn
//                        after the clock and the memory reading, calls checks its untimed first call;
//                        the tool's first text must contain TEXT, else the run fails
//   --forbid-mapped TEXT the server process must not have a file whose path contains TEXT
//                        mapped (/proc/<pid>/maps, read with the memory), e.g. _pydantic_core
//                        for a relay that must not load the SDK; Linux only
//   --calls N            calls: sequential round trips (default 1000)
//   --inflight N         calls: calls in flight for the throughput figure (default 8)
//   --burst-calls N      calls: calls in the throughput figure (default 480)
//   --window-frames N    client frames sent per sliding window, 0 = no pacing (default 0)
//   --window-ms N        the window's length (default 1050)
//   --timeout-ms N       deadline of each request (default 30000)
//
// Pacing: a server may bound the frames a client sends per second (ShadowCode closes the
// connection past 128, SRV-25). With --window-frames the driver waits before a send that
// would put more than N client frames in any window; waiting happens before the clock of
// a call starts, so latencies are never inflated by it, and the throughput figure counts
// only the time during which at least one call was in flight.
//
// Prints one JSON document on stdout; exit 0 on success, 1 when the server failed, 2 on
// bad usage. Server stderr is drained and its tail included in failure reports.

import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";

import { FramePacer, busyMs } from "./pacing.mjs";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

const SDK = "@modelcontextprotocol/sdk";
const STDERR_TAIL_BYTES = 4096;
const HANDSHAKE_FRAMES = 3; // initialize, notifications/initialized, tools/list

class UsageError extends Error {}

function sdkVersion() {
  const here = path.dirname(new URL(import.meta.url).pathname);
  const file = path.join(here, "..", "node_modules", ...SDK.split("/"), "package.json");
  return JSON.parse(readFileSync(file, "utf8")).version;
}

function parse(argv) {
  const mode = argv[0];
  if (mode !== "startup" && mode !== "calls") throw new UsageError("first argument must be `startup` or `calls`");
  const o = {
    mode,
    runs: 5,
    warmup: 1,
    freshDirEnv: [],
    tool: "echo",
    args: {},
    expectText: undefined,
    forbidMapped: undefined,
    calls: 1000,
    inflight: 8,
    burstCalls: 480,
    windowFrames: 0,
    windowMs: 1050,
    timeoutMs: 30000,
  };
  const ints = {
    "--runs": "runs",
    "--warmup": "warmup",
    "--calls": "calls",
    "--inflight": "inflight",
    "--burst-calls": "burstCalls",
    "--window-frames": "windowFrames",
    "--window-ms": "windowMs",
    "--timeout-ms": "timeoutMs",
  };
  let i = 1;
  for (; i < argv.length && argv[i] !== "--"; i++) {
    const flag = argv[i];
    const value = argv[++i];
    if (value === undefined) throw new UsageError(`${flag} needs a value`);
    if (flag in ints) {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 0) throw new UsageError(`${flag} needs a non-negative integer`);
      o[ints[flag]] = n;
    } else if (flag === "--fresh-dir-env") o.freshDirEnv.push(value);
    else if (flag === "--tool") o.tool = value;
    else if (flag === "--args") o.args = JSON.parse(value);
    else if (flag === "--expect-text") o.expectText = value;
    else if (flag === "--forbid-mapped") o.forbidMapped = value;
    else throw new UsageError(`unknown option ${flag}`);
  }
  const rest = argv.slice(i + 1);
  if (i >= argv.length || rest.length === 0) throw new UsageError("missing `-- CMD ARG...`");
  if (o.inflight < 1) throw new UsageError("--inflight must be at least 1");
  if (o.windowFrames !== 0 && o.windowFrames <= HANDSHAKE_FRAMES) throw new UsageError("--window-frames too small");
  return { ...o, command: rest[0], commandArgs: rest.slice(1) };
}

/** Peak and current resident set of a live process, in KiB, from /proc (Linux). */
function memoryKib(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const field = (name) => {
      const m = status.match(new RegExp(`^${name}:\\s+(\\d+) kB`, "m"));
      return m ? Number(m[1]) : null;
    };
    return { hwm: field("VmHWM"), rss: field("VmRSS") };
  } catch {
    return { hwm: null, rss: null };
  }
}

/** Pids of every live descendant of `root`, read from /proc/<pid>/stat. */
function descendants(root) {
  const parent = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      parent.set(Number(name), Number(fields[1]));
    } catch {
      // the process ended while we looked
    }
  }
  const found = [];
  let frontier = [root];
  while (frontier.length) {
    const next = [];
    for (const [pid, ppid] of parent) if (frontier.includes(ppid)) next.push(pid);
    found.push(...next);
    frontier = next;
  }
  return found;
}

/** Fails when the process maps a file whose path contains `text` (unreadable maps: no check). */
function checkUnmapped(pid, text) {
  if (text === undefined) return;
  let maps;
  try {
    maps = readFileSync(`/proc/${pid}/maps`, "utf8");
  } catch {
    return;
  }
  const line = maps.split("\n").find((l) => l.includes(text));
  if (line) throw new Error(`the server process maps ${JSON.stringify(text)}: ${line.trim().split(/\s+/).pop()}`);
}

function memoryReport(pid) {
  const own = memoryKib(pid);
  const children = descendants(pid);
  let treeHwm = own.hwm ?? 0;
  for (const child of children) treeHwm += memoryKib(child).hwm ?? 0;
  return { rss_hwm_kib: own.hwm, rss_kib: own.rss, descendants: children.length, tree_rss_hwm_kib: treeHwm };
}

function tail(chunks) {
  const text = Buffer.concat(chunks).toString("utf8");
  return text.length > STDERR_TAIL_BYTES ? text.slice(-STDERR_TAIL_BYTES) : text;
}

/** Spawn the server and finish the handshake; returns timings and a handle to close it. */
async function open(opts, env) {
  const transport = new StdioClientTransport({ command: opts.command, args: opts.commandArgs, env, stderr: "pipe" });
  const stderr = [];
  let stderrBytes = 0;
  transport.stderr?.on("data", (chunk) => {
    stderr.push(chunk);
    stderrBytes += chunk.length;
    while (stderrBytes > 2 * STDERR_TAIL_BYTES && stderr.length > 1) stderrBytes -= stderr.shift().length;
  });
  const client = new Client({ name: "shadowcode-bench", version: "0.1.0" }, { capabilities: {} });
  const requestOptions = { timeout: opts.timeoutMs };
  const t0 = performance.now();
  try {
    await client.connect(transport, requestOptions);
    const t1 = performance.now();
    const listed = await client.listTools(undefined, requestOptions);
    const t2 = performance.now();
    return {
      client,
      transport,
      stderr,
      initializeMs: t1 - t0,
      toolsListMs: t2 - t0,
      spawnedAt: t0,
      toolCount: listed.tools.length,
      pid: transport.pid,
      requestOptions,
    };
  } catch (error) {
    await client.close().catch(() => {});
    error.stderrTail = tail(stderr);
    throw error;
  }
}

function baseEnv() {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  return env;
}

async function startup(opts) {
  const runs = [];
  for (let i = 0; i < opts.warmup + opts.runs; i++) {
    const env = baseEnv();
    let fresh;
    if (opts.freshDirEnv.length) {
      fresh = mkdtempSync(path.join(tmpdir(), "shadowcode-bench-"));
      for (const name of opts.freshDirEnv) env[name] = fresh;
    }
    try {
      const h = await open(opts, env);
      const memory = memoryReport(h.pid);
      let spawnToFirstCallMs = null;
      try {
        checkUnmapped(h.pid, opts.forbidMapped);
        if (opts.expectText !== undefined) {
          // Sent once the memory was read: spawn -> its answer includes that read (about a ms).
          const result = await callOnce(h, opts);
          spawnToFirstCallMs = performance.now() - h.spawnedAt;
          expectText(result, opts);
        }
      } catch (error) {
        error.stderrTail = tail(h.stderr);
        throw error;
      } finally {
        await h.client.close();
      }
      if (i >= opts.warmup) {
        runs.push({
          spawn_to_tools_list_ms: h.toolsListMs,
          spawn_to_initialize_ms: h.initializeMs,
          spawn_to_first_call_ms: spawnToFirstCallMs,
          tool_count: h.toolCount,
          ...memory,
        });
      }
    } finally {
      if (fresh) rmSync(fresh, { recursive: true, force: true });
    }
  }
  return { runs };
}

async function callOnce(h, opts) {
  const result = await h.client.request(
    { method: "tools/call", params: { name: opts.tool, arguments: opts.args } },
    CallToolResultSchema,
    h.requestOptions,
  );
  if (result.isError) {
    const text = result.content?.[0]?.text ?? "";
    throw new Error(`${opts.tool} answered isError: ${text.slice(0, 300)}`);
  }
  return result;
}

/** Fails unless the tool's first text contains `opts.expectText` (the expected server answered). */
function expectText(result, opts) {
  const text = result.content?.[0]?.text ?? "";
  if (!text.includes(opts.expectText)) {
    throw new Error(`${opts.tool} answered without ${JSON.stringify(opts.expectText)}: ${text.slice(0, 300)}`);
  }
}

async function calls(opts) {
  const h = await open(opts, baseEnv());
  const pacer = new FramePacer(opts.windowFrames, opts.windowMs);
  try {
    await pacer.take(HANDSHAKE_FRAMES);
    // The first call is untimed for every server: behind ShadowCode's stdio front it waits
    // for the full server to finish starting, which is a start-up figure, not a call's.
    await pacer.take();
    const firstStart = performance.now();
    const first = await callOnce(h, opts);
    const firstCallMs = performance.now() - firstStart;
    const spawnToFirstCallMs = performance.now() - h.spawnedAt;
    if (opts.expectText !== undefined) expectText(first, opts);
    const latencies = [];
    const sequentialStart = performance.now();
    for (let i = 0; i < opts.calls; i++) {
      await pacer.take();
      const start = performance.now();
      await callOnce(h, opts);
      latencies.push(performance.now() - start);
    }
    const sequentialWallMs = performance.now() - sequentialStart;
    const intervals = [];
    let next = 0;
    const wallStart = performance.now();
    const worker = async () => {
      while (next < opts.burstCalls) {
        next++;
        await pacer.take();
        const start = performance.now();
        await callOnce(h, opts);
        intervals.push([start, performance.now()]);
      }
    };
    await Promise.all(Array.from({ length: opts.inflight }, worker));
    const wallMs = performance.now() - wallStart;
    const busy = busyMs(intervals);
    const memory = memoryReport(h.pid);
    checkUnmapped(h.pid, opts.forbidMapped);
    return {
      spawn_to_tools_list_ms: h.toolsListMs,
      tool_count: h.toolCount,
      first_call_ms: firstCallMs,
      spawn_to_first_call_ms: spawnToFirstCallMs,
      sequential_latencies_ms: latencies,
      sequential_wall_ms: sequentialWallMs,
      throughput: {
        calls: intervals.length,
        inflight: opts.inflight,
        busy_ms: busy,
        wall_ms: wallMs,
        calls_per_second: busy > 0 ? (intervals.length * 1000) / busy : null,
      },
      ...memory,
    };
  } catch (error) {
    error.stderrTail = tail(h.stderr);
    throw error;
  } finally {
    await h.client.close();
  }
}

let opts;
try {
  opts = parse(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`driver: ${error.message}\n`);
  process.exit(2);
}
const meta = {
  mode: opts.mode,
  sdk: SDK,
  sdk_version: sdkVersion(),
  command: [opts.command, ...opts.commandArgs],
  window_frames: opts.windowFrames,
  window_ms: opts.windowMs,
};
try {
  const body = opts.mode === "startup" ? await startup(opts) : await calls(opts);
  process.stdout.write(`${JSON.stringify({ ok: true, ...meta, ...body })}\n`);
  process.exit(0);
} catch (error) {
  const report = { ok: false, ...meta, error: String(error?.message ?? error), stderr_tail: error?.stderrTail ?? "" };
  process.stdout.write(`${JSON.stringify(report)}\n`);
  process.exit(1);
}
