"""Functions in the units' code and contracts: who defines `f`, with which parameters and types.

`definitions(ctx, name)` scans every unit's code (under the integration worktree when the
run has one) for `def f` / `async def f` (Python, read with `ast`, so its parameters and
`return` lines are known), `function f`, `const|let|var f =`, `exports.f =` (JavaScript,
regular expressions). `Signature.parse` reads contract.json signatures such as
`slugify(title: str, sep: str = "-") -> str`. `compatible` and `type_names` compare the
type one unit's function returns with the type another's parameter takes.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache

from ..units import FunctionExport
from .codescan import SourceFile
from .run_context import RunContext

_CONTAINERS = frozenset(
    "list dict set frozenset tuple type Optional Union Sequence Iterable Iterator Mapping MutableMapping "
    "Collection Callable Generator Any None NoneType typing collections abc".split()
)
_SYNONYMS = {"str": ("str", "string", "strings"), "int": ("int", "integer", "integers"),
             "float": ("float", "floats"), "bool": ("bool", "boolean", "booleans"),
             "dict": ("dict", "dictionary", "mapping")}  # fmt: skip


@dataclass(frozen=True)
class Param:
    name: str
    annotation: str = ""
    has_default: bool = False


@dataclass(frozen=True)
class Signature:
    name: str
    params: tuple[Param, ...]
    returns: str = ""

    @classmethod
    def parse(cls, text: str, name: str = "") -> Signature | None:
        """`f(a: int, b: int = 2) -> int` (the name may be left out: `(a: int) -> int`)."""
        text = " ".join(text.split()).removeprefix("def ").removeprefix("async def ").rstrip(":")
        if text.startswith("("):
            text = f"{name or 'f'}{text}"
        try:
            fn = ast.parse(f"def {text}: pass").body[0]
        except (SyntaxError, ValueError, RecursionError):
            return None
        return of_function(fn) if isinstance(fn, ast.FunctionDef) else None

    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def param_for(self, position: int | None, keyword: str | None) -> Param | None:
        if keyword is not None:
            return next((p for p in self.params if p.name == keyword), None)
        return self.params[position] if position is not None and position < len(self.params) else None

    def text(self) -> str:
        inner = ", ".join(p.name + (f": {p.annotation}" if p.annotation else "") for p in self.params)
        return f"{self.name}({inner})" + (f" -> {self.returns}" if self.returns else "")


@dataclass(frozen=True)
class Definition:
    """Where unit `unit_id` defines function `name`."""

    unit_id: str
    rel: str
    line: int
    signature: Signature | None  # None when the parameters could not be read
    returns: tuple[int, ...] = ()  # lines of its `return` statements (Python)
    top_level: bool = True


def of_function(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Signature:
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    defaults = [False] * (len(positional) - len(a.defaults)) + [True] * len(a.defaults)
    params = [
        Param(p.arg, ast.unparse(p.annotation) if p.annotation else "", d)
        for p, d in zip(positional, defaults, strict=True)
    ]
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    params += [
        Param(p.arg, ast.unparse(p.annotation) if p.annotation else "", d is not None)
        for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
    ]
    if a.vararg:
        params.append(Param("*" + a.vararg.arg))
    if a.kwarg:
        params.append(Param("**" + a.kwarg.arg))
    return Signature(fn.name, tuple(params), ast.unparse(fn.returns) if fn.returns else "")


def definitions(ctx: RunContext, name: str) -> list[Definition]:
    """Every definition of `name` in the units' code, top-level ones first."""
    out = []
    for unit_id, files in ctx.code.items():
        for src in files:
            out += _python_defs(unit_id, src, name) if src.rel.endswith(".py") else _js_defs(unit_id, src, name)
    return sorted(out, key=lambda d: not d.top_level)


