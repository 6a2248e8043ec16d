"""`Session`: one `toolrt serve` process driven over its native NDJSON protocol.

Every submitted call resolves exactly once: with its `tool_result`, with `CallRefused` when
toolrt's `error` line refused its line (matched by input line number, which the client counts),
or with `SessionClosed` when the process ends first. Because toolrt refuses an id already in
flight, the client refuses one itself before sending, so two calls never share an id on the wire.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import json
import signal
from dataclasses import dataclass, field
from typing import (
    Any,
    Awaitable,
    Callable,
    Deque,
    Dict,
    Generator,
    Iterable,
    List,
    Mapping,
    Optional,
    Union,
)

from . import __version__
from ._binary import PathLike, find_binary, serve_args
from ._tools import output_of, tool_spec
from ._types import (
    JSON,
    AgentTask,
    Call,
    CallLike,
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

Decision = Union[PermissionDecision, bool, str, Mapping[str, Any], None]
PermissionCallback = Callable[[PermissionRequest], Union[Decision, Awaitable[Decision]]]
"""Answers a permission request: sync or async, returning a `PermissionDecision`, `True`
(allow) / `False` (deny), or `"allow"` / `"deny"`. An exception denies the call."""

AgentHandler = Callable[[AgentTask], Any]
"""Runs a subagent the `Agent` tool delegated (sync or async): sends its calls with the task's
`agent_id` and returns its final text (or a `ToolOutput`), which becomes the `Agent` call's
result and the subagent's SubagentStop `last_assistant_message`. An exception is an error
result naming it."""

_STDERR_LINES = 40
# toolrt's own output lines are bounded by its output budget; its input limit is 64 MiB.
_LINE_LIMIT = 64 * 1024 * 1024 + 1024


@dataclass
class _Line:
    """What the client sent on one input line, for matching an `error` line to it."""

    ids: List[str] = field(default_factory=list)
    waiter: Optional["asyncio.Future[Dict[str, JSON]]"] = None


def _decision(value: Decision) -> PermissionDecision:
    if isinstance(value, PermissionDecision):
        return value
    if value is True or value == "allow":
        return PermissionDecision.allow()
    if value is False or value is None or value == "deny":
        return PermissionDecision.deny()
    if isinstance(value, Mapping) and value.get("behavior") in ("allow", "deny"):
        return PermissionDecision(
            value["behavior"], value.get("updated_input"), value.get("message")
        )
    return PermissionDecision.deny(f"the permission callback returned {value!r}: denied")


def _call_of(value: CallLike) -> Call:
    if isinstance(value, Call):
        return Call(value.name, value.input, value.id, value.input_error)
    if isinstance(value, Mapping):
        return Call(value["name"], value.get("input", {}), value.get("id"))
    raise TypeError(f"a call is a toolrt.Call or a dict with `name`, not {type(value).__name__}")


class Batch:
    """The calls of one `Session.submit`: await it for their results (in call order), or use
    `futures` to take each as it comes. `cancel()` cancels every unfinished call."""

    def __init__(
        self,
        session: "Session",
        batch_id: Optional[str],
        calls: List[Call],
        futures: "List[asyncio.Future[ToolResult]]",
    ) -> None:
        self.id = batch_id
        """The batch id on the wire (`None` when no call was sent)."""
        self.calls = calls
        """The calls, with the ids they were sent with."""
        self.futures = futures
        """One future per call, in call order."""
        self._session = session

    async def results(self) -> List[ToolResult]:
        """Every call's result, in call order; raises the first call's error if one was
        refused or the session ended first (the other futures still resolve)."""
        return [await f for f in self.futures]

    def __await__(self) -> Generator[Any, None, List[ToolResult]]:
        return self.results().__await__()

    def cancel(self) -> None:
        """Cancel every call of the batch that has no result yet (`cancel {batch}`)."""
        if self.id is not None and not all(f.done() for f in self.futures):
            self._session._send({"type": "cancel", "batch": self.id})


class EventStream:
    """An async iterator of `Event`s, from when `Session.events()` made it until the session
    ends or `close()`. It keeps the newest `maxsize` events unread and counts the rest in
    `dropped`, so a reader that falls behind costs bounded memory."""

    def __init__(self, session: "Session", maxsize: int) -> None:
        self._session = session
        self._queue: Deque[Event] = collections.deque(maxlen=maxsize)
        self._wake: Optional[asyncio.Future[None]] = None
        self._closed = False
        self.dropped = 0
        """Events dropped because the reader fell `maxsize` behind."""

    def _put(self, event: Event) -> None:
        if len(self._queue) == self._queue.maxlen:
            self.dropped += 1
        self._queue.append(event)
        self._notify()

    def _notify(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def close(self) -> None:
        """Stop receiving events; iteration ends after those already queued."""
        self._closed = True
        self._session._streams.discard(self)
        self._notify()

    def __aiter__(self) -> "EventStream":
        return self

    async def __anext__(self) -> Event:
        while not self._queue:
            if self._closed:
                raise StopAsyncIteration
            self._wake = asyncio.get_running_loop().create_future()
            await self._wake
        return self._queue.popleft()


class Session:
    """A `toolrt serve` process and the client's side of its protocol.

    ```
    async with toolrt.Session(allowed_tools=["Read"]) as session:
        [result] = await session.run([{"name": "Read", "input": {"file_path": "README.md"}}])
    ```

    Keyword options are `toolrt serve`'s flags (`settings`, `tools`, `allowed_tools`,
    `disallowed_tools`, `permission_mode`, `cwd`, `max_in_flight`, `max_queued`, `max_parked`,
    `max_parallel`, `output_dir`, `temp_output_dir`, `permission_prompt`, `strict_settings`,
    `plugin_dirs`, `session_id`, `transcript_path`, `mcp_config`, `strict_mcp_config`).
    `permission` answers permission requests; without it (and without an explicit
    `permission_prompt`) the session runs with `--permission-prompt none`: every ask is denied.
    `agent` runs the subagents the `Agent` tool delegates (see `AgentHandler`); without it an
    `Agent` call ends with an error result saying that this client runs no subagents.
    `binary` is the toolrt to run (see `find_binary`); `env` its environment.
    """

    def __init__(
        self,
        *,
        binary: Optional[PathLike] = None,
        permission: Optional[PermissionCallback] = None,
        agent: Optional[AgentHandler] = None,
        env: Optional[Mapping[str, str]] = None,
        **options: Any,
    ) -> None:
        if permission is not None:
            options.setdefault("permission_prompt", "client")
        else:
            options.setdefault("permission_prompt", "none")
        self._args = serve_args(**options)
        self._binary = binary
        self._permission = permission
        self._agent = agent
        self._env = dict(env) if env is not None else None
        self._proc: Optional[asyncio.subprocess.Process] = None
        self._reader: Optional[asyncio.Task[None]] = None
        self._stderr_task: Optional[asyncio.Task[None]] = None
        self._stderr: Deque[str] = collections.deque(maxlen=_STDERR_LINES)
        self._line = 0
        self._lines: Dict[int, _Line] = {}
        self._pending: Dict[str, "asyncio.Future[ToolResult]"] = {}
        self._names: Dict[str, str] = {}
        self._line_of: Dict[str, int] = {}
        self._tools: Dict[str, Callable[..., Any]] = {}
        self._executing: Dict[str, "asyncio.Task[None]"] = {}
        self._answering: "set[asyncio.Task[None]]" = set()
        self._streams: "set[EventStream]" = set()
        self._register_lock = asyncio.Lock()
        self._register_waiter: Optional[asyncio.Future[Dict[str, JSON]]] = None
        self._hello: Optional[asyncio.Future[Dict[str, JSON]]] = None
        self._closed: Optional[SessionClosed] = None
        self._next_batch = 0
        self._next_call = 0
        self.version = ""
        """toolrt's version, from its `hello`."""
        self.tools: List[str] = []
        """The tools that existed at start (canonical names, sorted), from `hello`."""
        self.limits: Dict[str, JSON] = {}
        """toolrt's limits, from `hello` (docs/PROTOCOL.md)."""

    # ----- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> "Session":
        await self.start()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self.close(cancel=exc_type is not None)

    async def start(self) -> None:
        """Start `toolrt serve` and wait for its `hello`. Raises `BinaryNotFound`, or
        `StartError` with toolrt's stderr when it exits first (bad flags or settings)."""
        if self._proc is not None:
            raise RuntimeError("this session was started already")
        binary = find_binary(self._binary)
        self._proc = await asyncio.create_subprocess_exec(
            binary,
            "serve",
            *self._args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._env,
            limit=_LINE_LIMIT,
        )
        loop = asyncio.get_running_loop()
        self._hello = loop.create_future()
        self._stderr_task = asyncio.create_task(self._read_stderr())
        self._reader = asyncio.create_task(self._read())
        self._send({"type": "hello", "client": f"toolrt-python {__version__}"})
        hello = await self._hello
        self.version = hello.get("version", "")
        self.tools = list(hello.get("tools", []))
        self.limits = dict(hello.get("limits", {}))

    async def close(self, *, cancel: bool = False) -> None:
        """End the session: `shutdown` (finish every call in flight, answering its asks and
        client-tool executions), or with `cancel=True` SIGINT (cancel every call; each still
        gets its one result). Waits for toolrt to exit."""
        proc = self._proc
        if proc is None or self._reader is None:
            return
        if proc.returncode is None and self._closed is None:
            if cancel:
                proc.send_signal(signal.SIGINT)
            else:
                self._send({"type": "shutdown"})
        await asyncio.shield(self._reader)
        for task in list(self._answering) + list(self._executing.values()):
            task.cancel()
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()

    @property
    def pid(self) -> Optional[int]:
        """toolrt's process id once started."""
        return None if self._proc is None else self._proc.pid

    @property
    def returncode(self) -> Optional[int]:
        """toolrt's exit status once it has exited, else `None`."""
        return None if self._proc is None else self._proc.returncode

    # ----- calls -----------------------------------------------------------------------------

    def submit(self, calls: Iterable[CallLike], *, agent_id: Optional[str] = None) -> Batch:
        """Send `calls` as one batch (the calls of one model turn: docs/PROTOCOL.md "Batches")
        and return at once. A call without an id gets one (`py-N`). Raises `ValueError` for an
        id already in flight or repeated in `calls`, `SessionClosed` after the session ended.
        Calls an adapter marked with `input_error` resolve at once to a `schema_error`."""
        self._check_open()
        batch = [_call_of(c) for c in calls]
        seen = set()
        for call in batch:
            if call.id is None:
                self._next_call += 1
                call.id = f"py-{self._next_call}"
            if call.id in seen or call.id in self._pending:
                raise ValueError(f"call id {call.id!r} is already in flight in this session")
            seen.add(call.id)
        loop = asyncio.get_running_loop()
        futures: List[asyncio.Future[ToolResult]] = []
        wire: List[Dict[str, JSON]] = []
        for call in batch:
            fut: asyncio.Future[ToolResult] = loop.create_future()
            futures.append(fut)
            if call.input_error is not None:
                fut.set_result(_input_error_result(call))
            else:
                self._pending[call.id] = fut  # type: ignore[index]
                self._names[call.id] = call.name  # type: ignore[index]
                wire.append(call.to_wire())
        batch_id = None
        if wire:
            self._next_batch += 1
            batch_id = f"py-batch-{self._next_batch}"
            msg: Dict[str, JSON] = {"type": "batch", "id": batch_id, "calls": wire}
            if agent_id is not None:
                msg["agent_id"] = agent_id
            line = self._send(msg)
            ids = [c["id"] for c in wire]
            self._lines[line] = _Line(ids=ids)
            for call_id in ids:
                self._line_of[call_id] = line
        return Batch(self, batch_id, batch, futures)

    async def run(
        self, calls: Iterable[CallLike], *, agent_id: Optional[str] = None
    ) -> List[ToolResult]:
        """Run `calls` as one batch and return their results in call order. Raises the first
        error of a call that was refused or outlived the session."""
        batch = self.submit(calls, agent_id=agent_id)
        await self._drain()
        return await batch

    def cancel(self, call_id: Optional[str] = None, *, batch: Optional[str] = None) -> None:
        """Cancel one call (by id) or every unfinished call of a batch (by batch id). The calls
        still resolve, with outcome `cancelled` (or their result, if it was already on its
        way)."""
        if (call_id is None) == (batch is None):
            raise ValueError("cancel takes a call id or batch=, exactly one")
        self._check_open()
        if call_id is not None:
            self._send({"type": "cancel", "id": call_id})
        else:
            self._send({"type": "cancel", "batch": batch})

    def respond(self, request_id: str, decision: Decision) -> None:
        """Answer a `permission_request` by hand (for a session started with
        `permission_prompt="client"` and no `permission` callback)."""
        d = _decision(decision)
        msg: Dict[str, JSON] = {
            "type": "permission_response",
            "request_id": request_id,
            "behavior": d.behavior,
        }
        if d.updated_input is not None:
            msg["updated_input"] = d.updated_input
        if d.message is not None:
            msg["message"] = d.message
        self._send_quiet(msg)

    def events(self, *, maxsize: int = 10_000) -> EventStream:
        """An async iterator of everything toolrt sends from now on (see `Event`)."""
        stream = EventStream(self, maxsize)
        if self._closed is not None:
            stream._closed = True
        else:
            self._streams.add(stream)
        return stream

    # ----- client tools ----------------------------------------------------------------------

    async def register_tool(
        self,
        fn: Callable[..., Any],
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        input_schema: Optional[Dict[str, JSON]] = None,
        read_only: bool = False,
        concurrency_safe: Optional[bool] = None,
        timeout_ms: Optional[int] = None,
    ) -> List[str]:
        """Register `fn` as a client tool (docs/PROTOCOL.md "Client tools"): toolrt checks,
        hooks, decides and budgets each call, and when one is due the client calls `fn` with the
        input's fields as keyword arguments (async functions on the loop, others in a worker
        thread) and answers with what it returns (see `toolrt.ToolOutput`); an exception is an
        error result naming it. The name defaults to `fn.__name__`, the description to its
        docstring, the schema to one made from its signature. Returns the names added; raises
        `RegistrationError` with toolrt's wording if refused."""
        spec = tool_spec(fn, name, description, input_schema, read_only, concurrency_safe, timeout_ms)
        changed = await self._change_tools({"type": "register_tools", "tools": [spec]}, spec["name"], fn)
        return list(changed.get("added", []))

    async def unregister_tool(self, name: str) -> None:
        """Remove a client tool registered in this session."""
        await self._change_tools({"type": "unregister_tools", "names": [name]}, name, None)

    async def _change_tools(
        self, msg: Dict[str, JSON], name: str, fn: Optional[Callable[..., Any]]
    ) -> Dict[str, JSON]:
        async with self._register_lock:
            self._check_open()
            waiter: asyncio.Future[Dict[str, JSON]] = asyncio.get_running_loop().create_future()
            self._register_waiter = waiter
            previous = self._tools.get(name)
            # Set before toolrt can send an `execute` for it (one comes only after the answer).
            if fn is not None:
                self._tools[name] = fn
            line = self._send(msg)
            self._lines[line] = _Line(waiter=waiter)
            await self._drain()
            try:
                changed = await waiter
            except BaseException:
                if fn is not None:
                    if previous is None:
                        self._tools.pop(name, None)
                    else:
                        self._tools[name] = previous
                raise
            finally:
                self._lines.pop(line, None)
                self._register_waiter = None
            if fn is None:
                self._tools.pop(name, None)
            return changed

    # ----- the wire --------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed is not None:
            raise self._closed
        if self._proc is None:
            raise RuntimeError("the session is not started: use `async with Session(...)`")

    def _send(self, msg: Mapping[str, JSON]) -> int:
        """Writes one line; returns its line number as toolrt counts it."""
        self._check_open()
        assert self._proc is not None and self._proc.stdin is not None
        data = json.dumps(msg, ensure_ascii=False, separators=(",", ":"))
        self._proc.stdin.write(data.encode("utf-8") + b"\n")
        self._line += 1
        return self._line

    def _send_quiet(self, msg: Mapping[str, JSON]) -> None:
        """Writes an answer toolrt may no longer want: nothing to do if the session ended."""
        if self._closed is None and self._proc is not None:
            try:
                self._send(msg)
            except (SessionClosed, ConnectionError, RuntimeError):
                pass

    async def _drain(self) -> None:
        if self._proc is not None and self._proc.stdin is not None:
            try:
                await self._proc.stdin.drain()
            except ConnectionError:
                pass  # toolrt is gone: the reader fails every pending call

    async def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        while True:
            try:
                line = await self._proc.stderr.readline()
            except ValueError:  # a line over the limit: keep going with what follows
                continue
            if not line:
                return
            self._stderr.append(line.decode("utf-8", "replace").rstrip("\n"))

    async def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        stdout = self._proc.stdout
        failure = ""
        parts: List[bytes] = []  # the unfinished line's chunks
        size = 0
        try:
            # Whole chunks, split here: one await per chunk rather than one per line.
            while True:
                chunk = await stdout.read(1 << 16)
                if not chunk:
                    break
                if b"\n" not in chunk:
                    parts.append(chunk)
                    size += len(chunk)
                    if size > _LINE_LIMIT:
                        raise ValueError(f"a line longer than {_LINE_LIMIT} bytes")
                    continue
                if parts:
                    chunk = b"".join(parts) + chunk
                lines = chunk.split(b"\n")
                rest = lines.pop()
                parts, size = ([rest], len(rest)) if rest else ([], 0)
                for line in lines:
                    if line.strip():
                        self._dispatch(json.loads(line))
        except Exception as e:  # a line over the limit, not JSON: the stream is not the protocol
            failure = f"the client could not read toolrt's output ({type(e).__name__}: {e})"
            self._proc.kill()
        await self._ended(failure)

    async def _ended(self, failure: str) -> None:
        assert self._proc is not None
        rc = await self._proc.wait()
        if self._stderr_task is not None:
            await self._stderr_task
        tail = "\n".join(self._stderr)
        why = failure or f"toolrt exited with status {rc}"
        if self._hello is not None and not self._hello.done():
            self._hello.set_exception(StartError(tail or why))
        closed = SessionClosed(
            f"{why} before this call's result came" + (f"; its stderr ends: {tail}" if tail else ""),
            rc,
            tail,
        )
        self._closed = closed
        pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                _fail(fut, closed)
        if self._register_waiter is not None and not self._register_waiter.done():
            self._register_waiter.set_exception(closed)
        for stream in list(self._streams):
            stream.close()

    def _emit(self, kind: str, msg: Dict[str, JSON]) -> None:
        if self._streams:
            event = Event(kind, msg)
            for stream in self._streams:
                stream._put(event)

    def _dispatch(self, msg: Dict[str, JSON]) -> None:
        kind = msg.get("type")
        if kind == "tool_result":
            self._resolve(msg)
        elif kind == "event":
            if msg.get("event") == "tools_changed":
                waiter = self._register_waiter
                if waiter is not None and not waiter.done():
                    waiter.set_result(msg)
            self._emit(str(msg.get("event")), msg)
            return
        elif kind == "permission_request":
            if self._permission is not None:
                self._spawn(self._answer_permission(msg))
        elif kind == "execute":
            task = asyncio.create_task(self._execute(msg))
            self._executing[str(msg.get("request_id"))] = task
        elif kind == "execute_cancel":
            task = self._executing.pop(str(msg.get("request_id")), None)
            if task is not None:
                task.cancel()
        elif kind == "error":
            self._refuse(msg)
        elif kind == "hello":
            if self._hello is not None and not self._hello.done():
                self._hello.set_result(msg)
            return
        self._emit(str(kind), msg)

    def _resolve(self, msg: Dict[str, JSON]) -> None:
        call_id = msg.get("tool_use_id")
        fut = self._pending.pop(call_id, None)  # type: ignore[arg-type]
        if fut is None:
            return
        self._forget(call_id)  # type: ignore[arg-type]
        fut.set_result(ToolResult.from_line(msg, self._names.pop(call_id, None)))  # type: ignore[arg-type]

    def _forget(self, call_id: str) -> None:
        line = self._line_of.pop(call_id, None)
        if line is None:
            return
        entry = self._lines.get(line)
        if entry is not None:
            entry.ids.remove(call_id)
            if not entry.ids and entry.waiter is None:
                del self._lines[line]

    def _refuse(self, msg: Dict[str, JSON]) -> None:
        """An `error` line about a line the client sent refuses what that line asked."""
        entry = self._lines.get(msg.get("line"))  # type: ignore[arg-type]
        if entry is None:
            return
        if entry.waiter is not None:
            if not entry.waiter.done():
                entry.waiter.set_exception(RegistrationError.from_line(msg))
            return
        named = msg.get("ids") or list(entry.ids)
        error = CallRefused.from_line(msg)
        for call_id in [i for i in named if i in entry.ids]:
            fut = self._pending.pop(call_id, None)
            self._names.pop(call_id, None)
            self._forget(call_id)
            if fut is not None and not fut.done():
                _fail(fut, error)

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)

    async def _answer_permission(self, msg: Dict[str, JSON]) -> None:
        request = PermissionRequest(
            request_id=str(msg["request_id"]),
            tool_use_id=str(msg.get("tool_use_id", "")),
            tool_name=str(msg.get("tool_name", "")),
            input=msg.get("input"),
            reason=str(msg.get("reason", "")),
            agent_id=msg.get("agent_id"),  # type: ignore[arg-type]
        )
        assert self._permission is not None
        try:
            answer = self._permission(request)
            if inspect.isawaitable(answer):
                answer = await answer
            decision = _decision(answer)  # type: ignore[arg-type]
        except asyncio.CancelledError:
            raise
        except Exception as e:  # fail closed, and say why
            decision = PermissionDecision.deny(
                f"the client's permission callback failed ({type(e).__name__}: {e}): denied"
            )
        self.respond(request.request_id, decision)

    async def _execute(self, msg: Dict[str, JSON]) -> None:
        request_id = str(msg.get("request_id"))
        name = str(msg.get("name"))
        fn = self._tools.get(name)
        args = msg.get("input")
        try:
            if fn is None and name == "Agent" and self._agent is not None:
                out = output_of(await _call(self._agent, _agent_task(request_id, msg)))
            elif fn is None and name == "Agent":
                out = ToolOutput("this client runs no subagents (Session has no `agent` handler)", True)
            elif fn is None:
                out = ToolOutput(f"no Python function is registered for {name} in this client", True)
            else:
                kwargs = args if isinstance(args, dict) else {"input": args}
                out = output_of(await _call(fn, **kwargs))
        except asyncio.CancelledError:
            self._executing.pop(request_id, None)
            return  # toolrt sent execute_cancel (or the session ended): nobody waits
        except Exception as e:
            out = ToolOutput(f"{name} raised {type(e).__name__}: {e}", True)
        self._executing.pop(request_id, None)
        answer: Dict[str, JSON] = {
            "type": "execute_result",
            "request_id": request_id,
            "content": out.content if isinstance(out.content, str) else list(out.content),
        }
        if out.is_error:
            answer["is_error"] = True
        self._send_quiet(answer)


