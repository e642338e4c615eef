// Delegated work through the official TypeScript SDK 1.x client over stdio: a scripted Build
// task with exact approvals (one through shadow_approve, one through the target's CLI), its
// rollback, an approved test job that calls no model, and the permission ceiling of shadow_run.
//
// usage: node probes/jobs_sdk1.mjs [--timeout-ms 120000] [--request-log FILE] -- CMD ARG...
// CMD ARG... is `<target> --workspace DIR mcp serve --allow-write --allow-approvals`.
// Prints one JSON report on stdout; exit 0 all checks ok, 1 a check failed, 2 bad usage.
// SDK 1.x speaks only the legacy revisions (initialize handshake), SRV-03.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

import { LEGACY_PROTOCOL_VERSIONS, childEnvironment, expect, installedVersion, tapTransport } from "../lib/harness.mjs";
import { parseJobsOrExit, runJobsProbe } from "../lib/jobs.mjs";

const SDK = "@modelcontextprotocol/sdk";
const meta = { probe: "jobs_sdk1", sdk: SDK, sdk_version: installedVersion(SDK), transport: "stdio" };
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
  const client = new Client({ name: "shadowcode-jobs-probe-sdk1", version: "0.1.0" }, { capabilities: {} });
  const opts = () => ({ timeout: run.remainingMs() });
  await client.connect(transport, opts());
  if (run.protocolVersion === null) run.protocolVersion = tap.initializeVersion;
  expect(LEGACY_PROTOCOL_VERSIONS.includes(tap.initializeVersion), `negotiated ${tap.initializeVersion}`);
  return {
    api: { callTool: (name, args) => client.callTool({ name, arguments: args }, undefined, opts()) },
    close: () => client.close(),
    pid: () => transport.pid,
    // The SDK keeps the ChildProcess private; read it to see how the server ended.
    child: () => transport._process,
    transportErrors: () => tap.transportErrors,
  };
}

await runJobsProbe(meta, options, open);
