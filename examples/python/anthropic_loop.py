#!/usr/bin/env python3
"""An agent loop on the Anthropic Messages API in which toolrt executes every tool call.

Run it from a toolrt checkout, after `cargo build --release` and
`pip install ./clients/python anthropic`:

    ANTHROPIC_API_KEY=sk-… python examples/python/anthropic_loop.py "How many tools are in src/tools?"

You will see, on stderr, each tool call of each turn and its outcome as toolrt ran it, and on
stdout the model's final answer. Reads and globs are allowed by rule; anything else is a
permission ask, answered at the terminal (denied when stdin is not a terminal). Every call of a
turn goes to toolrt as one batch, so the model's parallel calls run in parallel where that is
safe, and the results go back as one `user` message of `tool_result` blocks in call order.
`ANTHROPIC_BASE_URL` and `ANTHROPIC_MODEL` choose another endpoint and model.
"""

import asyncio
import json
import os
import sys

import anthropic

import toolrt

MODEL = os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5")
MAX_TURNS = 20

# The tools offered to the model: toolrt's own definitions (`toolrt tools --format anthropic`).
TOOLS = ["Read", "Glob", "Bash"]


async def ask(request: toolrt.PermissionRequest) -> toolrt.PermissionDecision:
    """Asks at the terminal whether a call toolrt could not allow by itself may run."""
    if not sys.stdin.isatty():
        return toolrt.PermissionDecision.deny("nobody is at the terminal to approve it")
    prompt = f"{request.reason}\nallow {request.tool_name} {json.dumps(request.input)}? [y/N] "
    answer = await asyncio.to_thread(input, prompt)
    if answer.strip().lower() == "y":
        return toolrt.PermissionDecision.allow()
    return toolrt.PermissionDecision.deny("the user said no")


async def main(prompt: str) -> int:
    client = anthropic.AsyncAnthropic()  # ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
    messages: list = [{"role": "user", "content": prompt}]
    definitions = toolrt.tool_definitions("anthropic", tools=TOOLS)
    async with toolrt.Session(tools=TOOLS, allowed_tools=["Read", "Glob"], permission=ask) as session:
        for _ in range(MAX_TURNS):
            response = await client.messages.create(
                model=MODEL, max_tokens=4096, tools=definitions, messages=messages
            )
            messages.append({"role": "assistant", "content": response.content})
            calls = toolrt.from_anthropic(response)
            if not calls:
                print("".join(b.text for b in response.content if b.type == "text"))
                return 0
            results = await session.run(calls)
            for call, result in zip(calls, results):
                print(f"[{call.id}] {call.name} {json.dumps(call.input)} -> {result.outcome}", file=sys.stderr)
            messages.append(toolrt.to_anthropic(results))
    print(f"stopped after {MAX_TURNS} turns", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(" ".join(sys.argv[1:]) or "What does this repository do?")))
