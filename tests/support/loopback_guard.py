"""A guard for tests whose resolver answers with private addresses: only loopback may be contacted.

Covers CW-11 (test support).
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

__all__ = ["loopback_only"]


def loopback_only(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make every socket connect to a non-loopback address fail before any packet is sent.

    Returns:
        The addresses a connect was refused for (a test asserts it stays empty).
    """
    refused: list[str] = []
    real = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else None
        if host is not None and not ipaddress.ip_address(str(host).split("%")[0]).is_loopback:
            refused.append(str(host))
            raise ConnectionRefusedError(f"the test allows loopback only, not {host}")
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return refused
