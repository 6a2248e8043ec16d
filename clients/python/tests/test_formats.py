"""The model-API adapters, with real-shaped turns (as the APIs send them, and as the SDKs' own
objects) run through the real toolrt: parallel calls, invalid JSON arguments, an unknown tool,
a denied call, an image result and a result over the output budget."""

import anthropic.types
import openai.types.chat
import openai.types.responses

import pytest

import toolrt
from conftest import BIN, aio, opts

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def picture() -> list:
    """A one-pixel PNG."""
    return [{"type": "text", "text": "one pixel"}, {"type": "image", "data": PNG, "mimeType": "image/png"}]


def big() -> str:
    """More text than the output budget allows."""
    return "x" * 150_000


# The six calls of one turn, in the order the model made them.
TURN = [
    ("Read", {"file_path": "notes.txt"}),
    ("Glob", {"pattern": "*.txt"}),
    ("NoSuchTool", {"q": 1}),
    ("Bash", {"command": "rm -rf build"}),
    ("Picture", {}),
    ("Big", {}),
]


async def run_turn(work, calls):
    async with toolrt.Session(**opts(work, allowed_tools=["Read", "Glob", "Picture", "Big"])) as s:
        await s.register_tool(picture, name="Picture")
        await s.register_tool(big, name="Big")
        return await s.run(calls)


def check_outcomes(results, ids):
    assert [r.id for r in results] == ids
    outcomes = [r.outcome for r in results]
    assert outcomes[:6] == ["success", "success", "unavailable", "denied", "success", "success"]
    big_result = results[5]
    assert big_result.output_file and big_result.output_file in big_result.content
    return {r.id: r for r in results}


ANTHROPIC_MESSAGE = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "Let me look at the files."}]
    + [
        {"type": "tool_use", "id": f"toolu_0{i}", "name": name, "input": args}
        for i, (name, args) in enumerate(TURN)
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 512, "output_tokens": 180},
}


@aio
async def test_anthropic_turn_in_and_one_user_message_out(work):
    ids = [f"toolu_0{i}" for i in range(len(TURN))]
    message = anthropic.types.Message.model_validate(ANTHROPIC_MESSAGE)
    calls = toolrt.from_anthropic(message)
    assert calls == toolrt.from_anthropic(ANTHROPIC_MESSAGE) == toolrt.from_anthropic(message.content)
    assert [(c.id, c.name) for c in calls] == [(i, n) for i, (n, _) in zip(ids, TURN)]
    results = await run_turn(work, calls)
    check_outcomes(results, ids)
    reply = toolrt.to_anthropic(results)
    assert reply["role"] == "user"
    blocks = reply["content"]
    assert [b["tool_use_id"] for b in blocks] == ids
    assert [b["type"] for b in blocks] == ["tool_result"] * 6
    assert [b["is_error"] for b in blocks] == [False, False, True, True, False, False]
    assert "alpha" in blocks[0]["content"]
    assert "No such tool available: NoSuchTool" in blocks[2]["content"]
    text, image = blocks[4]["content"]
    assert text["type"] == "text" and "one pixel" in text["text"]
    assert image == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}


def chat_completion(arguments_of_first: str) -> dict:
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "created": 1741570283,
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "logprobs": None,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "refusal": None,
                    "tool_calls": [
                        {
                            "id": "call_bad",
                            "type": "function",
                            "function": {"name": "Read", "arguments": arguments_of_first},
                        }
                    ]
                    + [
                        {
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {"name": name, "arguments": __import__("json").dumps(args)},
                        }
                        for i, (name, args) in enumerate(TURN)
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99},
    }


