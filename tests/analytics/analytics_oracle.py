"""The right answers for the analytics reports, computed in plain Python over the records.

Written from the definitions in docs/analytics.md, not from the SQL: loops, dicts and the
domain's own bug fold (`graphlemon.bugs.fold`). Rows are dicts keyed like the reports' rows.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime
from statistics import mean

from analytics_synthetic import Synthetic

from graphlemon.bugs import Bug, fold

ACTIVE = {"open", "fixing", "reopened"}
SEVERITY_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3}


@dataclass
class F:
    """Report filters (aware UTC datetimes)."""

    task: str | None = None
    unit: str | None = None
    test: str | None = None
    category: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    as_of: datetime | None = None

    def in_range(self, ts: datetime) -> bool:
        return (self.since is None or ts >= self.since) and (self.until is None or ts < self.until)


def hours(a: datetime, b: datetime) -> float:
    return (b - a).total_seconds() / 3600


def slope(ys: list[int]) -> float | None:
    """Least-squares slope of ys over x = 1..n."""
    n = len(ys)
    if n < 2:
        return None
    xs = range(1, n + 1)
    mx, my = mean(xs), mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def mix(counter: Counter) -> str | None:
    return " ".join(f"{k}={counter[k]}" for k in sorted(counter)) or None


@dataclass
class BugFacts:
    bug: Bug
    task_id: str | None  # the bug's own task, else the task of the run that opened it
    first_fixed_at: datetime | None


def bug_facts(s: Synthetic) -> dict[str, BugFacts]:
    run_task = {r.run_id: r.task_id for r in s.runs}
    first_fixed: dict[str, datetime] = {}
    for ev in s.bugs:
        if ev.event == "transition" and ev.status == "fixed":
            first_fixed.setdefault(ev.bug_id, ev.ts)
    return {
        bug_id: BugFacts(bug, bug.task_id or run_task.get(bug.run_id), first_fixed.get(bug_id))
        for bug_id, bug in fold(s.bugs).items()
    }


# -- convergence -----------------------------------------------------------------------------


def _bug_rounds(s: Synthetic, f: F) -> dict[str, set[tuple[int, int]]]:
    rounds: dict[str, set[tuple[int, int]]] = defaultdict(set)
    for r in s.runs:
        if f.in_range(r.ts):
            for failure in r.failures:
                if failure.bug_id:
                    rounds[failure.bug_id].add((r.loop_round, r.attempt))
    return rounds


def _blank(extra: dict) -> dict:
    row = {
        "rounds": 0, "failures_per_round": None, "failure_trend": None, "rounds_to_green": None, "green": None,
        "bugs_opened": 0, "bugs_fixed": 0, "bugs_reopened": 0, "mean_hours_to_fix": None, "triage_mix": None,
        "routes": None, "max_rounds_same_bug": 0,
    }  # fmt: skip
    row.update(extra)
    return row


def _round_stats(ordered: list) -> dict:
    failed = [r[0] for r in ordered]
    return {
        "rounds": len(ordered),
        "failures_per_round": failed,
        "failure_trend": slope(failed),
        "rounds_to_green": next((i + 1 for i, r in enumerate(ordered) if r[1]), None),
        "green": ordered[-1][1],
    }


def _add_bug_facts(rows: dict, key_of, s: Synthetic, f: F, bugs: dict[str, BugFacts], new_row) -> None:
    """Bug counts, routes, mean time to fix and stuck bugs, grouped by key_of(facts)."""
    routes: dict = defaultdict(Counter)
    for ev in s.bugs:
        if ev.bug_id in bugs and f.in_range(ev.ts):
            row = rows.setdefault(key_of(bugs[ev.bug_id]), new_row())
            row["bugs_opened"] += ev.event == "open"
            row["bugs_fixed"] += ev.event == "transition" and ev.status == "fixed"
            row["bugs_reopened"] += ev.event == "transition" and ev.status == "reopened"
            if ev.suggested_route:
                routes[key_of(bugs[ev.bug_id])][ev.suggested_route] += 1
    for key, counter in routes.items():
        rows[key]["routes"] = mix(counter)
    fix_hours: dict = defaultdict(list)
    for facts in bugs.values():
        if facts.first_fixed_at and f.in_range(facts.bug.opened_at):
            fix_hours[key_of(facts)].append(hours(facts.bug.opened_at, facts.first_fixed_at))
    for key, values in fix_hours.items():
        if key in rows:
            rows[key]["mean_hours_to_fix"] = mean(values)
    rounds = _bug_rounds(s, f)
    for bug_id, facts in bugs.items():
        n = len(rounds.get(bug_id, ()))
        if n:
            row = rows.setdefault(key_of(facts), new_row())
            row["max_rounds_same_bug"] = max(row["max_rounds_same_bug"], n)
            if n >= 3:
                row.setdefault("_stuck", []).append(bug_id)


def convergence_units(s: Synthetic, f: F) -> dict[tuple, dict]:
    rows: dict[tuple, dict] = {}
    latest: dict[tuple, dict] = defaultdict(dict)
    for r in s.runs:
        if (
            r.scope == "unit"
            and r.unit_id
            and (f.task is None or r.task_id == f.task)
            and (f.unit is None or r.unit_id == f.unit)
            and f.in_range(r.ts)
        ):
            rounds = latest[(r.task_id, r.unit_id)]
            if (r.loop_round, r.attempt) not in rounds or r.ts > rounds[(r.loop_round, r.attempt)].ts:
                rounds[(r.loop_round, r.attempt)] = r
    for key, rounds in latest.items():
        rows[key] = _blank(_round_stats([(rounds[k].summary.failed, rounds[k].ok) for k in sorted(rounds)]))
    bugs = {
        b: facts for b, facts in bug_facts(s).items()
        if facts.bug.unit_id is not None and (f.task is None or facts.task_id == f.task) and (f.unit is None or facts.bug.unit_id == f.unit)
    }  # fmt: skip
    _add_bug_facts(rows, lambda facts: (facts.task_id, facts.bug.unit_id), s, f, bugs, lambda: _blank({}))
    triage: dict = defaultdict(Counter)
    run_task = {r.run_id: r.task_id for r in s.runs}
    for t in s.triage:
        task = t.task_id or run_task.get(t.run_id)
        if f.in_range(t.ts) and (f.task is None or task == f.task):
            for unit in t.affected_units:
                if f.unit is None or unit == f.unit:
                    triage[(task, unit)][t.category] += 1
    for key, counter in triage.items():
        rows.setdefault(key, _blank({}))["triage_mix"] = mix(counter)
    for row in rows.values():
        row["stuck_bugs"] = sorted(row.pop("_stuck", []))
        row["non_converging"] = row["max_rounds_same_bug"] >= 3
    return rows


def convergence_tasks(s: Synthetic, f: F) -> dict[str | None, dict]:
    rows: dict[str | None, dict] = {}
    new = lambda: _blank({"status": None, "units": 0, "units_green": 0, "non_converging_units": 0})  # noqa: E731
    per_round: dict = defaultdict(lambda: defaultdict(dict))  # task -> loop_round -> (scope, unit) -> run
    for r in s.runs:
        if (f.task is None or r.task_id == f.task) and (f.unit is None or r.unit_id == f.unit) and f.in_range(r.ts):
            last = per_round[r.task_id][r.loop_round]
            if (r.scope, r.unit_id) not in last or r.ts > last[(r.scope, r.unit_id)].ts:
                last[(r.scope, r.unit_id)] = r
    for task, rounds in per_round.items():
        ordered = [
            (sum(r.summary.failed for r in rounds[lr].values()), all(r.ok for r in rounds[lr].values()))
            for lr in sorted(rounds)
        ]
        row = rows[task] = new()
        row.update(_round_stats(ordered))
        row["org_rounds"] = row.pop("rounds")
    bugs = {
        b: facts for b, facts in bug_facts(s).items()
        if (f.task is None or facts.task_id == f.task) and (f.unit is None or facts.bug.unit_id == f.unit)
    }  # fmt: skip
    _add_bug_facts(rows, lambda facts: facts.task_id, s, f, bugs, new)
    triage: dict = defaultdict(Counter)
    run_task = {r.run_id: r.task_id for r in s.runs}
    for t in s.triage:
        task = t.task_id or run_task.get(t.run_id)
        if f.in_range(t.ts) and (f.task is None or task == f.task):
            triage[task][t.category] += 1
    for task, counter in triage.items():
        rows.setdefault(task, new())["triage_mix"] = mix(counter)
    for (task, _unit), unit_row in convergence_units(s, f).items():
        row = rows.setdefault(task, new())
        row["units"] += 1
        row["units_green"] += bool(unit_row["green"])
        row["non_converging_units"] += unit_row["non_converging"]
    status = {}
    for ev in sorted(s.tasks, key=lambda e: e.ts):
        if f.task is None or ev.task_id == f.task:
            status[ev.task_id] = ev.status
    for task, st in status.items():
        if task in rows or f.unit is None:
            rows.setdefault(task, new())["status"] = st
    for row in rows.values():
        row.setdefault("org_rounds", row.pop("rounds", 0))
        row.pop("_stuck", None)
        row["non_converging"] = row["max_rounds_same_bug"] >= 3 or row["non_converging_units"] > 0
    return rows


# -- budget ----------------------------------------------------------------------------------


def _spend(records: list) -> dict:
    inp = sum(u.input_tokens for u in records)
    cread = sum(u.cache_read_tokens for u in records)
    cwrite = sum(u.cache_write_tokens for u in records)
    out = sum(u.output_tokens for u in records)
    return {
        "calls": len(records), "input_tokens": inp, "output_tokens": out, "cache_read_tokens": cread,
        "cache_write_tokens": cwrite, "total_tokens": inp + out + cread + cwrite, "cost_usd": sum(u.cost_usd for u in records),
        "cache_hit_share": cread / (inp + cread + cwrite) if inp + cread + cwrite else None,
    }  # fmt: skip


def _usage_window(s: Synthetic, f: F) -> list:
    return [
        u
        for u in s.usage
        if (f.task is None or u.task_id == f.task) and (f.unit is None or u.unit_id == f.unit) and f.in_range(u.ts)
    ]


def spend_by(s: Synthetic, f: F, *keys: str) -> dict[tuple, dict]:
    groups: dict = defaultdict(list)
    for u in _usage_window(s, f):
        groups[tuple(getattr(u, k) for k in keys)].append(u)
    return {key: _spend(records) for key, records in groups.items()}


def _intervals(events: list, as_of: datetime, start_of=lambda e: e.ts):
    """(event, hours until the next event or as_of), events of one task or node in ts order."""
    ordered = sorted(events, key=lambda e: e.ts)
    for i, ev in enumerate(ordered):
        end = ordered[i + 1].ts if i + 1 < len(ordered) else as_of
        yield ev, max(0.0, hours(start_of(ev), end))


def budget_tasks(s: Synthetic, f: F) -> dict[str | None, dict]:
    window = defaultdict(list)
    for u in _usage_window(s, f):
        window[u.task_id].append(u)
    keys = set(window)
    if f.unit is None:
        keys |= {e.task_id for e in s.tasks} | {b.task_id for b in s.budget}
    keys = {k for k in keys if f.task is None or k == f.task}
    rows = {}
    for task in keys:
        row = _spend(window[task]) if task in window else dict.fromkeys(_spend([]), None)
        lifetime = [u for u in s.usage if u.task_id == task] if task is not None else []
        tokens = (
            sum(u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens for u in lifetime)
            if lifetime
            else None
        )
        cost = sum(u.cost_usd for u in lifetime) if lifetime else None
        limits = sorted((b for b in s.budget if b.task_id == task), key=lambda b: b.ts)
        limit = limits[-1] if limits else None
        statuses = sorted((e for e in s.tasks if e.task_id == task), key=lambda e: e.ts)
        status = statuses[-1].status if statuses else None
        used = None if limit is None else (cost or 0) if limit.limit_type == "cost_usd" else (tokens or 0)
        unit_ok: dict = {}
        for r in sorted(
            (r for r in s.runs if r.scope == "unit" and r.unit_id and r.task_id == task and task is not None),
            key=lambda r: r.ts,
        ):
            unit_ok[r.unit_id] = r.ok
        progress = sum(unit_ok.values()) / len(unit_ok) if unit_ok else None
        done = status in ("done", "abandoned")
        row.update(
            task_id=task, status=status, limit_type=limit and limit.limit_type, limit_value=limit and limit.limit_value,
            used=used, burn=None if used is None else used / limit.limit_value,
            units=len(unit_ok), units_green=sum(unit_ok.values()), progress=progress,
            projected_cost_usd=(cost or 0) if done else cost / progress if progress and cost is not None else None,
            projected_burn=None if used is None else used / limit.limit_value if done else used / progress / limit.limit_value if progress else None,
        )  # fmt: skip
        row.update(_waits(s, f, task))
        rows[task] = row
    return rows


def _waits(s: Synthetic, f: F, task: str | None) -> dict:
    out = {
        "budget_blocks": 0,
        "quota_blocks": 0,
        "blocked_hours": 0.0,
        "quota_wait_hours": 0.0,
        "node_quota_wait_hours": 0.0,
    }
    if task is None:
        return out
    for ev, h in _intervals([e for e in s.tasks if e.task_id == task], f.as_of):
        if not f.in_range(ev.ts):
            continue
        if ev.status == "blocked_pending_human" and ev.blocked_reason in (
            "budget_exceeded",
            "usage_limit_wait_timeout",
        ):
            out["budget_blocks" if ev.blocked_reason == "budget_exceeded" else "quota_blocks"] += 1
            out["blocked_hours"] += h
        if ev.status == "waiting_for_quota":
            out["quota_wait_hours"] += h
    for node_id in {n.node_exec_id for n in s.nodes if n.task_id == task}:
        events = [n for n in s.nodes if n.node_exec_id == node_id and n.event == "transition"]
        for ev, h in _intervals(
            events,
            f.as_of,
            lambda e: e.quota_wait_started_at if e.status == "waiting_for_quota" and e.quota_wait_started_at else e.ts,
        ):
            if ev.status == "waiting_for_quota" and f.in_range(ev.ts):
                out["node_quota_wait_hours"] += h
    return out


# -- bug history -----------------------------------------------------------------------------


def bug_set(s: Synthetic, f: F) -> list[BugFacts]:
    return [
        facts for facts in bug_facts(s).values()
        if (f.task is None or facts.task_id == f.task) and (f.unit is None or facts.bug.unit_id == f.unit)
        and (f.test is None or facts.bug.test_name == f.test) and (f.category is None or facts.bug.category == f.category)
        and f.in_range(facts.bug.opened_at)
    ]  # fmt: skip


def open_bugs(s: Synthetic, f: F) -> list[dict]:
    active = [x for x in bug_set(s, f) if x.bug.status in ACTIVE]
    active.sort(key=lambda x: (SEVERITY_RANK[x.bug.severity], x.bug.opened_at, x.bug.bug_id))
    return [
        {"bug_id": x.bug.bug_id, "severity": x.bug.severity, "status": x.bug.status, "category": x.bug.category,
         "task_id": x.task_id, "unit_id": x.bug.unit_id, "test_name": x.bug.test_name,
         "age_hours": hours(x.bug.opened_at, f.as_of), "reopen_count": x.bug.reopen_count, "title": x.bug.title}
        for x in active
    ]  # fmt: skip


def open_by_age(s: Synthetic, f: F) -> dict[str, dict]:
    rows: dict = {}
    for b in open_bugs(s, f):
        row = rows.setdefault(b["severity"], {"under_1d": 0, "d1_to_7d": 0, "over_7d": 0, "total": 0})
        age = b["age_hours"]
        row["under_1d" if age < 24 else "d1_to_7d" if age < 168 else "over_7d"] += 1
        row["total"] += 1
    return rows


def signatures(s: Synthetic, f: F) -> dict[str, dict]:
    groups = defaultdict(list)
    for x in bug_set(s, f):
        sig = x.bug.signature or x.bug.test_name
        if sig is not None:
            groups[sig].append(x)
    rows = {}
    for sig, members in groups.items():
        tasks = sorted({x.task_id for x in members if x.task_id is not None})
        if len(tasks) >= 2:
            rows[sig] = {
                "tasks": len(tasks), "bugs": len(members), "active": sum(x.bug.status in ACTIVE for x in members),
                "units": len({x.bug.unit_id for x in members if x.bug.unit_id is not None}),
                "first_seen": min(x.bug.opened_at for x in members), "last_seen": max(x.bug.opened_at for x in members),
                "first_task_ids": tasks[:10],
            }  # fmt: skip
    return rows


def flaky_tests(s: Synthetic, f: F) -> dict[tuple, dict]:
    runs = [
        r for r in s.runs
        if r.code_ref and not r.crashed and not r.timed_out and (f.task is None or r.task_id == f.task)
        and (f.unit is None or r.unit_id == f.unit) and f.in_range(r.ts)
    ]  # fmt: skip
    per_code = Counter((r.scope, r.unit_id, r.code_ref) for r in runs)
    failed_in: dict = defaultdict(set)
    for r in runs:
        for failure in r.failures:
            if f.test is None or failure.test == f.test:
                failed_in[(r.scope, r.unit_id, failure.test, r.code_ref)].add(r.run_id)
    rows = {}
    for (scope, unit, test, code_ref), run_ids in failed_in.items():
        passed = per_code[(scope, unit, code_ref)] - len(run_ids)
        if passed > 0:
            rows[(scope, unit, test, code_ref)] = {"failed_runs": len(run_ids), "passed_runs": passed}
    return rows


def share_by(s: Synthetic, f: F, field: str) -> dict[str, dict]:
    members = [x for x in bug_set(s, f) if getattr(x.bug, field) is not None]
    counts = Counter(getattr(x.bug, field) for x in members)
    active = Counter(getattr(x.bug, field) for x in members if x.bug.status in ACTIVE)
    return {k: {"bugs": n, "active": active[k], "share": n / len(members)} for k, n in counts.items()}
