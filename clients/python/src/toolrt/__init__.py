"""toolrt: a Python client for toolrt, the runtime that executes AI agents' tool calls.

`Session` starts `toolrt serve` and drives it over its NDJSON protocol; `SyncSession` does the
same for scripts without asyncio. `from_anthropic` / `to_anthropic`, `from_openai_chat` /
`to_openai_chat` and `from_openai_responses` / `to_openai_responses` turn a model API's tool
calls into `Call`s and `ToolResult`s back into what the API expects next.
"""

__version__ = "0.1.0"

from ._binary import find_binary, tool_definitions
from ._types import (
    AgentTask,
    BinaryNotFound,
    Call,
    CallRefused,
    Event,
    PermissionDecision,
    PermissionRequest,
    RegistrationError,
    SessionClosed,
    StartError,
    ToolOutput,
    ToolResult,
    ToolrtError,
)
from ._session import AgentHandler, Batch, EventStream, PermissionCallback, Session
from ._sync import SyncSession
from .formats import (
    from_anthropic,
    from_openai_chat,
    from_openai_responses,
    to_anthropic,
    to_openai_chat,
    to_openai_responses,
)

__all__ = [
    "AgentHandler",
    "AgentTask",
    "Batch",
    "BinaryNotFound",
    "Call",
    "CallRefused",
    "Event",
    "EventStream",
    "PermissionCallback",
    "PermissionDecision",
    "PermissionRequest",
    "RegistrationError",
    "Session",
    "SessionClosed",
    "StartError",
    "SyncSession",
    "ToolOutput",
    "ToolResult",
    "ToolrtError",
    "find_binary",
    "tool_definitions",
    "from_anthropic",
    "from_openai_chat",
    "from_openai_responses",
    "to_anthropic",
    "to_openai_chat",
    "to_openai_responses",
]
