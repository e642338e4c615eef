"""The requirement manifest: every id the conformance report lists, in contract order.

Each entry pairs a stable id (``<AREA>-<nn>``) with a one-line summary written for this
suite. The ids follow the product contract; the wording here is our own and is meant only
to make a report readable. The report lists every id below with pass, fail or not covered
(CONF-01).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["AREAS", "REQUIREMENTS", "Requirement", "requirement_ids"]


@dataclass(frozen=True)
class Requirement:
    """One checkable statement of the contract.

    Attributes:
        id: stable id such as ``"SRV-04"``.
        summary: one line saying what is checked, in this suite's words.
    """

    id: str
    summary: str

    @property
    def area(self) -> str:
        """The id's prefix, e.g. ``"SRV"``."""
        return self.id.split("-", 1)[0]


AREAS: Final = ("ENG", "SRV", "REG", "GW", "CLI", "PKG", "CONF", "CW")
"""Areas in the order the report lists them."""

_ROWS: Final[tuple[tuple[str, str], ...]] = (
    # ENG: what the MCP surfaces stand on
    ("ENG-01", "Profiles are isolated by name; SHADOWCODE_HOME relocates the profile root."),
    ("ENG-02", "Projects are keyed by their resolved path and stay untrusted until given a trust level."),
    ("ENG-03", "A single engine per profile; clients attach to it or start a temporary one; state is durable."),
    ("ENG-04", "Build, Plan and Review tasks run a tool-using model loop; only Build may write."),
    ("ENG-05", "Scripted and OpenAI-compatible model providers; a missing model fails fast and clearly."),
    ("ENG-06", "Task writes are checkpointed beforehand and can be rolled back after conflict checks."),
    ("ENG-07", "Approvals can be listed, granted and refused from the command line and name the exact action."),
    ("ENG-08", "Detached command-line jobs do not belong to any MCP connection."),
    # SRV: native MCP server over stdio
    ("SRV-01", "stdio server: stdout holds JSON-RPC lines only; diagnostics go to stderr."),
    ("SRV-02", "Combining --json with mcp serve exits 2 with a stderr message and silent stdout."),
    ("SRV-03", "Serves the 2026-07-28 revision without handshake and the older revisions via initialize."),
    ("SRV-04", "Lists the seventeen shadow_* tools, each described, schema'd and annotated."),
    ("SRV-05", "Offers the project, sessions, memory and plan resources; plan is null when none was recorded."),
    ("SRV-06", "Offers the delegate prompt (with a task) and the read-only understand prompt."),
    ("SRV-07", "Uses the running engine or a temporary one that ends with the server; no side effects elsewhere."),
    ("SRV-08", "The project is fixed for the connection; listings and ids are scoped to it."),
    ("SRV-09", "Read-only unless --allow-write, and writes only in a trusted project within its level."),
    ("SRV-10", "shadow_run starts read-only unless asked; a per-task level can only lower the ceiling."),
    ("SRV-11", "shadow_approve needs both write and approval flags and resolves one owned approval."),
    ("SRV-12", "shadow_memory reads, appends and replaces notes; replace is guarded by the content hash."),
    ("SRV-13", "shadow_sqlite: bounded read-only single statements with bound parameters, WAL visible."),
    ("SRV-14", "shadow_goal manages durable goals and never launches a task."),
    ("SRV-15", "shadow_run opens a new conversation and answers with a job id immediately."),
    ("SRV-16", "shadow_jobs lists, inspects (paged) and cancels this connection's jobs."),
    ("SRV-17", "shadow_test runs an approved test command as an owned job without any model call."),
    ("SRV-18", "shadow_checkpoint inspects; shadow_rollback needs task id, confirmation and write access."),
    ("SRV-19", "shadow_understand, shadow_doctor and shadow_why inspect without side effects unless asked."),
    ("SRV-20", "shadow_status, models, sessions, review and tools describe the project and capabilities."),
    ("SRV-21", "Unfinished delegated jobs are cancelled and cleaned up when their connection goes away."),
    ("SRV-22", "Ownership is registered before scheduling over a private socket whose EOF cancels the owner."),
    ("SRV-23", "Approved background processes survive task cancellation until stopped or engine close."),
    ("SRV-24", "Ownership sockets, per-owner job counts and exchange deadlines are bounded."),
    ("SRV-25", "stdio frame size, lifetime bytes, frame rate, concurrency, deadlines and result size are bounded."),
    ("SRV-26", "For a declaring 2026-07-28 client, shadow_run and shadow_test answer a task: the owned job."),
    ("SRV-27", "subscriptions/listen streams acknowledged, stamped, filtered job and task changes; templates list."),
    ("SRV-28", "A tool call carrying a progress token sends bounded progress notifications while it runs."),
    ("SRV-29", "--approve-in-host asks the host under an engine-signed state; bent or replayed ones change nothing."),
    ("SRV-30", "The loopback approval page: one-time token the model never sees; reuse, bad token, other Origin fail."),
    # REG: registration snippets
    ("REG-01", "mcp register prints an mcpServers snippet with absolute executable and canonical project."),
    ("REG-02", "A packaged build registers the archive file, not an extraction directory."),
    ("REG-03", "--client codex prints a TOML section and refuses --json."),
    ("REG-04", "--client claude, cursor and generic print their respective JSON shapes."),
    ("REG-05", "Paths and arguments are kept literally; '${' in paths is refused for Claude and Cursor."),
    ("REG-06", "HTTP registration names the token variable only, resolves nothing and contacts nothing."),
    ("REG-07", "HTTP registration: loopback /mcp URL only, no generic format, write flags only for stdio."),
    ("REG-08", "Printed snippets are accepted by the real Claude Code and Codex command lines."),
    # GW: Streamable HTTP gateway
    ("GW-01", "The gateway token comes from a named environment variable or the secret store only."),
    ("GW-02", "Ready address on stderr, nothing on stdout, port 0 supported, signals stop it cleanly."),
    ("GW-03", "Loopback binds only; bearer token length bounded; every request authenticated."),
    ("GW-04", "Host, Origin, query and duplicate-header checks; the credential never reaches handlers."),
    ("GW-05", "Stateless JSON responses, 405 for GET/DELETE, no /sse, both protocol eras."),
    ("GW-06", "One project owner shared by credential holders; separate gateways own separate jobs."),
    ("GW-07", "Connection, rate, size and deadline limits of the gateway."),
    ("GW-08", "Closing an HTTP request leaves an already submitted job running."),
    # CLI: client of external MCP servers
    ("CLI-01", "External servers are registered globally then reviewed and enabled per trusted project."),
    ("CLI-02", "At most four enabled servers per project; grants pin path, definition id and content hash."),
    ("CLI-03", "Project definition files: location, formats, fields and refused combinations."),
    ("CLI-04", "env_refs resolve only at connect time; configured values are redacted; stderr stays out."),
    ("CLI-05", "mcp add/enable/disable/remove commands, ids and hash-guarded replacement and removal."),
    ("CLI-06", "Changed definitions need review before new tasks use them; running tasks keep a snapshot."),
    ("CLI-07", "Build tasks see mcp__server__tool tools or the compact mcp_tools/mcp_call pair."),
    ("CLI-08", "Tool catalogs are reused by definition hash; connections are lazy and reused per task."),
    ("CLI-09", "Every external MCP call needs its own exact approval; read-only modes connect nowhere."),
    ("CLI-10", "Definitions are re-read and re-hashed before each external action and after approval waits."),
    ("CLI-11", "HTTP server rules: loopback, network permission, HTTPS for credentials, no redirects or proxies."),
    ("CLI-12", "stdio servers start without a shell in the project with a minimal, filtered environment."),
    ("CLI-13", "Client-side connection, frame, catalog, cursor, timeout and stderr limits."),
    ("CLI-14", "Bad frames end the connection; results are passed through intact; bad calls never sent."),
    ("CLI-15", "The client advertises no optional capabilities and never retries a failed call."),
    ("CLI-16", "HTTP client tries modern discovery first, then legacy initialize, with the required headers."),
    ("CLI-17", "HTTP client body, event, header and rate limits; bad replies close the connection."),
    ("CLI-18", "No automatic retry, resumption or reinitialization; an expired session fails the call."),
    ("CLI-19", "Each stdio connection owns its process group, drains stderr and is cleaned up in order."),
    # PKG: packaging
    ("PKG-01", "The single-file zipapp runs with only python3; the source tree runs too."),
    ("PKG-02", "Two documented commands set up a fresh machine: one end-to-end run, one test run."),
    # CONF: this suite
    ("CONF-01", "This runner drives any target command and reports every id as pass, fail or not covered."),
    ("CONF-02", "TypeScript SDK 1.x and 2.x probes over stdio and HTTP."),
    ("CONF-03", "A headless end-to-end probe of tasks, approvals, rollback, registration and cleanup."),
    ("CONF-04", "Continuous integration runs the suite against source and packaged builds."),
    # CW: additions over the peer product
    ("CW-01", "Imports mcp.json-style and host registration files as reviewed definitions."),
    ("CW-02", "Per-server enabled_tools and disabled_tools filters."),
    ("CW-03", "mcp validate connects and reports; mcp doctor checks statically without starting anything."),
    ("CW-04", "mcp tools SERVER shows one server's discovered tools."),
    ("CW-05", "Catalog change notifications and TTLs revalidate; stale calls ask to be retried."),
    ("CW-06", "Tasks can list and read resources and templates and fetch prompts."),
    ("CW-07", "Connect, call and read timeouts are configurable per server."),
    ("CW-08", "OAuth for remote servers, checked against the official client auth scenarios."),
    ("CW-09", "Skills from MCP servers: only verifiable entries are kept; file reads are checked by size and digest."),
    ("CW-10", "Session boot: servers start in the background without holding the first turn; lazy ones when needed."),
    ("CW-11", "Private-network authority: a name resolving to a non-public address needs allow_private_network."),
    ("CW-12", "Plugin bundles contribute reviewed MCP servers; drift, disable or revoke withdraw them."),
)

REQUIREMENTS: Final[tuple[Requirement, ...]] = tuple(Requirement(i, s) for i, s in _ROWS)
"""Every requirement, in the order the report lists them."""


def requirement_ids() -> list[str]:
    """Every requirement id in report order.

    Returns:
        A list of strings such as ``["ENG-01", ..., "CW-12"]``.
    """
    return [r.id for r in REQUIREMENTS]
