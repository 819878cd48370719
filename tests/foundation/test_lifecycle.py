"""Every lifecycle table: each legal transition accepted, illegal ones refused, every status covered."""

from __future__ import annotations

import pytest

from graphlemon import lifecycle
from graphlemon.errors import ErrorCode, GraphLemonError

LEGAL = [
    (name, src, dst)
    for name, (table, _) in lifecycle.TABLES.items()
    for src, targets in table.items()
    for dst in sorted(targets)
]


@pytest.mark.parametrize("name", sorted(lifecycle.TABLES))
def test_every_status_has_a_row_and_every_target_is_a_status(name):
    table, statuses = lifecycle.TABLES[name]
    assert set(table) - {"_initial"} == set(statuses)
    for targets in table.values():
        assert targets <= set(statuses)


@pytest.mark.parametrize("name, src, dst", LEGAL)
def test_legal_transitions_are_accepted(name, src, dst):
    lifecycle.check(name, None if src == "_initial" else src, dst)


@pytest.mark.parametrize(
    "name, src, dst",
    [
        ("task", "done", "planning"),  # manual_resume on a done task (REQ-09 failure)
        ("task", "abandoned", "queued"),
        ("task", None, "running"),
        ("task", "queued", "done"),
        ("task", "planning", "done"),
        ("task", "waiting_for_quota", "done"),
        ("node", "done", "running"),
        ("node", "running", "retrying"),  # must reflect first (REQ-03)
        ("node", "pending", "done"),
        ("node", None, "done"),
        ("bug", "fixed", "fixed"),
        ("bug", "open", "verified"),
        ("bug", "verified", "open"),
        ("bug", None, "fixed"),
    ],
)
def test_illegal_transitions_are_refused(name, src, dst):
    with pytest.raises(GraphLemonError) as info:
        lifecycle.check(name, src, dst)
    assert info.value.code == ErrorCode.INVALID_TRANSITION
    assert dst in info.value.message


def test_terminal_task_statuses_have_no_way_out():
    for status in lifecycle.TERMINAL_TASK:
        assert lifecycle.allowed("task", status) == frozenset()
