// Drive a running `mcp serve --http` gateway with the official TypeScript SDK 2.x client
// (@modelcontextprotocol/client) negotiating the 2026-07-28 revision per request; the
// bearer token comes from the environment variable named by --token-env.
//
// usage: node probes/http_sdk2.mjs --url URL --token-env NAME --workspace DIR [--timeout-ms N]
// Prints one JSON report on stdout; exit 0 all checks ok, 1 a check failed, 2 bad usage.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

import { MODERN_PROTOCOL_VERSION, expect, installedVersion, tapTransport } from "../lib/harness.mjs";
import { parseHttpOrExit, runHttpProbe } from "../lib/http.mjs";

const SDK = "@modelcontextprotocol/client";
const meta = { probe: "http_sdk2", sdk: SDK, sdk_version: installedVersion(SDK), transport: "streamable-http" };
const options = parseHttpOrExit(meta, process.argv.slice(2));

async function open(run) {
  const transport = new StreamableHTTPClientTransport(new URL(options.url), {
    requestInit: { headers: { Authorization: `Bearer ${options.token}` } },
  });
  const tap = tapTransport(transport);
  const client = new Client(
    { name: "shadowcode-http-probe-sdk2", version: "0.1.0" },
    { capabilities: {}, versionNegotiation: { mode: "auto" } },
  );
  const opts = () => ({ timeout: run.remainingMs() });
  await client.connect(transport, opts());
  if (run.protocolVersion === null) run.protocolVersion = client.getNegotiatedProtocolVersion() ?? tap.initializeVersion;
  run.extra.protocol_era = client.getProtocolEra() ?? null;
  return {
    api: {
      listTools: (p) => client.listTools(p, opts()),
      listResources: (p) => client.listResources(p, opts()),
      readResource: (uri) => client.readResource({ uri }, opts()),
      listPrompts: (p) => client.listPrompts(p, opts()),
      getPrompt: (name, args) => client.getPrompt({ name, arguments: args }, opts()),
      callTool: (name, args) => client.callTool({ name, arguments: args }, opts()),
    },
    close: () => client.close(),
    sessionId: () => transport.sessionId,
  };
}

async function afterConnect(run) {
  await run.check("modern_revision_per_request", ["GW-05", "SRV-03"], () => {
    expect(run.protocolVersion === MODERN_PROTOCOL_VERSION, `negotiated ${run.protocolVersion}, era ${run.extra.protocol_era}`);
    return `${run.protocolVersion} without a handshake`;
  });
}

await runHttpProbe(meta, options, open, afterConnect);
