"""`SyncSession`: the same session for scripts that do not use asyncio."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable, Coroutine, Iterable, List, Optional, TypeVar

from ._session import Session
from ._types import CallLike, ToolResult

T = TypeVar("T")


class SyncSession:
    """A `Session` run on an event loop in a background thread, with blocking methods.

    ```
    with toolrt.SyncSession(allowed_tools=["Read"]) as session:
        results = session.run([{"name": "Read", "input": {"file_path": "README.md"}}])
    ```

    Takes `Session`'s arguments. Callbacks (the permission callback, async tool functions) run
    on that background thread's loop; sync tool functions run in a worker thread.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="toolrt", daemon=True)
        self._thread.start()
        self.session = Session(**kwargs)
        """The asyncio session underneath."""
        try:
            self._call(self.session.start())
        except BaseException:
            self._stop()
            raise

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def __enter__(self) -> "SyncSession":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close(cancel=exc_type is not None)

    @property
    def tools(self) -> List[str]:
        """The tools that existed at start, from toolrt's `hello`."""
        return self.session.tools

    def run(self, calls: Iterable[CallLike], *, agent_id: Optional[str] = None) -> List[ToolResult]:
        """`Session.run`, blocking."""
        calls = list(calls)
        return self._call(self.session.run(calls, agent_id=agent_id))

    def cancel(self, call_id: Optional[str] = None, *, batch: Optional[str] = None) -> None:
        """`Session.cancel`."""

        async def cancel() -> None:
            self.session.cancel(call_id, batch=batch)

        self._call(cancel())

    def register_tool(self, fn: Callable[..., Any], **kwargs: Any) -> List[str]:
        """`Session.register_tool`, blocking."""
        return self._call(self.session.register_tool(fn, **kwargs))

    def unregister_tool(self, name: str) -> None:
        """`Session.unregister_tool`, blocking."""
        self._call(self.session.unregister_tool(name))

    def close(self, *, cancel: bool = False) -> None:
        """`Session.close`, then stops the background loop."""
        if self._loop.is_closed():
            return
        try:
            self._call(self.session.close(cancel=cancel))
        finally:
            self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


__all__ = ["SyncSession"]
