"""The approval page in a real headless Chromium (Debian's ``chromium``), over a running temporary engine.

The page is reached the way a person reaches it: the link the host was handed (URL-mode
elicitation through the input broker), opened in a browser. A wrong token, a form on another
site and a form on an opaque origin are refused and the approval stays pending; the page's own
Approve button decides once; loading or resubmitting the link afterwards is refused.

``bash ci/setup`` installs Chromium from the system's packages where it can; without it the
test is skipped, saying so.

Covers SRV-30, SRV-29.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import pytest

from shadowcode.engine.api import Access, TaskRequest
from shadowcode.engine.local import LocalEngine
from shadowcode.enums import ApprovalStatus, PermissionLevel
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.host_approvals import HostApprovals
from tests.support.browser import Browser, chromium_path, headless_chromium
from tests.support.engine import scripted_model, wait_approval, wait_status
from tests.support.jobs import DONE_TURN, PARK_TURN

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.req("SRV-30", "SRV-29"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
    pytest.mark.skipif(
        chromium_path() is None,
        reason="no chromium on PATH: `bash ci/setup` installs Debian's chromium package where apt-get can",
    ),
]

URL_CAPS = types.ClientCapabilities.model_validate({"elicitation": {"url": {}}})


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def api(engine: LocalEngine, project_dir: Path, tmp_path: Path) -> AsyncIterator[LocalEngine]:
    scripted_model(engine.state.profile, tmp_path / "script.json", [{"match": "", "turns": [PARK_TURN, DONE_TURN]}])
    engine.state.projects.trust(engine.state.project_at(project_dir).path, PermissionLevel.WORKSPACE)
    with anyio.fail_after(120):
        async with engine.running():
            yield engine


@contextmanager
def other_site(target: str) -> Iterator[str]:
    """A page on another loopback origin whose form posts ``decision=approve`` to ``target`` on load."""
    page = (
        f"<!doctype html><form id=f method=post action='{target}'>"
        "<input type=hidden name=decision value=approve></form>"
        "<script>document.getElementById('f').submit()</script>"
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def settle_on(browser: Browser, url: str) -> tuple[int | None, str]:
    """After a navigation that ends on ``url`` (possibly through a form on another page): its status and text."""
    for _ in range(10):
        if browser.evaluate("location.href") == url and browser.evaluate("document.readyState") == "complete":
            break
        browser.wait_loaded()
    return browser.status_of_last_load(), str(browser.evaluate("document.body.innerText"))


async def test_the_page_in_chromium_refuses_wrong_tokens_and_other_origins_and_approves_once(
    api: LocalEngine, project_dir: Path, tmp_path: Path
) -> None:
    root = api.state.project_at(project_dir).path
    ctx = ServerContext(api=api, root=root, access=Access(allow_write=True, approve_in_host=True), approval_page=True)
    host = HostApprovals(ctx, page_preferred=True)
    async with host.running(), AsyncExitStack() as stack:
        caller = await ctx.owning_caller()
        job = (await api.task_submit(TaskRequest("go", level=PermissionLevel.WORKSPACE), caller)).job_id
        approval = (await wait_approval(api.state.approvals, job)).id
        [(_, request)] = (await host.input_requests(job, URL_CAPS)).items()
        url = str(request["params"]["url"])
        token = url.rsplit("/", 1)[1]
        wrong = url[: -len(token)] + ("A" * len(token) if not token.startswith("A") else "B" * len(token))
        browser = await anyio.to_thread.run_sync(stack.enter_context, headless_chromium(tmp_path / "chromium"))
        elsewhere = await anyio.to_thread.run_sync(stack.enter_context, other_site(url))

        def pending() -> bool:
            return api.state.approvals.get(approval).status is ApprovalStatus.PENDING

        def visit(address: str, lands_on: str) -> tuple[int | None, str]:
            browser.navigate(address)
            return settle_on(browser, lands_on)

        status, text = await anyio.to_thread.run_sync(visit, wrong, wrong)
        assert status == 404 and "no such approval link" in text and pending()

        status, text = await anyio.to_thread.run_sync(visit, elsewhere, url)
        assert status == 403 and "another origin" in text and pending()

        opaque = (
            f"data:text/html,<form id=f method=post action='{url}'><input type=hidden name=decision value=approve>"
            "</form><script>document.getElementById('f').submit()</script>"
        )
        status, text = await anyio.to_thread.run_sync(visit, opaque, url)
        assert status == 403 and pending()

        status, text = await anyio.to_thread.run_sync(visit, url, url)
        assert status == 200 and pending()
        assert "true" in text and str(root) in text and job in text and "Files the job changed so far" in text

        def approve() -> tuple[int | None, str]:
            browser.click_and_wait("approve")
            return settle_on(browser, url)

        status, text = await anyio.to_thread.run_sync(approve)
        assert status == 200 and "Approved" in text
        record = api.state.approvals.get(approval)
        assert record.status is ApprovalStatus.APPROVED and record.resolved_by == f"page:{ctx.owner.id}"  # type: ignore[union-attr]

        def resubmit() -> tuple[int | None, str]:
            browser.command("Page.reload", {"ignoreCache": True})
            browser.wait_loaded()
            return settle_on(browser, url)

        status, text = await anyio.to_thread.run_sync(resubmit)
        assert status == 410 and "already used" in text
        status, text = await anyio.to_thread.run_sync(visit, url, url)
        assert status == 410
        assert (await wait_status(api.state.records, job)).status == "done"
        assert api.state.approvals.get(approval).resolved_by == f"page:{ctx.owner.id}"  # type: ignore[union-attr]
