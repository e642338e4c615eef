"""Approval states: what the engine signs for a host asked to answer one pending approval (SRV-29).

A host that asks a person (``mcp serve --approve-in-host``) gets, for one pending approval of
its connection's owner, an opaque *state*: ``<payload>.<mac>``, both unpadded base64url. The
payload is compact JSON naming the approval id (``a``), the SHA-256 of the exact action as
stored (``d``), the owner (``o``), the expiry in integer Unix seconds (``e``) and a random
nonce (``n``); the MAC is HMAC-SHA256 of the payload's bytes under a 32-byte key drawn when
the engine starts and held only in its memory. The client stores the state and hands it
back with its answer; it can neither mint one nor bend one.

:meth:`ApprovalStates.check` refuses, with a :class:`~shadowcode.errors.PolicyError` naming
why and changing nothing: a state that is too long, malformed or not signed by this engine
(tampered, or minted before an engine restart: the key is new and the approvals of the
stopped engine's jobs have expired with it), one past its expiry, one minted for another
owner, and one whose nonce was already used (a replay). :meth:`ApprovalStates.spend` marks
a nonce used once an answer is accepted. Used nonces are kept until their state expires,
after which the expiry alone refuses the state.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shadowcode.errors import PolicyError
from shadowcode.json_values import json_object
from shadowcode.limits import APPROVAL_STATE_MAX_CHARS, APPROVAL_STATE_TTL_SECONDS

__all__ = ["ApprovalStates", "StateClaims", "action_sha256"]

_KEY_BYTES = 32
_NONCE_BYTES = 16
_MAC_BYTES = 32
_FIELDS = frozenset(("a", "d", "o", "e", "n"))


def action_sha256(action: dict[str, Any]) -> str:
    """The SHA-256 (hex) of an approval's exact action as canonical JSON (sorted keys, no spaces, UTF-8)."""
    text = json.dumps(action, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class StateClaims:
    """What a verified state says (SRV-29).

    Attributes:
        approval_id: the approval it answers.
        action_sha256: the SHA-256 of the exact action it was minted for.
        owner: the owner id it was minted for.
        expires_at: integer Unix seconds; the state is answerable up to and including this second.
        nonce: its single-use nonce (hex).
    """

    approval_id: str
    action_sha256: str
    owner: str
    expires_at: int
    nonce: str


def _b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _b64u_decode(text: str) -> bytes:
    """Strict inverse of :func:`_b64u`: only the canonical unpadded encoding decodes.

    Raises:
        ValueError: anything else.
    """
    if not text or "=" in text:
        raise ValueError("not unpadded base64url")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError("not base64url") from exc
    if _b64u(raw) != text:
        raise ValueError("not canonical base64url")
    return raw


def _claims(payload: bytes) -> StateClaims:
    """The payload's claims, each of its exact type.

    Raises:
        ValueError: not the payload this module writes.
    """
    doc = json_object(json.loads(payload.decode("utf-8")))
    if doc is None or doc.keys() != _FIELDS:
        raise ValueError("unexpected fields")
    a, d, o, e, n = doc["a"], doc["d"], doc["o"], doc["e"], doc["n"]
    if not (isinstance(a, str) and isinstance(d, str) and isinstance(o, str) and isinstance(n, str)):
        raise ValueError("a field has the wrong type")
    if not isinstance(e, int) or isinstance(e, bool):
        raise ValueError("the expiry is not an integer")
    return StateClaims(a, d, o, e, n)


class ApprovalStates:
    """Mints and verifies one engine's approval states (SRV-29).

    Args:
        key: the signing key; by default 32 random bytes drawn now (tests pass their own).
        ttl_seconds: how long a minted state stays answerable.
        clock: Unix seconds now (tests pass their own).
    """

    def __init__(
        self,
        *,
        key: bytes | None = None,
        ttl_seconds: int = APPROVAL_STATE_TTL_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._key = key if key is not None else secrets.token_bytes(_KEY_BYTES)
        self._ttl_seconds = ttl_seconds
        self._clock = clock
        self._spent: dict[str, int] = {}  # nonce -> its state's expiry

    def now(self) -> int:
        """The clock, in whole Unix seconds."""
        return int(self._clock())

    def mint(self, approval_id: str, action: dict[str, Any], owner: str) -> tuple[str, int]:
        """A new state for one approval of ``owner``, with a fresh nonce.

        Returns:
            ``(state, expires_at)``: the opaque state and its expiry in integer Unix seconds.
        """
        expires_at = self.now() + self._ttl_seconds
        doc = {
            "a": approval_id,
            "d": action_sha256(action),
            "o": owner,
            "e": expires_at,
            "n": secrets.token_hex(_NONCE_BYTES),
        }
        payload = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8")
        return f"{_b64u(payload)}.{_b64u(self._mac(payload))}", expires_at

    def check(self, state: str, owner: str) -> StateClaims:
        """Verify ``state`` for ``owner`` without using it up.

        Args:
            state: the state as the client handed it back.
            owner: the owner id of the connection that hands it back.

        Returns:
            Its claims: signed by this engine, not expired, minted for ``owner``, nonce unused.

        Raises:
            PolicyError: too long, malformed or not signed by this engine; expired; another
                owner's; or already used. Nothing changes.
        """
        if len(state) > APPROVAL_STATE_MAX_CHARS:
            raise PolicyError(
                f"the approval state is {len(state)} characters; the limit is {APPROVAL_STATE_MAX_CHARS}: "
                "it was not issued by this engine"
            )
        claims = self._verified(state)
        now = self.now()
        if now > claims.expires_at:
            raise PolicyError(
                f"the approval state for {claims.approval_id} expired {now - claims.expires_at} s ago; "
                "nothing was decided: answer the new question the host is asked, or use `shadowcode approve`",
                approval_id=claims.approval_id,
            )
        if not hmac.compare_digest(claims.owner, owner):
            raise PolicyError(
                "this approval state was issued to another connection; nothing was decided",
                approval_id=claims.approval_id,
            )
        self._forget_expired(now)
        if claims.nonce in self._spent:
            raise PolicyError(
                f"this approval state for {claims.approval_id} was already used; a state answers once",
                approval_id=claims.approval_id,
            )
        return claims

    def spend(self, claims: StateClaims) -> None:
        """Mark the nonce of a checked state used: the same state is refused from now on."""
        self._spent[claims.nonce] = claims.expires_at

    def _verified(self, state: str) -> StateClaims:
        """The claims of a state this engine signed.

        Raises:
            PolicyError: malformed, or its MAC is not this engine's (tampered, or from an
                engine that has stopped since).
        """
        refused = PolicyError(
            "the approval state is not one this engine issued (altered, or issued before the engine "
            "restarted); nothing was decided"
        )
        head, dot, tail = state.partition(".")
        if not dot:
            raise refused
        try:
            payload, mac = _b64u_decode(head), _b64u_decode(tail)
        except ValueError:
            raise refused from None
        if len(mac) != _MAC_BYTES or not hmac.compare_digest(mac, self._mac(payload)):
            raise refused
        try:
            return _claims(payload)
        except (ValueError, UnicodeDecodeError, RecursionError):  # signed by us, so never in practice
            raise refused from None

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()

    def _forget_expired(self, now: int) -> None:
        for nonce in [n for n, expires_at in self._spent.items() if expires_at < now]:
            del self._spent[nonce]
