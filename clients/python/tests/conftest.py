"""Shared helpers: the real toolrt binary of this checkout, a fresh workspace, and a way to run
an async test on its own event loop with a bound on its time."""

import asyncio
import functools
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
# Cargo's target folder: $CARGO_TARGET_DIR when set (relative to the checkout), else target/.
TARGET = REPO / os.environ.get("CARGO_TARGET_DIR", "target")
BIN = Path(os.environ.get("TOOLRT_BIN") or TARGET / "release" / "toolrt")

if not BIN.is_file():
    raise RuntimeError(f"{BIN} is missing: run `cargo build --release` first")


def aio(fn):
    """Runs an `async def` test with `asyncio.run`, failing it after 60 s instead of hanging."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(asyncio.wait_for(fn(*args, **kwargs), 60))

    return wrapper


@pytest.fixture
def work(tmp_path):
    """A workspace folder with a small file, and the session options every test uses: this
    checkout's binary, the workspace as `--cwd`, and output files in a temporary folder."""
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    return tmp_path


def opts(work, **extra):
    """`Session` keyword arguments for a test in `work`."""
    return dict(binary=BIN, cwd=work, temp_output_dir=True, env=_env(work), **extra)


def _env(work):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLRT_")}
    env["HOME"] = str(work)
    return env
