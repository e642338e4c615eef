// Drive `shadowcode ... mcp serve` over stdio with the official TypeScript SDK 2.x client
// (@modelcontextprotocol/client).
//
// usage: node probes/stdio_sdk2.mjs [--timeout-ms 30000] [--mode auto|legacy] -- CMD ARG...
// --mode auto (default) negotiates with server/discover and expects the 2026-07-28
// revision; --mode legacy uses the initialize handshake (SRV-03).
// Prints one JSON report on stdout; exit 0 all checks ok, 1 a check failed, 2 bad usage.

import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

import {
  LEGACY_PROTOCOL_VERSIONS,
  MODERN_PROTOCOL_VERSION,
  childEnvironment,
  expect,
  installedVersion,
  parseOrExit,
  runStdioProbe,
  tapTransport,
} from "../lib/harness.mjs";

const SDK = "@modelcontextprotocol/client";
const meta = { probe: "stdio_sdk2", sdk: SDK, sdk_version: installedVersion(SDK), transport: "stdio" };
const options = parseOrExit(meta, process.argv.slice(2), { modes: ["auto", "legacy"], defaultMode: "auto" });
meta.mode = options.mode;

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
    { name: "shadowcode-probe-sdk2", version: "0.1.0" },
    { capabilities: {}, versionNegotiation: { mode: options.mode } },
  );
  const opts = () => ({ timeout: run.remainingMs() });
  await client.connect(transport, opts());
  run.protocolVersion = client.getNegotiatedProtocolVersion() ?? tap.initializeVersion;
  run.extra.protocol_era = client.getProtocolEra() ?? null;
  run.extra.server_info = client.getServerVersion() ?? null;
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
    pid: () => transport.pid,
    // The SDK keeps the ChildProcess private; read it to see how the server ended.
    child: () => transport._process,
    transportErrors: () => tap.transportErrors,
  };
}

async function afterConnect(run) {
  if (options.mode === "auto") {
    await run.check("modern_revision_negotiated", ["SRV-03"], () => {
      expect(run.extra.protocol_era === "modern", `era ${run.extra.protocol_era}, protocol ${run.protocolVersion}`);
      expect(run.protocolVersion === MODERN_PROTOCOL_VERSION, `negotiated ${run.protocolVersion}`);
      return `${run.protocolVersion} via server/discover`;
    });
  } else {
    await run.check("legacy_handshake_latest_revision", ["SRV-03"], () => {
      expect(run.extra.protocol_era === "legacy", `era ${run.extra.protocol_era}`);
      expect(LEGACY_PROTOCOL_VERSIONS.includes(run.protocolVersion), `negotiated ${run.protocolVersion}`);
      expect(run.protocolVersion === "2025-11-25", `client asked for 2025-11-25, server chose ${run.protocolVersion}`);
      return run.protocolVersion;
    });
  }
}

await runStdioProbe(meta, options, open, afterConnect);
