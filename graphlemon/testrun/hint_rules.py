"""The error rules: each is a premise on the runner's error text (a pattern it must say) and the sentence
that follows from it (`hint_premises.Rule`). A rule whose sentence needs more (a method only one built-in
type has) declares that as a premise too."""

from __future__ import annotations

import re
from collections.abc import Callable

from .hint_context import HintContext, error_type, short_path
from .hint_pair import clip as _clip
from .hint_premises import Premise, Rule, exception_check, said, said_by_runtime


def _module_missing(ctx: HintContext, m: re.Match[str]) -> str:
    name = short_path(m.group("mod"), ctx.root)
    if name.startswith((".", "/")) or name != m.group("mod"):
        return f"The import of `{name}` points to a file that does not exist, as resolved from the importing file."
    return f"Module `{name}` cannot be found where the test runs."


def _cannot_import(ctx: HintContext, m: re.Match[str]) -> str:
    return f"`{m.group('mod')}` has no `{m.group('name')}` when the import runs."


def _no_export(ctx: HintContext, m: re.Match[str]) -> str:
    return f"The module does not export `{m.group('name')}` as the import asks for it."


def _syntax(ctx: HintContext, m: re.Match[str]) -> str:
    return f"The code does not parse{ctx.where_of(m)}: nothing in that file can run while it does not parse."


def _conftest(ctx: HintContext, m: re.Match[str]) -> str:
    error = error_type(ctx) or "an error"
    f = ctx.failure
    where = f" (at {short_path(f.file, ctx.root)}:{f.line})" if f.file and f.line else ctx.where
    return (f"conftest.py raised {error} while pytest loaded it{where}, so no test ran at all: make that "
            "module importable (its top-level code runs at load time).")  # fmt: skip


def _compile(ctx: HintContext, m: re.Match[str]) -> str:
    f = ctx.failure
    where = f" (at {short_path(f.file, ctx.root)}:{f.line})" if f.file and f.line else ctx.where
    return f"The code does not compile{where}: no test of that package or crate can run until it builds."


def _undefined_name(ctx: HintContext, m: re.Match[str]) -> str:
    return f"`{m.group('name')}` is used but not defined in that scope{ctx.where_of(m)}."


def _constraint(ctx: HintContext, m: re.Match[str]) -> str:
    kind, column = m.group("kind").upper(), (m.group("col") or "").strip()
    on = f" on `{column}`" if column else ""
    if kind == "UNIQUE":
        return f"A write violates the UNIQUE constraint{on}: a row with the same value is already stored."
    if kind == "NOT NULL":
        return f"A write leaves{on or ' a required column'} NULL, which the schema forbids."
    if kind == "FOREIGN KEY":
        return "A write breaks a FOREIGN KEY constraint: a row references a parent row that does not exist (or one still referenced is deleted)."
    return f"A database {kind.lower()} constraint{on} rejects the write."


def _generic_db(ctx: HintContext, m: re.Match[str]) -> str:
    return "A database integrity constraint rejects the write (the error names which)."


def _missing_table(ctx: HintContext, m: re.Match[str]) -> str:
    return f"The {m.group('what')} `{m.group('name')}` does not exist in the database the test uses."


def _bcrypt(ctx: HintContext, m: re.Match[str]) -> str:
    return f"bcrypt's compare was called without its data or its hash (null/undefined){ctx.where_of(m)}."


def _undefined_access(ctx: HintContext, m: re.Match[str]) -> str:
    prop, what = m.group("prop"), m.group("what")
    return f"A value is {what} where the code reads `{prop}`{ctx.where_of(m)}."


def _none_attr(ctx: HintContext, m: re.Match[str]) -> str:
    attr = m.group("attr") or m.group("attr2").replace("is not ", "")
    return f"A value is None where the code uses `{attr}`{ctx.where_of(m)}."


def _nil_pointer(ctx: HintContext, m: re.Match[str]) -> str:
    return f"A nil pointer is dereferenced{ctx.where_of(m)}."


