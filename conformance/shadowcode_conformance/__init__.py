"""A conformance runner for the ShadowCode contract, usable against any implementation.

It drives a target command (the source tree, the packaged zipapp, or another program
with the same command line) from the outside, runs registered checks, and reports every
requirement id as pass, fail or not covered (CONF-01). It imports nothing from the
implementation under test.
"""

from __future__ import annotations

from shadowcode_conformance.context import Context
from shadowcode_conformance.registry import CheckResult, SubResult, check

__all__ = ["CheckResult", "Context", "SubResult", "check"]
