#!/usr/bin/env python3
"""A test orchestrator for toolrt's agent scopes, in the standard library only.

Run by tests/agents_orchestrator.rs as `python3 agents_orchestrator.py TOOLRT WORKDIR`.

It drives `toolrt serve` the way a multi-agent runner would: it registers two client tools
(Lookup, Notes), then the session's own turn calls the Agent tool three times in one batch
(researcher, writer, helper: three subagents in parallel). Each subagent's turn is a batch sent
with its agent_id; the researcher's turn delegates again (a nested helper, two levels deep).
The orchestrator runs the client tools (checking each `execute` carries the calling agent's
id) and answers each Agent `execute` with the subagent's final text once its turn is done.

It checks: narrowed rules hold (a call the parent denies is denied in the child; an allow only
the child declares does not apply; a tool outside the type's tools is unavailable), every call
id gets exactly one result (with its agent_id), and hooks saw agent_id and agent_type. Then, on
a second toolrt, cancelling the top Agent call of a two-level tree ends the whole subtree
(`check_cancel_tree`): a running `sleep` in the grandchild scope is killed and every call is
answered once.
Exit status 0 when every check holds; otherwise the failures on stderr.
"""

import json
import os
import queue
import subprocess
import sys
import threading
import time

TIMEOUT = 60.0


def main():
    toolrt, work = sys.argv[1], sys.argv[2]
    cwd = os.path.join(work, "proj")
    os.makedirs(cwd, exist_ok=True)
    hook_log = os.path.join(work, "hooks.jsonl")
    settings = {
        "permissions": {
            "allow": ["Lookup", "Notes", "Bash(echo *)"],
            "deny": ["Bash(rm *)"],
        },
        "agents": {
            "researcher": {
                "tools": ["Lookup", "Bash", "Agent"],
                "permissions": {"allow": ["Bash(echo *)", "Lookup"]},
            },
            # touch is allowed only here: its parent (the session) does not allow it.
            "writer": {
                "tools": ["Notes", "Bash"],
                "permissions": {"allow": ["Bash(touch *)", "Bash(echo *)", "Notes"]},
            },
            "helper": {"tools": ["Lookup", "Bash"]},
        },
        "hooks": {
            "PreToolUse": [{"hooks": [{"type": "command", "command": f"cat >> '{hook_log}'; echo >> '{hook_log}'"}]}],
            "SubagentStart": [{"hooks": [{"type": "command", "command": f"cat >> '{hook_log}'; echo >> '{hook_log}'"}]}],
        },
    }
    settings_path = os.path.join(work, "settings.json")
    with open(settings_path, "w") as f:
        json.dump(settings, f)
    o = Orchestrator(toolrt, cwd, settings_path, os.path.join(work, "out"))
    try:
        o.run()
    finally:
        o.close()
    failures = list(o.failures)
    failures += check_hooks(hook_log, o.agent_types)
    failures += check_cancel_tree(toolrt, work)
    if failures:
        for f in failures:
            print("FAIL:", f, file=sys.stderr)
        sys.exit(1)
    print(f"ok: {len(o.results)} results, {len(o.agent_types)} subagents")


