"""One session's discovery, answered from the build-time recording while the server behind it starts (issue 15).

Both stdio paths of ``mcp serve`` put a small standard-library process in front of the real
server: the stdio front (its child is the full server, which takes a second or more to
import) and the relay (the headless engine builds an SDK session for it). Hosts give a server
about a second before their first model request, so both answer discovery themselves until
the server behind them has taken over:

* a request in a recorded shape (``initialize`` at a recorded revision as the first request,
  then ``ping`` and the five listings after ``notifications/initialized``; or
  ``server/discover`` and the listings of a modern revision) is answered at once from
  :class:`~shadowcode.mcp.server.discovery.Manifest`, and still sent on to the server under
  an id of ours, so the server's session goes through the same handshake; its answer to that
  id is recognized by :meth:`EarlyAnswers.drop` and never reaches the client;
* every other line is sent on unchanged; the first request that has to go to the server ends
  the answering here unless a recorded handshake came first (so nothing the server answers
  can be overtaken by a recorded answer to a later request of a different session state),
  or unless it is a modern request carrying its own metadata: those change no session state,
  so a host that opens ``subscriptions/listen`` before it lists the tools still gets its
  listings at once while the server starts.

This module imports only the standard library; keep it that way (start-up time, issue 15).
"""

from __future__ import annotations

import json
import threading

from shadowcode.json_values import json_object
from shadowcode.mcp.server.discovery import HANDSHAKE_METHODS, Manifest

TYPE_CHECKING = False  # typing itself is too heavy to import on the fast path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["EarlyAnswers", "frame"]

_ID_SCAN_BYTES = 256
"""How far into a server line our id prefix is looked for before the line is parsed."""

_ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
_SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
_LIST_CHANGES = frozenset({"resourcesListChanged", "toolsListChanged", "promptsListChanged"})


def _simple_filter(wanted: dict[str, object]) -> dict[str, bool]:
    """What the server agrees to of a list-changes-only filter: resource list changes when asked
    (its tools and prompts never change, so those are never sent)."""
    return {"resourcesListChanged": True} if wanted.get("resourcesListChanged") else {}


