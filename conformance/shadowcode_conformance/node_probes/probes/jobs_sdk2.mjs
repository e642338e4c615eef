// Delegated work through the official TypeScript SDK 2.x client (@modelcontextprotocol/client)
// over stdio: a scripted Build task with exact approvals (one through shadow_approve, one
// through the target's CLI), its rollback, an approved test job that calls no model, and the
// permission ceiling of shadow_run. The client negotiates the 2026-07-28 revision (SRV-03).
//
// usage: node probes/jobs_sdk2.mjs [--timeout-ms 120000] [--request-log FILE] -- CMD ARG...
// CMD ARG... is `<target> --workspace DIR mcp serve --allow-write --allow-approvals`.
// Prints one JSON report on stdout; exit 0 all checks ok, 1 a check failed, 2 bad usage.

import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

import { MODERN_PROTOCOL_VERSION, childEnvironment, expect, installedVersion, tapTransport } from "../lib/harness.mjs";
import { parseJobsOrExit, runJobsProbe } from "../lib/jobs.mjs";

const SDK = "@modelcontextprotocol/client";
const meta = { probe: "jobs_sdk2", sdk: SDK, sdk_version: installedVersion(SDK), transport: "stdio" };
const options = parseJobsOrExit(meta, process.argv.slice(2));

async function open(run, hooks) {
  const transport = new StdioClientTransport({
    command: options.command,
    args: options.args,
    env: childEnvironment(),
    stderr: "pipe",
  });
  hooks.stderr(transport.stderr);
  const tap = tapTransport(transport);
  const client = new Client(
    { name: "shadowcode-jobs-probe-sdk2", version: "0.1.0" },
    { capabilities: {}, versionNegotiation: { mode: "auto" } },
  );
  const opts = () => ({ timeout: run.remainingMs() });
  await client.connect(transport, opts());
  const negotiated = client.getNegotiatedProtocolVersion() ?? tap.initializeVersion;
  if (run.protocolVersion === null) run.protocolVersion = negotiated;
  expect(negotiated === MODERN_PROTOCOL_VERSION, `negotiated ${negotiated}, era ${client.getProtocolEra()}`);
  return {
    api: { callTool: (name, args) => client.callTool({ name, arguments: args }, opts()) },
    close: () => client.close(),
    pid: () => transport.pid,
    // The SDK keeps the ChildProcess private; read it to see how the server ended.
    child: () => transport._process,
    transportErrors: () => tap.transportErrors,
  };
}

await runJobsProbe(meta, options, open);
