"""Session against the real toolrt binary: run, submit, events, permission callbacks, cancel,
client tools, refusals and a toolrt that dies."""

import asyncio
import json
import os
import signal
import threading

import pytest

import toolrt
from conftest import BIN, REPO, TARGET, aio, opts


@aio
async def test_run_returns_one_typed_result_per_call_in_call_order(work):
    async with toolrt.Session(**opts(work, allowed_tools=["Read"])) as s:
        assert "Read" in s.tools and s.version
        results = await s.run(
            [
                {"id": "r1", "name": "Read", "input": {"file_path": "notes.txt"}},
                {"name": "Nope", "input": {}},
                {"id": "r3", "name": "Read", "input": {"file_path": 7, "limit": "x"}},
            ]
        )
    assert [r.id for r in results] == ["r1", "py-1", "r3"]
    assert [r.outcome for r in results] == ["success", "unavailable", "schema_error"]
    assert isinstance(results[0], toolrt.ToolResult)
    assert "alpha" in results[0].content and not results[0].is_error
    assert results[1].is_error and "No such tool available: Nope" in results[1].content
    assert "limit" in results[2].content and results[2].name == "Read"


@aio
async def test_submit_returns_at_once_and_events_show_the_batch(work):
    async with toolrt.Session(**opts(work, allowed_tools=["Read"])) as s:
        events = s.events()
        batch = s.submit([toolrt.Call("Read", {"file_path": "notes.txt"}, id=f"c{i}") for i in range(5)])
        assert batch.id and len(batch.futures) == 5
        first = await asyncio.wait_for(asyncio.shield(batch.futures[0]), 30)
        results = await batch
        assert first is results[0]
        kinds = []
        async for event in events:
            kinds.append(event.kind)
            if event.kind == "batch_end":
                assert event.data["ids"] == [f"c{i}" for i in range(5)]
                break
    assert kinds[0] == "batch_start" and kinds.count("tool_result") == 5
    assert all(r.outcome == "success" for r in results)


@aio
async def test_a_reused_id_is_refused_before_sending_and_a_refused_line_raises_its_error(work):
    gate = asyncio.Event()

    async def hold() -> str:
        await gate.wait()
        return "held"

    async with toolrt.Session(**opts(work, allowed_tools=["Hold"])) as s:
        await s.register_tool(hold, name="Hold")
        batch = s.submit([{"id": "same", "name": "Hold"}])
        with pytest.raises(ValueError, match="'same' is already in flight"):
            s.submit([{"id": "same", "name": "Hold"}])
        with pytest.raises(ValueError, match="already in flight"):
            s.submit([{"id": "x", "name": "Read"}, {"id": "x", "name": "Read"}])
        # An id over toolrt's 256-byte limit: toolrt refuses the whole line, in its words.
        with pytest.raises(toolrt.CallRefused, match="256") as refused:
            await s.run([{"id": "i" * 300, "name": "Read", "input": {"file_path": "notes.txt"}}])
        assert refused.value.line == 4  # hello, register_tools, the first batch, this one
        gate.set()
        [held] = await batch
        assert held.content == "held"


@aio
async def test_the_permission_callback_answers_asks_sync_async_rewrite_and_failure(work):
    asked = []

    async def decide(req: toolrt.PermissionRequest):
        asked.append((req.tool_use_id, req.tool_name, req.reason))
        command = req.input["command"]
        if command == "mkdir newdir":
            return toolrt.PermissionDecision.allow({"command": "echo rewritten"})
        if command.startswith("echo"):
            return True
        if command.startswith("touch"):
            return toolrt.PermissionDecision.deny("not in this test")
        raise RuntimeError("boom")

    async with toolrt.Session(**opts(work, permission=decide)) as s:
        results = await s.run(
            [
                {"id": "a", "name": "Bash", "input": {"command": "echo hi > out.txt"}},
                                {"id": "c", "name": "Bash", "input": {"command": "touch made.txt"}},
                {"id": "d", "name": "Bash", "input": {"command": "rm -f notes.txt"}},
            ]
        )
        [rewritten] = await s.run([{"id": "e", "name": "Bash", "input": {"command": "mkdir newdir"}}])
    by_id = {r.id: r for r in results}
    assert by_id["a"].outcome == "success" and (work / "out.txt").read_text() == "hi\n"
    assert by_id["c"].outcome == "denied" and "not in this test" in by_id["c"].content
    assert not (work / "made.txt").exists()
    assert by_id["d"].outcome == "denied"
    assert "permission callback failed (RuntimeError: boom)" in by_id["d"].content
    assert (work / "notes.txt").exists()
    assert rewritten.content == "rewritten\n" and not (work / "newdir").exists()
    assert {a[0] for a in asked} >= {"a", "c", "d", "e"}


