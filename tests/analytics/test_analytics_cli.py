"""`graphlemon report` and `graphlemon sql` as real processes, and in this process (`run_main`, the same entry
point) where a test checks many cases of one command whose real process another test here already starts."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import duckdb
import pytest
from analytics_synthetic import build

from graphlemon import analytics
from graphlemon.analytics.formats import records


@pytest.fixture
def filled(project):
    """A project whose ledger holds synthetic seed 1."""
    synthetic = build(1)
    project.ledger.append(*synthetic.all())
    return project, synthetic


@pytest.mark.system
def test_report_json_is_the_api_report(cli, filled, monkeypatch, capsys):
    project, _ = filled
    now_dependent = [
        "age_hours",
        "blocked_hours",
        "quota_wait_hours",
        "node_quota_wait_hours",
    ]  # open intervals end "now"
    for i, name in enumerate(analytics.REPORTS):
        args = ("report", name, "--json", "--project", str(project.root))
        if i == 0:  # one report as a real process, the others in this process
            proc = cli(*args, cwd=project.root)
            code, out, err = proc.returncode, proc.stdout, proc.stderr
        else:
            code, out, err = run_main(args, project.root, monkeypatch, capsys)
        assert code == 0, err
        doc = json.loads(out)
        assert doc["report"] == name
        expected = analytics.build_report(name, project.root)
        assert list(doc["sections"]) == list(expected.sections)
        for section, frame in expected.sections.items():
            got = [{k: v for k, v in row.items() if k not in now_dependent} for row in doc["sections"][section]]
            assert got == records(frame.drop(columns=now_dependent, errors="ignore")), section
            assert len(got) == len(frame) and (frame.empty or got[0].keys() <= set(frame.columns))


@pytest.mark.system
def test_report_filters_csv_markdown_and_table(cli, filled, monkeypatch, capsys):
    project, _ = filled
    root = str(project.root)
    proc = cli("report", "convergence", "--task", "t-2", "--csv", cwd=project.root)
    assert proc.returncode == 0, proc.stderr
    table = list(csv.DictReader(io.StringIO(proc.stdout)))
    expected = analytics.convergence(root, task="t-2")
    assert [r["unit_id"] for r in table] == list(expected["unit_id"])
    assert {r["task_id"] for r in table} == {"t-2"}
    assert json.loads(table[0]["failures_per_round"]) == list(expected["failures_per_round"][0])

    # the other formats in this process (the report as a real process: above)
    code, out, _ = run_main(("report", "budget", "--section", "by_model", "--md", "--project", root), project.root,
                            monkeypatch, capsys)  # fmt: skip
    assert code == 0 and "## by_model (2)" in out and "| model |" in out

    args = ("report", "bugs", "--since", "2026-03-01T09:00", "--until", "2026-03-01T12:00Z", "--category", "unknown")
    code, out, err = run_main(args, project.root, monkeypatch, capsys)
    assert code == 0, err
    assert "Bug history report" in out and "open_bugs" in out and "category=unknown" in out


def run_main(args, cwd, monkeypatch, capsys) -> tuple[int, str, str]:
    """The CLI in this process (same entry point as the console script), for the many small cases."""
    from graphlemon.cli import main

    monkeypatch.chdir(cwd)
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out = capsys.readouterr()
    return done.value.code, out.out, out.err


@pytest.mark.parametrize(
    "args",
    [
        ("report", "bugs", "--json", "--csv"),
        ("report", "bugs", "--since", "last tuesday"),
        ("report", "bugs", "--since", "99999999999999999999w"),
        ("report", "bugs", "--since", "2026-03-02", "--until", "2026-03-01"),
        ("report", "bugs", "--category", "gremlins"),
        ("report", "budget", "--section", "nope"),
        ("report", "convergence", "--task", " "),
        ("sql", "SELEC 1"),
        ("sql",),
        ("sql", "SELECT 1", "--shell-init"),
    ],
)
def test_bad_input_is_invalid_param(filled, args, monkeypatch, capsys):
    project, _ = filled
    code, out, err = run_main(args, project.root, monkeypatch, capsys)
    assert code == 2, out + err
    assert err.startswith("error[INVALID_PARAM]: ")


@pytest.mark.system
def test_empty_project_gives_empty_reports(cli, project, monkeypatch, capsys):
    proc = cli("report", "convergence", cwd=project.root)  # one real process; the rest in-process
    assert proc.returncode == 0 and "units (0): no rows" in proc.stdout, proc.stderr
    for name in analytics.REPORTS:
        code, out, _ = run_main(("report", name, "--json"), project.root, monkeypatch, capsys)
        doc = json.loads(out)
        assert code == 0 and doc["sections"] and all(rows == [] for rows in doc["sections"].values())
    code, out, _ = run_main(("report", "bugs", "--csv"), project.root, monkeypatch, capsys)
    assert (
        code == 0 and out == "bug_id,severity,status,category,task_id,unit_id,test_name,age_hours,reopen_count,title\n"
    )


@pytest.mark.system
def test_a_corrupt_line_fails_with_file_and_line(cli, filled, monkeypatch, capsys):
    project, _ = filled
    runs = project.state_dir / "runs.ndjson"
    lines = runs.read_text().splitlines(keepends=True)
    lines[4] = '{"kind": "run", "run_id": "x", "scope": "unit", "ok": maybe}\n'
    runs.write_text("".join(lines))
    proc = cli("sql", "SELECT 1", cwd=project.root)  # a real process; `report` in this process
    in_process = run_main(("report", "convergence"), project.root, monkeypatch, capsys)
    for code, stderr in ((proc.returncode, proc.stderr), (in_process[0], in_process[2])):
        assert code == 1
        assert stderr.startswith(f"error[LEDGER_CORRUPT]: {runs}:5: ")


@pytest.mark.system
def test_sql_query_and_shell_init(cli, filled, monkeypatch, capsys):
    project, synthetic = filled
    proc = cli(
        "sql", "SELECT model, count(*) AS calls FROM usage GROUP BY model ORDER BY model", "--json", cwd=project.root
    )
    assert proc.returncode == 0, proc.stderr
    counts = {m: sum(u.model == m for u in synthetic.usage) for m in {u.model for u in synthetic.usage}}
    assert json.loads(proc.stdout) == [{"model": m, "calls": counts[m]} for m in sorted(counts)]
    # the other outputs in this process (the command as a real process: above)
    _, out, _ = run_main(("sql", "SELECT count(*) AS n FROM bug_state", "--csv"), project.root, monkeypatch, capsys)
    assert out == f"n\n{len({b.bug_id for b in synthetic.bugs})}\n"

    code, ddl, _ = run_main(("sql", "--shell-init"), project.root, monkeypatch, capsys)
    assert code == 0 and 'CREATE OR REPLACE VIEW "runs"' in ddl
    con = duckdb.connect()
    con.execute(ddl)  # what `duckdb -init` runs
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (len(synthetic.runs),)


@pytest.mark.parametrize(
    "statement",
    ["delete from bugs", "DROP TABLE runs", "select 1; insert into bugs select * from bugs", "create table t(a int)",
     "copy (select 1) to 'out.csv'", "attach 'other.db'", "pragma threads=1", "install httpfs"],
)  # fmt: skip
def test_sql_refuses_every_statement_that_is_not_a_read(filled, statement, monkeypatch, capsys):
    """In this process (an exception would escape `run_main`, not print a traceback); `sql` as a real process:
    test_sql_query_and_shell_init, and its exit on an error: test_a_corrupt_line_fails_with_file_and_line."""
    project, _ = filled
    before = {p.name: p.read_bytes() for p in project.state_dir.glob("*.ndjson")}
    code, _, err = run_main(("sql", statement), project.root, monkeypatch, capsys)
    assert code == 2 and err.startswith("error[INVALID_PARAM]: graphlemon sql only reads the ledger")
    assert "Traceback" not in err and not (project.root / "out.csv").exists()
    assert {p.name: p.read_bytes() for p in project.state_dir.glob("*.ndjson")} == before


@pytest.mark.system
def test_report_and_sql_never_import_prefect(filled):
    project, _ = filled
    code = (
        "import sys\n"
        "from graphlemon.cli import main\n"
        "for argv in (['report', 'convergence', '--json'], ['report', 'bugs', '--md'], ['sql', 'SELECT 1']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code == 0, exc.code\n"
        "print('prefect' in sys.modules, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=project.root, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "False"


@pytest.mark.system
def test_every_command_has_help(cli):
    for args in (
        ("report", "--help"),
        ("report", "convergence", "--help"),
        ("report", "bugs", "--help"),
        ("sql", "--help"),
    ):
        proc = cli(*args)
        assert proc.returncode == 0 and "Usage" in proc.stdout


def test_numbers_in_tables_group_thousands_the_same_way():
    from graphlemon.analytics.formats import cell_text

    assert [cell_text(v) for v in (999, 3130, 31_700, -2000)] == ["999", "3,130", "31,700", "-2,000"]
    assert [cell_text(v) for v in (0.002159, 12.5, 1234.0, 98_765.4)] == ["0.002159", "12.5", "1,234", "98,765"]
    assert cell_text([2, 1, 0]) == "2 → 1 → 0" and cell_text(None) == "-" and cell_text(True) == "yes"