def _fail(fut: "asyncio.Future[Any]", error: BaseException) -> None:
    fut.set_exception(error)
    # A refused call nobody awaits should not log "exception was never retrieved".
    fut.exception()


def _input_error_result(call: Call) -> ToolResult:
    return ToolResult(
        id=str(call.id),
        content=f"Invalid input for {call.name} (call {call.id}): {call.input_error}",
        is_error=True,
        outcome="schema_error",
        name=call.name,
    )


__all__ = ["Session", "Batch", "EventStream", "PermissionCallback", "ToolrtError"]


async def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Calls a user's callback: an async one on the loop, any other in a worker thread (so it
    may block, or use a `SyncSession`); an awaitable it returns is awaited."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args, **kwargs)
    value = await asyncio.to_thread(fn, *args, **kwargs)
    if inspect.isawaitable(value):
        value = await value
    return value


def _agent_task(request_id: str, msg: Dict[str, JSON]) -> AgentTask:
    args = msg.get("input")
    fields = args if isinstance(args, dict) else {}
    return AgentTask(
        request_id=request_id,
        tool_use_id=str(msg.get("tool_use_id", "")),
        agent_id=msg.get("agent_id"),  # type: ignore[arg-type]
        description=str(fields.get("description", "")),
        prompt=str(fields.get("prompt", "")),
        subagent_type=str(fields.get("subagent_type", "")),
        input=args,
    )
