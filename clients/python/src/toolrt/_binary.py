"""Finding the `toolrt` binary and turning session options into `toolrt serve` flags."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from ._types import BinaryNotFound, ToolrtError

PathLike = Union[str, "os.PathLike[str]"]


def find_binary(binary: Optional[PathLike] = None, start: Optional[PathLike] = None) -> str:
    """The toolrt binary to run: `binary` if given, else `$TOOLRT_BIN`, else `toolrt` on `PATH`,
    else `target/release/toolrt` of the toolrt checkout holding `start` (default: the current
    directory) or one of its parents — `$CARGO_TARGET_DIR/release/toolrt` when cargo's target
    folder is moved (relative to the checkout, as cargo reads it). Raises `BinaryNotFound` naming every place it looked."""
    looked: List[str] = []
    for given, what in ((binary, "binary="), (os.environ.get("TOOLRT_BIN"), "$TOOLRT_BIN")):
        if given:
            path = Path(given)
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
            raise BinaryNotFound(f"{what} {str(path)!r} is not an executable file")
    on_path = shutil.which("toolrt")
    if on_path:
        return on_path
    looked.append("`toolrt` on PATH")
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        manifest = folder / "Cargo.toml"
        candidate = folder / os.environ.get("CARGO_TARGET_DIR", "target") / "release" / "toolrt"
        if manifest.is_file() and 'name = "toolrt"' in manifest.read_text(errors="replace"):
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
            looked.append(f"{candidate} (run `cargo build --release` there)")
            break
    else:
        looked.append("a toolrt checkout's target/release/toolrt above the current directory")
    raise BinaryNotFound(
        "no toolrt binary found: pass binary=, set TOOLRT_BIN, or put toolrt on PATH; looked at "
        + "; ".join(looked)
    )


def serve_args(
    *,
    settings: Sequence[PathLike] = (),
    tools: Optional[Union[str, Sequence[str]]] = None,
    allowed_tools: Sequence[str] = (),
    disallowed_tools: Sequence[str] = (),
    permission_mode: Optional[str] = None,
    cwd: Optional[PathLike] = None,
    max_in_flight: Optional[int] = None,
    max_queued: Optional[int] = None,
    max_parked: Optional[int] = None,
    max_parallel: Optional[int] = None,
    output_dir: Optional[PathLike] = None,
    temp_output_dir: bool = False,
    permission_prompt: Optional[str] = None,
    strict_settings: bool = False,
    plugin_dirs: Sequence[PathLike] = (),
    session_id: Optional[str] = None,
    transcript_path: Optional[PathLike] = None,
    mcp_config: Sequence[PathLike] = (),
    strict_mcp_config: bool = False,
) -> List[str]:
    """The `toolrt serve` command-line flags for these options (docs/PROTOCOL.md "Starting the
    server"); each keyword is the flag's name with `_` for `-`, lists for repeatable flags."""
    args: List[str] = []

    def flag(name: str, value: object) -> None:
        if value is not None:
            args.extend([name, os.fspath(value) if isinstance(value, os.PathLike) else str(value)])

    for f in settings:
        flag("--settings", f)
    if tools is not None:
        flag("--tools", tools if isinstance(tools, str) else ",".join(tools))
    for rule in allowed_tools:
        flag("--allowed-tools", rule)
    for rule in disallowed_tools:
        flag("--disallowed-tools", rule)
    flag("--permission-mode", permission_mode)
    flag("--cwd", cwd)
    flag("--max-in-flight", max_in_flight)
    flag("--max-queued", max_queued)
    flag("--max-parked", max_parked)
    flag("--max-parallel", max_parallel)
    flag("--output-dir", output_dir)
    if temp_output_dir:
        args.append("--temp-output-dir")
    flag("--permission-prompt", permission_prompt)
    if strict_settings:
        args.append("--strict-settings")
    for d in plugin_dirs:
        flag("--plugin-dir", d)
    flag("--session-id", session_id)
    flag("--transcript-path", transcript_path)
    for f in mcp_config:
        flag("--mcp-config", f)
    if strict_mcp_config:
        args.append("--strict-mcp-config")
    return args


def tool_definitions(
    format: str = "anthropic", *, binary: Optional[PathLike] = None, **options: Any
) -> List[Dict[str, Any]]:
    """The tools a session with these options would have, as the model API's tool-definition
    list: `format` is `anthropic`, `openai-chat`, `openai-responses` or `native`; `options` are
    `Session`'s (`tools=`, `settings=`, `disallowed_tools=`, `mcp_config=`, …). Runs `toolrt
    tools --format FORMAT`; raises `ToolrtError` with toolrt's stderr if it fails."""
    args = [find_binary(binary), "tools", "--format", format, *serve_args(**options)]
    done = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode != 0:
        raise ToolrtError(done.stderr.strip() or f"toolrt tools exited with status {done.returncode}")
    definitions: List[Dict[str, Any]] = json.loads(done.stdout)
    return definitions
