// The TypeScript SDK client timing sequential tools/call round trips over Streamable HTTP.
//
// Usage: node http_client.mjs --url URL --tool NAME [--args JSON] [--calls N] [--warmup W]
//          [--window-requests K] [--window-ms MS] [--expect-text TEXT]
//
// One Client with the SDK's StreamableHTTPClientTransport connects (initialize, the legacy
// lifecycle), makes W untimed calls, then N timed ones, one at a time, paced to K calls per
// MS sliding window (the wait happens before a call's clock starts), then closes (the SDK
// deletes its session). Prints one JSON line: {"ok": true, "protocol_version",
// "latencies_ms": [...]} or {"ok": false, "error"}.

import { performance } from "node:perf_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { FramePacer } from "./pacing.mjs";

function options(argv) {
  const o = { args: "{}", calls: 300, warmup: 10, windowRequests: 0, windowMs: 1050, expectText: null };
  for (let i = 0; i < argv.length; i += 2) {
    const [key, value] = [argv[i], argv[i + 1]];
    if (key === "--url") o.url = value;
    else if (key === "--tool") o.tool = value;
    else if (key === "--args") o.args = value;
    else if (key === "--calls") o.calls = Number(value);
    else if (key === "--warmup") o.warmup = Number(value);
    else if (key === "--window-requests") o.windowRequests = Number(value);
    else if (key === "--window-ms") o.windowMs = Number(value);
    else if (key === "--expect-text") o.expectText = value;
    else throw new Error(`unknown option ${key}`);
  }
  if (!o.url || !o.tool) throw new Error("--url and --tool are required");
  return o;
}

async function main() {
  const o = options(process.argv.slice(2));
  const args = JSON.parse(o.args);
  const client = new Client({ name: "bench-ts-http-client", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(o.url));
  const pacer = new FramePacer(o.windowRequests, o.windowMs);
  const latencies = [];
  await client.connect(transport);
  try {
    for (let i = 0; i < o.warmup + o.calls; i++) {
      await pacer.take();
      const started = performance.now();
      const result = await client.callTool({ name: o.tool, arguments: args });
      const elapsed = performance.now() - started;
      const text = JSON.stringify(result);
      if (result.isError || (o.expectText !== null && !text.includes(o.expectText))) {
        throw new Error(`call ${i} answered ${text.slice(0, 300)}`);
      }
      if (i >= o.warmup) latencies.push(elapsed);
    }
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
  return { ok: true, protocol_version: transport.protocolVersion ?? null, latencies_ms: latencies };
}

main().then(
  (report) => process.stdout.write(JSON.stringify(report) + "\n"),
  (error) => process.stdout.write(JSON.stringify({ ok: false, error: String(error?.message ?? error) }) + "\n"),
);
