"""pytest plugin: one JSON line per test phase, collection error and session end.

Loaded by `graphlemon test` through PYTEST_PLUGINS (this folder on PYTHONPATH) and
active only when GRAPHLEMON_PYTEST_REPORT names the file to append to. Lines are
flushed as they happen, so a run that is killed keeps what it reported, and the
test that started last without finishing is the one that hung. Standalone on
purpose (runs in the project's interpreter): stdlib only, Python 3.8+.
"""

import ast
import json
import os

_REPORT_ENV = "GRAPHLEMON_PYTEST_REPORT"
_MAX_TEXT = 20000
_MAX_VALUE = 1024 * 1024  # compared values are kept whole up to this size


class _Writer:
    def __init__(self, path):
        self._fh = open(path, "a", encoding="utf-8")

    def write(self, **record):
        self._fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()

    def close(self):
        self._fh.close()


_writer = None
_current = None  # the nodeid of the test that is running
_values = {}  # nodeid -> the last failing comparison's operands (op, left, right), as full reprs


def _text(longrepr):
    if longrepr is None:
        return ""
    try:
        text = str(longrepr)
    except Exception as exc:  # a broken __repr__ in user code must not break the report
        text = f"<unprintable failure: {exc!r}>"
    if len(text) > _MAX_TEXT:
        text = text[: _MAX_TEXT // 4] + "\n...\n" + text[-_MAX_TEXT * 3 // 4 :]
    return text


def _crash(longrepr):
    crash = getattr(longrepr, "reprcrash", None)
    if crash is None:
        return None
    return {"path": getattr(crash, "path", None), "lineno": getattr(crash, "lineno", None),
            "message": getattr(crash, "message", None)}  # fmt: skip


def pytest_configure(config):
    global _writer
    path = os.environ.get(_REPORT_ENV)
    if not path or hasattr(config, "workerinput"):  # xdist workers: the controller reports
        return
    _writer = _Writer(path)


def pytest_unconfigure(config):
    global _writer
    if _writer is not None:
        _writer.close()
        _writer = None


_current = None  # the nodeid of the test that is running
_values = {}  # nodeid -> the last failing comparison's operands (op, left, right), as full reprs


def _repr(value):
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ in user code
        text = f"<unprintable {type(value).__name__}: {exc!r}>"
    return text[:_MAX_VALUE]


def pytest_assertrepr_compare(config, op, left, right):
    """Called by pytest's rewritten asserts with the real operands of a failing comparison: keep them
    whole (pytest's own message shortens long values before they could be compared)."""
    if _writer is not None and _current is not None:
        _values[_current] = {"op": op, "left": _repr(left), "right": _repr(right), "source": "assertrepr"}
    return None


def _doctest_values(call):
    """A failing doctest example: its wanted and printed output, and its line in the file (1-based)."""
    error = call.excinfo.value
    failure = (getattr(error, "failures", None) or [error])[0]  # pytest raises MultipleDoctestFailures or one
    example, test = getattr(failure, "example", None), getattr(failure, "test", None)
    if example is None or test is None or not hasattr(failure, "got"):
        return None
    line = test.lineno + example.lineno + 1 if test.lineno is not None else None
    return {
        "op": "==",
        "left": example.want.strip(),
        "right": str(failure.got).strip(),
        "source": "doctest",
        "names": ["expected", "got"],
        "line": line,
    }


def _helper_values(call):
    """For an assert pytest did not rewrite (a helper module): `assert a == b` evaluated from the
    failing frame's own variables (names and attributes only, never a call)."""
    excinfo = getattr(call, "excinfo", None)
    if excinfo is None or not excinfo.errisinstance(AssertionError) or not excinfo.traceback:
        return None
    entry = excinfo.traceback[-1]
    try:
        statement = str(entry.statement).strip()
        node = ast.parse(statement).body[0]
    except Exception:
        return None
    if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1):
        return None
    op = {ast.Eq: "==", ast.NotEq: "!="}.get(type(node.test.ops[0]))
    if op is None:
        return None
    frame = entry.frame
    try:
        left = _lookup(node.test.left, frame.f_locals, frame.f_globals)
        right = _lookup(node.test.comparators[0], frame.f_locals, frame.f_globals)
    except LookupError:
        return None
    names = [getattr(n, "id", None) or getattr(n, "attr", None) for n in (node.test.left, node.test.comparators[0])]
    return {"op": op, "left": _repr(left), "right": _repr(right), "source": "frame", "names": names}


