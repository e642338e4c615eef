"""The bounded HTTP transport of sign-in and refresh requests (CW-08, CLI-11).

Every request a sign-in or a refresh makes (protected-resource and authorization-server
metadata, client registration, token requests, the MCP request that starts the flow) goes
through :class:`BoundedTransport`:

- its URL passes the endpoint rules of :class:`~shadowcode.mcp.client.endpoint.Endpoint` as a
  credential-carrying URL: ``https`` except to loopback, the host on loopback or covered by the
  network permission, ``localhost`` contacted by its loopback address;
- proxy variables and ``.netrc`` are ignored, redirects are not followed;
- replies are asked uncompressed (``Accept-Encoding: identity``) and a reply whose
  ``Content-Encoding`` names any coding is refused before a byte of it is read, so a
  compression bomb is never inflated;
- the header block is counted as it arrives and may hold at most MCP_HTTP_HEADERS_MAX_BYTES
  (the limit of MCP replies);
- the reply is read whole within MCP_OAUTH_HTTP_SECONDS and at most MCP_OAUTH_BODY_MAX_BYTES,
  counted as it is read, before anything parses it: a larger or slower reply raises
  :class:`SignInError`.
"""

from __future__ import annotations

import re

import anyio
import httpx2

from shadowcode.errors import ConfigError, PolicyError, ShadowcodeError
from shadowcode.limits import MCP_HTTP_HEADERS_MAX_BYTES, MCP_OAUTH_BODY_MAX_BYTES, MCP_OAUTH_HTTP_SECONDS
from shadowcode.mcp.client.endpoint import Endpoint, url_host
from shadowcode.mcp.client.reply_headers import HeaderBlockTooLarge, HeaderCountingTransport, is_compressed

__all__ = ["BoundedTransport", "SignInError", "bounded_client", "insufficient_scopes"]


class SignInError(ShadowcodeError):
    """A sign-in or refresh failed; the message says why and what to do (never a token)."""

    exit_code = 1


class BoundedTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport enforcing the endpoint rules, the header, encoding and body caps and a
    deadline per request (CW-08, CLI-17).

    Args:
        network_hosts: hosts the network permission covers (lower case).
        body_max_bytes: the reply cap.
        seconds: the deadline of one request, reply read.
        headers_max_bytes: the cap of the reply's header block.
    """

    def __init__(
        self,
        network_hosts: frozenset[str],
        *,
        body_max_bytes: int = MCP_OAUTH_BODY_MAX_BYTES,
        seconds: float = MCP_OAUTH_HTTP_SECONDS,
        headers_max_bytes: int = MCP_HTTP_HEADERS_MAX_BYTES,
    ) -> None:
        self.network_hosts = network_hosts
        self.body_max_bytes = body_max_bytes
        self.seconds = seconds
        self._inner = HeaderCountingTransport(headers_max_bytes=headers_max_bytes)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Check, send, and read the whole reply within the bounds.

        Raises:
            SignInError: a refused URL, a compressed reply, a header block or body over its cap,
                too slow, or a failed exchange.
        """
        shown = f"{request.url.scheme}://{url_host(str(request.url))}"
        endpoint = Endpoint(
            str(request.url.copy_with(query=None, fragment=None)),
            network_hosts=self.network_hosts,
            sends_credentials=True,
        )
        try:
            target, host_header, extensions = await endpoint.target()
        except (ConfigError, PolicyError) as exc:
            raise SignInError(f"refused to contact {shown} during sign-in: {exc.message}") from None
        if request.url.query:
            target = f"{target}?{request.url.query.decode('ascii')}"
        headers = httpx2.Headers(request.headers)
        headers["accept-encoding"] = "identity"  # the cap counts the bytes that are parsed
        if host_header is not None:
            headers["host"] = host_header
        content = await request.aread()
        sent = httpx2.Request(
            request.method, target, headers=headers, content=content, extensions=request.extensions | extensions
        )
        try:
            with anyio.fail_after(self.seconds):
                response = await self._inner.handle_async_request(sent)
                try:
                    if is_compressed(response.headers):
                        raise SignInError(
                            f"{shown} sent a compressed reply during sign-in, which is not accepted "
                            "(it is not inflated)"
                        )
                    body = bytearray()
                    async for chunk in response.aiter_raw():
                        body += chunk
                        if len(body) > self.body_max_bytes:
                            raise SignInError(
                                f"{shown} sent a reply larger than {self.body_max_bytes} bytes during sign-in"
                            )
                finally:
                    await response.aclose()
        except TimeoutError:
            raise SignInError(f"{shown} did not answer within {self.seconds} s during sign-in") from None
        except HeaderBlockTooLarge as exc:
            raise SignInError(f"{shown} sent {exc} during sign-in") from None
        except httpx2.HTTPError as exc:
            raise SignInError(f"the exchange with {shown} failed during sign-in ({type(exc).__name__})") from None
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            content=bytes(body),
            request=request,
            extensions={k: v for k, v in response.extensions.items() if k != "network_stream"},
        )

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._inner.aclose()


def bounded_client(network_hosts: frozenset[str], auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
    """An httpx2 client over :class:`BoundedTransport`: no proxies, no redirects (CW-08); ``auth`` signs requests."""
    return httpx2.AsyncClient(
        transport=BoundedTransport(network_hosts),
        trust_env=False,
        follow_redirects=False,
        timeout=httpx2.Timeout(MCP_OAUTH_HTTP_SECONDS),
        auth=auth,
    )


_SCOPE_TOKEN = re.compile(r"^[A-Za-z0-9._:/+=@~-]{1,64}$")


def insufficient_scopes(challenge: str) -> list[str]:
    """The scopes a ``WWW-Authenticate`` challenge with ``error="insufficient_scope"`` asks for (CW-08).

    Only plain scope tokens (letters, digits and ``._:/+=@~-``, a subset of RFC 6749 section 3.3
    that is safe to show in a command, at most 64 characters each, at most 16) are returned, so
    nothing else from the header reaches a message; [] when the challenge is not
    an insufficient_scope one or names no usable scope.
    """
    if not re.search(r'error\s*=\s*"?insufficient_scope"?', challenge):
        return []
    found = re.search(r'scope\s*=\s*"([^"]{0,1100})"', challenge) or re.search(r"scope\s*=\s*([^\s,]{1,64})", challenge)
    if found is None:
        return []
    scopes = found.group(1).split()
    if not scopes or len(scopes) > 16 or not all(_SCOPE_TOKEN.match(t) for t in scopes):
        return []
    return scopes
