"""A specific one- or two-sentence hint for every failure (ports and extends seed 000 §7.2).

Rules are tried in order on the failure's message and detail; the first that
matches writes the hint, naming the field, module, table, status or location it
found. Value differences go to `hint_values`. The fallback still names the error
type and where it was raised; no hint is "fix the bug" or a restatement of
expected/got.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from .hint_values import value_hint
from .models import TestFailure

Rule = tuple[re.Pattern[str], Callable[[re.Match[str], "HintContext"], str]]
_DEPENDENCY_PATH = re.compile(
    r"node_modules|site-packages|dist-packages|/lib/python\d|^node:|^internal/|<frozen|/rustc/|/usr/lib/go|/usr/local/go|/\.cargo/registry|/\.venv/|/_pytest/|/pluggy/"
)
_PY_FRAME = re.compile(r'^(?:\s*File "(?P<p1>[^"]+)", line (?P<l1>\d+)|(?P<p2>[^\s:"]+\.py):(?P<l2>\d+): )', re.M)
_OTHER_FRAME = re.compile(r"(?P<p>(?:/|\.{1,2}/|\b[\w.-]+/)?[\w./@+-]+\.(?:[cm]?[jt]sx?|go|rs)):(?P<l>\d+)(?::\d+)?")


class HintContext:
    def __init__(self, failure: TestFailure, root: Path | None) -> None:
        self.failure = failure
        self.text = f"{failure.message}\n{failure.detail}"
        self.root = root

    @property
    def where(self) -> str:
        """` (raised at src/x.py:12)` for the innermost frame outside the test file and dependencies."""
        frame = source_frame(self.text, self.failure.file, self.root)
        return f" (at {frame})" if frame else ""


_PHASES = (
    ("setup", "so the test body never ran", "make that fixture work for this test before looking at the test body."),
    (
        "teardown",
        "after the test body ran",
        "make its cleanup cope with what the test leaves behind (closed connections, removed files).",
    ),
)


def build_hint(failure: TestFailure, root: Path | None = None) -> str:
    ctx = HintContext(failure, root)
    hint = _first_rule(ctx) or _status_hint(ctx) or _value_hint(failure)
    for phase, consequence, advice in _PHASES:
        if failure.message.startswith(f"error in {phase}"):
            error = _error_type(ctx) or "an error"
            lead = f"The test's {phase} (a fixture or hook) raised {error}{ctx.where}, {consequence}"
            return f"{lead}. {hint}" if hint else f"{lead}: {advice}"
    return hint or _fallback(ctx)


def _first_rule(ctx: HintContext) -> str | None:
    """Rules on the message first, then on the detail (which may quote source code)."""
    for text in (ctx.failure.message, ctx.failure.detail):
        for pattern, make in RULES:
            match = pattern.search(text)
            if match:
                return make(match, ctx)
    return None


def _module_missing(m: re.Match[str], ctx: HintContext) -> str:
    name = _short(m.group("mod"), ctx.root)
    if name.startswith((".", "/")) or name != m.group("mod"):
        return (f"The import of `{name}` points to a file that does not exist: check the relative path, the file "
                "extension and letter case from the importing file.")  # fmt: skip
    return (f"Module `{name}` cannot be loaded: if it is a third-party package add it to the project's "
            "dependencies and install them; if it is the project's own code check its path and package layout.")  # fmt: skip


def _cannot_import(m: re.Match[str], ctx: HintContext) -> str:
    return (f"`{m.group('mod')}` has no `{m.group('name')}`: the name was renamed, removed or never defined there; "
            "define/export it or fix the import (also look for a circular import).")  # fmt: skip


def _no_export(m: re.Match[str], ctx: HintContext) -> str:
    return (f"The module does not export `{m.group('name')}`: export it, or switch between default and named "
            "import to match how the module exports it.")  # fmt: skip


def _syntax(m: re.Match[str], ctx: HintContext) -> str:
    return f"The code does not parse{ctx.where}: fix that syntax error first; nothing in the file can run until then."


def _conftest(m: re.Match[str], ctx: HintContext) -> str:
    error = _error_type(ctx) or "an error"
    f = ctx.failure
    where = f" (at {_short(f.file, ctx.root)}:{f.line})" if f.file and f.line else ctx.where
    return (f"conftest.py raised {error} while pytest loaded it{where}, so no test ran at all: make that "
            "module importable (its top-level code runs at load time).")  # fmt: skip


def _compile(m: re.Match[str], ctx: HintContext) -> str:
    f = ctx.failure
    where = f" (at {_short(f.file, ctx.root)}:{f.line})" if f.file and f.line else ctx.where
    return (f"The code does not compile{where}: fix that compiler error first; no test of that package or crate "
            "can run until it builds.")  # fmt: skip


def _undefined_name(m: re.Match[str], ctx: HintContext) -> str:
    return f"`{m.group('name')}` is used but never defined or imported in that scope{ctx.where}: define or import it, or fix the spelling."


def _constraint(m: re.Match[str], ctx: HintContext) -> str:
    kind, column = m.group("kind").upper(), (m.group("col") or "").strip()
    on = f" on `{column}`" if column else ""
    if kind == "UNIQUE":
        return (f"A duplicate row violates the UNIQUE constraint{on}: look the row up first (or catch the constraint "
                "error and answer a conflict, e.g. 409) instead of letting the insert crash; check each test starts from a fresh database.")  # fmt: skip
    if kind == "NOT NULL":
        return f"The insert leaves{on or ' a required column'} NULL: pass a value or a default for it in the INSERT / model."
    if kind == "FOREIGN KEY":
        return ("A row references a parent that does not exist (or a parent is deleted while still referenced): "
                "create the parent first, or delete / cascade the children first.")  # fmt: skip
    return f"A database {kind.lower()} constraint{on} rejects the write: validate the data before writing, as the schema requires."


def _generic_db(m: re.Match[str], ctx: HintContext) -> str:
    return ("A database constraint (unique, foreign key, not null) rejects the write: the business layer should "
            "check first (or catch the error and answer 409/400) rather than let the write crash.")  # fmt: skip


def _missing_table(m: re.Match[str], ctx: HintContext) -> str:
    return f"The {m.group('what')} `{m.group('name')}` does not exist in the test database: create the schema (run migrations) in the test setup, and check the name."


def _bcrypt(m: re.Match[str], ctx: HintContext) -> str:
    return ("Check that the user exists before calling bcrypt.compare: a missing user or hash passes null/undefined "
            "and compare throws a TypeError — answer 401 for an unknown user instead.")  # fmt: skip


def _undefined_access(m: re.Match[str], ctx: HintContext) -> str:
    prop, what = m.group("prop"), m.group("what")
    return (f"A value is {what} where the code reads `{prop}`{ctx.where}: check it exists before the access "
            "(a missing request field, a lookup that found nothing, a function without `return`).")  # fmt: skip


def _none_attr(m: re.Match[str], ctx: HintContext) -> str:
    return (f"A value is None where the code uses `{m.group('attr')}`{ctx.where}: a function returned nothing or a "
            "lookup found no row; guard the None case or make that function return a value.")  # fmt: skip


def _nil_pointer(m: re.Match[str], ctx: HintContext) -> str:
    return (f"A nil pointer is dereferenced{ctx.where}: a constructor or lookup returned nil (check its error "
            "return) or a struct field was never initialised.")  # fmt: skip


def _nil_map(m: re.Match[str], ctx: HintContext) -> str:
    return f"A map is written before it was created{ctx.where}: initialise it with make() (or in the constructor)."


def _unwrap(m: re.Match[str], ctx: HintContext) -> str:
    if m.group("kind") == "Option":
        return f"`unwrap()` met a None{ctx.where}: the value is absent for this input; handle it with match / if let / `?` or make it present."
    return f"`unwrap()` met an Err{ctx.where}: the operation failed for this input; handle or propagate the error (`?`) and fix its cause."


def _timeout(m: re.Match[str], ctx: HintContext) -> str:
    return ("An asynchronous step never finished in time: look for a missing await/return on a promise, a callback "
            "or done() never called, or a network/database call that should be mocked.")  # fmt: skip


def _hang(m: re.Match[str], ctx: HintContext) -> str:
    return ("The test was still running when the time limit hit and was killed with its child processes: look for "
            "an infinite loop, a blocking read or input(), or a server / subprocess the test never stops.")  # fmt: skip


def _unhandled(m: re.Match[str], ctx: HintContext) -> str:
    return ("A promise rejected (or an error was thrown) outside any test, so the run fails even though the tests "
            f"passed{ctx.where}: await that promise or add a .catch, and make sure timers/handlers end with the test.")  # fmt: skip


def _conn_refused(m: re.Match[str], ctx: HintContext) -> str:
    return (f"Nothing listens on {m.group('addr') or 'that address'} when the test connects: start the server (and "
            "wait until it listens) in the setup, or mock the external service.")  # fmt: skip


def _addr_in_use(m: re.Match[str], ctx: HintContext) -> str:
    return "The port is already taken (an earlier server was not closed): listen on port 0 and close the server in teardown."


def _not_a_function(m: re.Match[str], ctx: HintContext) -> str:
    return (f"`{m.group('name')}` is not a function{ctx.where}: the import brings something else (default vs named "
            "export, CommonJS vs ESM) or the method name is misspelt.")  # fmt: skip


def _signature(m: re.Match[str], ctx: HintContext) -> str:
    return (f"`{m.group('func')}` is called with arguments its signature does not take ({m.group('detail')}): update the "
            "call site or the function definition so they agree.")  # fmt: skip


def _key_error(m: re.Match[str], ctx: HintContext) -> str:
    return (f"The dict has no key {m.group('key')}{ctx.where}: the key is spelt differently where the dict is built, "
            "or it is optional and needs `.get()` with a default.")  # fmt: skip


def _index(m: re.Match[str], ctx: HintContext) -> str:
    return f"An index runs past the end of a sequence{ctx.where}: check the length first (empty input?) and the loop bounds."


def _zero_div(m: re.Match[str], ctx: HintContext) -> str:
    return f"Division by zero{ctx.where}: guard the empty or zero case (e.g. an average of no items) before dividing."


def _recursion(m: re.Match[str], ctx: HintContext) -> str:
    return f"Unbounded recursion{ctx.where}: the base case is never reached for this input, or two functions call each other."


def _overflow(m: re.Match[str], ctx: HintContext) -> str:
    return f"Integer overflow{ctx.where}: use a wider type or checked/saturating arithmetic, or bound the input."


def _bad_literal(m: re.Match[str], ctx: HintContext) -> str:
    return f"Converting {m.group('value')} to a number fails{ctx.where}: validate or clean the input (and reject it with a clear error) before converting."


def _fixture(m: re.Match[str], ctx: HintContext) -> str:
    return f"The test asks for fixture `{m.group('name')}`, which no conftest.py or plugin defines: define it or fix the name."


def _snapshot(m: re.Match[str], ctx: HintContext) -> str:
    return "The output no longer matches the stored snapshot: if the change is intended update the snapshot (-u), otherwise find what changed the rendering."


def _panic(m: re.Match[str], ctx: HintContext) -> str:
    return f"The code panicked{ctx.where}: {m.group('msg').strip()[:140]} — handle that case instead of panicking, or fix the state that leads to it."


_I = re.IGNORECASE
RULES: tuple[Rule, ...] = (
    (re.compile(r"did not finish within [\d.]+ ?s"), _hang),
    (re.compile(r"Unhandled (?:Rejection|Error|errors?)\b", _I), _unhandled),
    (re.compile(r"No module named '(?P<mod>[^']+)'"), _module_missing),
    (re.compile(r"cannot import name '(?P<name>[^']+)' from '(?P<mod>[^']+)'"), _cannot_import),
    (re.compile(r"Cannot find (?:module|package) '(?P<mod>[^']+)'"), _module_missing),
    (re.compile(r"Failed to (?:load url|resolve import) \"?(?P<mod>[^\s\"]+)"), _module_missing),
    (
        re.compile(
            r"(?:no required module provides package|cannot find package|unresolved import) `?\"?(?P<mod>[\w./-]+)"
        ),
        _module_missing,
    ),
    (re.compile(r"does not provide an export named '(?P<name>[^']+)'"), _no_export),
    (re.compile(r"\b(?:SyntaxError|IndentationError|TabError)\b"), _syntax),
    (re.compile(r"^conftest failed to load"), _conftest),
    (re.compile(r"^error\[E\d+\]: .*|^.*\.go:\d+:\d+: .*|\[build failed\]|could not compile", re.M), _compile),
    (
        re.compile(r"(?P<kind>UNIQUE|NOT NULL|FOREIGN KEY|CHECK) constraint failed(?::\s*(?P<col>[\w.]+))?", _I),
        _constraint,
    ),
    (
        re.compile(r"SQLITE_CONSTRAINT|IntegrityError|violates (?:unique|foreign key) constraint|duplicate key", _I),
        _generic_db,
    ),
    (re.compile(r"no such (?P<what>table|column): (?P<name>[\w.]+)", _I), _missing_table),
    (
        re.compile(r"TypeError.*(?:bcrypt|compare)|(?:bcrypt|compare).*TypeError|data and hash arguments required", _I),
        _bcrypt,
    ),
    (
        re.compile(r"Cannot read propert(?:y|ies) of (?P<what>undefined|null) \(reading '(?P<prop>[^']*)'\)"),
        _undefined_access,
    ),
    (re.compile(r"Cannot read property '(?P<prop>[^']*)' of (?P<what>undefined|null)"), _undefined_access),
    (
        re.compile(
            r"'NoneType' object (?:has no attribute '(?P<attr>[^']+)'|(?P<attr2>is not (?:subscriptable|iterable|callable)))"
        ),
        lambda m, c: _none_attr(_Named(attr=m.group("attr") or m.group("attr2").replace("is not ", "")), c),
    ),
    (re.compile(r"nil pointer dereference"), _nil_pointer),
    (re.compile(r"assignment to entry in nil map"), _nil_map),
    (re.compile(r"called `(?P<kind>Option|Result)::unwrap\(\)` on an? `(?:None|Err)` value"), _unwrap),
    (
        re.compile(r"ECONNREFUSED(?: (?P<addr>[\w.:\[\]]+))?|Connection refused|connect: connection refused", _I),
        _conn_refused,
    ),
    (re.compile(r"EADDRINUSE|Address already in use", _I), _addr_in_use),
    (
        re.compile(
            r"\btimed out\b|\bTimeout(?:Error|Exception)?\b:|Timeout of \d+ ?ms exceeded|Exceeded timeout|test timed out (?:after|in)|context deadline exceeded",
            _I,
        ),
        _timeout,
    ),
    (re.compile(r"(?:ReferenceError|NameError): (?:name )?'?(?P<name>[\w$]+)'? is not defined"), _undefined_name),
    (re.compile(r"^(?:\S+: )?undefined: (?P<name>\w+)", re.M), _undefined_name),
    (re.compile(r"TypeError: (?P<name>[\w$.]+(?:\(\.\.\.\))?) is not a function"), _not_a_function),
    (
        re.compile(
            r"TypeError: (?P<func>[\w.]+)\(\) (?P<detail>(?:missing \d+ required|got an unexpected|takes \d+)[^\n]*)"
        ),
        _signature,
    ),
    (re.compile(r"^(?:E\s+)?KeyError: (?P<key>.+)$", re.M), _key_error),
    (re.compile(r"IndexError|RangeError: (?:Invalid array length|offset)|index out of (?:range|bounds)"), _index),
    (re.compile(r"ZeroDivisionError|divide by zero|division by zero", _I), _zero_div),
    (re.compile(r"RecursionError|Maximum call stack size exceeded|stack overflow|goroutine stack exceeds"), _recursion),
    (re.compile(r"attempt to (?:add|subtract|multiply|negate|shift \w+) with overflow"), _overflow),
    (
        re.compile(
            r"invalid literal for int\(\) with base \d+: (?P<value>.+)$|could not convert string to float: (?P<v2>.+)$",
            re.M,
        ),
        lambda m, c: _bad_literal(_Named(value=m.group("value") or m.group("v2")), c),
    ),
    (re.compile(r"fixture '(?P<name>[^']+)' not found"), _fixture),
    (re.compile(r"Snapshot .* mismatched|toMatchSnapshot|snapshot.*(?:obsolete|failed)", _I), _snapshot),
)


class _Named:
    """A stand-in match for rules whose groups are renamed before calling the hint function."""

    def __init__(self, **groups: str) -> None:
        self._groups = groups

    def group(self, name: str) -> str:
        return self._groups[name]


_STATUS_PAIRS: dict[tuple[int, int], str] = {
    (401, 500): "Wrong credentials should answer 401, not crash with 500: "
    "catch the failed lookup/compare in the auth path and return 401.",
    (400, 500): "Invalid input should be rejected with 400 before it reaches the service: "
    "validate the request in the route instead of letting it throw.",
    (404, 200): "A missing resource must answer 404: "
    "check the lookup result and return 404 before building the success response.",
    (404, 500): "Looking up a missing resource crashes: handle the not-found case (no row, null) and return 404.",
    (409, 500): "A duplicate should answer 409 Conflict: "
    "check for the existing row (or catch the unique-constraint error) instead of crashing.",
    (201, 200): "A creation should answer 201 Created: set the status explicitly on the create route.",
}


def _status_hint(ctx: HintContext) -> str | None:
    exp, got = _status_pair(ctx)
    if exp is None or got is None:
        return None
    if (exp, got) in _STATUS_PAIRS:
        return _STATUS_PAIRS[(exp, got)]
    if exp in (401, 403) and got < 300:
        return "The request gets through without valid credentials: apply the auth check (middleware) to this route and reject before the handler runs."
    if exp < 300 and got in (401, 403):
        return "A valid request is rejected as unauthorised: check how the test's credentials reach the server (header name, `Bearer ` prefix, token secret)."
    if exp < 300 and got in (400, 422):
        return "A valid request fails validation: compare the request body with what the route checks (field names, types, required fields)."
    if exp < 300 and got == 404:
        return "The route or resource is not found: check the path, the HTTP method and the prefix the router is mounted at, or that the resource was created first."
    if exp < 400 and got >= 500:
        return "The handler throws on a request the test considers valid: read the server-side error for this request to find the exception."
    if 400 <= exp < 500 and got < 300:
        return "The server accepts a request it should reject: add the missing validation, permission or existence check before the success path."
    if 400 <= exp < 500 and got >= 500:
        return f"The server crashes where it should answer {exp}: catch this error case in the handler and return {exp} with a clear message."
    return f"The handler takes the wrong branch for this request: find where a {got // 100}xx response is produced and what condition should lead to {exp} instead."


_COMMON_STATUSES = {200, 201, 202, 204, 301, 302, 303, 304, 307, 308, 400, 401, 403, 404, 405, 409, 410, 413, 415, 422,
                    429, 500, 501, 502, 503, 504}  # fmt: skip


def _status_pair(ctx: HintContext) -> tuple[int | None, int | None]:
    """(expected, got) HTTP statuses: codes in a status context, or well-known codes one of which is an error."""
    exp, got = ctx.failure.expected, ctx.failure.got
    if not (exp and got and exp.strip().isdigit() and got.strip().isdigit()):
        return None, None
    e, g = int(exp), int(got)
    if e == g or not (100 <= e < 600 and 100 <= g < 600):
        return None, None
    in_context = re.search(r"status|response|http|\bcode\b", ctx.text + " " + ctx.failure.name, re.IGNORECASE)
    if in_context or ({e, g} <= _COMMON_STATUSES and max(e, g) >= 400):
        return e, g
    return None, None


def _value_hint(failure: TestFailure) -> str | None:
    if failure.expected is None or failure.got is None:
        return None
    return value_hint(failure.expected, failure.got)


def _error_type(ctx: HintContext) -> str | None:
    """The exception class named in the message (else the detail), AssertionError aside."""
    for text in (ctx.failure.message, ctx.failure.detail):
        for error in re.findall(r"\b([A-Z]\w*(?:Error|Exception))\b", text):
            if error != "AssertionError":
                return error
    return None


def _fallback(ctx: HintContext) -> str:
    error = _error_type(ctx)
    where = ctx.where
    if error:
        return (f"{error} was raised{where or ' while the test ran'}: check how that code handles the input "
                "this test gives it, and whether the test's setup provides what the code expects.")  # fmt: skip
    panic = re.search(r"panicked at [^\n]*\n?(?P<msg>[^\n]*)", ctx.text)
    if panic:
        return _panic(panic, ctx)
    location = (
        f" at {_short(ctx.failure.file, ctx.root)}:{ctx.failure.line}" if ctx.failure.file and ctx.failure.line else ""
    )
    return (f"The check{location} does not hold: print the value it inspects and trace back to the code that "
            "computes it for this test's input.")  # fmt: skip


def source_frame(text: str, test_file: str | None, root: Path | None) -> str | None:
    """`path:line` of the innermost stack frame that is neither a dependency nor the test file itself."""
    frames: list[tuple[str, str]] = [
        (m.group("p1") or m.group("p2"), m.group("l1") or m.group("l2")) for m in _PY_FRAME.finditer(text)
    ]
    if frames:
        frames.reverse()  # Python tracebacks list the innermost frame last
    else:
        frames = [(m.group("p"), m.group("l")) for m in _OTHER_FRAME.finditer(text)]
    for path, line in frames:
        if _DEPENDENCY_PATH.search(path) or (test_file and path.endswith(test_file.lstrip("./"))):
            continue
        return f"{_short(path, root)}:{line}"
    return None


def _short(path: str, root: Path | None) -> str:
    if root is not None:
        prefix = str(root.resolve()) + "/"
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path.removeprefix("file://")
