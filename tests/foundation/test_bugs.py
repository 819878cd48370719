"""Bug tracker: dedup, transitions, reopen, human reports, filters."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from graphlemon.bugs import BugTracker
from graphlemon.errors import ErrorCode, GraphLemonError


@pytest.fixture
def tracker(project):
    return BugTracker(project.ledger)


def open_failure(tracker, test="missing body -> 400", unit="todo-be", run="run-1"):
    return tracker.open(
        title=f"{test}: expected 400 got 500", source="unit_test", unit_id=unit, test_name=test, run_id=run
    )


def test_repeated_failure_is_deduplicated(tracker):
    bug_id, created = open_failure(tracker)
    again, created_again = open_failure(tracker, run="run-2")
    assert created and not created_again and again == bug_id
    assert len(tracker.all()) == 1
    other, created_other = open_failure(tracker, unit="todo-fe")
    assert created_other and other != bug_id


def test_bug_id_format(tracker):
    bug_id, _ = open_failure(tracker)
    assert __import__("re").fullmatch(r"bug-\d{8}-\d{4}-[0-9a-f]{4}", bug_id)


def test_open_fixing_fixed_with_refs_and_by(tracker):
    bug_id, _ = open_failure(tracker)
    assert tracker.transition(bug_id, "fixing", by="loop") == ("open", "fixing")
    assert tracker.transition(bug_id, "fixed", by="tester", fix_refs=["run-2"]) == ("fixing", "fixed")
    bug = tracker.get(bug_id)
    assert bug.status == "fixed" and bug.fix_refs == ["run-2"]
    events = [e for e in tracker.ledger.read("bug") if e.bug_id == bug_id]
    assert [(e.event, e.from_status, e.status, e.by) for e in events] == [
        ("open", None, "open", "system"),
        ("transition", "open", "fixing", "loop"),
        ("transition", "fixing", "fixed", "tester"),
    ]


def test_fixed_bug_no_longer_dedups_and_can_be_reopened(tracker):
    bug_id, _ = open_failure(tracker)
    tracker.transition(bug_id, "fixed", fix_refs=["run-2"])
    new_id, created = open_failure(tracker, run="run-3")
    assert created and new_id != bug_id  # a regression after a fix is a new bug
    tracker.transition(bug_id, "reopened", note="came back")
    assert tracker.get(bug_id).reopen_count == 1
    assert open_failure(tracker)[0] in {bug_id, new_id}


def test_illegal_transition_is_refused_and_writes_nothing(tracker):
    bug_id, _ = open_failure(tracker)
    before = len(tracker.ledger.read("bug"))
    with pytest.raises(GraphLemonError) as info:
        tracker.transition(bug_id, "verified")
    assert info.value.code == ErrorCode.INVALID_TRANSITION
    assert len(tracker.ledger.read("bug")) == before


def test_unknown_bug_is_bug_not_found(tracker):
    with pytest.raises(GraphLemonError) as info:
        tracker.transition("bug-nope", "fixed")
    assert info.value.code == ErrorCode.BUG_NOT_FOUND


@pytest.mark.parametrize("description", ["", "   \n"])
def test_human_report_with_empty_description_is_refused(tracker, description):
    with pytest.raises(GraphLemonError) as info:
        tracker.report(title="snake eats itself", description=description)
    assert info.value.code == ErrorCode.INVALID_PARAM
    assert tracker.all() == {}


@pytest.mark.parametrize(
    ("title", "description"),
    [("x" * 201, "seen"), ("wall", "y" * 20_001), ("  \n ", "seen")],
    ids=["title-too-long", "description-too-long", "blank-title"],
)
def test_human_report_out_of_bounds_is_refused(tracker, title, description):
    with pytest.raises(GraphLemonError) as info:
        tracker.report(title=title, description=description)
    assert info.value.code == ErrorCode.INVALID_PARAM
    assert tracker.all() == {}


def test_system_titles_are_one_line_and_bounded(tracker):
    bug_id, _ = tracker.open(title="first line\n  second\tline " + "z" * 300, source="unit_test")
    title = tracker.get(bug_id).title
    assert title.startswith("first line second line z") and len(title) == 200 and title.endswith("…")


def test_human_report(tracker):
    bug_id = tracker.report(title="wall does not end the game", description="at x=9 moving right it wraps")
    bug = tracker.get(bug_id)
    assert bug.source == "human_reported" and bug.detail == "at x=9 moving right it wraps" and bug.status == "open"


def test_update_refines_fields_without_status_change(tracker):
    bug_id, _ = open_failure(tracker)
    tracker.update(bug_id, category="impl_bug", root_cause_category="coder", suggested_route="fast_lane")
    bug = tracker.get(bug_id)
    assert (bug.status, bug.category, bug.root_cause_category, bug.suggested_route) == (
        "open",
        "impl_bug",
        "coder",
        "fast_lane",
    )
    with pytest.raises(GraphLemonError):
        tracker.update(bug_id, status="fixed")


def test_list_filters(tracker):
    a, _ = open_failure(tracker, test="t1", unit="u1")
    b, _ = open_failure(tracker, test="t2", unit="u2")
    tracker.report(title="by hand", description="seen")
    tracker.transition(b, "fixed")
    assert [x.bug_id for x in tracker.list(unit_id="u1")] == [a]
    assert [x.bug_id for x in tracker.list(status=["open", "fixing"], source="unit_test")] == [a]
    assert [x.bug_id for x in tracker.list(status="fixed")] == [b]
    assert len(tracker.list(source="human_reported")) == 1
    assert tracker.list(category="impl_bug") == []


@pytest.mark.system
def test_concurrent_processes_open_one_bug_for_one_failure(project):
    code = (
        "import sys; from graphlemon.project import open_project; from graphlemon.bugs import BugTracker;"
        "t = BugTracker(open_project(sys.argv[1]).ledger);"
        "print(t.open(title='t', source='unit_test', unit_id='u', test_name='same test')[0])"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(project.root)], stdout=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    ids = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(ids) == 1
    assert len(BugTracker(project.ledger).all()) == 1


def test_threads_sharing_one_tracker_fold_each_event_once(project):
    """Parallel units share the session's tracker: concurrent folds must not apply an event twice."""
    from graphlemon.bugs import fold
    from graphlemon.ledger import Ledger

    tracker, problems = BugTracker(project.ledger), []

    def unit(u: int) -> None:
        try:
            for t in range(15):
                bug_id, _ = tracker.open(title=f"t{t} fails", source="unit_test", unit_id=f"u{u}", test_name=f"t{t}")
                tracker.transition(bug_id, "fixing")
                tracker.transition(bug_id, "fixed", fix_refs=[f"run-{u}-{t}"])
                assert tracker.get(bug_id).status == "fixed"
                tracker.list(unit_id=f"u{u}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            problems.append(exc)

    def watch() -> None:
        try:
            while any(t.is_alive() for t in pool[:6]):
                tracker.all()
        except BaseException as exc:  # noqa: BLE001 - reported below
            problems.append(exc)

    pool = [threading.Thread(target=unit, args=(u,)) for u in range(6)]
    pool += [threading.Thread(target=watch) for _ in range(4)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often: the race needs two folds interleaved
    try:
        for t in pool:
            t.start()
        for t in pool:
            t.join(timeout=120)
    finally:
        sys.setswitchinterval(interval)
    assert not problems, problems[:3]
    fresh = fold(Ledger(project.state_dir).read("bug"))
    shared = tracker.all()
    assert len(shared) == 90 and {b.bug_id: (b.status, b.events) for b in shared.values()} == {
        b.bug_id: (b.status, b.events) for b in fresh.values()
    }
    assert all(b.events == 3 and b.fix_refs == [b.fix_refs[0]] for b in shared.values())