def _nil_map(ctx: HintContext, m: re.Match[str]) -> str:
    return (
        f"A map is written while it is nil (never created with make()){ctx.where_of(m)}."
    )


def _unwrap(ctx: HintContext, m: re.Match[str]) -> str:
    if m.group("kind") == "Option":
        return f"`unwrap()` met a None{ctx.where_of(m)}: the value is absent for this input."
    return f"`unwrap()` met an Err{ctx.where_of(m)}: the operation failed for this input."


def _timeout(ctx: HintContext, m: re.Match[str]) -> str:
    limit = next(f"{m[group]} {unit}" for group, unit in _TIMEOUT_UNITS if m[group])
    return f"A step did not finish within its time limit ({limit}: the runner's own timeout report){ctx.where}."


def _hang(ctx: HintContext, m: re.Match[str]) -> str:
    return "The test was still running when the time limit hit and was killed with its child processes."


def _go_timeout(ctx: HintContext, m: re.Match[str]) -> str:
    if m.group("test") is None:
        return (f"go test's -timeout ({m.group('after')}) stopped the test binary while a test was still running; "
                "go's output does not say which (run `go test -v` or go >= 1.20 to see it).")  # fmt: skip
    place = f" while in `{m.group('func')}` ({m.group('at')})" if m.group("func") else ""
    return f"go test's -timeout ({m.group('after')}) stopped `{m.group('test')}`{place}: it was still running."


def _not_installed(ctx: HintContext, m: re.Match[str]) -> str:
    return f"`{m.group('cmd')}` is not found where the test script runs it (the shell says so)."


def _unhandled(ctx: HintContext, m: re.Match[str]) -> str:
    return f"An error was not handled (a promise rejected or an error thrown outside any test's check){ctx.where_of(m)}."


def _conn_refused(ctx: HintContext, m: re.Match[str]) -> str:
    return f"Nothing listens on {m.group('addr') or 'that address'} when the test connects (connection refused)."


def _addr_in_use(ctx: HintContext, m: re.Match[str]) -> str:
    return "The port is already taken when the test listens on it."


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


def _method_of_one_type(ctx: HintContext) -> tuple[str, str, str] | None:
    """`recv.method is not a function` where only one built-in type has `method`: (receiver, method, that type)."""
    m = _NOT_A_FUNCTION.search(ctx.failure.message) or _NOT_A_FUNCTION.search(ctx.evidence)
    receiver, _, method = m.group("name").removesuffix("(...)").rpartition(".") if m else ("", "", "")
    return (receiver, method, _OWNER_OF[method]) if receiver and method in _OWNER_OF else None


def _wrong_receiver(ctx: HintContext, m: re.Match[str], found: tuple[str, str, str]) -> str:
    receiver, method, owner = found
    where, thrown, caller = ctx.where_of(m), ctx.thrown_in_dependency(m), "the code calls"
    if thrown:  # the call is the dependency's, at the top of the stack; the project's frame only reached it
        reached = f", reached from {where.removeprefix(' (at ').removesuffix(')')}" if where.startswith(" (at ") else ""
        where, caller = f" (at {thrown}{reached})", "a dependency calls"
    return (f"`{receiver}` is not {owner} where {caller} `.{method}()` on it{where} (only {owner} "
            f"has `.{method}()`): a value of another type reaches this code.")  # fmt: skip


def _bare_name(ctx: HintContext) -> str | None:
    m = _NOT_A_FUNCTION.search(ctx.failure.message) or _NOT_A_FUNCTION.search(ctx.evidence)
    name = m.group("name").removesuffix("(...)") if m else ""
    return name if name and "." not in name else None


def _not_a_function(ctx: HintContext, m: re.Match[str], name: str) -> str:
    return f"`{name}` is not a function{ctx.where_of(m)}: the name is bound to another value there."


def _signature(ctx: HintContext, m: re.Match[str]) -> str:
    return f"`{m.group('func')}` is called with arguments its signature does not take ({m.group('detail')})."


