#!/usr/bin/env python3
"""What the Python client costs: 1,000 no-op calls in batches of 50 through `toolrt.Session`
against the same calls as raw NDJSON on a pipe (json.dumps a batch line, read lines until its
50 results), both against the same toolrt binary, in the same run.

    clients/python/.venv/bin/python clients/python/bench.py [--rounds 7] [--binary PATH]

The no-op call is a Read of a one-line file (allowed by rule, concurrency-safe, so a batch runs
in parallel). Each round times both sides once, in alternating order, after a warm-up batch on
each. Per side: the median and the minimum wall time over the rounds, and the median CPU time
of this Python process (the client's own work: toolrt's is the same on both sides). The ratios
are Session / raw of each. Prints one JSON object.
"""

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import toolrt

CALLS, BATCH = 1000, 50


def batches(folder: Path):
    """The 20 batches of 50 calls, as dicts; ids unique within a batch."""
    call = {"name": "Read", "input": {"file_path": str(folder / "one.txt")}}
    return [[dict(call, id=f"c{b}-{i}") for i in range(BATCH)] for b in range(CALLS // BATCH)]


def raw_round(binary: str, folder: Path) -> tuple:
    proc = subprocess.Popen(
        [binary, "serve", "--allowed-tools", "Read", "--cwd", str(folder), "--temp-output-dir"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin and proc.stdout

    def run(n: int, calls) -> None:
        line = json.dumps({"type": "batch", "id": f"b{n}", "calls": calls}, separators=(",", ":"))
        proc.stdin.write(line.encode() + b"\n")
        proc.stdin.flush()
        seen = 0
        while seen < len(calls):
            msg = json.loads(proc.stdout.readline())
            if msg["type"] == "tool_result":
                assert msg["outcome"] == "success", msg
                seen += 1

    run(-1, batches(folder)[0])  # warm-up
    start, cpu = time.perf_counter(), time.process_time()
    for n, calls in enumerate(batches(folder)):
        run(n, calls)
    elapsed = (time.perf_counter() - start, time.process_time() - cpu)
    proc.stdin.close()
    proc.wait()
    return elapsed


async def session_round(binary: str, folder: Path) -> tuple:
    async with toolrt.Session(binary=binary, allowed_tools=["Read"], cwd=folder, temp_output_dir=True) as s:
        await s.run(batches(folder)[0])  # warm-up
        start, cpu = time.perf_counter(), time.process_time()
        for calls in batches(folder):
            results = await s.run(calls)
            assert all(r.outcome == "success" for r in results)
        return time.perf_counter() - start, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--binary", default=None)
    args = parser.parse_args()
    binary = toolrt.find_binary(args.binary, start=Path(__file__).parent)
    raw, client = [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "one.txt").write_text("x\n")
        for r in range(args.rounds):
            sides = [("raw", raw), ("session", client)]
            for name, out in sides if r % 2 == 0 else reversed(sides):
                out.append(raw_round(binary, folder) if name == "raw" else asyncio.run(session_round(binary, folder)))
    def ms(xs):
        return [round(x * 1000, 1) for x in xs]

    report = {"calls": CALLS, "batch": BATCH, "rounds": args.rounds}
    for name, rounds in (("raw", raw), ("session", client)):
        wall, cpu = [w for w, _ in rounds], [c for _, c in rounds]
        report[f"{name}_median_ms"] = round(statistics.median(wall) * 1000, 1)
        report[f"{name}_min_ms"] = round(min(wall) * 1000, 1)
        report[f"{name}_cpu_median_ms"] = round(statistics.median(cpu) * 1000, 1)
        report[f"{name}_ms"] = ms(wall)
    report["ratio_session_vs_raw"] = round(report["session_median_ms"] / report["raw_median_ms"], 3)
    report["ratio_min_session_vs_raw"] = round(report["session_min_ms"] / report["raw_min_ms"], 3)
    report["ratio_client_cpu_session_vs_raw"] = round(
        report["session_cpu_median_ms"] / report["raw_cpu_median_ms"], 3
    )
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
