"""Variable references and credential-looking literals in other hosts' configs (CW-01).

The hosts spell a reference to an environment variable differently: Claude Code ``${VAR}`` and
``${VAR:-default}``, Cursor, VS Code and Windsurf ``${env:NAME}``, VS Code ``${input:ID}`` (a
value it prompts for), Gemini CLI and Qwen Code ``$VAR`` as well as ``${VAR}``, opencode and Kilo
``{env:NAME}`` (and ``{file:PATH}``), Continue ``${{ secrets.NAME }}``; Cline and Zed replace
nothing. A :class:`Dialect` classifies one host's values. A ShadowCode definition references
whole values only (``env_refs``, ``api_key_env``), resolved from the environment or the secret
store when the server starts, so a value is classified as one reference, a literal, or a mix the
import cannot carry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "DIALECTS",
    "DOLLAR",
    "Dialect",
    "Literal",
    "Mixed",
    "Reference",
    "argument_looks_like_credential",
    "classify",
    "has_reference",
    "looks_like_credential",
    "variable_name",
]

_REF = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]{0,127})(:-[^}]*)?\}")
_INPUT = re.compile(r"\$\{input:([^}]{1,128})\}")
_ANY = re.compile(r"\$\{[^}]*\}")
_SECRET_KEY = re.compile(
    r"(?i)token|secret|passw(or)?d|api[_-]?key|apikey|auth|credential|private[_-]?key|access[_-]?key"
)
_SECRET_VALUE = re.compile(
    r"^(?:Bearer\s+\S+|Basic\s+\S+|sk-[A-Za-z0-9_-]{8,}|sk_[A-Za-z0-9_]{8,}|gh[opsu]_[A-Za-z0-9]{16,}"
    r"|github_pat_\w{16,}|xox[abprs]-[A-Za-z0-9-]{8,}|glpat-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{16,}"
    r"|AKIA[A-Z0-9]{12,}|AIza[A-Za-z0-9_-]{20,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_.-]+)$"
)
_OPAQUE = re.compile(r"^[A-Za-z0-9+/_=.-]{32,}$")
_POINTERS = ("file", "path", "dir", "env", "var", "name", "url", "command", "cmd")
_SECRET_FLAG = re.compile(
    r"-{1,2}[A-Za-z0-9_-]*(?:token|secret|passw(?:or)?d|api[_-]?key|apikey|credential)[A-Za-z0-9_-]*", re.I
)


@dataclass(frozen=True)
class Reference:
    """The whole value is one variable reference.

    Attributes:
        name: the environment variable (or, for a VS Code input, the name derived from its id).
        has_default: the reference carried a ``:-default`` (not carried over).
        input_id: the VS Code input id, when it was ``${input:ID}``.
    """

    name: str
    has_default: bool = False
    input_id: str | None = None


@dataclass(frozen=True)
class Literal:
    """A value without any reference."""

    value: str


@dataclass(frozen=True)
class Mixed:
    """Text and references mixed, or a reference of a kind with no equivalent (``${workspaceFolder}``)."""

    value: str


def variable_name(text: str) -> str:
    """An environment-variable name made of ``text``: upper case, other characters as ``_``."""
    name = re.sub(r"[^A-Z0-9_]", "_", text.upper()).strip("_") or "VALUE"
    return ("_" + name if name[0].isdigit() else name)[:128]


def classify(value: str) -> Reference | Literal | Mixed:
    """Classify one configured string value."""
    whole = _REF.fullmatch(value)
    if whole:
        return Reference(whole.group(1), has_default=whole.group(2) is not None)
    prompt = _INPUT.fullmatch(value)
    if prompt:
        return Reference(variable_name(prompt.group(1)), input_id=prompt.group(1))
    if _ANY.search(value):
        return Mixed(value)
    return Literal(value)


def has_reference(value: str) -> bool:
    """Whether ``value`` holds any ``${...}``."""
    return _ANY.search(value) is not None


@dataclass(frozen=True)
class Dialect:
    """How one host spells a reference: a whole-value pattern (group 1: the name) and any-reference pattern.

    The ``${...}`` forms every host of this family shares are classified by :func:`classify`;
    a dialect with ``dollar`` False replaces none of them (its ``${`` is literal text).
    """

    name: str
    whole: re.Pattern[str] | None = None
    anywhere: re.Pattern[str] | None = None
    dollar: bool = True

    def classify(self, value: str) -> Reference | Literal | Mixed:
        """Classify one configured value of this host."""
        if self.whole is not None:
            whole = self.whole.fullmatch(value)
            if whole:
                return Reference(whole.group(1))
        if self.dollar:
            kind = classify(value)
            if not isinstance(kind, Literal):
                return kind
        if self.anywhere is not None and self.anywhere.search(value):
            return Mixed(value)
        return Literal(value)

    def has_reference(self, value: str) -> bool:
        """Whether the host would replace any part of ``value``."""
        return not isinstance(self.classify(value), Literal) or (
            self.anywhere is not None and self.anywhere.search(value) is not None
        )


_NAME = r"([A-Za-z_][A-Za-z0-9_]{0,127})"
DOLLAR = Dialect("dollar")
"""``${VAR}``, ``${VAR:-default}``, ``${env:VAR}``, ``${input:ID}``: Claude Code, Cursor, VS Code, Windsurf, Codex."""

DIALECTS: dict[str, Dialect] = {
    "gemini": Dialect("gemini", re.compile(r"\$" + _NAME), re.compile(r"\$[A-Za-z0-9_{]")),
    "opencode": Dialect("opencode", re.compile(r"\{env:" + _NAME + r"\}"), re.compile(r"\{(?:env|file):"), False),
    "continue": Dialect(
        "continue", re.compile(r"\$\{\{\s*secrets\." + _NAME + r"\s*\}\}"), re.compile(r"\$\{\{"), False
    ),
    "literal": Dialect("literal", dollar=False),
}
"""Dialects other than :data:`DOLLAR`, by name."""


def looks_like_credential(key: str, value: str) -> bool:
    """Whether a literal ``value`` under ``key`` (an env variable or header name) looks like a credential.

    True for a non-empty value under a name such as ``*TOKEN*``, ``*SECRET*``, ``*API_KEY*``,
    ``*PASSWORD*``, ``Authorization``, and for a value shaped like a known token (``Bearer …``,
    ``sk-…``, ``ghp_…``, a JWT, a long opaque string) whatever its name.
    """
    text = value.strip()
    if not text:
        return False
    if _SECRET_KEY.search(key):
        return True
    return bool(_SECRET_VALUE.match(text) or (_OPAQUE.match(text) and not text.startswith(("http", "/", "."))))


def _secret_flag(flag: str) -> bool:
    """A flag named for a credential, not for where one is found (``--token-file``, ``--api-key-env``)."""
    return bool(_SECRET_FLAG.fullmatch(flag)) and not flag.lower().endswith(_POINTERS)


def argument_looks_like_credential(previous: str | None, arg: str) -> bool:
    """Whether command argument ``arg`` looks like a literal credential.

    True for ``--token=VALUE``-style arguments (a flag named like ``*token*``, ``*secret*``,
    ``*api-key*``, ``*password*``), the value after such a flag, and a value shaped like a known
    token (``sk-…``, ``ghp_…``, ``Bearer …``, a JWT) wherever it stands.
    """
    flag, equals, value = arg.partition("=")
    if equals and value and _secret_flag(flag):
        return True
    if previous is not None and _secret_flag(previous) and not arg.startswith("-"):
        return True
    return bool(_SECRET_VALUE.match(arg.strip()))