@aio
async def test_without_a_callback_every_ask_is_denied(work):
    async with toolrt.Session(**opts(work)) as s:
        [r] = await s.run([{"name": "Write", "input": {"file_path": "w.txt", "content": "x"}}])
    assert r.outcome == "denied" and not (work / "w.txt").exists()


@aio
async def test_cancel_a_call_and_a_batch_stops_the_python_tool(work):
    started = asyncio.Event()
    stopped = []

    async def wait_forever(tag: str) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped.append(tag)
            raise
        return "never"

    async with toolrt.Session(**opts(work, allowed_tools=["Wait"])) as s:
        await s.register_tool(wait_forever, name="Wait", concurrency_safe=True)
        one = s.submit([{"id": "w1", "name": "Wait", "input": {"tag": "one"}}])
        await started.wait()
        s.cancel("w1")
        [r1] = await one
        started.clear()
        two = s.submit([{"id": f"w{i}", "name": "Wait", "input": {"tag": f"b{i}"}} for i in (2, 3)])
        await started.wait()
        two.cancel()
        r2 = await two
    assert r1.outcome == "cancelled" and r1.is_error
    assert [r.outcome for r in r2] == ["cancelled", "cancelled"]
    assert "one" in stopped


@aio
async def test_registered_python_tools_run_sync_async_fail_and_return_images(work):
    threads = []

    def shout(text: str, times: int = 1) -> str:
        """Upper-cases text."""
        threads.append(threading.current_thread().name)
        return " ".join([text.upper()] * times)

    async def broken(reason: str) -> str:
        raise KeyError(reason)

    def picture() -> list:
        return [
            {"type": "text", "text": "a dot"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        ]

    async with toolrt.Session(**opts(work, allowed_tools=["Shout", "Broken", "Picture"])) as s:
        assert await s.register_tool(shout, name="Shout") == ["Shout"]
        await s.register_tool(broken, name="Broken")
        await s.register_tool(picture, name="Picture")
        with pytest.raises(toolrt.RegistrationError, match="already|exists|clash|taken"):
            await s.register_tool(shout, name="Shout")
        results = await s.run(
            [
                {"name": "Shout", "input": {"text": "hi", "times": "2"}},
                {"name": "Shout", "input": {"text": ["not", "a", "string"]}},
                {"name": "Broken", "input": {"reason": "why"}},
                {"name": "Picture"},
            ]
        )
        await s.unregister_tool("Shout")
        [gone] = await s.run([{"name": "Shout", "input": {"text": "x"}}])
    ok, bad, failed, image = results
    assert ok.content == "HI HI" and threads and threads[0] != "MainThread"
    assert bad.outcome == "schema_error" and "text" in bad.content
    assert failed.outcome == "failed" and "Broken raised KeyError: 'why'" in failed.content
    assert image.outcome == "success" and image.content_blocks[1]["type"] == "image"
    assert gone.outcome == "unavailable"


def hanging_tool():
    """A client tool that never returns, and an event set once a call of it has started."""
    started = asyncio.Event()

    async def hang() -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    return started, hang


@aio
async def test_a_toolrt_that_dies_fails_every_pending_call_with_a_clear_error(work):
    started, hang = hanging_tool()
    s = toolrt.Session(**opts(work, allowed_tools=["Hang"]))
    await s.start()
    await s.register_tool(hang, name="Hang")
    batch = s.submit([{"id": "h1", "name": "Hang"}, {"id": "h2", "name": "Hang"}])
    await started.wait()
    os.kill(s.pid, signal.SIGKILL)
    outcomes = await asyncio.gather(*batch.futures, return_exceptions=True)
    assert all(isinstance(o, toolrt.SessionClosed) for o in outcomes), outcomes
    assert "toolrt exited with status -9 before this call's result came" in str(outcomes[0])
    assert outcomes[0].returncode == -9
    with pytest.raises(toolrt.SessionClosed):
        s.submit([{"name": "Read"}])
    await s.close()


@aio
async def test_leaving_the_block_on_an_exception_cancels_what_is_in_flight(work):
    started, hang = hanging_tool()
    with pytest.raises(ZeroDivisionError):
        async with toolrt.Session(**opts(work, allowed_tools=["Hang"])) as s:
            await s.register_tool(hang, name="Hang")
            batch = s.submit([{"id": "h1", "name": "Hang"}])
            await started.wait()
            1 / 0
    [r] = await batch
    assert r.outcome == "cancelled"
    assert s.returncode == 0


@aio
async def test_bad_flags_raise_start_error_with_toolrts_words(work):
    with pytest.raises(toolrt.StartError, match="permission-mode|permission mode") as e:
        async with toolrt.Session(**opts(work, permission_mode="sometimes")):
            pass
    assert "sometimes" in str(e.value)


def test_the_binary_is_found_in_the_given_order(work, monkeypatch):
    with pytest.raises(toolrt.BinaryNotFound, match="binary= '/no/such/toolrt'"):
        toolrt.find_binary("/no/such/toolrt")
    monkeypatch.setenv("TOOLRT_BIN", "/no/such/either")
    with pytest.raises(toolrt.BinaryNotFound, match=r"\$TOOLRT_BIN"):
        toolrt.find_binary()
    assert toolrt.find_binary(BIN) == str(BIN)
    monkeypatch.delenv("TOOLRT_BIN")
    monkeypatch.setenv("PATH", str(work))
    # From inside the checkout: its release binary.
    assert toolrt.find_binary(start=REPO / "clients" / "python") == str(TARGET / "release" / "toolrt")
    with pytest.raises(toolrt.BinaryNotFound, match="`toolrt` on PATH"):
        toolrt.find_binary(start=work)


def test_sync_session_runs_calls_and_python_tools(work):
    def add(a: int, b: int) -> int:
        return a + b

    with toolrt.SyncSession(**opts(work, allowed_tools=["Read", "Add"])) as s:
        s.register_tool(add, name="Add")
        read, added = s.run(
            [{"name": "Read", "input": {"file_path": "notes.txt"}}, {"name": "Add", "input": {"a": 2, "b": "3"}}]
        )
    assert "beta" in read.content
    assert added.content == "5"


@aio
async def test_an_agent_handler_runs_the_subagent_the_agent_tool_delegates(work):
    settings = work / "agents.json"
    settings.write_text(json.dumps({"agents": {"reader": {"tools": ["Read"]}}}))
    tasks = []

    async def run_subagent(task: toolrt.AgentTask) -> str:
        tasks.append(task)
        # The subagent's own calls, in its scope: Read is its tool, Bash is not.
        read, bash = await s.run(
            [
                {"name": "Read", "input": {"file_path": "notes.txt"}},
                {"name": "Bash", "input": {"command": "echo no"}},
            ],
            agent_id=task.agent_id,
        )
        assert read.outcome == "success" and read.agent_id == task.agent_id
        assert bash.outcome == "unavailable"
        return f"read {read.content.count(chr(10))} lines"

    def broken(task: toolrt.AgentTask) -> str:
        raise RuntimeError("no model")

    delegate = {
        "name": "Agent",
        "input": {"description": "look", "prompt": "read the notes", "subagent_type": "reader"},
    }
    async with toolrt.Session(
        **opts(work, settings=[settings], allowed_tools=["Agent", "Read"]), agent=run_subagent
    ) as s:
        [done] = await s.run([delegate])
    async with toolrt.Session(**opts(work, settings=[settings], allowed_tools=["Agent"])) as bare:
        [refused] = await bare.run([delegate])
    async with toolrt.Session(
        **opts(work, settings=[settings], allowed_tools=["Agent"]), agent=broken
    ) as failing:
        [failed] = await failing.run([delegate])
    [task] = tasks
    assert task.subagent_type == "reader" and task.prompt == "read the notes"
    assert task.agent_id and task.tool_use_id
    assert done.outcome == "success" and done.content == "read 2 lines", done
    assert refused.outcome == "failed" and "runs no subagents" in refused.content
    assert failed.outcome == "failed" and "Agent raised RuntimeError: no model" in failed.content
