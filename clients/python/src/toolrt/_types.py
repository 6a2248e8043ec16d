"""The typed values the client hands out: calls, results, permission requests, events, errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

JSON = Any
"""A value as `json.loads` returns it."""


@dataclass
class Call:
    """One tool call: `id` (unique among calls in flight), the tool's `name` and its `input`.

    `input_error` is set by an adapter when the model's arguments could not be read (OpenAI's
    `arguments` that are not valid JSON): such a call is never sent to toolrt and resolves at
    once to a `schema_error` result that says why, naming the call.
    """

    name: str
    input: JSON = field(default_factory=dict)
    id: Optional[str] = None
    input_error: Optional[str] = None

    def to_wire(self) -> Dict[str, JSON]:
        """The call as a batch entry of the native protocol."""
        return {"id": self.id, "name": self.name, "input": self.input}


CallLike = Union[Call, Mapping[str, Any]]
"""A `Call`, or a dict with `name`, optional `input` and optional `id`."""


@dataclass
class ToolResult:
    """The one result of a call, as toolrt's `tool_result` line carries it.

    `outcome` is one of `success`, `failed`, `unavailable`, `schema_error`, `validation_error`,
    `denied`, `stopped`, `deferred`, `cancelled`, `timed_out` (docs/PROTOCOL.md "Outcomes").
    """

    id: str
    content: str
    is_error: bool
    outcome: str
    duration_ms: int = 0
    name: Optional[str] = None
    output_file: Optional[str] = None
    content_blocks: Optional[List[Dict[str, JSON]]] = None
    structured_content: JSON = None
    agent_id: Optional[str] = None

    @classmethod
    def from_line(cls, msg: Mapping[str, Any], name: Optional[str] = None) -> "ToolResult":
        """Reads a `tool_result` message; `name` is the tool the client asked for."""
        return cls(
            id=msg["tool_use_id"],
            content=msg.get("content", ""),
            is_error=bool(msg.get("is_error", False)),
            outcome=msg.get("outcome", "failed"),
            duration_ms=int(msg.get("duration_ms", 0)),
            name=name,
            output_file=msg.get("output_file"),
            content_blocks=msg.get("content_blocks"),
            structured_content=msg.get("structured_content"),
            agent_id=msg.get("agent_id"),
        )


@dataclass
class PermissionRequest:
    """toolrt asks whether a call may run (`permission_request`)."""

    request_id: str
    tool_use_id: str
    tool_name: str
    input: JSON
    reason: str
    agent_id: Optional[str] = None


@dataclass
class AgentTask:
    """toolrt delegates a subagent to the client (an `execute` of the `Agent` tool): run it,
    sending its calls with `agent_id` (for example `session.run(calls, agent_id=task.agent_id)`),
    and return its final text. `input` is the `Agent` call's input as checked and approved."""

    request_id: str
    tool_use_id: str
    agent_id: Optional[str]
    description: str
    prompt: str
    subagent_type: str
    input: JSON


@dataclass
class PermissionDecision:
    """The answer to a `PermissionRequest`: `allow` or `deny`, with an optional rewritten input
    (allow) or message (deny). A permission callback may also return `True` / `False`."""

    behavior: str
    updated_input: Optional[Dict[str, JSON]] = None
    message: Optional[str] = None

    @classmethod
    def allow(cls, updated_input: Optional[Dict[str, JSON]] = None) -> "PermissionDecision":
        """Allow the call, optionally with a rewritten input."""
        return cls("allow", updated_input=updated_input)

    @classmethod
    def deny(cls, message: Optional[str] = None) -> "PermissionDecision":
        """Deny the call; `message` is what the model reads."""
        return cls("deny", message=message)


@dataclass
class Event:
    """Something toolrt said that is not the answer to a call: `kind` is an `event` line's
    `event` (`batch_start`, `progress`, `hook_end`, `tools_changed`, …), or the message's `type`
    for other lines (`error`, `permission_request`, `execute`, `execute_cancel`,
    `tool_result`). `data` is the whole message."""

    kind: str
    data: Dict[str, JSON]


@dataclass
class ToolOutput:
    """What a registered Python tool may return when a plain string is not enough: `content`
    (a string or MCP-shaped content blocks such as `{"type": "image", "data": …, "mimeType": …}`)
    and `is_error`."""

    content: Union[str, Sequence[Dict[str, JSON]]]
    is_error: bool = False


class ToolrtError(Exception):
    """An error toolrt reported, with its own wording in `message` (and `code`, `line`, `ids`
    when the `error` line had them)."""

    def __init__(
        self,
        message: str,
        code: Optional[str] = None,
        line: Optional[int] = None,
        ids: Optional[List[str]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.line = line
        self.ids = ids or []

    @classmethod
    def from_line(cls, msg: Mapping[str, Any]) -> "ToolrtError":
        """Reads an `error` message."""
        return cls(msg.get("message", "error"), msg.get("code"), msg.get("line"), msg.get("ids"))


class CallRefused(ToolrtError):
    """toolrt did not accept the call (`busy`, `shutting_down`, a malformed line, …): it never
    ran and has no `tool_result`."""


class RegistrationError(ToolrtError):
    """`register_tools` or `unregister_tools` was refused; nothing changed."""


class BinaryNotFound(ToolrtError):
    """No `toolrt` binary was found (see the package README, "Finding the binary")."""


class StartError(ToolrtError):
    """`toolrt serve` exited before it answered `hello`: bad flags or settings. `message` is
    its stderr."""


class SessionClosed(ToolrtError):
    """The toolrt process ended (or the session was closed) before this call's result came:
    `returncode` is its exit status, `stderr` its last lines."""

    def __init__(self, message: str, returncode: Optional[int] = None, stderr: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