def frame(message: dict[str, Any]) -> bytes:
    """One JSON-RPC frame: compact UTF-8 JSON and a newline."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _valid_id(value: object) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


class EarlyAnswers:
    """The answering state of one session (SRV-03: the listings as the server gives them); thread-safe.

    Args:
        manifest: the recorded answers.
        id_prefix: the prefix of the ids this process gives the requests it sends on after
            answering them (``shadowcode-front-``); a client request whose id starts with it
            is never answered here.
    """

    def __init__(self, manifest: Manifest, id_prefix: str) -> None:
        self.manifest = manifest
        self.id_prefix = id_prefix
        self._prefix_bytes = id_prefix.encode("utf-8")
        self._lock = threading.Lock()
        self.answering = True  # discovery may still be answered here
        self.first_request = True
        self.revision: str | None = None  # handshake revision answered here
        self.initialized = False
        self._dropped: set[str] = set()  # our ids whose answers from the server are dropped
        self._acked: list[object] = []  # listen ids acknowledged here, whose server acknowledgement is dropped
        self._next_id = 0

    def stop(self) -> None:
        """Answer nothing more here: from now on every line goes to the server."""
        with self._lock:
            self.answering = False

    def take(self, line: bytes) -> tuple[bytes | None, bytes, tuple[object, str] | None]:
        """Handle one whole client line (newline included).

        Returns:
            ``(answer, forward, request)``: the frame to write to the client at once (None when
            the server must answer); the bytes to send to the server (the line itself, or the
            answered request under an id of ours); and ``(id, method)`` when the line is a
            request the server will answer, else None.
        """
        try:
            message = json_object(json.loads(line))
        except (ValueError, RecursionError):
            message = None
        if message is None or message.get("jsonrpc") != "2.0":
            return None, line, None
        method = message.get("method")
        request_id = message.get("id")
        is_request = isinstance(method, str) and "id" in message
        with self._lock:
            answer = self._answer(method, message.get("params"), request_id) if is_request else None
            if method == "notifications/initialized" and self.revision is not None:
                self.initialized = True
            if answer is None and is_request and self._acknowledges(method, message.get("params"), request_id):
                self._acked.append(request_id)
                self.first_request = False
                wanted = json_object((json_object(message["params"]) or {})["notifications"]) or {}
                ack: dict[str, object] = {"notifications": _simple_filter(wanted)}
                ack["_meta"] = {_SUBSCRIPTION_ID_KEY: request_id}
                notice = {"jsonrpc": "2.0", "method": _ACKNOWLEDGED, "params": ack}
                return frame(notice), line, (request_id, str(method))
            if answer is None:
                if is_request:
                    self.first_request = False
                    stateless = self.revision is None and self.manifest.is_modern(message.get("params"))
                    self.answering = self.answering and (self.revision is not None or stateless)
                return None, line, (request_id, str(method)) if is_request else None
            our_id = f"{self.id_prefix}{self._next_id}"
            self._next_id += 1
            self._dropped.add(our_id)
        return frame({"jsonrpc": "2.0", "id": request_id, **answer}), frame({**message, "id": our_id}), None

    def not_sent(self) -> None:
        """The request just answered by :meth:`take` is not sent on after all: no answer to its id
        of ours is awaited, so a client request under that id later is answered, and nothing kept
        grows with the requests answered here."""
        with self._lock:
            self._dropped.discard(f"{self.id_prefix}{self._next_id - 1}")

    def drop(self, line: bytes) -> bool:
        """Whether ``line`` (one whole line from the server) answers a request sent on under an id of ours.

        Such a line is not for the client; each of our ids is dropped once.
        """
        if self._acked and self._drop_acknowledgement(line):
            return True
        if not self._dropped or self._prefix_bytes not in line[:_ID_SCAN_BYTES]:
            return False
        try:
            message = json_object(json.loads(line))
        except (ValueError, RecursionError):
            return False
        answer_id = message.get("id") if message is not None else None
        with self._lock:
            if isinstance(answer_id, str) and answer_id in self._dropped:
                self._dropped.discard(answer_id)
                return True
        return False

    def _drop_acknowledgement(self, line: bytes) -> bool:
        """Drop the server's acknowledgement of a listen stream acknowledged here; a response to
        that listen request (its error, or its end) means none will come (lock not held)."""
        try:
            message = json_object(json.loads(line))
        except (ValueError, RecursionError):
            return False
        if message is None:
            return False
        with self._lock:
            if message.get("method") == _ACKNOWLEDGED:
                params = json_object(message.get("params"))
                meta = json_object(params.get("_meta")) if params is not None else None
                subscription = meta.get(_SUBSCRIPTION_ID_KEY) if meta is not None else None
                if subscription in self._acked:
                    self._acked.remove(subscription)
                    return True
            elif "method" not in message and message.get("id") in self._acked:
                self._acked.remove(message.get("id"))
        return False

    def _acknowledges(self, method: object, params: object, request_id: object) -> bool:
        """Whether this ``subscriptions/listen`` is acknowledged here while the server starts (SRV-27).

        Only the first listen of a modern session, answered here so far, asking for list
        changes alone (no task ids or resource subscriptions, whose acknowledgement depends on
        the connection's jobs or capabilities): what the server will agree to is then known.
        """
        if method != "subscriptions/listen" or not self.answering or self.revision is not None:
            return False
        if self._acked or not _valid_id(request_id) or not self.manifest.is_modern(params):
            return False
        if isinstance(request_id, str) and request_id.startswith(self.id_prefix):
            return False
        request = json_object(params)
        assert request is not None
        wanted = json_object(request.get("notifications"))
        return (
            wanted is not None
            and set(request) == {"_meta", "notifications"}
            and set(wanted) <= _LIST_CHANGES
            and all(isinstance(value, bool) for value in wanted.values())
        )

    @property
    def waiting(self) -> bool:
        """Whether answers to ids of ours, or acknowledgements given here, are still to come from the server."""
        return bool(self._dropped or self._acked)

    def _answer(self, method: object, params: object, request_id: object) -> Any | None:
        """The recorded answer to this request, or None when the server must answer it (lock held)."""
        if not self.answering or not _valid_id(request_id) or not isinstance(method, str):
            return None
        if isinstance(request_id, str) and request_id.startswith(self.id_prefix):
            return None
        if method == "initialize":
            found = self.manifest.initialize(params) if self.first_request and self.revision is None else None
            if found is None:
                return None
            self.first_request = False
            self.revision, answer = found
            return answer
        if self.revision is not None:
            if not self.initialized or method not in HANDSHAKE_METHODS:
                return None
            return self.manifest.after_handshake(self.revision, method, params)
        answer = self.manifest.modern(method, params)
        if answer is not None:
            self.first_request = False
        return answer