def owner(ctx: RunContext, name: str, involves: list[str]) -> Definition | None:
    """The one unit that defines `name` (an involved unit first; top-level before methods), else None."""
    found = definitions(ctx, name)
    for pool in ([d for d in found if d.unit_id in involves], found):
        units = {d.unit_id for d in pool if d.top_level} or {d.unit_id for d in pool}
        if len(units) == 1:
            unit = units.pop()
            return next(d for d in pool if d.unit_id == unit)
        if len(units) > 1:
            return None
    return None


def contract_function(ctx: RunContext, name: str) -> tuple[str, FunctionExport] | None:
    """(unit_id, entry) of the contract.json that exports function `name`; None if none or several do."""
    found = [(u, f) for u, c in ctx.contracts.items() for f in c.exports.functions if f.name.rsplit(".", 1)[-1] == name]
    return found[0] if len(found) == 1 else None


def contract_signature(entry: FunctionExport) -> Signature | None:
    return Signature.parse(entry.signature, entry.name) if entry.signature else None


def type_names(annotation: str) -> set[str]:
    """The types an annotation is about, without containers: `list[Token]` → {Token}, `Decimal | None` → {Decimal}."""
    return {n.rsplit(".", 1)[-1] for n in re.findall(r"[A-Za-z_][\w.]*", annotation)} - _CONTAINERS


def compatible(given: str, wanted: str) -> bool:
    """Can a value declared as `given` be passed where `wanted` is declared? (textual, with int → float)."""
    g, w = _norm(given), _norm(wanted)
    if not g or not w or w in ("Any", "object") or g == "Any" or g == w:
        return True
    options = set(_alternatives(w))
    return all(x in options or (x == "int" and "float" in options) for x in _alternatives(g))


def mentions(text: str, type_name: str) -> bool:
    words = _SYNONYMS.get(type_name, (type_name,))
    return any(re.search(rf"(?<![\w.]){re.escape(w)}(?![\w])", text, re.IGNORECASE) for w in words)


def _norm(annotation: str) -> str:
    text = re.sub(r"\s+", "", annotation.strip().strip("'\""))
    text = re.sub(r"\b(?:typing|decimal|fractions|datetime|collections\.abc)\.", "", text)
    m = re.fullmatch(r"Optional\[(.+)\]", text)
    return f"{m.group(1)}|None" if m else text


def _alternatives(annotation: str) -> list[str]:
    m = re.fullmatch(r"Union\[(.+)\]", annotation)
    parts = m.group(1).split(",") if m else annotation.split("|")
    return [p for p in parts if p]


@lru_cache(maxsize=32)
def _python_tree(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _python_defs(unit_id: str, src: SourceFile, name: str) -> list[Definition]:
    if f"def {name}" not in src.text and not re.search(rf"def\s+{re.escape(name)}\b", src.text):
        return []
    tree = _python_tree(src.text)
    if tree is None:
        return [
            Definition(unit_id, src.rel, i, None, top_level=not line[:1].isspace())
            for i, line in enumerate(src.lines, 1)
            if re.match(rf"\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(", line)
        ]
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            returns = tuple(n.lineno for n in ast.walk(node) if isinstance(n, ast.Return) and _own(node, n))
            out.append(Definition(unit_id, src.rel, node.lineno, of_function(node), returns, id(node) in top))
    return out


def _own(fn: ast.AST, ret: ast.Return) -> bool:
    """`ret` belongs to `fn` itself, not to a function nested inside it."""
    for node in ast.walk(fn):
        if node is not fn and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            if any(n is ret for n in ast.walk(node)):
                return False
    return True


def _js_defs(unit_id: str, src: SourceFile, name: str) -> list[Definition]:
    """Definitions found by tree-sitter (handlers.js_function_defs), not by a line pattern."""
    from .handlers import js_function_defs

    return [
        Definition(
            unit_id,
            src.rel,
            line,
            Signature(name, tuple(Param(n) for n in params)) if params is not None else None,
            top_level=top,
        )  # fmt: skip
        for line, params, top in js_function_defs(src, name)
    ]