def _key_error(ctx: HintContext, m: re.Match[str]) -> str:
    return f"KeyError: the mapping has no key {m.group('key')}{ctx.where_of(m)}."


def _index(ctx: HintContext, m: re.Match[str]) -> str:
    said = m.group("said").strip().removesuffix("[recovered]").strip()
    return f"An index runs past the end of a sequence ({said}){ctx.where_of(m)}."


def _zero_div(ctx: HintContext, m: re.Match[str]) -> str:
    return f"Division by zero ({m.group(0)}){ctx.where_of(m)}: the divisor is zero there for this input."


def _recursion(ctx: HintContext, m: re.Match[str]) -> str:
    return f"The recursion is too deep: the stack limit was hit{ctx.where_of(m)}."


def _overflow(ctx: HintContext, m: re.Match[str]) -> str:
    return f"Integer overflow{ctx.where_of(m)}: the result does not fit its type."


def _bad_literal(ctx: HintContext, m: re.Match[str]) -> str:
    return f"Converting {m.group('value') or m.group('v2')} to a number fails{ctx.where_of(m)}."


def _fixture(ctx: HintContext, m: re.Match[str]) -> str:
    return f"The test asks for fixture `{m.group('name')}`, which no conftest.py or plugin defines."


def _snapshot(ctx: HintContext, m: re.Match[str]) -> str:
    return "The output no longer matches the stored snapshot."


def _coverage(ctx: HintContext, m: re.Match[str], _run: bool) -> str:
    what = m.group("what") or m.group("what2") or "the code"
    want, got = m.group("want") or m.group("want2"), m.group("got") or m.group("got2")
    return (f"No test failed: the run fails because the coverage of {what} ({got}) is below the project's threshold "
            f"({want}).")  # fmt: skip


def _did_not_raise(ctx: HintContext, m: re.Match[str]) -> str:
    return (f"The code returned without raising where the test expects an exception (the check says "
            f"\"{m.group(0).strip()}\"){ctx.own_place}.")  # fmt: skip


# pytest.warns: "DID NOT WARN. No warnings of type (<class 'UserWarning'>,) [matching the regex ]were emitted.\n
# [Regex: x\n Emitted warnings: ]Emitted warnings: [ RuntimeWarning('…')]." (pytest < 8: "The list of emitted warnings
# is: […]."): the runner reports the types the check expects and the warnings the code did emit
_DID_NOT_WARN = re.compile(
    r"DID NOT WARN\. No warnings of type \((?P<want>[^)\n]*)\)(?P<regex> matching the regex)? were emitted\."
    r"(?:[^\[]*?(?:Emitted warnings|The list of emitted warnings is): *(?P<emitted>\[[^\n]*\])\.?[ \t]*$)?", re.M)


def _did_not_warn(ctx: HintContext, m: re.Match[str]) -> str:
    want = ", ".join(re.findall(r"<class '(?:[\w.]*\.)?(\w+)'>", m["want"])) or m["want"]
    said = (f"the check expects a warning of type {want} matching its regex and none the code emitted matches"
            if m["regex"] else f"the check expects a warning of type {want} and the code emitted none of that type")
    if m["emitted"] is not None:  # the runner's list of what was emitted (not printed: only the check is known)
        emitted = list(dict.fromkeys(re.findall(r"(?<![\w.])(\w+)\(", m["emitted"])))
        said += (f"; it emitted {', '.join(emitted)} (the runner's list: «{_clip(m['emitted'].strip(), 200)}»)"
                 if emitted else "; the runner lists no warning emitted at all")  # fmt: skip
    return f"No warning of the kind the test checks for: {said}{ctx.own_place}."


# an exception check's `actual` is what was thrown: a bare `undefined` there is nothing thrown, not a value the call
# returned (a quoted `'undefined'` is a thrown string; tape's doesNotThrow shares the operator, its actual the error)
_NOTHING_THROWN = re.compile(r"^actual: undefined$", re.M)


def _nothing_thrown(ctx: HintContext) -> bool:
    return bool(_NOTHING_THROWN.search(ctx.failure.detail))


