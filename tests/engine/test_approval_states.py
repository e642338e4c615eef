"""The engine's signed approval states (engine/approval_states.py): each refusal, the expiry and length limits.

Covers SRV-29.
"""

from __future__ import annotations

import base64
import json

import pytest

from shadowcode.engine.approval_states import ApprovalStates, action_sha256
from shadowcode.errors import PolicyError
from shadowcode.limits import APPROVAL_STATE_MAX_CHARS, APPROVAL_STATE_TTL_SECONDS

pytestmark = pytest.mark.req("SRV-29")

ACTION = {"argv": ["make", "test"], "cwd": "/p"}
T0 = 1_800_000_000


class Clock:
    def __init__(self) -> None:
        self.now = float(T0)

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def states(clock: Clock) -> ApprovalStates:
    return ApprovalStates(clock=clock)


def _b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _payload(state: str) -> dict[str, object]:
    head = state.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))


def test_a_minted_state_checks_for_its_owner_and_names_its_approval_action_and_expiry(states: ApprovalStates) -> None:
    state, expires_at = states.mint("appr_1", ACTION, "own_a")
    assert expires_at == T0 + APPROVAL_STATE_TTL_SECONDS
    claims = states.check(state, "own_a")
    assert (claims.approval_id, claims.owner, claims.expires_at) == ("appr_1", "own_a", expires_at)
    assert claims.action_sha256 == action_sha256(ACTION) == action_sha256({"cwd": "/p", "argv": ["make", "test"]})
    assert states.check(state, "own_a") == claims  # checking uses nothing up


def test_every_mint_has_a_new_nonce(states: ApprovalStates) -> None:
    first, _ = states.mint("appr_1", ACTION, "own_a")
    second, _ = states.mint("appr_1", ACTION, "own_a")
    assert first != second and _payload(first)["n"] != _payload(second)["n"]


def test_a_state_is_answerable_at_its_expiry_and_refused_one_second_past_it(
    states: ApprovalStates, clock: Clock
) -> None:
    state, expires_at = states.mint("appr_1", ACTION, "own_a")
    clock.now = expires_at + 0.999  # still the expiry's second
    assert states.check(state, "own_a").approval_id == "appr_1"
    clock.now = expires_at + 1
    with pytest.raises(PolicyError, match="expired 1 s ago; nothing was decided"):
        states.check(state, "own_a")


def test_a_spent_state_is_refused_as_a_replay(states: ApprovalStates) -> None:
    state, _ = states.mint("appr_1", ACTION, "own_a")
    states.spend(states.check(state, "own_a"))
    with pytest.raises(PolicyError, match="already used; a state answers once"):
        states.check(state, "own_a")
    other, _ = states.mint("appr_1", ACTION, "own_a")  # a new state of the same approval is not a replay
    assert states.check(other, "own_a").approval_id == "appr_1"


def test_a_state_minted_for_another_owner_is_refused(states: ApprovalStates) -> None:
    state, _ = states.mint("appr_1", ACTION, "own_a")
    with pytest.raises(PolicyError, match="issued to another connection"):
        states.check(state, "own_b")


@pytest.mark.parametrize(
    "bend",
    [
        pytest.param(lambda s: s[:-1] + ("A" if s[-1] != "A" else "B"), id="mac-changed"),
        pytest.param(lambda s: s.split(".")[0], id="mac-missing"),
        pytest.param(lambda s: s + "=", id="padded"),
        pytest.param(lambda s: s.replace(".", ".."), id="two-dots"),
        pytest.param(lambda s: "", id="empty"),
        pytest.param(lambda s: "not a state", id="not-base64"),
    ],
)
def test_an_altered_or_malformed_state_is_refused(states: ApprovalStates, bend: object) -> None:
    state, _ = states.mint("appr_1", ACTION, "own_a")
    with pytest.raises(PolicyError, match="not one this engine issued"):
        states.check(bend(state), "own_a")  # type: ignore[operator]


def test_a_payload_rewritten_to_another_approval_owner_or_expiry_is_refused(states: ApprovalStates) -> None:
    state, _ = states.mint("appr_1", ACTION, "own_a")
    doc = _payload(state)
    mac = state.split(".")[1]
    for change in ({"a": "appr_2"}, {"o": "own_b"}, {"e": int(doc["e"]) + 3600}, {"d": action_sha256({})}):  # type: ignore[call-overload]
        bent = json.dumps(doc | change, sort_keys=True, separators=(",", ":")).encode()
        with pytest.raises(PolicyError, match="not one this engine issued"):
            states.check(f"{_b64u(bent)}.{mac}", "own_a")


def test_a_state_of_another_engine_key_is_refused_as_after_a_restart(clock: Clock) -> None:
    before = ApprovalStates(clock=clock)
    state, _ = before.mint("appr_1", ACTION, "own_a")
    with pytest.raises(PolicyError, match="issued before the engine restarted"):
        ApprovalStates(clock=clock).check(state, "own_a")


def test_a_state_at_the_length_limit_is_read_and_one_character_longer_is_refused_unread(
    states: ApprovalStates,
) -> None:
    state, _ = states.mint("appr_1", ACTION, "own_a")
    padded_head = state + "A" * (APPROVAL_STATE_MAX_CHARS - len(state))
    assert len(padded_head) == APPROVAL_STATE_MAX_CHARS
    with pytest.raises(PolicyError, match="not one this engine issued"):  # read, and refused as altered
        states.check(padded_head, "own_a")
    with pytest.raises(PolicyError, match=f"{APPROVAL_STATE_MAX_CHARS + 1} characters; the limit is"):
        states.check(padded_head + "A", "own_a")
    assert len(state) < APPROVAL_STATE_MAX_CHARS // 2  # the engine's own states are far from it