class Orchestrator:
    def __init__(self, toolrt, cwd, settings, out):
        self.proc = subprocess.Popen(
            [toolrt, "serve", "--cwd", cwd, "--output-dir", out, "--settings", settings,
             "--permission-prompt", "none"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1,
        )
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.results = {}          # tool_use_id -> [results]
        self.expected = {}         # tool_use_id -> (outcome, agent_id or None)
        self.failures = []
        self.agent_types = {}      # agent_id -> type, from Agent executes
        self.pending_agents = {}   # agent_id -> (request_id, final text), answered when its turn ends
        self.turn_of = {}          # batch id -> agent_id whose turn it is
        self.done_batches = set()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def send(self, msg):
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def fail(self, what):
        self.failures.append(what)

    def expect(self, call_id, outcome, agent):
        self.expected[call_id] = (outcome, agent)

    def run(self):
        self.send({"type": "register_tools", "tools": [
            {"name": "Lookup", "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}, "read_only": True},
            {"name": "Notes", "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
        ]})
        self.wait(lambda m: m.get("event") == "tools_changed", "tools_changed")
        # The session's turn: three subagents at once.
        calls = []
        for n, ty in enumerate(["researcher", "writer", "helper"]):
            cid = f"top-{ty}"
            calls.append({"id": cid, "name": "Agent", "input": {"description": f"{ty} task", "prompt": f"do the {ty} part", "subagent_type": ty}})
            self.expect(cid, "success", None)
        self.send({"type": "batch", "id": "top", "calls": calls})
        deadline = time.time() + TIMEOUT
        while not self.all_answered():
            if time.time() > deadline:
                self.fail(f"timed out; missing results: {sorted(set(self.expected) - set(self.results))}")
                return
            msg = self.lines.get(timeout=TIMEOUT)
            if msg is None:
                self.fail("toolrt closed its output early")
                return
            self.handle(msg)
        self.check_results()

    def wait(self, pred, what):
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:
            msg = self.lines.get(timeout=TIMEOUT)
            if msg is None:
                break
            if pred(msg):
                return msg
            self.handle(msg)
        self.fail(f"never saw {what}")

    def all_answered(self):
        return all(k in self.results for k in self.expected)

    def handle(self, msg):
        kind = msg.get("type")
        if kind == "tool_result":
            self.results.setdefault(msg["tool_use_id"], []).append(msg)
        elif kind == "execute":
            self.execute(msg)
        elif kind == "event" and msg.get("event") == "batch_end":
            self.batch_ended(msg["batch"])
        elif kind == "error":
            self.fail(f"error line: {msg}")

    def execute(self, msg):
        name, agent = msg["name"], msg.get("agent_id")
        if name == "Agent":
            if not agent:
                self.fail(f"an Agent execute without agent_id: {msg}")
                return
            ty = msg["input"]["subagent_type"]
            self.agent_types[agent] = ty
            self.pending_agents[agent] = msg["request_id"]
            self.start_turn(agent, ty)
            return
        # A client tool: it must say whose call it is.
        want = self.calls_agent.get(msg["tool_use_id"]) if hasattr(self, "calls_agent") else None
        if agent != want:
            self.fail(f"execute of {msg['tool_use_id']} carries agent_id {agent!r}, expected {want!r}")
        self.send({"type": "execute_result", "request_id": msg["request_id"], "content": f"{name} ran for {agent}"})

    def turn(self, agent, calls):
        """Sends one agent's turn as a batch with its agent_id."""
        if not hasattr(self, "calls_agent"):
            self.calls_agent = {}
        batch = f"turn-{agent}"
        self.turn_of[batch] = agent
        for c in calls:
            self.calls_agent[c["id"]] = agent
        self.send({"type": "batch", "id": batch, "agent_id": agent, "calls": calls})

    def start_turn(self, agent, ty):
        p = agent  # call ids are prefixed by the agent id, so they are unique
        if ty == "researcher":
            calls = [
                {"id": f"{p}-lookup", "name": "Lookup", "input": {"q": "scopes"}},
                {"id": f"{p}-echo", "name": "Bash", "input": {"command": "echo researching"}},
                {"id": f"{p}-nested", "name": "Agent", "input": {"description": "nested", "prompt": "help", "subagent_type": "helper"}},
            ]
            self.expect(f"{p}-lookup", "success", agent)
            self.expect(f"{p}-echo", "success", agent)
            self.expect(f"{p}-nested", "success", agent)
        elif ty == "writer":
            calls = [
                {"id": f"{p}-notes", "name": "Notes", "input": {"text": "draft"}},
                # Allowed only by the writer's own rules, not by its parent's: asks, and with
                # nobody to ask that is a denial.
                {"id": f"{p}-touch", "name": "Bash", "input": {"command": "touch made-by-writer"}},
                # Denied by the session: denied in the child too.
                {"id": f"{p}-rm", "name": "Bash", "input": {"command": "rm -rf somewhere"}},
                # Not among the writer's tools.
                {"id": f"{p}-lookup", "name": "Lookup", "input": {"q": "x"}},
            ]
            self.expect(f"{p}-notes", "success", agent)
            self.expect(f"{p}-touch", "denied", agent)
            self.expect(f"{p}-rm", "denied", agent)
            self.expect(f"{p}-lookup", "unavailable", agent)
        else:  # helper, top-level or nested under the researcher
            calls = [
                {"id": f"{p}-lookup", "name": "Lookup", "input": {"q": "help"}},
                {"id": f"{p}-rm", "name": "Bash", "input": {"command": "rm -f x"}},
                {"id": f"{p}-notes", "name": "Notes", "input": {"text": "no"}},
                {"id": f"{p}-echo", "name": "Bash", "input": {"command": "echo helping"}},
            ]
            self.expect(f"{p}-lookup", "success", agent)
            self.expect(f"{p}-rm", "denied", agent)
            self.expect(f"{p}-notes", "unavailable", agent)
            self.expect(f"{p}-echo", "success", agent)
        self.turn(agent, calls)

    def batch_ended(self, batch):
        agent = self.turn_of.get(batch)
        if agent is None or batch in self.done_batches:
            return
        self.done_batches.add(batch)
        request = self.pending_agents.pop(agent, None)
        if request is not None:
            self.send({"type": "execute_result", "request_id": request, "content": f"{self.agent_types[agent]} {agent} is done"})

    def check_results(self):
        for cid, (outcome, agent) in self.expected.items():
            got = self.results.get(cid, [])
            if len(got) != 1:
                self.fail(f"{cid}: {len(got)} results, expected exactly one")
                continue
            r = got[0]
            if r["outcome"] != outcome:
                self.fail(f"{cid}: outcome {r['outcome']} ({r['content'][:200]!r}), expected {outcome}")
            if r.get("agent_id") != agent:
                self.fail(f"{cid}: result agent_id {r.get('agent_id')!r}, expected {agent!r}")
        for cid in self.results:
            if cid not in self.expected:
                self.fail(f"{cid}: a result nobody expected")
        nested = [a for a, t in self.agent_types.items() if t == "helper"]
        if len(self.agent_types) != 4 or len(nested) != 2:
            self.fail(f"expected 4 subagents (two helpers, one nested), got {self.agent_types}")

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.fail("toolrt did not exit after its input closed")
        if self.proc.returncode not in (0, None):
            self.fail(f"toolrt exited with {self.proc.returncode}: {self.proc.stderr.read()[-2000:]}")


def check_cancel_tree(toolrt, work):
    """Cancels the top Agent call of a two-level tree and checks the whole subtree ends.

    The session's Agent call opens a lead; the lead's turn delegates to a helper (a grandchild
    scope) and waits on a Lookup; the helper's turn runs a `sleep` and waits on a Lookup. After
    `cancel` of the top call, every one of those calls has exactly one result, `cancelled`; both
    Lookups got an `execute_cancel`; the sleep's process is gone; `agent_ended` lists the helper
    and the lead; and a later call naming the helper is denied. Returns the failures.
    """
    cwd = os.path.join(work, "cancel-tree")
    os.makedirs(cwd, exist_ok=True)
    settings = os.path.join(work, "cancel-settings.json")
    with open(settings, "w") as f:
        json.dump({"agents": {"lead": {"tools": ["Agent", "Lookup", "Bash"]},
                              "helper": {"tools": ["Lookup", "Bash"]}}}, f)
    proc = subprocess.Popen(
        [toolrt, "serve", "--cwd", cwd, "--output-dir", os.path.join(work, "cancel-out"),
         "--settings", settings, "--permission-mode", "bypassPermissions"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, bufsize=1,
    )
    lines = queue.Queue()

    def read():
        for line in proc.stdout:
            lines.put(json.loads(line))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen = []
    failures = []

    def send(msg):
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()

    def wait(pred, what):
        for m in seen:
            if pred(m):
                return m
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:
            m = lines.get(timeout=TIMEOUT)
            if m is None:
                break
            seen.append(m)
            if pred(m):
                return m
        raise AssertionError(f"never saw {what}; seen: {seen[-20:]}")

    def execute_of(call_id):
        return wait(lambda m: m.get("type") == "execute" and m.get("tool_use_id") == call_id,
                    f"the execute of {call_id}")

    def result_of(call_id):
        return wait(lambda m: m.get("type") == "tool_result" and m.get("tool_use_id") == call_id,
                    f"the result of {call_id}")

    try:
        send({"type": "register_tools", "tools": [
            {"name": "Lookup", "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}, "read_only": True}]})
        wait(lambda m: m.get("event") == "tools_changed", "tools_changed")
        send({"type": "tool_use", "id": "top", "name": "Agent",
              "input": {"description": "lead", "prompt": "lead it", "subagent_type": "lead"}})
        lead = execute_of("top")["agent_id"]
        send({"type": "batch", "id": "turn-lead", "agent_id": lead, "calls": [
            {"id": "lead-nested", "name": "Agent", "input": {"description": "helper", "prompt": "help", "subagent_type": "helper"}},
            {"id": "lead-look", "name": "Lookup", "input": {"q": "x"}},
        ]})
        helper = execute_of("lead-nested")["agent_id"]
        look_requests = [execute_of("lead-look")["request_id"]]
        pid_file = os.path.join(cwd, "sleep.pid")
        # Two turns: in one batch the Lookup would wait for the (exclusive) Bash call.
        send({"type": "batch", "id": "turn-helper", "agent_id": helper, "calls": [
            {"id": "helper-sleep", "name": "Bash", "input": {"command": "sleep 60 & echo $! > sleep.tmp; mv sleep.tmp sleep.pid; wait"}},
        ]})
        send({"type": "tool_use", "id": "helper-look", "name": "Lookup", "input": {"q": "y"}, "agent_id": helper})
        look_requests.append(execute_of("helper-look")["request_id"])
        deadline = time.time() + TIMEOUT
        while not os.path.exists(pid_file):
            if time.time() > deadline:
                raise AssertionError("the helper's sleep never started")
            time.sleep(0.01)
        with open(pid_file) as f:
            pid = int(f.read().strip())

        send({"type": "cancel", "id": "top"})
        ids = ["top", "lead-nested", "lead-look", "helper-sleep", "helper-look"]
        for cid in ids:
            r = result_of(cid)
            if r["outcome"] != "cancelled":
                failures.append(f"cancel tree: {cid} ended {r['outcome']}, expected cancelled")
        for rid in look_requests:
            wait(lambda m, rid=rid: m.get("type") == "execute_cancel" and m.get("request_id") == rid,
                 f"execute_cancel of {rid}")
        ended = wait(lambda m: m.get("event") == "agent_ended" and m.get("agent_id") == lead,
                     "agent_ended of the lead")
        if ended.get("ended") != [helper, lead]:
            failures.append(f"cancel tree: agent_ended lists {ended.get('ended')}, expected {[helper, lead]}")
        if not process_gone_within(pid, 5.0):
            failures.append(f"cancel tree: the grandchild's sleep (pid {pid}) survived")
        send({"type": "tool_use", "id": "late", "name": "Bash", "input": {"command": "echo late"}, "agent_id": helper})
        if result_of("late")["outcome"] != "denied":
            failures.append("cancel tree: a call naming the ended helper was not denied")
        proc.stdin.close()
        while True:
            m = lines.get(timeout=TIMEOUT)
            if m is None:
                break
            seen.append(m)
        for cid in ids + ["late"]:
            n = sum(1 for m in seen if m.get("type") == "tool_result" and m.get("tool_use_id") == cid)
            if n != 1:
                failures.append(f"cancel tree: {cid} had {n} results, expected exactly one")
        if proc.wait(timeout=30) != 0:
            failures.append(f"cancel tree: toolrt exited with {proc.returncode}")
    except (AssertionError, queue.Empty) as e:
        failures.append(f"cancel tree: {e}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return failures


def process_gone_within(pid, limit):
    """Whether /proc/PID is gone (or a zombie) within `limit` seconds: a kill lands asynchronously."""
    deadline = time.time() + limit
    while True:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if state in ("Z", "X"):
                return True
        except (OSError, IndexError):
            return True
        if time.time() > deadline:
            return False
        time.sleep(0.01)


def check_hooks(path, agent_types):
    failures = []
    deadline = time.time() + 10
    seen = []
    while time.time() < deadline:
        try:
            with open(path) as f:
                seen = [json.loads(l) for l in f if l.strip()]
        except (OSError, ValueError):
            seen = []
        starts = {e.get("agent_id") for e in seen if e.get("hook_event_name") == "SubagentStart"}
        if starts >= set(agent_types):
            break
        time.sleep(0.05)
    scoped = [e for e in seen if e.get("hook_event_name") == "PreToolUse" and e.get("agent_id")]
    if not scoped:
        failures.append("no PreToolUse hook saw an agent_id")
    for e in scoped:
        if agent_types.get(e["agent_id"]) != e.get("agent_type"):
            failures.append(f"PreToolUse hook saw agent {e['agent_id']!r} as type {e.get('agent_type')!r}")
    starts = {e.get("agent_id"): e.get("agent_type") for e in seen if e.get("hook_event_name") == "SubagentStart"}
    if starts != agent_types:
        failures.append(f"SubagentStart hooks saw {starts}, expected {agent_types}")
    return failures


if __name__ == "__main__":
    main()
