#!/usr/bin/env python3
"""An agent loop on the OpenAI API — Chat Completions, or Responses with `--responses` — in
which toolrt executes every tool call. A plain script: it uses `toolrt.SyncSession`.

Run it from a toolrt checkout, after `cargo build --release` and
`pip install ./clients/python openai`:

    OPENAI_API_KEY=sk-… python examples/python/openai_loop.py "Which Rust files mention Deadlines?"
    OPENAI_API_KEY=sk-… python examples/python/openai_loop.py --responses "…"

You will see, on stderr, each tool call and its outcome as toolrt ran it, and on stdout the
model's final answer. Reads and globs are allowed by rule; every other call that needs approval
is denied (this script asks nobody). A call whose `arguments` are not valid JSON never runs: the
model gets a `schema_error` naming the call and can try again. `OPENAI_BASE_URL` and
`OPENAI_MODEL` choose another endpoint and model.
"""

import json
import os
import sys

import openai

import toolrt

MODEL = os.environ.get("OPENAI_MODEL", "gpt-4.1")
MAX_TURNS = 20

# The tools offered to the model: toolrt's own definitions (`toolrt tools --format openai-chat`
# or `openai-responses`: strict schemas, optional fields nullable; the adapters drop the nulls).
TOOLS = ["Read", "Glob", "Bash"]


def report(calls: list, results: list) -> None:
    for call, result in zip(calls, results):
        print(f"[{call.id}] {call.name} {json.dumps(call.input)} -> {result.outcome}", file=sys.stderr)


def chat_loop(client: openai.OpenAI, session: toolrt.SyncSession, prompt: str) -> int:
    tools = toolrt.tool_definitions("openai-chat", tools=TOOLS)
    messages: list = [{"role": "user", "content": prompt}]
    for _ in range(MAX_TURNS):
        completion = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
        message = completion.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        calls = toolrt.from_openai_chat(completion)
        if not calls:
            print(message.content or "")
            return 0
        results = session.run(calls)
        report(calls, results)
        messages += toolrt.to_openai_chat(results)
    return 1


def responses_loop(client: openai.OpenAI, session: toolrt.SyncSession, prompt: str) -> int:
    tools = toolrt.tool_definitions("openai-responses", tools=TOOLS)
    items: list = [{"role": "user", "content": prompt}]
    for _ in range(MAX_TURNS):
        response = client.responses.create(model=MODEL, input=items, tools=tools)
        items += [item.model_dump(exclude_none=True) for item in response.output]
        calls = toolrt.from_openai_responses(response)
        if not calls:
            print(response.output_text)
            return 0
        results = session.run(calls)
        report(calls, results)
        items += toolrt.to_openai_responses(results)
    return 1


def main(argv: list) -> int:
    use_responses = "--responses" in argv
    prompt = " ".join(a for a in argv if a != "--responses") or "What does this repository do?"
    client = openai.OpenAI()  # OPENAI_API_KEY, OPENAI_BASE_URL
    with toolrt.SyncSession(tools=TOOLS, allowed_tools=["Read", "Glob"]) as session:
        status = (responses_loop if use_responses else chat_loop)(client, session, prompt)
    if status:
        print(f"stopped after {MAX_TURNS} turns", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
