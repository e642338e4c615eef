// Drive a running `mcp serve --http` gateway with the official TypeScript SDK 1.x client
// (legacy initialization; the bearer token comes from the environment variable named by
// --token-env).
//
// usage: node probes/http_sdk1.mjs --url URL --token-env NAME --workspace DIR [--timeout-ms N]
// Prints one JSON report on stdout; exit 0 all checks ok, 1 a check failed, 2 bad usage.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { LEGACY_PROTOCOL_VERSIONS, expect, installedVersion, tapTransport } from "../lib/harness.mjs";
import { parseHttpOrExit, runHttpProbe } from "../lib/http.mjs";

const SDK = "@modelcontextprotocol/sdk";
const meta = { probe: "http_sdk1", sdk: SDK, sdk_version: installedVersion(SDK), transport: "streamable-http" };
const options = parseHttpOrExit(meta, process.argv.slice(2));

async function open(run) {
  const transport = new StreamableHTTPClientTransport(new URL(options.url), {
    requestInit: { headers: { Authorization: `Bearer ${options.token}` } },
  });
  const tap = tapTransport(transport);
  const client = new Client({ name: "shadowcode-http-probe-sdk1", version: "0.1.0" }, { capabilities: {} });
  const opts = () => ({ timeout: run.remainingMs() });
  await client.connect(transport, opts());
  if (run.protocolVersion === null) run.protocolVersion = tap.initializeVersion;
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
    sessionId: () => transport.sessionId,
  };
}

async function afterConnect(run) {
  await run.check("legacy_initialization", ["GW-05", "SRV-03"], () => {
    expect(LEGACY_PROTOCOL_VERSIONS.includes(run.protocolVersion), `negotiated ${run.protocolVersion}`);
    return `${run.protocolVersion} through initialize`;
  });
}

await runHttpProbe(meta, options, open, afterConnect);