def _nothing_thrown_says(ctx: HintContext, operator: str, _none: bool) -> str:
    expected = ctx.failure.expected
    wanted = f" ({expected.strip()})" if expected and expected.strip() not in ("", "undefined") else ""
    what = "rejected" if operator == "rejects" else "thrown"
    return (f"Nothing was {what} where the test expects an exception{wanted}: the `{operator}` check's actual (what "
            f"was {what}) is undefined{ctx.own_place}.")  # fmt: skip


def _run_failure(ctx: HintContext) -> bool:
    """The failure is the run's own (a non-zero exit no failing test explains), not a test's."""
    return ctx.failure.name.endswith(": run failed") or ctx.failure.name == "test command failed"


_I = re.IGNORECASE
# a test runner's own timeout report, as its own line: jest, mocha, vitest, node:test (and tape's timeoutAfter),
# pytest-timeout. A word like "timeout" or "timed out" inside an error the code threw (`RangeError: locale table
# timeout`, Python's `TimeoutError`, Go's `context deadline exceeded`) is the code's voice, never the runner's.
_RUNNER_TIMEOUT = re.compile(
    r"^\s*(?:Error: )?(?:thrown: \")?Exceeded timeout of (?P<jest>\d+) ?ms for a (?:test|hook)\b"
    r"|^\s*(?:Error: )?Timeout of (?P<mocha>\d+) ?ms exceeded\b"
    r"|^\s*(?:Error: )?(?:Test|Hook) timed out in (?P<vitest>\d+) ?ms\b"
    r"|^\s*(?:Error: )?test timed out after (?P<node>\d+) ?ms\b"
    r"|^\s*(?:E\s+)?Failed: Timeout \(?>(?P<pytest>[\d.]+) ?s\b",
    re.M,
)
_TIMEOUT_UNITS = (("jest", "ms"), ("mocha", "ms"), ("vitest", "ms"), ("node", "ms"), ("pytest", "s"))
_NOT_A_FUNCTION = re.compile(r"TypeError: (?P<name>[\w$.]+(?:\(\.\.\.\))?) is not a function")


def _rule(
    name: str, pattern: re.Pattern[str], what: str, says: Callable[..., str], *more: Premise[HintContext]
) -> Rule[HintContext]:
    """A rule on an error raised while the code ran: the runtime's words, never the unit's own (said_by_runtime)."""
    voice = said_by_runtime(pattern, what)
    return Rule(name, (said(pattern, what), *more, voice), lambda ctx, *found: says(ctx, *found[:-1]))


def _run_rule(
    name: str, pattern: re.Pattern[str], what: str, says: Callable[..., str], *more: Premise[HintContext]
) -> Rule[HintContext]:
    """A rule on what the runner, the shell or the compiler said about the run (not an error the code raised)."""
    return Rule(name, (said(pattern, what), *more), says)


