"""Each agent tool, called the way every backend calls it (`call_tool`), on a real project."""

from __future__ import annotations

import json
import time

import pytest

from graphlemon.agents import SandboxPolicy, ToolContext, build_request
from graphlemon.agents.sandbox import Sandbox
from graphlemon.agents.tools import call_tool, get_tool, tool_names
from graphlemon.agents.tools.state import todo_path
from graphlemon.bugs import BugTracker
from graphlemon.models import TimelineEvent


@pytest.fixture
def ctx(project):
    (project.root / "src").mkdir()
    (project.root / "src" / "app.py").write_text("def add(a, b):\n    return a + b\n\nTOKEN = 'x'\n")
    policy = SandboxPolicy(root=project.root, writable=["tests/**"])
    return ToolContext(
        project=project,
        sandbox=Sandbox(policy),
        role="tester",
        node_exec_id="ne-t",
        task_id="task-1",
        unit_id="u1",
        run_id="r1",
    )


def ok(ctx, name, **args):
    outcome = call_tool(ctx, name, args)
    assert outcome.ok, outcome.content
    return outcome.content


def err(ctx, name, **args):
    outcome = call_tool(ctx, name, args)
    assert not outcome.ok, outcome.content
    return outcome.content


def test_every_tool_has_an_object_schema_and_the_issue_lists_them_all():
    expected = {
        "read_file", "list_files", "search_text", "write_file", "edit_file", "run_tests", "bug_open",
        "bug_transition", "bug_list", "extract_evidence", "write_todolist", "update_todo_item",
        "timeline_append", "record_memory", "apply_patch",
    }  # fmt: skip
    assert expected <= set(tool_names())
    for name in tool_names():
        spec = get_tool(name).spec()
        assert spec["input_schema"]["type"] == "object" and spec["description"]


def test_read_list_search(ctx):
    assert ok(ctx, "read_file", path="src/app.py")["content"].startswith("def add")
    assert ok(ctx, "read_file", path="src/app.py", offset=2, limit=1)["content"] == "    return a + b\n"
    assert "src/app.py" in ok(ctx, "list_files")["files"]
    assert ok(ctx, "list_files", path="src", pattern="*.py")["files"] == ["src/app.py"]
    assert ok(ctx, "search_text", pattern="def add(")["count"] == 1  # literal by default
    assert "no such file" in err(ctx, "read_file", path="src/missing.py")
    assert "bad regular expression" in err(ctx, "search_text", pattern="(", regex=True)
    assert "invalid arguments" in err(ctx, "read_file", path="src/app.py", offset=0)
    assert "invalid arguments" in err(ctx, "read_file", path="x", surprise=1)


def test_write_edit_and_patch_stay_in_the_sandbox(ctx, project):
    ok(ctx, "write_file", path="tests/test_app.py", content="def test_add():\n    assert 1 == 1\n")
    assert ok(ctx, "edit_file", path="tests/test_app.py", old="1 == 1", new="2 == 2")["replacements"] == 1
    assert "not found" in err(ctx, "edit_file", path="tests/test_app.py", old="nope", new="x")
    assert "SANDBOX_VIOLATION" in err(ctx, "edit_file", path="src/app.py", old="a + b", new="a - b")
    diff = (
        "--- a/tests/test_app.py\n+++ b/tests/test_app.py\n@@ -1,2 +1,2 @@\n def test_add():\n"
        "-    assert 2 == 2\n+    assert 3 == 3\n"
    )
    assert ok(ctx, "apply_patch", diff=diff)["files"] == ["tests/test_app.py"]
    assert "3 == 3" in (project.root / "tests/test_app.py").read_text()
    evil = "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-def add(a, b):\n+def add(a, b):  # pwned\n"
    assert "SANDBOX_VIOLATION" in err(ctx, "apply_patch", diff=evil)
    assert "pwned" not in (project.root / "src/app.py").read_text()
    link = "diff --git a/tests/l b/tests/l\nnew file mode 120000\n--- /dev/null\n+++ b/tests/l\n@@ -0,0 +1 @@\n+/etc\n"
    assert "symlinks" in err(ctx, "apply_patch", diff=link)
    assert "does not apply" in err(ctx, "apply_patch", diff=diff)  # already applied
    assert ctx.files_changed == {"tests/test_app.py"}


def text(ctx, name, **args) -> str:
    """What a model reads from a successful call."""
    outcome = call_tool(ctx, name, args)
    assert outcome.ok, outcome.content
    return outcome.as_text()


