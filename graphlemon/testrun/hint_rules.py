"""The hint rules: a pattern on the failure's text and the sentence it writes."""

from __future__ import annotations

import re
from collections.abc import Callable

from .hint_context import HintContext, error_type, short_path

Rule = tuple[re.Pattern[str], Callable[[re.Match[str], HintContext], str | None]]


def _module_missing(m: re.Match[str], ctx: HintContext) -> str:
    name = short_path(m.group("mod"), ctx.root)
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
    error = error_type(ctx) or "an error"
    f = ctx.failure
    where = f" (at {short_path(f.file, ctx.root)}:{f.line})" if f.file and f.line else ctx.where
    return (f"conftest.py raised {error} while pytest loaded it{where}, so no test ran at all: make that "
            "module importable (its top-level code runs at load time).")  # fmt: skip


def _compile(m: re.Match[str], ctx: HintContext) -> str:
    f = ctx.failure
    where = f" (at {short_path(f.file, ctx.root)}:{f.line})" if f.file and f.line else ctx.where
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


def _go_timeout(m: re.Match[str], ctx: HintContext) -> str:
    place = f" while in `{m.group('func')}` ({m.group('at')})" if m.group("func") else ""
    return (f"go test's -timeout ({m.group('after')}) stopped `{m.group('test')}`{place}: look for a loop whose exit "
            "condition this input never reaches, or a channel send/receive, lock or WaitGroup with no partner.")  # fmt: skip


def _not_installed(m: re.Match[str], ctx: HintContext) -> str:
    return (f"`{m.group('cmd')}` is not installed where the test script runs it: install the project's dependencies "
            "(devDependencies included), or run the script's test step without it.")  # fmt: skip


def _unhandled(m: re.Match[str], ctx: HintContext) -> str:
    return ("A promise rejected (or an error was thrown) outside any test, so the run fails even though the tests "
            f"passed{ctx.where}: await that promise or add a .catch, and make sure timers/handlers end with the test.")  # fmt: skip


def _conn_refused(m: re.Match[str], ctx: HintContext) -> str:
    return (f"Nothing listens on {m.group('addr') or 'that address'} when the test connects: start the server (and "
            "wait until it listens) in the setup, or mock the external service.")  # fmt: skip


def _addr_in_use(m: re.Match[str], ctx: HintContext) -> str:
    return "The port is already taken (an earlier server was not closed): listen on port 0 and close the server in teardown."


# methods that only one built-in type has: `x.match is not a function` means x is not a string
_OWNERS = {
    "a string": ("match", "matchAll", "trim", "trimStart", "trimEnd", "toLowerCase", "toUpperCase", "padStart",
                 "padEnd", "startsWith", "endsWith", "charAt", "charCodeAt", "codePointAt", "normalize",
                 "localeCompare", "replaceAll", "substring", "substr", "toLocaleLowerCase", "toLocaleUpperCase"),
    "an array": ("map", "filter", "reduce", "reduceRight", "forEach", "push", "pop", "shift", "unshift", "splice",
                 "findIndex", "findLast", "findLastIndex", "some", "every", "flat", "flatMap", "sort", "reverse"),
    "a promise": ("then", "catch", "finally"),
}  # fmt: skip
_OWNER_OF = {method: owner for owner, methods in _OWNERS.items() for method in methods}


def _not_a_function(m: re.Match[str], ctx: HintContext) -> str | None:
    """`recv.method is not a function`: when only one built-in type has that method, recv is of another type.
    A bare name that is not a function is an import or binding of something else. Otherwise: no claim."""
    name = m.group("name").removesuffix("(...)")
    receiver, _, method = name.rpartition(".")
    if receiver and method in _OWNER_OF:
        owner = _OWNER_OF[method]
        return (f"`{receiver}` is not {owner} where the code calls `.{method}()` on it{ctx.where}: a value of "
                f"another type reaches this code (check what the caller passes, and convert it to {owner} there "
                "or reject it).")  # fmt: skip
    if not receiver:
        return (f"`{name}` is not a function{ctx.where}: the name is bound to something else — the import brings "
                "another value (default vs named export, CommonJS vs ESM), or a variable shadows it.")  # fmt: skip
    return None


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


def panic_hint(m: re.Match[str], ctx: HintContext) -> str:
    return f"The code panicked{ctx.where}: {m.group('msg').strip()[:140]} — handle that case instead of panicking, or fix the state that leads to it."


_I = re.IGNORECASE
RULES: tuple[Rule, ...] = (
    (re.compile(r"did not finish within [\d.]+ ?s"), _hang),
    (
        re.compile(
            r"^panic: test timed out after (?P<after>\S+): (?P<test>\S+) was still running(?:, in (?P<func>\S+) at (?P<at>\S+))?",
            re.M,
        ),
        _go_timeout,
    ),
    (
        re.compile(r"^(?:(?:/bin/)?(?:ba)?sh: (?:line )?\d+: )(?P<cmd>[\w.@/+-]+): (?:command )?not found$", re.M),
        _not_installed,
    ),
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
