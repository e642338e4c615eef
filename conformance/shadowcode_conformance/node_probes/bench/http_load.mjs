// Load a stateless Streamable HTTP MCP endpoint with `tools/call` POSTs from several callers.
//
// usage:
//   node bench/http_load.mjs --url http://127.0.0.1:PORT/mcp [options]
//
// options:
//   --token-env NAME       send `Authorization: Bearer <value of NAME>` (the token never
//                          appears in argv); without it no Authorization header is sent
//   --tool NAME            the tool to call (default echo)
//   --args JSON            its arguments (default {})
//   --expect-text TEXT     the first text of every answer must contain TEXT
//   --requests N           timed requests (default 480)
//   --warmup N             untimed requests first, one at a time (default 8)
//   --callers N            callers, each with one request in flight at a time (default 8)
//   --window-requests N    requests sent per sliding window, 0 = no pacing (default 0)
//   --window-ms N          the window's length (default 1050)
//   --protocol-version V   the MCP-Protocol-Version header (default 2025-06-18)
//   --timeout-ms N         deadline of each request (default 30000)
//
// Every request is one `tools/call` JSON-RPC POST on a new connection (`Connection: close`),
// answered as `application/json`; no session, no `initialize` (stateless servers take each
// POST on its own). A request's latency runs from just before the connection is opened to
// the end of the answer body. Pacing works as in driver.mjs: the wait comes before the clock
// starts, and requests per second count only the time during which a request was in flight
// (`requests_per_second`), beside the paced wall-clock rate (`requests_per_second_wall`).
//
// Prints one JSON document on stdout; exit 0 when every request got a 200 with a non-error
// result, 1 otherwise (the first failure is reported), 2 on bad usage.

import http from "node:http";
import { performance } from "node:perf_hooks";

import { FramePacer, busyMs } from "./pacing.mjs";

class UsageError extends Error {}

function parse(argv) {
  const o = {
    url: undefined,
    tokenEnv: undefined,
    tool: "echo",
    args: {},
    expectText: undefined,
    requests: 480,
    warmup: 8,
    callers: 8,
    windowRequests: 0,
    windowMs: 1050,
    protocolVersion: "2025-06-18",
    timeoutMs: 30000,
  };
  const ints = {
    "--requests": "requests",
    "--warmup": "warmup",
    "--callers": "callers",
    "--window-requests": "windowRequests",
    "--window-ms": "windowMs",
    "--timeout-ms": "timeoutMs",
  };
  const strings = {
    "--url": "url",
    "--token-env": "tokenEnv",
    "--tool": "tool",
    "--expect-text": "expectText",
    "--protocol-version": "protocolVersion",
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[++i];
    if (value === undefined) throw new UsageError(`${flag} needs a value`);
    if (flag in ints) {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 0) throw new UsageError(`${flag} needs a non-negative integer`);
      o[ints[flag]] = n;
    } else if (flag in strings) o[strings[flag]] = value;
    else if (flag === "--args") o.args = JSON.parse(value);
    else throw new UsageError(`unknown option ${flag}`);
  }
  if (!o.url) throw new UsageError("--url is required");
  if (o.callers < 1) throw new UsageError("--callers must be at least 1");
  if (o.requests < 1) throw new UsageError("--requests must be at least 1");
  if (o.tokenEnv !== undefined && !process.env[o.tokenEnv]) throw new UsageError(`${o.tokenEnv} is not set`);
  return o;
}

/** One POST on a new connection; resolves to the parsed JSON-RPC answer, rejects on anything else. */
function post(opts, id) {
  const body = Buffer.from(
    JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: opts.tool, arguments: opts.args } }),
  );
  const headers = {
    "Content-Type": "application/json",
    "Content-Length": String(body.length),
    Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": opts.protocolVersion,
    Connection: "close",
  };
  if (opts.tokenEnv !== undefined) headers.Authorization = `Bearer ${process.env[opts.tokenEnv]}`;
  return new Promise((resolve, reject) => {
    const req = http.request(opts.url, { method: "POST", headers, agent: false, timeout: opts.timeoutMs }, (res) => {
      const chunks = [];
      res.on("data", (chunk) => chunks.push(chunk));
      res.on("error", reject);
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        if (res.statusCode !== 200) {
          reject(new Error(`HTTP ${res.statusCode}: ${text.slice(0, 300)}`));
          return;
        }
        let answer;
        try {
          answer = JSON.parse(text);
        } catch {
          reject(new Error(`not a JSON answer (${res.headers["content-type"]}): ${text.slice(0, 300)}`));
          return;
        }
        const result = answer?.result;
        if (!result) reject(new Error(`no result: ${text.slice(0, 300)}`));
        else if (result.isError) reject(new Error(`${opts.tool} answered isError: ${text.slice(0, 300)}`));
        else if (opts.expectText !== undefined && !(result.content?.[0]?.text ?? "").includes(opts.expectText)) {
          reject(new Error(`${opts.tool} answered without ${JSON.stringify(opts.expectText)}: ${text.slice(0, 300)}`));
        } else resolve(answer);
      });
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${opts.timeoutMs} ms`)));
    req.on("error", reject);
    req.end(body);
  });
}

async function load(opts) {
  const pacer = new FramePacer(opts.windowRequests, opts.windowMs);
  let id = 0;
  for (let i = 0; i < opts.warmup; i++) {
    await pacer.take();
    await post(opts, ++id);
  }
  const latencies = [];
  const intervals = [];
  let next = 0;
  const wallStart = performance.now();
  const caller = async () => {
    while (next < opts.requests) {
      next++;
      await pacer.take();
      const start = performance.now();
      await post(opts, ++id);
      const end = performance.now();
      latencies.push(end - start);
      intervals.push([start, end]);
    }
  };
  await Promise.all(Array.from({ length: opts.callers }, caller));
  const wallMs = performance.now() - wallStart;
  const busy = busyMs(intervals);
  return {
    requests: latencies.length,
    callers: opts.callers,
    latencies_ms: latencies,
    busy_ms: busy,
    wall_ms: wallMs,
    requests_per_second: busy > 0 ? (latencies.length * 1000) / busy : null,
    requests_per_second_wall: wallMs > 0 ? (latencies.length * 1000) / wallMs : null,
  };
}

let opts;
try {
  opts = parse(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`http_load: ${error.message}\n`);
  process.exit(2);
}
const meta = {
  mode: "http",
  tool: opts.tool,
  window_requests: opts.windowRequests,
  window_ms: opts.windowMs,
  protocol_version: opts.protocolVersion,
};
try {
  const body = await load(opts);
  process.stdout.write(`${JSON.stringify({ ok: true, ...meta, ...body })}\n`);
  process.exit(0);
} catch (error) {
  process.stdout.write(`${JSON.stringify({ ok: false, ...meta, error: String(error?.message ?? error) })}\n`);
  process.exit(1);
}
