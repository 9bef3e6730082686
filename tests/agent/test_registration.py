"""Registration: the node credential is kept 0600; a refusal shows the server's words."""

import json
import stat
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from fairway_agent.discovery import Inventory
from fairway_agent.main import main
from fairway_agent.registration import (
    Credential,
    load_credential,
    register,
    save_credential,
    websocket_url,
)


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/api/v1/agents/register/" or body["join_token"] != "good":
            status, answer = 401, {"detail": "join token revoked"}
        else:
            self.server.bodies.append(body)
            status, answer = 201, {"node": body["hostname"], "pool": "h100", "node_token": "nt"}
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps(answer).encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    httpd.bodies = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()


def test_registration_returns_a_credential_stored_for_this_user_only(server, tmp_path):
    url = f"http://127.0.0.1:{server.server_port}"
    inventory = Inventory(devices=[], cpu=8, memory_gib=31.2, source="none")
    credential = register(
        server=url,
        join_token="good",
        hostname="gpu-1",
        address=None,
        inventory=inventory,
        agent_version="0.1.0",
    )
    assert credential == Credential(url, "gpu-1", "h100", "nt")
    assert server.bodies[0]["cpu"] == 8 and server.bodies[0]["address"] == "gpu-1"
    path = tmp_path / "node_token.json"
    path.write_text("{}")
    path.chmod(0o644)
    save_credential(tmp_path, credential)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_credential(tmp_path, url) == credential
    assert load_credential(tmp_path, "https://other") is None
    assert websocket_url("https://f.example/") == "wss://f.example/ws/agents/"
    assert websocket_url("http://f:8000") == "ws://f:8000/ws/agents/"


def test_a_refused_join_token_prints_the_servers_detail_and_exits_non_zero(
    server, tmp_path, capsys
):
    url = f"http://127.0.0.1:{server.server_port}"
    argv = [
        "--server",
        url,
        "--join-token",
        "bad",
        "--state-dir",
        str(tmp_path),
        "--fake-gpus",
        "1",
    ]
    assert main([*argv, "--allow-root"]) == 1
    assert "registration refused (401): join token revoked" in capsys.readouterr().err
    assert not (tmp_path / "node_token.json").exists()


def test_bad_arguments_are_one_line_errors(tmp_path, capsys):
    assert main(["--server", "fairway.example", "--state-dir", str(tmp_path)]) == 2
    assert "--server must be an http:// or https:// URL" in capsys.readouterr().err
    state = ["--state-dir", str(tmp_path), "--allow-root", "--fake-gpus", "0"]
    assert main(["--server", "http://127.0.0.1:9", *state]) == 2
    assert "not registered" in capsys.readouterr().err