def test_read_file_gives_numbered_raw_text_with_where_to_go_on(ctx, project):
    (project.root / "src" / "long.py").write_text("".join(f"x{i} = '{i}\\n'\n" for i in range(1, 301)))
    shown = text(ctx, "read_file", path="src/long.py", offset=10, limit=5)
    assert shown.splitlines()[0] == "src/long.py: lines 10-14 of 300; next offset 15"
    assert shown.splitlines()[1] == "10\tx10 = '10\\n'"  # raw text, not JSON-escaped
    assert (
        text(ctx, "read_file", path="src/long.py", offset=299)
        .splitlines()[0]
        .endswith("lines 299-300 of 300 (end of file)")
    )
    folder = text(ctx, "read_file", path=".")
    assert "src/" in folder and "  app.py" in folder and ".git" not in folder


def test_search_groups_by_file_with_context_and_is_bounded(ctx, project):
    (project.root / "src" / "many.py").write_text("".join(f"value = add({i}, 1)\n" for i in range(500)))
    shown = text(ctx, "search_text", pattern="return a", context=1)
    assert shown.splitlines() == ["src/app.py:", "     1- def add(a, b):", "     2:     return a + b", "     3- "]
    bounded = call_tool(ctx, "search_text", {"pattern": "add(", "max_results": 20})
    assert bounded.content["count"] == 20 and bounded.content["truncated"] and "narrow your search" in bounded.as_text()


def test_edit_shows_context_line_numbers_nearest_lines_and_refuses_no_ops_and_broken_python(ctx, project):
    ok(ctx, "write_file", path="tests/test_b.py", content="def f():\n    return 1\n\n\ndef g():\n    return 1\n")
    shown = text(ctx, "edit_file", path="tests/test_b.py", old="def g():\n    return 1", new="def g():\n    return 2")
    assert "5\tdef g():" in shown and "6\t    return 2" in shown
    assert "at lines 2, 6" in err(ctx, "edit_file", path="tests/test_b.py", old="return", new="yield")
    near = err(ctx, "edit_file", path="tests/test_b.py", old="def  g( ):", new="def h():")
    assert "most similar lines" in near and "5\tdef g():" in near
    assert "nothing would change" in err(ctx, "edit_file", path="tests/test_b.py", old="def f", new="def f")
    broken = err(ctx, "edit_file", path="tests/test_b.py", old="def f():", new="def f(:")
    assert "syntax error at line 1" in broken and "def f():" in (project.root / "tests/test_b.py").read_text()
    assert "warning: Python syntax error" in text(ctx, "write_file", path="tests/test_c.py", content="def (:\n")


def test_a_patch_without_a_b_prefixes_is_a_format_error_not_a_violation(ctx):
    ok(ctx, "write_file", path="tests/test_app.py", content="x = 1\n")
    diff = "--- tests/test_app.py\n+++ tests/test_app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    outcome = call_tool(ctx, "apply_patch", {"diff": diff})
    assert not outcome.ok and "format error" in outcome.content and outcome.error.code == "INVALID_PARAM"
    assert not [e for e in ctx.tool_errors if e.code == "SANDBOX_VIOLATION"]


def test_every_result_is_capped_with_head_tail_and_how_to_narrow(ctx, project):
    (project.root / "src" / "big.txt").write_text("".join(f"line {i} " + "x" * 80 + "\n" for i in range(3000)))
    shown = text(ctx, "read_file", path="src/big.txt")
    assert len(shown) <= 16_400 and "left out. Narrow the call" in shown and shown.rstrip().endswith("x" * 10)
    for name in ("read_file", "list_files", "search_text", "write_file", "edit_file", "apply_patch", "run_tests"):
        sentences = [s for s in get_tool(name).description.split(". ") if s.strip()]
        assert 3 <= len(sentences) <= 6, name


def test_bug_tools_open_dedup_transition_and_list(ctx, project):
    first = ok(ctx, "bug_open", title="add returns the wrong sum", test_name="test_add", severity="high")
    again = ok(ctx, "bug_open", title="same failure again", test_name="test_add")
    assert first["created"] and not again["created"] and again["bug_id"] == first["bug_id"]
    bug = BugTracker(project.ledger).get(first["bug_id"])
    assert (bug.unit_id, bug.run_id, bug.task_id, bug.source) == ("u1", "r1", "task-1", "unit_test")
    assert ok(ctx, "bug_list", unit_id="u1", status=["open"])["bugs"][0]["bug_id"] == first["bug_id"]
    assert ok(ctx, "bug_transition", bug_id=first["bug_id"], to="fixing")["from"] == "open"
    assert "INVALID_TRANSITION" in err(ctx, "bug_transition", bug_id=first["bug_id"], to="verified")
    assert "BUG_NOT_FOUND" in err(ctx, "bug_transition", bug_id="bug-nope", to="fixed")
    assert "invalid arguments" in err(ctx, "bug_open", title="x", severity="apocalyptic")


