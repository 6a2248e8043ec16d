"""Python functions as client tools: their input schema, and their return value as an
`execute_result`."""

from __future__ import annotations

import inspect
import json
import typing
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from ._types import JSON, ToolOutput

_SIMPLE: Dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    dict: "object",
}


def _schema_of(annotation: Any) -> Tuple[Dict[str, JSON], bool]:
    """The JSON schema of one parameter's annotation, and whether it admits `None`."""
    origin = typing.get_origin(annotation)
    if origin is Union or type(annotation).__name__ == "UnionType":
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        if len(args) == 1:
            return _schema_of(args[0])[0], optional
        return {}, optional
    if annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}, False
    if origin in _SIMPLE:
        schema: Dict[str, JSON] = {"type": _SIMPLE[origin]}
        args = typing.get_args(annotation)
        if origin is list and args:
            schema["items"] = _schema_of(args[0])[0]
        return schema, False
    return {}, False


def schema_from_signature(fn: Callable[..., Any]) -> Dict[str, JSON]:
    """An object schema for `fn`'s keyword parameters: a parameter is required unless it has a
    default or admits `None`; `str`, `int`, `float`, `bool`, `list[…]`, `dict` map to their JSON
    types, anything else to `{}` (any value)."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable forward references: fall back to no types
        hints = {}
    properties: Dict[str, JSON] = {}
    required: List[str] = []
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        schema, optional = _schema_of(hints.get(param.name, Any))
        properties[param.name] = schema
        if param.default is param.empty and not optional:
            required.append(param.name)
    return {"type": "object", "properties": properties, "required": required}


def tool_spec(
    fn: Callable[..., Any],
    name: Optional[str],
    description: Optional[str],
    input_schema: Optional[Dict[str, JSON]],
    read_only: bool,
    concurrency_safe: Optional[bool],
    timeout_ms: Optional[int],
) -> Dict[str, JSON]:
    """The `register_tools` entry for a Python function."""
    spec: Dict[str, JSON] = {
        "name": name or fn.__name__,
        "description": description if description is not None else (inspect.getdoc(fn) or ""),
        "input_schema": input_schema if input_schema is not None else schema_from_signature(fn),
    }
    if read_only:
        spec["read_only"] = True
    if concurrency_safe is not None:
        spec["concurrency_safe"] = concurrency_safe
    if timeout_ms is not None:
        spec["timeout_ms"] = timeout_ms
    return spec


def output_of(value: Any) -> ToolOutput:
    """A tool function's return value as toolrt's `execute_result` content: a string as is, a
    `ToolOutput` as given, a content block (a dict with `type`) or a list of them as blocks,
    `None` as empty text, anything else as its JSON (or `str` when it is not JSON)."""
    if isinstance(value, ToolOutput):
        return value
    if value is None:
        return ToolOutput("")
    if isinstance(value, str):
        return ToolOutput(value)
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        return ToolOutput([value])
    if isinstance(value, list) and value and all(
        isinstance(b, dict) and isinstance(b.get("type"), str) for b in value
    ):
        return ToolOutput(value)
    try:
        return ToolOutput(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError):
        return ToolOutput(str(value))
