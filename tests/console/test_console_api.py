"""The console's HTTP and WebSocket API (REQ-09/10/11/12) through Starlette's TestClient, on real projects."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from graphlemon.bugs import BugTracker
from graphlemon.console.app import TOKEN_HEADER, ConsoleSettings, create_app
from graphlemon.console.feed import LedgerFeed
from graphlemon.console.project_registry import ProjectRegistry
from graphlemon.models import BudgetConfig, NodeEvent
from graphlemon.nodes import NodeTracker
from graphlemon.taskboard import TaskBoard

TOKEN = "t" * 32
WS_HEADERS = {"host": "127.0.0.1:8766"}  # TestClient's WebSocket ignores base_url


@pytest.fixture
def registry(tmp_path: Path) -> ProjectRegistry:
    return ProjectRegistry(tmp_path / "config")


@pytest.fixture
def client(registry, project):
    registry.register(project)
    app = create_app(ConsoleSettings(token=TOKEN, registry=registry))
    with TestClient(app, base_url="http://127.0.0.1:8766", cookies={"graphlemon_console": TOKEN}) as c:
        yield c  # as a browser that opened the printed URL: its cookie reads, its header steers


def post(client, path, body):
    return client.post(path, json=body, headers={TOKEN_HEADER: TOKEN})


def blocked_task(project, reason="not_converging"):
    board = TaskBoard(project.ledger)
    task = board.create("Implement a snake game")
    board.transition(task.task_id, "planning")
    board.transition(task.task_id, "blocked_pending_human", blocked_reason=reason)
    return task.task_id


# -- projects (v_project_setup) -----------------------------------------------------------------------


def test_add_project_git_repo_plain_folder_consent_and_idempotence(client, tmp_path):
    repo = tmp_path / "other"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    first = post(client, "/api/projects", {"path": str(repo)})
    assert first.status_code == 200 and first.json()["created"] is True
    again = post(client, "/api/projects", {"path": str(repo)})
    assert again.json()["project_id"] == first.json()["project_id"] and again.json()["created"] is False

    plain = tmp_path / "plain"
    plain.mkdir()
    declined = post(client, "/api/projects", {"path": str(plain)})
    assert declined.status_code == 409
    err = declined.json()["error"]
    assert err["code"] == "ABORTED" and err["needs_git_init"] and "git init" in err["question"]
    assert list(plain.iterdir()) == []  # declining writes nothing
    agreed = post(client, "/api/projects", {"path": str(plain), "git_init": True})
    assert agreed.json()["git_initialised"] is True and (plain / ".git").is_dir()

    missing = post(client, "/api/projects", {"path": str(tmp_path / "nope")})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "PROJECT_NOT_FOUND"
    empty = post(client, "/api/projects", {"path": "  "})
    assert empty.status_code == 400 and empty.json()["error"]["code"] == "INVALID_PARAM"
    ids = {p["project_id"] for p in client.get("/api/projects").json()}
    assert {first.json()["project_id"], agreed.json()["project_id"]} <= ids


def test_state_changing_requests_need_the_token_and_same_origin(client, tmp_path):
    client.cookies.clear()  # a local process that never saw the printed URL (a sandboxed agent's, say)
    assert client.get("/api/projects").status_code == 401  # reads need the token too, on loopback as well
    assert client.get("/api/projects", headers={TOKEN_HEADER: TOKEN}).status_code == 200
    assert client.post("/api/projects", json={"path": str(tmp_path)}).status_code == 403
    foreign = client.post(
        "/api/projects", json={"path": str(tmp_path)}, headers={TOKEN_HEADER: TOKEN, "Origin": "http://evil.example"}
    )
    assert foreign.status_code == 403
    rebinding = client.get("/api/projects", headers={"Host": "evil.example:8766"})
    assert rebinding.status_code == 421  # loopback console answers only to a loopback Host (DNS rebinding)
    page = client.get("/")  # a local process that never saw the printed URL: a page that reads, never steers
    assert page.status_code == 200 and TOKEN not in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert client.get("/api/token").json()["error"]["code"] == "PERMISSION_DENIED"
    missing = client.post("/api/projects", json={"path": str(tmp_path)})
    assert missing.json()["error"] == {**missing.json()["error"], "code": "PERMISSION_DENIED", "token": "missing"}


def test_the_printed_url_gives_the_browser_the_token_and_a_page_older_than_a_restart_gets_the_new_one(
    registry, project, tmp_path
):
    registry.register(project)
    before = create_app(ConsoleSettings(token=TOKEN, registry=registry))
    with TestClient(before, base_url="http://127.0.0.1:8766") as c:
        assert c.get("/?token=wrong").status_code == 401
        login = c.get(f"/?token={TOKEN}", follow_redirects=False)
        assert login.status_code == 303 and "httponly" in login.headers["set-cookie"].lower()
        assert TOKEN in c.get("/").text  # the cookie: the page gets the token
        cookie = c.cookies.get("graphlemon_console")
    restarted = create_app(ConsoleSettings(token="n" * 32, registry=registry))
    with TestClient(restarted, base_url="http://127.0.0.1:8766") as c:
        c.cookies.set("graphlemon_console", cookie)
        stale = c.post("/api/projects", json={"path": str(tmp_path)}, headers={TOKEN_HEADER: TOKEN})
        err = stale.json()["error"]
        assert stale.status_code == 403 and err["code"] == "PERMISSION_DENIED" and err["token"] == "stale"
        assert "reload" in err["message"]
        assert c.get("/api/token").status_code == 403  # the old cookie does not fetch the new token
        c.get(f"/?token={'n' * 32}")  # the URL the restarted console printed
        assert c.get("/api/token").json() == {"token": "n" * 32}


def test_beyond_loopback_every_request_needs_the_token(registry, project):
    registry.register(project)
    app = create_app(ConsoleSettings(token=TOKEN, registry=registry, loopback=False))
    with TestClient(app, base_url="http://10.0.0.5:9000") as c:
        assert c.get("/").status_code == 401
        assert c.get("/api/projects").status_code == 401
        assert c.get("/?token=wrong").status_code == 401
        login = c.get(f"/?token={TOKEN}", follow_redirects=False)
        assert login.status_code == 303 and "httponly" in login.headers["set-cookie"].lower()
        assert c.get("/api/projects").status_code == 200  # the cookie
        assert c.post("/api/projects", json={"path": "/"}).status_code == 403  # cookie alone: not for changes


# -- reads --------------------------------------------------------------------------------------------


def test_dashboard_orders_blocked_first_and_shows_spend_budget_and_bugs(client, project):
    board = TaskBoard(project.ledger)
    done = board.create("first")
    for st in ("planning", "coding", "validating", "done"):
        board.transition(done.task_id, st)
    blocked = blocked_task(project)
    project.ledger.append(BudgetConfig(task_id=blocked, limit_type="token_count", limit_value=1000))
    BugTracker(project.ledger).open(title="wall", source="unit_test", task_id=blocked, unit_id="collision")
    rows = client.get(f"/api/projects/{project.project_id}/tasks").json()["tasks"]
    assert [r["task_id"] for r in rows] == [blocked, done.task_id]
    assert rows[0]["open_bugs"] == 1 and rows[0]["budget"]["limit"] == 1000
    unknown = client.get("/api/projects/p-nope/tasks")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "PROJECT_NOT_FOUND"


def test_artifacts_are_served_only_from_the_artifacts_folder(client, project):
    from graphlemon.artifacts import ArtifactStore

    task = TaskBoard(project.ledger).create("x")
    rec = ArtifactStore(project.ledger).write("brd", "# BRD\n<script>alert(1)</script>\n", task_id=task.task_id)
    got = client.get(f"/api/projects/{project.project_id}/artifacts/{rec.artifact_id}")
    assert (
        got.status_code == 200 and got.text.startswith("# BRD") and got.headers["content-type"].startswith("text/plain")
    )
    outside = rec.model_copy(update={"artifact_id": "art-evil", "path": "../../../etc/passwd"})
    project.ledger.append(outside)
    evil = client.get(f"/api/projects/{project.project_id}/artifacts/art-evil")
    assert evil.status_code == 403 and evil.json()["error"]["code"] == "SANDBOX_VIOLATION"
    assert client.get(f"/api/projects/{project.project_id}/artifacts/art-none").status_code == 404


# -- actions ------------------------------------------------------------------------------------------


@pytest.mark.system
def test_manual_resume_and_abandon(client, project):
    tid = blocked_task(project)
    res = post(client, f"/api/projects/{project.project_id}/tasks/{tid}/resume", {"note": "use the wall rule"})
    assert res.status_code == 200 and res.json()["task"]["status"] == "planning"
    assert TaskBoard(project.ledger).get(tid).note == "use the wall rule"
    tid2 = blocked_task(project)
    gone = post(client, f"/api/projects/{project.project_id}/tasks/{tid2}/abandon", {})
    assert gone.json()["task"]["status"] == "abandoned"
    before = len(project.ledger.read("task"))
    again = post(client, f"/api/projects/{project.project_id}/tasks/{tid2}/resume", {"note": "x"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "INVALID_TRANSITION"
    assert "nothing changed" in again.json()["error"]["message"]
    assert len(project.ledger.read("task")) == before
    missing = post(client, f"/api/projects/{project.project_id}/tasks/task-nope/resume", {})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "TASK_NOT_FOUND"


def test_bug_report_refuses_an_empty_description_and_writes_nothing(client, project):
    url = f"/api/projects/{project.project_id}/bugs"
    empty = post(client, url, {"title": "t", "description": "   "})
    assert empty.status_code == 400 and empty.json()["error"]["code"] == "INVALID_PARAM"
    assert not (project.state_dir / "bugs.ndjson").exists()
    ok = post(client, url, {"title": "<b>snake</b> dies", "description": "it hits nothing", "unit_id": "collision"})
    bug = BugTracker(project.ledger).get(ok.json()["bug_id"])
    assert bug.source == "human_reported" and bug.title == "<b>snake</b> dies" and bug.unit_id == "collision"


@pytest.mark.system
def test_budget_raise_requeues_a_task_blocked_by_its_budget(client, project):
    tid = blocked_task(project, reason="budget_exceeded")
    project.ledger.append(BudgetConfig(task_id=tid, limit_type="token_count", limit_value=10))
    res = post(client, f"/api/projects/{project.project_id}/tasks/{tid}/budget", {"limit": 5000})
    assert res.status_code == 200 and res.json()["requeued"] is True and res.json()["task_status"] == "queued"
    bad = post(client, f"/api/projects/{project.project_id}/tasks/{tid}/budget", {"limit": -1})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "INVALID_PARAM"


def test_goal_is_checked_before_anything_starts(client, project):
    url = f"/api/projects/{project.project_id}/goals"
    empty = post(client, url, {"goal": "  ", "executor": "scripted", "playbook": "/x.yaml"})
    assert empty.status_code == 400 and empty.json()["error"]["code"] == "INVALID_PARAM"
    no_book = post(client, url, {"goal": "build", "executor": "scripted"})
    assert no_book.status_code == 400 and "playbook" in no_book.json()["error"]["message"]
    relative = post(client, url, {"goal": "build", "executor": "scripted", "playbook": "../pb.yaml"})
    assert relative.status_code == 400
    assert not (project.state_dir / "tasks.ndjson").exists()



def test_a_scripted_playbook_written_for_another_repository_is_refused_before_anything_starts(client, project):
    from graphlemon.agents.playbook import Playbook
    from graphlemon.errors import GraphLemonError

    book = Path(__file__).resolve().parents[2] / "examples" / "snake" / "playbook.yaml"
    with pytest.raises(GraphLemonError) as cli:  # what `graphlemon run --playbook` says on this repository
        Playbook.load(book).check_fits(project.root)
    body = {"goal": "build", "executor": "scripted", "playbook": str(book), "engine": "direct"}
    res = post(client, f"/api/projects/{project.project_id}/goals", body)
    assert res.status_code == 400, res.text
    assert res.json()["error"]["code"] == "INVALID_PARAM" and res.json()["error"]["message"] == cli.value.message
    assert not (project.state_dir / "tasks.ndjson").exists() and not (project.state_dir / "logs" / "console").exists()

# -- live (REQ-12) -------------------------------------------------------------------------------------


def node(project, tid, status, unit="snake"):
    return NodeTracker(project.ledger).transition(
        f"ne-{tid}-coder-{unit}-r0", status, task_id=tid, stage="coder", unit_id=unit
    )


def receive_until(ws, predicate, limit=50):
    for _ in range(limit):
        msg = ws.receive_json()
        if predicate(msg):
            return msg
    raise AssertionError("no such message")


def test_websocket_snapshot_then_live_events_then_exact_catch_up(client, project):
    tid = TaskBoard(project.ledger).create("snake").task_id
    node(project, tid, "running")
    with client.websocket_connect("/ws", headers=WS_HEADERS) as ws:
        ws.send_text(json.dumps({"project": project.project_id, "task": tid}))
        snap = ws.receive_json()
        assert snap["type"] == "snapshot" and [n["status"] for n in snap["state"]["nodes"]] == ["running"]
        cursors = snap["cursors"]
        node(project, tid, "done")
        msg = receive_until(ws, lambda m: m["type"] == "events")
        ev = msg["events"][0]
        assert ev["kind"] == "node" and ev["record"]["status"] == "done" and ev["cursor"].startswith("nodes.ndjson:")
        cursors[ev["file"]] = ev["offset"]
    # while nobody listens: three more events; a reconnect with the cursors gets exactly those
    node(project, tid, "running", unit="board")
    node(project, tid, "done", unit="board")
    TaskBoard(project.ledger).transition(tid, "planning")
    with client.websocket_connect("/ws", headers=WS_HEADERS) as ws:
        ws.send_text(json.dumps({"project": project.project_id, "task": tid, "cursors": cursors}))
        resumed = ws.receive_json()
        assert resumed["type"] == "resumed"
        assert [(e["kind"], e["record"]["status"]) for e in resumed["events"]] == [
            ("node", "running"),
            ("node", "done"),
            ("task", "planning"),
        ]
    # a cursor that is not a line end of the file gets a fresh snapshot
    with client.websocket_connect("/ws", headers=WS_HEADERS) as ws:
        ws.send_text(json.dumps({"project": project.project_id, "task": tid, "cursors": {"nodes.ndjson": 7}}))
        assert ws.receive_json()["type"] == "snapshot"


def test_websocket_unknown_project_is_refused_with_project_not_found(client):
    with client.websocket_connect("/ws", headers=WS_HEADERS) as ws:
        ws.send_text(json.dumps({"project": "p-missing"}))
        msg = ws.receive_json()
        assert msg["type"] == "error" and msg["error"]["code"] == "PROJECT_NOT_FOUND"
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == 4404


def test_feed_takes_only_whole_lines_and_voids_cursors_of_a_replaced_file(project):
    tid = TaskBoard(project.ledger).create("snake").task_id
    feed = LedgerFeed(project.state_dir)
    first = feed.poll()
    path = project.state_dir / "nodes.ndjson"
    line = NodeEvent(node_exec_id="ne-x", task_id=tid, stage="planner", status="running").model_dump_json() + "\n"
    with open(path, "w") as fh:
        fh.write(line[:20])  # a writer mid-line
    assert feed.poll() == []
    with open(path, "a") as fh:
        fh.write(line[20:])
    (ev,) = feed.poll()
    assert ev.offset == len(line) and feed.since({**feed.cursors(), "nodes.ndjson": 0}) == [ev]
    assert feed.since({"nodes.ndjson": 5}) is None
    path.unlink()  # replaced by a shorter file: the old cursor names no line end of it
    path.write_text(line.replace('"ne-x"', '"n"'))
    feed.poll()
    assert feed.since({**feed.cursors(), ev.file: ev.offset}) is None
    assert feed.since({**feed.cursors(), ev.file: 0})[0].record.node_exec_id == "n"
    assert [e.record.kind for e in first] == ["task", "task"]


# -- the command ----------------------------------------------------------------------------------------


@pytest.mark.system
def test_starting_the_console_never_imports_prefect():
    probe = (
        "import sys, graphlemon.cli; from graphlemon.console import app, feed, hub, project_registry, server, views; "
        "app.create_app(); print('prefect' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.system
def test_console_command_token_rules_and_bad_input(cli, tmp_path):
    from graphlemon.console.server import free_port

    short = cli("console", "--token", "abc", "--port", str(free_port()))
    assert short.returncode == 2 and short.stderr.startswith("error[INVALID_PARAM]") and "Traceback" not in short.stderr
    missing = cli("console", "--project", str(tmp_path / "nope"), "--port", str(free_port()))
    assert missing.returncode == 2 and missing.stderr.startswith("error[PROJECT_NOT_FOUND]")

    port = free_port("0.0.0.0")
    proc = subprocess.Popen([sys.executable, "-m", "graphlemon", "console", "--host", "0.0.0.0", "--port", str(port)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        url, token = proc.stdout.readline().strip(), proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert url.startswith(f"GraphLemon console: http://0.0.0.0:{port}/?token=")
    assert token.startswith("token (generated): ") and url.endswith(token.split(": ", 1)[1])


@pytest.mark.system
def test_init_registers_the_project_for_the_console(cli, git_repo, tmp_path):
    env = {"GRAPHLEMON_CONFIG_DIR": str(tmp_path / "cfg")}
    res = cli("init", str(git_repo), "--json", env=env)
    assert res.returncode == 0, res.stderr
    pid = json.loads(res.stdout)["project_id"]
    assert [p.project_id for p in ProjectRegistry(tmp_path / "cfg").list()] == [pid]


@pytest.mark.system
def test_goal_with_an_unreachable_prefect_api_is_a_clear_error_and_starts_nothing(client, project, monkeypatch):
    from graphlemon.console.server import free_port

    monkeypatch.setenv("PREFECT_API_URL", f"http://127.0.0.1:{free_port()}/api")  # nothing listens there
    playbook = Path(__file__).resolve().parents[2] / "examples" / "snake" / "playbook.yaml"
    (project.root / "snake").mkdir()  # the files the snake playbook fits (it is refused on another repository)
    for name in ("snake/__init__.py", "pyproject.toml"):
        (project.root / name).touch()
    res = post(client, f"/api/projects/{project.project_id}/goals",
               {"goal": "build", "executor": "scripted", "playbook": str(playbook)})  # fmt: skip
    assert res.status_code == 409 and res.json()["error"]["code"] == "EXECUTOR_ERROR"
    assert not (project.state_dir / "tasks.ndjson").exists()


def test_skills_audit_log_and_one_iteration_are_the_cli_s_domain_calls(client, project):
    """v_skill_audit_log: the console shows what `graphlemon skills log` / `skills show` show (same functions)."""
    from graphlemon.bugs import BugTracker
    from graphlemon.models import SkillGateResult
    from graphlemon.skills.iteration import SkillIterations, skill_log

    pid = project.project_id
    assert client.get(f"/api/projects/{pid}/skills").json() == {"project_id": pid, "iterations": []}
    tracker = BugTracker(project.ledger)
    bug_id, _ = tracker.open(
        title="<b>mul</b> [/red] failed", source="unit_test", unit_id="mul", test_name="t", task_id="t1"
    )
    tracker.update(bug_id, by="validator", root_cause_category="skill_defect", root_cause_detail="the skill is silent")
    its = SkillIterations(project.state_dir, project.ledger)
    it = its.propose("coder", bug_id, "You are the Coder agent. v2\n", author="human", rationale="<script>x</script>")
    its.start_gate(it.iteration_id)
    its.apply(it.iteration_id, SkillGateResult(ok=True, note="the gate passed"))
    log = client.get(f"/api/projects/{pid}/skills").json()["iterations"]
    assert [i["iteration_id"] for i in log] == [i.iteration_id for i in skill_log(project.state_dir, project.ledger)]
    assert log[0]["status"] == "applied" and log[0]["triggered_by_bug_id"] == bug_id
    detail = client.get(f"/api/projects/{pid}/skills/{it.iteration_id}").json()
    assert detail["iteration"]["rationale"] == "<script>x</script>" and "v2" in detail["diff"]
    missing = client.get(f"/api/projects/{pid}/skills/si-nope")
    assert missing.json()["error"]["code"] == "ITERATION_NOT_FOUND"


def test_projects_are_named_renamed_and_forgotten_and_a_missing_one_says_so(client, registry, project, tmp_path):
    import shutil

    from graphlemon.project import init_project

    gone_repo = tmp_path / "gone"
    gone_repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=gone_repo, check=True)
    gone = init_project(gone_repo).project
    registry.register(gone)
    shutil.rmtree(gone_repo)
    listed = {p["project_id"]: p for p in client.get("/api/projects").json()}
    assert listed[project.project_id]["name"] == project.root.name and listed[project.project_id]["available"]
    assert listed[gone.project_id]["available"] is False and listed[gone.project_id]["name"] == "gone"
    url = f"/api/projects/{project.project_id}/name"
    for bad in ("", "   ", "x" * 81):
        refused = post(client, url, {"name": bad})
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "INVALID_PARAM"
    assert post(client, url, {"name": "  Snake\n game  "}).json()["name"] == "Snake game"  # one line
    registry.register(project)  # `graphlemon init` again keeps the name
    assert {p["project_id"]: p["name"] for p in client.get("/api/projects").json()}[project.project_id] == "Snake game"
    assert post(client, f"/api/projects/{gone.project_id}/forget", {}).json()["root"] == str(gone_repo)
    assert gone.project_id not in {p["project_id"] for p in client.get("/api/projects").json()}
    again = post(client, f"/api/projects/{gone.project_id}/forget", {})
    assert again.status_code == 404 and again.json()["error"]["code"] == "PROJECT_NOT_FOUND"
    assert project.root.is_dir() and (project.state_dir / "project.json").is_file()  # the folder stays
