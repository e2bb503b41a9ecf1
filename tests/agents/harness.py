"""Running an agent CLI in isolation: its own HOME, no route to the internet, a
timeout, and its output kept for the failure message.

The internet trap is an HTTP proxy that refuses everything and remembers what was
asked of it. Every CLI runs with HTTP(S)_PROXY pointing at it (and NO_PROXY for
127.0.0.1, where todoweb and the fake model listen), so a CLI that tries to reach
the internet anyway (telemetry, updates, feature flags) is caught by name, not
just slowed down by a failing DNS lookup.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path


class InternetTrap:
    """A proxy on a free port that answers 403 to everything and logs each request line."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.attempts: list[str] = []
        self.thread = threading.Thread(target=self.serve, daemon=True)

    def start(self) -> InternetTrap:
        self.thread.start()
        return self

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    line = conn.recv(4096).split(b"\r\n", 1)[0].decode(errors="replace")
                except OSError:
                    line = "(nothing read)"
                self.attempts.append(line)
                try:
                    conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                except OSError:
                    pass

    def stop(self) -> None:
        self.sock.close()

    @property
    def proxy_env(self) -> dict[str, str]:
        local = "127.0.0.1,localhost,::1"
        names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
        return (
            {name: self.url for name in names}
            | {name.lower(): self.url for name in names}
            | {"NO_PROXY": local, "no_proxy": local}
        )


def agent_env(home: Path, trap: InternetTrap) -> dict[str, str]:
    """A minimal environment: nothing of the test process's own (no API keys, no
    proxy, no CI flag), HOME and the XDG folders under `home`, node on PATH."""
    node = shutil.which("node")
    paths = [str(Path(node).parent)] if node else []
    paths += ["/usr/local/bin", "/usr/bin", "/bin"]
    for folder in (".config", ".local/share", ".cache", ".local/state"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    return {
        "PATH": ":".join(dict.fromkeys(paths)),
        "HOME": str(home),
        "USER": "agent",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "TMPDIR": str(home / "tmp"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "DO_NOT_TRACK": "1",
    } | trap.proxy_env


@dataclass
class Run:
    args: list[str]
    returncode: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    seconds: float

    def describe(self) -> str:
        code = "killed at the timeout" if self.returncode is None else f"exit {self.returncode}"
        return (
            f"$ {' '.join(self.args)}\n({code} after {self.seconds:.1f} s)\n"
            f"--- stdout ---\n{self.stdout[-6000:]}\n--- stderr ---\n{self.stderr[-6000:]}"
        )


def run_cli(
    args: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    log_dir: Path,
    name: str,
    timeout: float = 240,
    stdin: str | None = None,
) -> Run:
    """Run a CLI to completion (or kill its whole process group at `timeout`);
    stdout and stderr are also kept in `log_dir/<name>.stdout|.stderr`."""
    Path(env.get("TMPDIR", "/tmp")).mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    out_path, err_path = log_dir / f"{name}.stdout", log_dir / f"{name}.stderr"
    started = time.monotonic()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        process = subprocess.Popen(
            args,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,  # its own process group: killed whole at the timeout
        )
        try:
            if stdin is not None:
                process.stdin.write(stdin.encode())
                process.stdin.close()
            returncode: int | None = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            # The whole group, also after a normal exit: nothing it spawned outlives it.
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
    seconds = time.monotonic() - started
    read = lambda path: path.read_text(errors="replace")  # noqa: E731
    return Run(args, returncode, read(out_path), read(err_path), seconds)
