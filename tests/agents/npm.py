"""Agent CLIs installed from the npm registry into `.cache/agents/<name>-<version>`,
once: a later run finds them there and installs nothing."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.servers import ROOT

CACHE = ROOT / ".cache" / "agents"
INSTALL_TIMEOUT = 900


@dataclass(frozen=True)
class InstalledCli:
    package: str
    version: str
    prefix: Path
    executable: Path
    install_seconds: float  # 0 when it was already in the cache


def node_available() -> bool:
    return shutil.which("node") is not None and shutil.which("npm") is not None


def installed_version(prefix: Path, package: str) -> str | None:
    manifest = prefix / "node_modules" / package / "package.json"
    try:
        return json.loads(manifest.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def install_cli(package: str, version: str, bin: str) -> InstalledCli:
    """`npm install --prefix .cache/agents/<name>-<version> <package>@<version>`, unless done."""
    name = package.lstrip("@").replace("/", "-")
    prefix = CACHE / f"{name}-{version}"
    executable = prefix / "node_modules" / ".bin" / bin
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{name}-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test processes install it once
        if executable.exists() and installed_version(prefix, package) == version:
            return InstalledCli(package, version, prefix, executable, 0.0)
        shutil.rmtree(prefix, ignore_errors=True)  # a half-finished install
        started = time.monotonic()
        result = subprocess.run(
            ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", f"{package}@{version}"],
            env=os.environ | {"npm_config_update_notifier": "false"},
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            check=False,
        )
        seconds = time.monotonic() - started
        if result.returncode != 0 or not executable.exists():
            shutil.rmtree(prefix, ignore_errors=True)
            raise RuntimeError(f"npm install {package}@{version} failed:\n{result.stdout}\n{result.stderr}")
        return InstalledCli(package, version, prefix, executable, seconds)
