// Drive `shadowcode ... mcp serve` over stdio with the official TypeScript SDK 1.x client.
//
// usage: node probes/stdio_sdk1.mjs [--timeout-ms 30000] -- CMD ARG...
// Prints one JSON report on stdout; exit 0 all checks ok, 1 a check failed, 2 bad usage.
// SDK 1.x speaks only the legacy revisions (initialize handshake), SRV-03.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

import {
  LEGACY_PROTOCOL_VERSIONS,
  childEnvironment,
  expect,
  installedVersion,
  parseOrExit,
  runStdioProbe,
  tapTransport,
} from "../lib/harness.mjs";

const SDK = "@modelcontextprotocol/sdk";
const meta = { probe: "stdio_sdk1", sdk: SDK, sdk_version: installedVersion(SDK), transport: "stdio" };
const options = parseOrExit(meta, process.argv.slice(2));

async function open(run, hooks) {
  const transport = new StdioClientTransport({
    command: options.command,
    args: options.args,
    env: childEnvironment(),
    stderr: "pipe",
  });
  hooks.stderr(transport.stderr);
  const tap = tapTransport(transport);
  const client = new Client({ name: "shadowcode-probe-sdk1", version: "0.1.0" }, { capabilities: {} });
  const opts = () => ({ timeout: run.remainingMs() });
  await client.connect(transport, opts());
  run.protocolVersion = tap.initializeVersion;
  expect(LEGACY_PROTOCOL_VERSIONS.includes(run.protocolVersion), `negotiated ${run.protocolVersion}`);
  run.extra.server_info = client.getServerVersion() ?? null;
  return {
    api: {
      listTools: (p) => client.listTools(p, opts()),
      listResources: (p) => client.listResources(p, opts()),
      readResource: (uri) => client.readResource({ uri }, opts()),
      listPrompts: (p) => client.listPrompts(p, opts()),
      getPrompt: (name, args) => client.getPrompt({ name, arguments: args }, opts()),
      callTool: (name, args) => client.callTool({ name, arguments: args }, undefined, opts()),
    },
    close: () => client.close(),
    pid: () => transport.pid,
    // The SDK keeps the ChildProcess private; read it to see how the server ended.
    child: () => transport._process,
    transportErrors: () => tap.transportErrors,
  };
}

async function afterConnect(run) {
  await run.check("legacy_handshake_latest_revision", ["SRV-03"], () => {
    expect(run.protocolVersion === "2025-11-25", `SDK 1.x asked for 2025-11-25, server chose ${run.protocolVersion}`);
    return run.protocolVersion;
  });
}

await runStdioProbe(meta, options, open, afterConnect);
