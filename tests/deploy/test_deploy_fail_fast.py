"""Small deploy behaviours: a /healthz answering 5xx ends the start-up wait at once (a real HTTP server); the
canary's failure note carries words, not the frames of a terminal table."""

from __future__ import annotations

import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from graphlemon.deploy.canary import note_lines
from graphlemon.deploy.instances import Instance, wait_healthy


class _Degraded(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the http.server hook's name)
        body = b'{"status": "degraded", "worker": "exited"}'
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.mark.system
def test_a_healthz_answering_503_ends_the_wait_at_once():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Degraded)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        inst = Instance(
            commit="c1", dir="/nonexistent", port=server.server_address[1], pid=os.getpid(), log="/dev/null"
        )
        started = time.monotonic()
        reading = wait_healthy(inst, timeout=120)
        assert reading.status == 503
        assert time.monotonic() - started < 60  # not the whole start timeout: the answer was definite
    finally:
        server.shutdown()
        server.server_close()


TABLE = """executor: scripted — replaying playbook.yaml
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┓
┃ task                           ┃ status            ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━┩
│ task-20261204-1200-ab12        │ blocked_pending_… │
└────────────────────────────────┴───────────────────┘
"""


def test_the_canary_note_keeps_words_and_errors_not_table_frames():
    note = note_lines(TABLE)
    assert not any(0x2500 <= ord(c) <= 0x259F for c in note)
    assert "task-20261204-1200-ab12 blocked_pending_…" in note and "executor: scripted" in note
    failed = note_lines(TABLE + "error[OUTPUT_INVALID]: planner turn stopped with max_turns\n")
    assert failed == "error[OUTPUT_INVALID]: planner turn stopped with max_turns"
    assert len(note_lines("word " * 1000, chars=100)) <= 101
