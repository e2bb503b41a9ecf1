"""The nginx site of docs/operations.md, run as it is written in front of `serve`
(only its port, the upstream's port and the certificate's paths become this test's
own): pages over HTTPS without a redirect loop, an agent's write, a share link's
websocket and the server-sent events of the API, all through the proxy."""

from __future__ import annotations

import json
import re
import shutil
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from tests.servers import ROOT, Server, base_env, create_token, free_port, manage, require

HOST = "todo.example.com"


def site() -> str:
    """The nginx block of docs/operations.md."""
    text = (ROOT / "docs" / "operations.md").read_text()
    [block] = re.findall(r"```nginx\n(.*?)```", text, re.S)
    return block


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[str, Server, str]]:
    """`serve` behind nginx with the documented site: the proxy's URL, the server, a token."""
    require(shutil.which("nginx") is not None, "nginx is not installed (apt-get install nginx)")
    env = base_env(
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        ALLOWED_HOSTS=f"{HOST},127.0.0.1",
        CSRF_TRUSTED_ORIGINS=f"https://{HOST}",
        TODOWEB_HTTPS="1",
        FORWARDED_ALLOW_IPS="127.0.0.1",
    )
    manage(env, "migrate")
    token = create_token(env)
    key, certificate = tmp_path / "site.key", tmp_path / "site.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={HOST}"]
        + ["-keyout", str(key), "-out", str(certificate)],
        check=True,
        capture_output=True,
    )
    with Server.serve(env, tmp_path / "serve.log") as server:
        port = free_port()
        config = (
            site()
            .replace("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;")
            .replace("http://127.0.0.1:8000", f"http://127.0.0.1:{server.port}")
            .replace("/etc/ssl/certs/todo.example.com.pem", str(certificate))
            .replace("/etc/ssl/private/todo.example.com.key", str(key))
        )
        (tmp_path / "nginx.conf").write_text(
            f"daemon off; pid {tmp_path}/nginx.pid; error_log {tmp_path}/nginx-error.log;\n"
            f"events {{}}\nhttp {{ access_log off; client_body_temp_path {tmp_path}; proxy_temp_path {tmp_path};\n"
            f"{config}\n}}\n"
        )
        nginx = subprocess.Popen(["nginx", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")])
        try:
            url = f"https://127.0.0.1:{port}"
            deadline = time.monotonic() + 10
            while True:
                assert nginx.poll() is None, (tmp_path / "nginx-error.log").read_text()
                try:
                    httpx.get(f"{url}/healthz", verify=False, timeout=1)
                    break
                except httpx.HTTPError:
                    assert time.monotonic() < deadline, "nginx did not answer"
                    time.sleep(0.1)
            yield url, server, token
        finally:
            nginx.terminate()
            nginx.wait(timeout=10)


def test_the_documented_nginx_site_carries_pages_writes_websockets_and_events(proxied):
    url, server, token = proxied
    bearer = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, verify=False, timeout=10, headers={"Host": HOST}) as http:
        # HTTPS as the proxy says: the login page, not a redirect to https:// again.
        page = http.get("/accounts/login/")
        assert page.status_code == 200 and page.headers["Strict-Transport-Security"].startswith("max-age=")
        assert http.get("/").headers["Location"].startswith("/accounts/login/")

        written = http.post(
            "/api/v1/sessions/proxied/tool",
            json={
                "tool": "TodoWrite",
                "input": {"todos": [{"content": "Ship", "status": "in_progress", "activeForm": "Shipping"}]},
            },
            headers=bearer,
        )
        assert written.status_code == 200, written.text
        share = http.post("/api/v1/sessions/proxied/share", json={"expires_in": 3600}, headers=bearer).json()
        assert share["url"].startswith(f"https://{HOST}/s/")  # the scheme and host the proxy passed on

        public_id = share["url"].split("/s/")[1].split("/")[0]
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        socket_url = f"wss://127.0.0.1:{url.rsplit(':', 1)[1]}/ws/sessions/{public_id}/?share={share['token']}"
        with connect(socket_url, ssl=context, origin=f"https://127.0.0.1:{url.rsplit(':', 1)[1]}") as ws:
            assert json.loads(ws.recv(timeout=10))["type"] == "session.snapshot"

        with http.stream("GET", "/api/v1/events?session=proxied", headers=bearer) as events:
            assert events.status_code == 200
            lines = events.iter_lines()
            first = next(line for line in lines if line.startswith("event:"))
            assert first  # the stream's first event arrives through the proxy, unbuffered
    assert "Traceback" not in server.output()