def test_todolist_timeline_and_memory(ctx, project):
    items = ok(ctx, "write_todolist", items=[{"title": "write tests"}, {"title": "run them"}])["items"]
    assert [i["id"] for i in items] == ["step-001", "step-002"]
    assert ok(ctx, "update_todo_item", id="step-001", status="done")["remaining"] == 1
    assert "no item" in err(ctx, "update_todo_item", id="step-9", status="done")
    assert json.loads(todo_path(ctx).read_text())[0]["status"] == "done"
    ok(ctx, "timeline_append", event="test_failed", ref="r1", summary="1 failure")
    [event] = project.ledger.read_as("timeline", TimelineEvent)
    assert (event.event, event.task_id, event.unit_id) == ("test_failed", "task-1", "u1")
    assert "invalid arguments" in err(ctx, "timeline_append", event="Bad Event!")
    ok(ctx, "record_memory", topic="vitest cold start", content="use --pool=threads", relevance=0.9)
    ok(ctx, "record_memory", topic="vitest cold start", content="use --pool=forks now", relevance=0.8)
    request = build_request(project, "tester", context="go")
    assert "--pool=forks now" in request.memory and "--pool=threads" not in request.memory
    assert "--pool" not in request.system  # memory changes between turns: it stays out of the cached system prompt
    assert build_request(project, "coder", context="go").memory == ""


def test_extract_evidence_verifies_quotes_and_refuses_escapes(ctx, tmp_path):
    (tmp_path / "outside.log").write_text("ECONNREFUSED")
    result = ok(
        ctx,
        "extract_evidence",
        evidence=[
            "src/app.py: return   A + b",
            "src/app.py:4: TOKEN = 'x'",
            "src/app.py:1: TOKEN",
            "src/app.py: jwt.verify(token)",
            "../outside.log: ECONNREFUSED",
            "no separator here",
            "src/nope.py: x",
        ],
    )
    assert [r["ok"] for r in result["results"]] == [True, True, False, False, False, False, False]
    assert result["results"][1]["line"] == 4
    assert not result["ok"] and len(result["failed"]) == 5
    assert "'..'" in result["results"][4]["reason"]
    assert ctx.tool_errors and ctx.tool_errors[-1].code == "SANDBOX_VIOLATION"


@pytest.mark.system
def test_run_tests_runs_the_structured_runner(ctx, project):
    (project.root / "tests").mkdir()
    (project.root / "tests" / "test_app.py").write_text(
        "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parents[1] / 'src'))\n"
        "from app import add\n\ndef test_ok():\n    assert add(1, 2) == 3\n\ndef test_bad():\n    assert add(2, 2) == 5\n"
    )
    (project.root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    result = ok(ctx, "run_tests", targets=["tests"], framework="pytest", timeout_s=60)
    assert result["summary"]["total"] == 2 and result["summary"]["failed"] == 1
    assert result["failures"][0]["name"].endswith("test_bad") and result["failures"][0]["hint"]
    assert "looks like an option" in err(ctx, "run_tests", targets=["--rootdir=/"])
    assert "SANDBOX_VIOLATION" in err(ctx, "run_tests", targets=["../elsewhere"])


def test_a_tool_the_role_was_not_given_is_refused(ctx):
    outcome = call_tool(ctx, "bug_open", {"title": "x"}, allowed=["read_file"])
    assert not outcome.ok and "not available to the tester role" in outcome.content
    assert "unknown tool" in call_tool(ctx, "rm_rf", {}).content
    assert "must be a JSON object" in call_tool(ctx, "read_file", ["src/app.py"]).content


@pytest.mark.system
def test_the_first_tool_lookups_from_parallel_threads_all_see_every_tool():
    """Parallel units start their first turns together: nobody may see a half-loaded registry."""
    import subprocess
    import sys

    script = """
import threading
from graphlemon.agents.tools import tool_specs
barrier, errors = threading.Barrier(8), []
def look():
    barrier.wait()
    try:
        tool_specs(["read_file", "write_todolist", "bug_open", "run_tests", "extract_evidence"])
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=look) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
print(errors)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


@pytest.mark.system  # a regular expression is searched in a forked child with a time limit
def test_a_regex_search_is_bounded_in_time(ctx, monkeypatch):
    from graphlemon.agents.tools import file_read

    matches = ok(ctx, "search_text", pattern=r"return \w+", path=".", regex=True)["matches"]
    assert matches == [{"path": "src/app.py", "line": 2, "text": "    return a + b"}]
    assert "no such file" in err(ctx, "search_text", pattern="x+", path="nope", regex=True)  # the child's error
    (ctx.sandbox.root / "src" / "slow.txt").write_text("a" * 40 + "b\n")
    monkeypatch.setattr(file_read, "REGEX_SEARCH_S", 1.0)
    started = time.monotonic()
    said = err(ctx, "search_text", pattern=r"^(a+)+$", path="src/slow.txt", regex=True)
    assert "ran past 1 s and was stopped" in said and time.monotonic() - started < 30  # not 2**40 steps
