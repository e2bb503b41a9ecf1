"""The README's production recipe without Docker (Run it for a team), run as it is
written: only the database and Redis addresses become this test's own, the admin is
made with --noinput, and the port is a free one. Then, as the proxy in front would
ask: /readyz, a login page and an agent's write, with the recipe's host over HTTPS."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import httpx

from tests.servers import ROOT, base_env, free_port
from tests.system.test_container_recipe import worker_count

PROXY_HEADERS = {"Host": "todo.example.com", "X-Forwarded-Proto": "https"}
TOKEN = re.compile(r"^(tw_\S+)$", re.M)


def recipe() -> list[str]:
    """The commands of the README's block after "Without Docker", one per line."""
    section = (ROOT / "README.md").read_text().split("Without Docker", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return block.replace("\\\n", " ").splitlines()


def test_the_recipe_serves_several_workers_on_postgres_and_redis(postgres_url, private_redis, tmp_path):
    lines = recipe()
    assert lines[-1] == ".venv/bin/python manage.py serve --host 0.0.0.0 --port 8000 --workers 4"
    port = free_port()
    script = "\n".join(["set -e", *lines[:-1], f"exec {lines[-1]}"])
    script = re.sub(r"DATABASE_URL=\S+", f"DATABASE_URL={postgres_url}", script)
    script = re.sub(r"REDIS_URL=\S+", f"REDIS_URL={private_redis.url}", script)
    script = script.replace("createsuperuser --email", "createsuperuser --noinput --email")
    script = script.replace("--port 8000", f"--port {port}")
    env = base_env(DJANGO_SUPERUSER_USERNAME="admin", DJANGO_SUPERUSER_PASSWORD="a long admin password 0123")
    log_path = tmp_path / "recipe.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(["bash", "-c", script], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        ready = wait_until_ready(process, port, log_path)
        assert ready["checks"] == {"database": True, "channel_layer": True}
        assert worker_count(process.pid) == 4
        output = log_path.read_text()
        assert "System check identified no issues" in output, output
        token = TOKEN.search(output).group(1)

        base = f"http://127.0.0.1:{port}"
        login = httpx.get(f"{base}/", headers=PROXY_HEADERS)
        assert login.status_code == 302 and "/accounts/login/" in login.headers["Location"]
        assert httpx.get(f"{base}/", headers={"Host": "todo.example.com"}).status_code == 301  # to https://
        write = httpx.post(
            f"{base}/api/v1/sessions/first-run/tool",
            json={
                "tool": "TodoWrite",
                "input": {"todos": [{"content": "Deploy", "status": "in_progress", "activeForm": "Deploying"}]},
            },
            headers=PROXY_HEADERS | {"Authorization": f"Bearer {token}"},
        )
        assert write.status_code == 200, write.text
        assert write.json()["data"]["revision"] == 1
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def wait_until_ready(process: subprocess.Popen, port: int, log: Path, timeout: float = 120) -> dict:
    """/readyz's answer once it is 200 (migrate and collectstatic run first)."""
    deadline = time.monotonic() + timeout
    while True:
        assert process.poll() is None, log.read_text()
        try:
            answer = httpx.get(f"http://127.0.0.1:{port}/readyz", headers=PROXY_HEADERS, timeout=1)
            if answer.status_code == 200:
                return answer.json()
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)