@aio
async def test_openai_chat_turn_in_and_tool_messages_out_with_invalid_json_named(work):
    ids = ["call_bad"] + [f"call_{i}" for i in range(len(TURN))]
    raw = chat_completion('{"file_path": "notes.txt"')
    completion = openai.types.chat.ChatCompletion.model_validate(raw)
    calls = toolrt.from_openai_chat(completion)
    assert calls == toolrt.from_openai_chat(raw) == toolrt.from_openai_chat(raw["choices"][0])
    assert calls[0].input_error and "not valid JSON" in calls[0].input_error
    results = await run_turn(work, calls)
    bad = results[0]
    assert bad.outcome == "schema_error" and bad.is_error
    assert "Read" in bad.content and "call_bad" in bad.content and "not valid JSON" in bad.content
    check_outcomes(results[1:], ids[1:])
    messages = toolrt.to_openai_chat(results)
    assert [m["tool_call_id"] for m in messages] == ids
    assert all(m["role"] == "tool" for m in messages)
    assert messages[0]["content"].startswith("Error: Invalid input for Read (call call_bad)")
    assert "alpha" in messages[1]["content"] and not messages[1]["content"].startswith("Error")
    assert messages[4]["content"].startswith("Error: Bash would need approval")
    assert "[image: image/png" in messages[5]["content"]
    # A JSON value that is not an object is refused the same way.
    [not_object] = toolrt.from_openai_chat(
        {"tool_calls": [{"id": "c", "type": "function", "function": {"name": "Read", "arguments": "[1]"}}]}
    )
    assert "must be a JSON object, got list" in not_object.input_error


@aio
async def test_openai_responses_items_in_and_function_call_outputs_out(work):
    ids = [f"call_r{i}" for i in range(len(TURN))]
    items = [
        openai.types.responses.ResponseFunctionToolCall.model_validate(
            {
                "type": "function_call",
                "id": f"fc_{i}",
                "call_id": f"call_r{i}",
                "name": name,
                "arguments": __import__("json").dumps(args),
                "status": "completed",
            }
        )
        for i, (name, args) in enumerate(TURN)
    ]
    response = {"id": "resp_1", "object": "response", "output": [{"type": "reasoning", "id": "rs_1"}] + items}
    calls = toolrt.from_openai_responses(response)
    assert calls == toolrt.from_openai_responses(items)
    results = await run_turn(work, calls)
    check_outcomes(results, ids)
    outputs = toolrt.to_openai_responses(results)
    assert [o["call_id"] for o in outputs] == ids
    assert all(o["type"] == "function_call_output" for o in outputs)
    assert outputs[3]["output"].startswith("Error: Bash would need approval")
    text, image = outputs[4]["output"]
    assert text["type"] == "input_text" and image == {
        "type": "input_image",
        "image_url": f"data:image/png;base64,{PNG}",
    }


def test_adapters_take_toolrt_result_lines_as_dicts():
    line = {"type": "tool_result", "tool_use_id": "t1", "content": "hi", "is_error": False, "outcome": "success"}
    assert toolrt.to_anthropic([line])["content"][0]["content"] == "hi"
    assert toolrt.to_openai_chat([line]) == [{"role": "tool", "tool_call_id": "t1", "content": "hi"}]
    assert toolrt.to_openai_responses([line]) == [{"type": "function_call_output", "call_id": "t1", "output": "hi"}]
    assert toolrt.from_anthropic({"role": "assistant", "content": "just text"}) == []


def test_openai_nulls_are_fields_not_given():
    # What a model sends under the strict schemas `toolrt tools --format openai-chat` writes.
    [call] = toolrt.from_openai_chat(
        {"tool_calls": [{"id": "c", "type": "function", "function": {"name": "Glob", "arguments": '{"pattern": "*.rs", "path": null}'}}]}
    )
    assert call.input == {"pattern": "*.rs"}
    [call] = toolrt.from_openai_responses(
        [{"type": "function_call", "call_id": "r", "name": "Edit", "arguments": '{"edits": [{"a": 1, "b": null}], "c": null}'}]
    )
    assert call.input == {"edits": [{"a": 1}]}


def test_tool_definitions_are_each_apis_shape():
    tools = ["Read", "Glob", "Bash"]
    anthropic_defs = toolrt.tool_definitions("anthropic", binary=BIN, tools=tools)
    assert sorted(d["name"] for d in anthropic_defs) == sorted(tools)
    assert all(d["input_schema"]["type"] == "object" and d["description"] for d in anthropic_defs)
    chat = toolrt.tool_definitions("openai-chat", binary=BIN, tools=tools)
    assert all(d["type"] == "function" and d["function"]["parameters"]["type"] == "object" for d in chat)
    responses = toolrt.tool_definitions("openai-responses", binary=BIN, tools=tools)
    assert sorted(d["name"] for d in responses) == sorted(tools)
    with pytest.raises(toolrt.ToolrtError, match="Nope"):
        toolrt.tool_definitions("anthropic", binary=BIN, tools=["Nope"])
