"""Model APIs' tool calls in, toolrt's results out: Anthropic Messages, OpenAI Chat Completions
and OpenAI Responses.

Each `from_*` accepts plain dicts or the SDK's own objects (anything with `model_dump()`, as the
`anthropic` and `openai` SDKs' pydantic models have) and returns the turn's tool calls as
`Call`s, in the order the model made them, with the model's ids. Each `to_*` takes the results
(`ToolResult`s, or `tool_result` dicts as toolrt writes them) in that order and returns what
the API wants next.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Union

from ._types import JSON, Call, ToolResult

ResultLike = Union[ToolResult, Mapping[str, Any]]


def _plain(value: Any) -> Any:
    """An SDK object as plain data (pydantic's `model_dump`), or the value as it is."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    return value


def _result(value: ResultLike) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, Mapping) and "tool_use_id" in value:
        return ToolResult.from_line(value)
    raise TypeError(f"a result is a toolrt.ToolResult or a tool_result dict, not {type(value).__name__}")


def _images(result: ToolResult) -> List[Dict[str, JSON]]:
    return [b for b in result.content_blocks or [] if b.get("type") == "image" and b.get("data")]


# ----- Anthropic Messages -----------------------------------------------------------------


def from_anthropic(message: Any) -> List[Call]:
    """The `tool_use` blocks of an assistant message (a `Message`, a message dict, or its
    `content` list) as calls, in order."""
    message = _plain(message)
    content = message.get("content", []) if isinstance(message, Mapping) else message
    if isinstance(content, str):
        return []
    calls = []
    for block in content:
        block = _plain(block)
        if isinstance(block, Mapping) and block.get("type") == "tool_use":
            calls.append(Call(block["name"], block.get("input") or {}, block["id"]))
    return calls


def to_anthropic(results: Iterable[ResultLike]) -> Dict[str, JSON]:
    """One `user` message whose `tool_result` blocks answer the calls, in order, with
    `is_error`; a result carrying images has its text then each image as a base64 image
    block."""
    blocks = []
    for value in results:
        r = _result(value)
        images = _images(r)
        content: Union[str, List[Dict[str, JSON]]] = r.content
        if images:
            content = [{"type": "text", "text": r.content}] if r.content else []
            for image in images:
                content.append(
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": image.get("mimeType", "image/png"),
                            "data": image["data"],
                        },
                    }
                )
        blocks.append(
            {"type": "tool_result", "tool_use_id": r.id, "content": content, "is_error": r.is_error}
        )
    return {"role": "user", "content": blocks}


# ----- OpenAI, both APIs ------------------------------------------------------------------


def _without_nulls(value: Any) -> Any:
    """Drops `null` properties at every depth: with OpenAI's strict schemas (every property
    required, optional ones nullable, as `toolrt tools --format openai-*` writes them) the model
    sends `null` for a field it does not give, which toolrt's schema would refuse."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _arguments(name: str, call_id: str, arguments: Any) -> Call:
    """A function call whose `arguments` is a JSON string: read it, or say why not."""
    if isinstance(arguments, Mapping):
        return Call(name, _without_nulls(dict(arguments)), call_id)
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return Call(name, {}, call_id)
    try:
        value = json.loads(arguments)
    except (TypeError, ValueError) as e:
        shown = arguments if len(str(arguments)) <= 200 else str(arguments)[:200] + "…"
        return Call(name, {}, call_id, input_error=f"the arguments are not valid JSON ({e}): {shown}")
    if not isinstance(value, dict):
        return Call(
            name, {}, call_id, input_error=f"the arguments must be a JSON object, got {type(value).__name__}"
        )
    return Call(name, _without_nulls(value), call_id)


def _text(r: ToolResult) -> str:
    return f"Error: {r.content}" if r.is_error else r.content


# ----- OpenAI Chat Completions ------------------------------------------------------------


def from_openai_chat(message: Any) -> List[Call]:
    """The `tool_calls` of an assistant message (a `ChatCompletionMessage` or dict), of a
    `choice`, or of a whole `ChatCompletion` (its first choice), as calls, in order. A call
    whose `arguments` is not a JSON object resolves to a `schema_error` naming the call, and
    never runs. A `null` property is left out (strict mode's "not given")."""
    message = _plain(message)
    if isinstance(message, Mapping) and "choices" in message:
        choices = message["choices"]
        message = _plain(choices[0]) if choices else {}
    if isinstance(message, Mapping) and "message" in message:
        message = _plain(message["message"])
    calls = []
    for tc in (message or {}).get("tool_calls") or []:
        tc = _plain(tc)
        function = _plain(tc.get("function", {}))
        calls.append(_arguments(function.get("name", ""), tc["id"], function.get("arguments")))
    return calls


def to_openai_chat(results: Iterable[ResultLike]) -> List[Dict[str, JSON]]:
    """The `role: "tool"` messages answering the calls, in order, keyed by `tool_call_id`. An
    error's text starts `Error: ` (the API has no error flag). Tool messages carry text only:
    an image is the line toolrt's text has for it."""
    out = []
    for value in results:
        r = _result(value)
        out.append({"role": "tool", "tool_call_id": r.id, "content": _text(r)})
    return out


# ----- OpenAI Responses -------------------------------------------------------------------


def from_openai_responses(response: Any) -> List[Call]:
    """The `function_call` items of a `Response` (its `output`), or of a list of output items,
    as calls keyed by `call_id`, in order; arguments as in `from_openai_chat`."""
    response = _plain(response)
    items: Sequence[Any]
    if isinstance(response, Mapping):
        items = response.get("output", [response])
    else:
        items = response
    calls = []
    for item in items:
        item = _plain(item)
        if isinstance(item, Mapping) and item.get("type") == "function_call":
            calls.append(_arguments(item.get("name", ""), item["call_id"], item.get("arguments")))
    return calls


def to_openai_responses(results: Iterable[ResultLike]) -> List[Dict[str, JSON]]:
    """The `function_call_output` items answering the calls, in order, keyed by `call_id`. The
    output is the text (an error's starting `Error: `); with images, a list of `input_text`
    and `input_image` (a data URL) parts."""
    out = []
    for value in results:
        r = _result(value)
        images = _images(r)
        output: Union[str, List[Dict[str, JSON]]] = _text(r)
        if images:
            output = [{"type": "input_text", "text": _text(r)}] + [
                {
                    "type": "input_image",
                    "image_url": f"data:{i.get('mimeType', 'image/png')};base64,{i['data']}",
                }
                for i in images
            ]
        out.append({"type": "function_call_output", "call_id": r.id, "output": output})
    return out


__all__ = [
    "from_anthropic",
    "to_anthropic",
    "from_openai_chat",
    "to_openai_chat",
    "from_openai_responses",
    "to_openai_responses",
]