ERROR_RULES: tuple[Rule[HintContext], ...] = (
    _run_rule("coverage threshold", re.compile(
        r"coverage threshold for (?P<what>\w+) \((?P<want>[\d.]+%)\) not met: (?P<got>[\d.]+%)|"
        r"Coverage for (?P<what2>\w+) \((?P<got2>[\d.]+%)\) does not meet (?:the )?(?:global )?threshold \((?P<want2>[\d.]+%)\)",
        _I), "a coverage threshold was not met", _coverage,
          Premise("no test failed", "the failure is the run's own: its exit is non-zero and no test failed", _run_failure)),
    _run_rule("killed at the time limit", re.compile(r"did not finish within [\d.]+ ?s"), "the run hit the time limit", _hang),
    _run_rule("go test -timeout", re.compile(
        r"^panic: test timed out after (?P<after>[^\s:;]+)(?:: (?P<test>\S+) was still running"
        r"(?:, in (?P<func>\S+) at (?P<at>\S+))?|; go's output names no running test)",
        re.M), "go test's -timeout stopped a test", _go_timeout),
    _run_rule("nothing raised", re.compile(
        r"Missing expected (?:exception|rejection)\b[^\n]*|Received function did not throw|\bDID NOT RAISE\b[^\n]*|"
        r"^(?:AssertionError: )?\w+(?:Error|Exception) not raised\b[^\n]*|test did not panic as expected"
        r"|expected \[Function[^\]\n]*\] to throw\b[^\n]*", re.M),
        "the check expected an exception and none was raised", _did_not_raise),
    _run_rule("no warning of the type checked", _DID_NOT_WARN, "the check expected a warning and none of its kind "
              "was emitted", _did_not_warn),
    Rule("nothing thrown (an exception check's actual)", (
        Premise("an exception check", "the reporter names the failed check's operator `throws` or `rejects` "
                "(tape's block, TAP YAML), whose `actual` is what was thrown", exception_check),
        Premise("nothing thrown", "that check's actual is printed as a bare `undefined`: nothing was thrown (not a "
                "return value, which the check does not print)", _nothing_thrown)), _nothing_thrown_says),
    _run_rule("command not installed",
          re.compile(r"^(?:(?:/bin/)?(?:ba)?sh: (?:line )?\d+: )(?P<cmd>[\w.@/+-]+): (?:command )?not found$", re.M),
          "a command was not found", _not_installed),
    _rule("unhandled rejection", re.compile(r"Unhandled (?:Rejection|Error|errors?)\b", _I),
          "an error was unhandled", _unhandled),
    _rule("module missing", re.compile(r"No module named '(?P<mod>[^']+)'"), "a module is missing", _module_missing),
    _rule("name not importable", re.compile(r"cannot import name '(?P<name>[^']+)' from '(?P<mod>[^']+)'"),
          "a name cannot be imported", _cannot_import),
    _rule("JS module missing", re.compile(r"Cannot find (?:module|package) '(?P<mod>[^']+)'"),
          "a module cannot be found", _module_missing),
    _rule("import unresolved", re.compile(r"Failed to (?:load url|resolve import) \"?(?P<mod>[^\s\"]+)"),
          "an import cannot be resolved", _module_missing),
    _rule("package missing", re.compile(
        r"(?:no required module provides package|cannot find package|unresolved import) `?\"?(?P<mod>[\w./-]+)"),
          "a package cannot be found", _module_missing),
    _rule("export missing", re.compile(r"does not provide an export named '(?P<name>[^']+)'"),
          "a module lacks an export", _no_export),
    _rule("syntax error", re.compile(r"\b(?:SyntaxError|IndentationError|TabError)\b"), "a syntax error", _syntax),
    _rule("conftest crash", re.compile(r"^conftest failed to load"), "conftest.py failed to load", _conftest),
    _run_rule("compile error", re.compile(r"^error\[E\d+\]: .*|^.*\.go:\d+:\d+: .*|\[build failed\]|could not compile", re.M),
          "the code does not compile", _compile),
    _rule("DB constraint", re.compile(
        r"(?P<kind>UNIQUE|NOT NULL|FOREIGN KEY|CHECK) constraint failed(?::\s*(?P<col>[\w.]+))?", _I),
          "a database constraint failed", _constraint),
    _rule("DB constraint (generic)", re.compile(
        r"SQLITE_CONSTRAINT|IntegrityError|violates (?:unique|foreign key) constraint|duplicate key", _I),
          "a database integrity error", _generic_db),
    _rule("DB table missing", re.compile(r"no such (?P<what>table|column): (?P<name>[\w.]+)", _I),
          "a table or column is missing", _missing_table),
    _rule("bcrypt on a missing user", re.compile(
        r"TypeError.*(?:bcrypt|compare)|(?:bcrypt|compare).*TypeError|data and hash arguments required", _I),
          "bcrypt.compare got no hash", _bcrypt),
    _rule("undefined access", re.compile(
        r"Cannot read propert(?:y|ies) of (?P<what>undefined|null) \(reading '(?P<prop>[^']*)'\)"),
          "a property was read on undefined or null", _undefined_access),
    _rule("undefined access (old node)", re.compile(r"Cannot read property '(?P<prop>[^']*)' of (?P<what>undefined|null)"),
          "a property was read on undefined or null", _undefined_access),
    _rule("None attribute", re.compile(
        r"'NoneType' object (?:has no attribute '(?P<attr>[^']+)'|(?P<attr2>is not (?:subscriptable|iterable|callable)))"),
          "a None value was used", _none_attr),
    _rule("nil pointer", re.compile(r"nil pointer dereference"), "a nil pointer was dereferenced", _nil_pointer),
    _rule("nil map", re.compile(r"assignment to entry in nil map"), "a nil map was written", _nil_map),
    _rule("unwrap", re.compile(r"called `(?P<kind>Option|Result)::unwrap\(\)` on an? `(?:None|Err)` value"),
          "unwrap() met None or Err", _unwrap),
    _rule("connection refused", re.compile(
        r"ECONNREFUSED(?: (?P<addr>[\w.:\[\]]+))?|Connection refused|connect: connection refused", _I),
          "a connection was refused", _conn_refused),
    _rule("port in use", re.compile(r"EADDRINUSE|Address already in use", _I), "the port is taken", _addr_in_use),
    _run_rule("the runner's timeout", _RUNNER_TIMEOUT, "the runner stopped a test at its time limit", _timeout),
    _rule("name not defined", re.compile(r"(?:ReferenceError|NameError): (?:name )?'?(?P<name>[\w$]+)'? is not defined"),
          "a name is not defined", _undefined_name),
    _rule("go name undefined", re.compile(r"^(?:\S+: )?undefined: (?P<name>\w+)", re.M),
          "a name is undefined", _undefined_name),
    _rule("receiver of another type", _NOT_A_FUNCTION, "a method is not a function", _wrong_receiver,
          Premise("a method of one built-in type", "the method exists on exactly one built-in type (String, Array, "
                  "Promise)", _method_of_one_type)),
    _rule("bare name not a function", _NOT_A_FUNCTION, "a name is not a function", _not_a_function,
          Premise("a bare name", "what is called is a bare name, not a method", _bare_name)),
    _rule("signature mismatch", re.compile(
        r"TypeError: (?P<func>[\w.]+)\(\) (?P<detail>(?:missing \d+ required|got an unexpected|takes \d+)[^\n]*)"),
          "a call does not match the signature", _signature),
    _rule("KeyError", re.compile(r"^(?:E\s+)?KeyError: (?P<key>.+)$", re.M), "a KeyError was raised", _key_error),
    _rule("index out of range", re.compile(
        r"(?P<said>IndexError[^\n]*|RangeError: (?:Invalid array length|offset)[^\n]*|index out of (?:range|bounds)[^\n]*)"),
          "an index is out of range", _index),
    _rule("division by zero", re.compile(
        r"ZeroDivisionError|attempt to (?:divide|calculate the remainder)\b[^\n]*\bby zero|integer divide by zero|"
        r"RangeError: Division by zero|DivideByZeroException"),
          "a division by zero", _zero_div),
    _rule("recursion", re.compile(
        r"RecursionError|Maximum call stack size exceeded|stack overflow|goroutine stack exceeds"),
          "the recursion is too deep", _recursion),
    _rule("integer overflow", re.compile(r"attempt to (?:add|subtract|multiply|negate|shift \w+) with overflow"),
          "an integer overflowed", _overflow),
    _rule("bad numeral", re.compile(
        r"invalid literal for int\(\) with base \d+: (?P<value>.+)$|could not convert string to float: (?P<v2>.+)$", re.M),
          "a text is not a number", _bad_literal),
    _rule("fixture missing", re.compile(r"fixture '(?P<name>[^']+)' not found"), "a fixture is missing", _fixture),
    _rule("snapshot mismatch", re.compile(r"Snapshot .* mismatched|toMatchSnapshot|snapshot.*(?:obsolete|failed)", _I),
          "a snapshot does not match", _snapshot),
)  # fmt: skip
