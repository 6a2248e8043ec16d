"""The example agent loops, end to end: each runs as its own process with the real `anthropic` /
`openai` SDK talking to a loopback stub of the model API, which answers with scripted tool
calls and records every request; the test then checks the request the SDK sent next carries
toolrt's results — ids, order, errors, content."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import BIN, REPO


class Stub:
    """A model API on 127.0.0.1: each POST gets the next scripted JSON reply; the request
    bodies are kept in `requests`, as (path, body)."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append((self.path, body))
                reply = stub.replies.pop(0) if stub.replies else {"error": {"message": "no more replies"}}
                data = json.dumps(reply).encode()
                self.send_response(500 if "error" in reply else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def run_example(script, work, env, *args):
    """Runs an example as the README says, from a workspace, with no terminal on stdin."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLRT_", "OPENAI_", "ANTHROPIC_"))}
    base.update(env, TOOLRT_BIN=str(BIN), HOME=str(work), NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
    return subprocess.run(
        [sys.executable, str(REPO / "examples" / "python" / script), *args],
        cwd=work,
        env=base,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def converse(stub, script, work, env, answer, *args):
    """Runs the example against `stub`, checks it printed `answer` and exited 0, and returns
    the two requests it sent: (path, body) each."""
    try:
        out = run_example(script, work, env, *args)
    finally:
        stub.close()
    assert out.returncode == 0, out.stderr
    assert out.stdout == answer + "\n"
    first, second = stub.requests
    return first, second, out.stderr


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    (tmp_path / "todo.txt").write_text("ship it\n")
    return tmp_path


def anthropic_reply(content, stop_reason):
    return {
        "id": "msg_stub",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def test_anthropic_loop_sends_toolrts_results_back_in_order(workspace):
    stub = Stub(
        [
            anthropic_reply(
                [
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "toolu_a", "name": "Read", "input": {"file_path": "notes.txt"}},
                    {"type": "tool_use", "id": "toolu_b", "name": "Glob", "input": {"pattern": "*.txt"}},
                    {"type": "tool_use", "id": "toolu_c", "name": "Bash", "input": {"command": "rm -f todo.txt"}},
                    {"type": "tool_use", "id": "toolu_d", "name": "Fly", "input": {}},
                ],
                "tool_use",
            ),
            anthropic_reply([{"type": "text", "text": "Two notes, and I may not delete."}], "end_turn"),
        ]
    )
    env = {"ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_API_KEY": "test"}
    answer = "Two notes, and I may not delete."
    (path1, first), (path2, second), log = converse(stub, "anthropic_loop.py", workspace, env, answer, "count")
    assert "[toolu_c] Bash" in log and "-> denied" in log
    assert (workspace / "todo.txt").exists()
    assert path1 == path2 == "/v1/messages"
    # toolrt's own definitions, in a request the SDK built and sent.
    assert sorted(t["name"] for t in first["tools"]) == ["Bash", "Glob", "Read"]
    assert all(t["input_schema"]["type"] == "object" for t in first["tools"])
    assistant, reply = second["messages"][1:]
    assert assistant["role"] == "assistant" and [b["type"] for b in assistant["content"]][0] == "text"
    assert reply["role"] == "user"
    blocks = reply["content"]
    assert [b["type"] for b in blocks] == ["tool_result"] * 4
    assert [b["tool_use_id"] for b in blocks] == ["toolu_a", "toolu_b", "toolu_c", "toolu_d"]
    assert [b["is_error"] for b in blocks] == [False, False, True, True]
    assert "alpha" in blocks[0]["content"] and "beta" in blocks[0]["content"]
    assert "notes.txt" in blocks[1]["content"] and "todo.txt" in blocks[1]["content"]
    assert "nobody is at the terminal to approve it" in blocks[2]["content"]
    assert "No such tool available: Fly" in blocks[3]["content"]


def chat_reply(message, finish_reason):
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 1741570283,
        "model": "gpt-4.1",
        "choices": [{"index": 0, "finish_reason": finish_reason, "logprobs": None, "message": message}],
    }


def test_openai_chat_loop_sends_tool_messages_keyed_by_call_id(workspace):
    calls = [
        ("call_1", "Read", '{"file_path": "todo.txt"}'),
        ("call_2", "Read", '{"file_path": "notes.txt", '),
        ("call_3", "Bash", '{"command": "touch new.txt"}'),
        ("call_4", "Glob", '{"pattern": "*.txt"}'),
    ]
    stub = Stub(
        [
            chat_reply(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls
                    ],
                },
                "tool_calls",
            ),
            chat_reply({"role": "assistant", "content": "Ship it."}, "stop"),
        ]
    )
    env = {"OPENAI_BASE_URL": stub.url + "/v1", "OPENAI_API_KEY": "test"}
    (path1, first), (_, second), _ = converse(stub, "openai_loop.py", workspace, env, "Ship it.", "what now?")
    assert path1 == "/v1/chat/completions"
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["Bash", "Glob", "Read"]
    assistant, *tool_messages = second["messages"][1:]
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_1", "call_2", "call_3", "call_4"]
    assert [m["role"] for m in tool_messages] == ["tool"] * 4
    assert [m["tool_call_id"] for m in tool_messages] == ["call_1", "call_2", "call_3", "call_4"]
    ok, bad, denied, listed = (m["content"] for m in tool_messages)
    assert "ship it" in ok and not ok.startswith("Error")
    assert bad.startswith("Error: Invalid input for Read (call call_2): the arguments are not valid JSON")
    assert denied.startswith("Error: ") and "Bash" in denied
    assert not (workspace / "new.txt").exists()
    assert "notes.txt" in listed


def test_openai_responses_loop_sends_function_call_outputs_keyed_by_call_id(workspace):
    function_calls = [
        {"type": "function_call", "id": "fc_1", "call_id": "call_x", "name": "Glob", "arguments": '{"pattern": "n*", "path": null}', "status": "completed"},
        {"type": "function_call", "id": "fc_2", "call_id": "call_y", "name": "Nope", "arguments": "{}", "status": "completed"},
    ]

    def response(output):
        return {
            "id": "resp_stub",
            "object": "response",
            "created_at": 1741570283,
            "model": "gpt-4.1",
            "status": "completed",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }

    final = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Found notes.", "annotations": []}],
    }
    stub = Stub([response(function_calls), response([final])])
    env = {"OPENAI_BASE_URL": stub.url + "/v1", "OPENAI_API_KEY": "test"}
    args = ("--responses", "find notes")
    (path1, first), (_, second), _ = converse(stub, "openai_loop.py", workspace, env, "Found notes.", *args)
    assert path1 == "/v1/responses"
    assert sorted(t["name"] for t in first["tools"]) == ["Bash", "Glob", "Read"]
    items = second["input"]
    assert [i.get("call_id") for i in items if i.get("type") == "function_call"] == ["call_x", "call_y"]
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == ["call_x", "call_y"]
    assert "notes.txt" in outputs[0]["output"]
    assert outputs[1]["output"].startswith("Error: No such tool available: Nope")
