"""The console's execution-log API (REQ-13): byte ranges, the shared live tail over WebSockets, retention."""

from __future__ import annotations

import json
import threading
import tracemalloc
from pathlib import Path

import pytest
from logview_kit import RunningNode
from starlette.testclient import TestClient

from graphlemon.console.app import TOKEN_HEADER, ConsoleSettings, create_app
from graphlemon.console.project_registry import ProjectRegistry
from graphlemon.execlogs import file_stats, log_path, read_range, tail_lines

TOKEN = "l" * 32
WS_HEADERS = {"host": "127.0.0.1:8766"}  # TestClient's WebSocket ignores base_url


@pytest.fixture
def client(tmp_path: Path, project):
    registry = ProjectRegistry(tmp_path / "config")
    registry.register(project)
    app = create_app(ConsoleSettings(token=TOKEN, registry=registry))
    with TestClient(app, base_url="http://127.0.0.1:8766", cookies={"graphlemon_console": TOKEN}) as c:
        yield c  # as a browser that opened the printed URL: its cookie reads, its header steers


def follow_ws(client, project, nid: str, start: int = 0) -> tuple[str, list[dict]]:
    """One viewer: every `lines` message's text from `start` until `end`."""
    text, messages = [], []
    with client.websocket_connect("/ws/logs", headers=WS_HEADERS) as ws:
        ws.send_json({"project": project.project_id, "node": nid, "from": start})
        while True:
            frame = ws.receive()
            if frame["type"] == "websocket.close":
                return "".join(text), messages
            msg = json.loads(frame.get("text") or frame["bytes"].decode())
            messages.append(msg)
            if msg["type"] == "lines":
                text.append(msg["text"])
            if msg["type"] in ("end", "error"):
                return "".join(text), messages


def test_two_viewers_of_a_running_node_each_get_every_line_once_then_the_end(client, project):
    node = RunningNode(project).start()
    node.write(5, 0.0, finish=False, prefix="early")
    node.thread.join()
    results: list[tuple[str, list[dict]]] = []
    viewers = [threading.Thread(target=lambda s=s: results.append(follow_ws(client, project, node.nid, s)))
               for s in (0, 0)]  # fmt: skip
    for v in viewers:
        v.start()
    node.write(200, 0.002)  # then done: the log closes
    for v in viewers:
        v.join(timeout=30)
    full = log_path(project.state_dir, node.nid).read_text()
    assert len(results) == 2
    for text, messages in results:
        assert text == full  # every byte once, in order, whatever was shared and whatever was read apart
        assert messages[0]["type"] == "meta" and messages[0]["view"]["status"] == "open"
        assert messages[-1]["type"] == "end" and messages[-1]["view"]["status"] == "closed"


def test_a_closed_log_from_an_offset_and_the_range_endpoint(client, project):
    node = RunningNode(project).start()
    for i in range(50):
        node.line(f"line {i}")
    node.finish()
    full = log_path(project.state_dir, node.nid).read_bytes()
    cut = full.index(b"line 10")
    cut = full.rindex(b"\n", 0, cut) + 1
    text, messages = follow_ws(client, project, node.nid, cut)
    assert text.encode() == full[cut:] and messages[0]["view"]["status"] == "closed"
    page = client.get(f"/api/projects/{project.project_id}/logs/{node.nid}/range?start=0&max=300").json()
    assert page["start"] == 0 and 0 < page["end"] <= 300 and full.startswith(page["text"].encode())
    assert page["text"].endswith("\n") and page["size"] == len(full)
    bad = client.get(f"/api/projects/{project.project_id}/logs/{node.nid}/range?start=x")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "INVALID_PARAM"
    meta = client.get(f"/api/projects/{project.project_id}/logs/{node.nid}").json()
    assert meta["status"] == "closed" and meta["log"]["line_count"] == 52
    listed = client.get(f"/api/projects/{project.project_id}/tasks/{node.task_id}/logs").json()
    assert [g["node_exec_id"] for g in listed["logs"]] == [node.nid]


def test_retention_endpoint_needs_the_token_and_refuses_bad_values(client, project):
    url = f"/api/projects/{project.project_id}/log-retention"
    assert client.get(url).json()["retention_days"] == 14
    assert client.post(url, json={"retention_days": 3}).status_code == 403  # no token header
    for bad in (0, -1, "x", 1.5, 10**6, None):
        resp = client.post(url, json={"retention_days": bad}, headers={TOKEN_HEADER: TOKEN})
        assert resp.status_code == 400 and resp.json()["error"]["code"] == "INVALID_PARAM", bad
    assert project.ledger.read("log_retention") == []
    ok = client.post(url, json={"retention_days": 5}, headers={TOKEN_HEADER: TOKEN}).json()
    assert ok["retention_days"] == 5 and ok["set_by"] == "console"


def test_reading_a_large_log_never_holds_it_in_memory(tmp_path):
    path = tmp_path / "node.log"
    line = b"2026-12-03T17:00:00.000Z [agent] " + b"z" * 200 + b"\n"
    with open(path, "wb") as fh:
        for _ in range(64):
            fh.write(line * 4096)  # 64 x ~1 MB = ~60 MB
    size = path.stat().st_size
    tracemalloc.start()
    try:
        chunk = read_range(path, size // 2, 256 * 1024)
        last = tail_lines(path, 100)
        stats = file_stats(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(chunk.text) <= 256 * 1024 and last.text.count("\n") == 100 and stats == (size, 64 * 4096)
    assert peak < 4 * 1024 * 1024, f"peak {peak} bytes for a {size}-byte log"