def _lookup(node, local_vars, global_vars):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        for scope in (local_vars, global_vars):
            if node.id in scope:
                return scope[node.id]
        raise LookupError(node.id)
    if isinstance(node, ast.Attribute):
        owner = _lookup(node.value, local_vars, global_vars)
        try:
            return object.__getattribute__(owner, node.attr)
        except AttributeError as exc:
            raise LookupError(node.attr) from exc
    raise LookupError(type(node).__name__)


def pytest_runtest_makereport(item, call):
    if _writer is None or call.excinfo is None:
        return
    if item.nodeid not in _values:
        try:
            found = _doctest_values(call) or _helper_values(call)
        except Exception:
            found = None
        if found is not None:
            _values[item.nodeid] = found
    values = _values.get(item.nodeid)
    if values is not None and values.get("source") != "doctest":
        try:
            values["data"] = _data_names(item)
        except Exception:  # a mark written in a form we do not know: no names
            values["data"] = []


def _data_names(item):
    """The test's arguments that `@pytest.mark.parametrize` passes directly: the test's own data, written in the
    test file (an `indirect` one goes through a fixture first, so it is not)."""
    names = set()
    for mark in item.iter_markers("parametrize"):
        argnames = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if isinstance(argnames, str):
            argnames = [n.strip() for n in argnames.split(",") if n.strip()]
        indirect = mark.kwargs.get("indirect", False)
        for name in argnames:
            if indirect is True or (isinstance(indirect, (list, tuple)) and name in indirect):
                continue
            names.add(str(name))
    return sorted(names)


def pytest_runtest_logstart(nodeid, location):
    global _current
    _current = nodeid
    if _writer is not None:
        _writer.write(event="start", nodeid=nodeid, location=list(location))


def _subtest(report):
    """The parameters of a subtest report (pytest 9's subtests, pytest-subtests, unittest subTest), else None."""
    context = getattr(report, "context", None)
    if context is None or not hasattr(context, "kwargs"):
        return None
    for name in ("_sub_test_description", "sub_test_description"):
        describe = getattr(report, name, None)
        if callable(describe):
            try:
                return str(describe())
            except Exception:
                break
    parts = [f"[{context.msg}]"] if getattr(context, "msg", None) is not None else []
    if context.kwargs:
        parts.append("({})".format(", ".join(f"{k}={v}" for k, v in context.kwargs.items())))
    return " ".join(parts) or "(<subtest>)"


def pytest_runtest_logreport(report):
    if _writer is None:
        return
    values = _values.pop(report.nodeid, None) if report.failed else None
    subtest = _subtest(report)
    if subtest is not None:
        _writer.write(event="subtest", nodeid=report.nodeid, outcome=report.outcome, subtest=subtest,
                      longrepr=_text(report.longrepr) if report.failed else "",
                      crash=_crash(report.longrepr) if report.failed else None, values=values)  # fmt: skip
        return
    longrepr = report.longrepr
    skip_reason = None
    if report.skipped and isinstance(longrepr, tuple) and len(longrepr) == 3:
        skip_reason = str(longrepr[2])
    _writer.write(
        event="test",
        nodeid=report.nodeid,
        when=report.when,
        outcome=report.outcome,
        location=list(report.location) if report.location else None,
        wasxfail=hasattr(report, "wasxfail"),
        longrepr="" if skip_reason is not None else _text(longrepr),
        crash=_crash(longrepr),
        skip_reason=skip_reason,
        values=values,
    )


def pytest_collectreport(report):
    if _writer is not None and report.failed:
        _writer.write(event="collect_error", nodeid=report.nodeid, longrepr=_text(report.longrepr),
                      crash=_crash(report.longrepr))  # fmt: skip


def pytest_sessionfinish(session, exitstatus):
    if _writer is not None:
        _writer.write(event="session_finish", exitstatus=int(exitstatus))
