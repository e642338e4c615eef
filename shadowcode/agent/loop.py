"""The turn loop of an agent task (ENG-04): ask the model, run the tools it calls, repeat.

The loop ends when the model answers without tool calls (the answer), after AGENT_STEPS_MAX
turns (a failure), or when the task is cancelled. Model requests of one configured model are
serialized by its limiter, so a queued task waits for a busy model without sending anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from shadowcode.agent.toolbox import TaskEnv, dispatch, tool_schemas
from shadowcode.errors import ShadowcodeError
from shadowcode.limits import AGENT_STEPS_MAX

if TYPE_CHECKING:
    from shadowcode.agent.providers import ModelProvider

__all__ = ["StepLimitReached", "run_agent"]

_MODES = {
    "build": "Make the change the user asks for, using the tools. Verify it, then answer with a short summary.",
    "plan": "Do not change anything. Inspect the project and answer with a numbered plan for the request.",
    "review": "Do not change anything. Review the project for the request and answer with your findings.",
}


class StepLimitReached(ShadowcodeError):
    """The model kept calling tools past AGENT_STEPS_MAX turns."""


def _system(env: TaskEnv) -> str:
    return (
        f"You are ShadowCode's coding agent working in the project at {env.project}. {_MODES[env.mode]} "
        f"Your permission level is {env.level}. Paths are relative to the project."
    )


async def run_agent(
    env: TaskEnv,
    provider: ModelProvider,
    prompt: str,
    limiter: anyio.CapacityLimiter,
    *,
    steps_max: int = AGENT_STEPS_MAX,
) -> str:
    """Run the loop for one task; returns the model's final answer.

    Raises:
        StepLimitReached: more than ``steps_max`` model turns.
        ProviderError: the model failed (HTTP error, timeout, exhausted script).
    """
    if env.mcp is not None:
        await env.mcp.prepare(env)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": _system(env)},
        {"role": "user", "content": prompt},
    ]
    for step in range(1, steps_max + 1):
        # Read every turn: a failed MCP server's tools are no longer offered (CLI-15).
        tools = tool_schemas(env.offered, env.mcp)
        async with limiter:
            env.records.event(env.task_id, "model.request", {"step": step, "model": provider.name})
            reply = await provider.complete(messages, tools, task_id=env.task_id)
        env.records.event(env.task_id, "model.reply", {
            "step": step, "content": reply.content, "tool_calls": [c.name for c in reply.tool_calls]})  # fmt: skip
        assistant: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            assistant["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}}
                for c in reply.tool_calls
            ]
        messages.append(assistant)
        if not reply.tool_calls:
            return reply.content or ""
        for call in reply.tool_calls:
            result = await dispatch(env, call)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise StepLimitReached(f"the task stopped after {steps_max} model turns without a final answer")
