"""Printed values parsed into typed values, and the smallest part in which two of them differ.

A framework prints expected/got as text: Python reprs (`defaultdict(<class 'list'>, {...})`,
`Line(name='pear', qty=6)`, `<inventory.Item object at 0x7f…>`), JSON, node's util.inspect
(`{ a: 1, b: [ 2 ] }`, `[ 'x', …(1) ]`), mocha's diff form (JSON without commas), Go's `%v`,
Rust's Debug. Hint rules reason over what these parse to — numbers, strings, booleans, None,
sequences, mappings and objects (a class name with fields, or with only an address) — never over
the text itself.

Each value is read with the grammar of the reporter that printed it (`ValueGrammar`, set by the
parser): a Python repr never holds adjacent string literals, a bare tuple or `1_000`; mocha's diff
form puts items on lines without commas (`"ISO-8859-1"` above `"UTF-8"` are two items); Go's `%v`
prints a string without quotes (`1,000` is a text, not a tuple); `text` is a value that is a string
as it stands. "any" (a value of unknown origin) tries the grammars in turn.
"""

from __future__ import annotations

import ast
import io
import json
import math
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, get_args

from .result_models import ValueGrammar

MAX_PARSED = 200_000  # longer values are left as text
_NOTHING = {"None", "null", "undefined", "nil", "<nil>"}  # printed absence: Python, JSON, JavaScript, Go
_MAPPING_CLASSES = {"defaultdict", "OrderedDict", "Counter", "dict", "MappingProxyType"}
_SEQUENCE_CLASSES = {"deque", "list", "tuple", "array"}


@dataclass(frozen=True, repr=False)
class Obj:
    """An object as printed: its class and fields, or (a plain repr) only its address. Its repr is its printed form
    again (`datetime.datetime(2007, 1, 1, tzinfo=…)`, `Item { a: 1 }`, `<pkg.Item object at 0x7f…>`): a hint shows
    a value as the runner printed it, never this class's own fields."""

    cls: str
    fields: dict[str, Any] = field(default_factory=dict)
    address: str | None = None
    name: str = field(default="", compare=False)  # the class as printed (`datetime.datetime`), when not `cls`
    braces: bool = field(default=False, compare=False)  # printed `Cls { a: 1 }` (JavaScript, Rust), not `Cls(a=1)`

    def __repr__(self) -> str:
        name = self.name or self.cls
        if self.address is not None and not self.fields:
            return f"<{name} object at {self.address}>"
        if self.cls.startswith("class ") and not self.fields:
            return f"<class '{self.cls[6:]}'>"
        positional = sorted((k for k in self.fields if re.fullmatch(r"#\d+", k)), key=lambda k: int(k[1:]))
        named = [k for k in self.fields if k not in positional]
        if self.braces:
            return f"{name} {{ {', '.join(f'{k}: {self.fields[k]!r}' for k in named)} }}" if named else f"{name} {{}}"
        items = [repr(self.fields[k]) for k in positional] + [f"{k}={self.fields[k]!r}" for k in named]
        return f"{name}({', '.join(items)})"

    def __eq__(self, other: object) -> bool:  # addresses tell nothing about the value
        return isinstance(other, Obj) and (self.cls, self.fields) == (other.cls, other.fields) and (
            self.address is None) == (other.address is None)  # fmt: skip

    def __hash__(self) -> int:
        return hash(self.cls)


@dataclass(frozen=True)
class Elided:
    """Items a printer left out (`…(1)`, `... 3 more items`): their count, their values unknown."""

    count: int


class Cut:
    """The rest of a container the value was cut off in (a printer's size limit): its items are unknown."""

    def __repr__(self) -> str:
        return "…"


class Printed(str):
    """A value printed without its type (Go's `%v` of a string, a struct, a slice): its text is known, its kind not."""

    __slots__ = ()


class Numeral(float):
    """A number read from text, kept as the text printed it: a hint quotes `1.50` as `1.50`, never as the float
    re-printed (`1.5`). Only a numeral a binary float holds without loss is one (`numeral`)."""

    __slots__ = ("text",)

    def __new__(cls, text: str) -> Numeral:
        number = super().__new__(cls, text)
        number.text = text
        return number

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


def numeral(text: str) -> int | float | Printed:
    """A printed decimal numeral as a number, kept as printed: an integer exactly; a fraction only when a binary
    float holds it without loss (`0.1` is read back as `0.1`); else its text, kind unknown (a 110-digit decimal
    of an arbitrary-precision type is no float, and re-printing it as one would state other digits)."""
    if not any(c in text for c in ".eE"):
        return int(text)
    value = float(text)
    if not math.isfinite(value) or Decimal(repr(value)) != Decimal(text):
        return Printed(text)
    return Numeral(text)


class Unknown:
    """A value the parser could not read (kept as its text)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


_PARSE_ERRORS = (
    ValueError, SyntaxError, TypeError, KeyError, IndexError, MemoryError, RecursionError, tokenize.TokenError,
)  # fmt: skip


def parse_value(text: str | None, grammar: ValueGrammar = "any") -> Any:
    """The typed value of a printed value read in its reporter's grammar, or `Unknown(text)`."""
    if text is None:
        return Unknown("")
    if grammar == "text":
        return text
    stripped = text.strip()
    if not stripped or len(stripped) > MAX_PARSED:
        return Unknown(stripped)
    if grammar == "go":
        return _go(stripped)
    if stripped in _NOTHING and grammar != "rust":
        return None
    for parser in _GRAMMARS[grammar]:
        try:
            return parser(stripped)
        except _PARSE_ERRORS:
            continue
    return Unknown(stripped)


def parse_pair(
    expected: str | None, got: str | None, grammar: ValueGrammar = "any", margin: int = 4000
) -> tuple[Any, Any]:
    """Both values parsed; two JavaScript-printed values too long (or cut off) to parse whole are read up to a
    little past their first differing character, each container cut there ending in `Cut()`. mocha's
    values are both raw strings, or both its diff form: when either does not read as that form, both are
    the strings they are."""
    if grammar == "mocha":
        exp, act = parse_value(expected, "mocha"), parse_value(got, "mocha")
        if isinstance(exp, Unknown) or isinstance(act, Unknown):
            return parse_value(expected, "text"), parse_value(got, "text")
        return exp, act
    exp, act = parse_value(expected, grammar), parse_value(got, grammar)
    if grammar == "go" and expected is not None and got is not None:
        exp, act = _go_text_kept(exp, act, expected, got)
    if grammar not in ("any", "js", "mocha") or not (isinstance(exp, Unknown) and isinstance(act, Unknown)):
        return exp, act
    if not expected or not got:
        return exp, act
    e, g = expected.strip(), got.strip()
    at = next((i for i, (x, y) in enumerate(zip(e, g, strict=False)) if x != y), min(len(e), len(g)))
    if at > MAX_PARSED or not e.startswith(("[", "{")):
        return exp, act
    cut = []
    for text in (e[: at + margin], g[: at + margin]):
        try:
            cut.append(_Reader(text, commas=False, cut=True).read_all())
        except (ValueError, KeyError, IndexError, RecursionError):
            return exp, act
    return cut[0], cut[1]


def _go_text_kept(exp: Any, act: Any, expected: str, got: str) -> tuple[Any, Any]:
    """Go's `%v` prints nil as `<nil>`, and a text may hold the same word: where the other side is text Go printed
    (its kind unknown), `<nil>` is read as the text it is, so both sides keep what the runner printed."""
    if exp is None and isinstance(act, Printed):
        return Printed(expected), act
    if act is None and isinstance(exp, Printed):
        return exp, Printed(got)
    return exp, act


def _json(text: str) -> Any:
    return json.loads(text, parse_float=numeral)


# --- Python reprs -------------------------------------------------------------------------------


def _python(text: str) -> Any:
    """A Python repr: `<…>` spans (object addresses, `<class 'list'>`) become placeholders, then `ast`.
    What no repr prints is refused: adjacent string literals (source concatenation, not a value), a tuple
    without its parentheses (`1,000`), a numeral with `_` (`1_000`)."""
    source, placeholders = _replace_angle_spans(text)
    _refuse_non_repr(source)
    body = ast.parse(source, mode="eval").body
    if isinstance(body, ast.Tuple) and not source.lstrip().startswith("("):
        raise ValueError("a tuple without parentheses is not a repr")
    return _from_ast(body, placeholders)


def _refuse_non_repr(source: str) -> None:
    previous = None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT):
            continue
        if tok.type == tokenize.STRING and previous == tokenize.STRING:
            raise ValueError("adjacent string literals are not a repr")
        if tok.type == tokenize.NUMBER and "_" in tok.string:
            raise ValueError("a numeral with '_' is not a repr")
        if tok.type == tokenize.STRING and "f" in tok.string[: tok.string.find(tok.string[-1])].lower():
            raise ValueError("an f-string is not a repr")
        previous = tok.type


def _replace_angle_spans(text: str) -> tuple[str, dict[str, Obj]]:
    """Replace each top-level `<...>` token span (outside strings) by a name; the names map to objects."""
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    out: list[str] = []
    placeholders: dict[str, Obj] = {}
    depth, span, last_end = 0, [], (1, 0)
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def between(start: tuple[int, int], end: tuple[int, int]) -> str:
        def offset(pos: tuple[int, int]) -> int:
            return min(len(text), starts[min(pos[0] - 1, len(starts) - 1)] + pos[1])

        return text[offset(start) : offset(end)]

    for tok in tokens:
        if tok.type == tokenize.OP and tok.string == "<" and depth == 0 and _opens_repr(out):
            out.append(between(last_end, tok.start))
            depth, span = 1, [tok]
        elif depth:
            span.append(tok)
            depth += {"<": 1, ">": -1}.get(tok.string, 0) if tok.type == tokenize.OP else 0
            if depth == 0:
                name = f"__repr_{len(placeholders)}__"
                placeholders[name] = _angle_object([t for t in span[1:-1] if t.type != tokenize.NL])
                out.append(name)
        else:
            out.append(between(last_end, tok.end))
        last_end = tok.end
    return "".join(out), placeholders


def _opens_repr(before: list[str]) -> bool:
    """`<` starts a repr where a value can start (not a comparison after a value)."""
    text = "".join(before).rstrip()
    return not text or text[-1] in "([{,:="


def _angle_object(tokens: list[tokenize.TokenInfo]) -> Obj:
    """`<pkg.Item object at 0x7f…>` → Obj('Item', address); `<class 'list'>` → Obj('class list')."""
    words = [t.string for t in tokens]
    address = next((w for w in words if w.lower().startswith("0x")), None)
    if words[:1] == ["class"] and len(words) >= 2:
        return Obj(f"class {words[1].strip(chr(39) + chr(34))}")
    dotted = "".join(words[: words.index("object")]) if "object" in words else "".join(words[:1])
    return Obj(dotted.rsplit(".", 1)[-1] or "object", address=address, name=dotted or "object")


def _from_ast(node: ast.AST, placeholders: dict[str, Obj]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _from_ast(node.operand, placeholders)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
        raise ValueError("not a number")
    if isinstance(node, ast.List | ast.Tuple):
        items = [_from_ast(e, placeholders) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Set):
        return frozenset(_hashable(_from_ast(e, placeholders)) for e in node.elts)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("a ** entry")
        return {
            _hashable(_from_ast(k, placeholders)): _from_ast(v, placeholders)
            for k, v in zip(node.keys, node.values, strict=True)
        }
    if isinstance(node, ast.Name):
        if node.id in placeholders:
            return placeholders[node.id]
        raise ValueError(f"a name: {node.id}")
    if isinstance(node, ast.Call):
        return _call(node, placeholders)
    raise ValueError(f"not a literal: {type(node).__name__}")


def _call(node: ast.Call, placeholders: dict[str, Obj]) -> Any:
    """`defaultdict(<class 'list'>, {...})` is a mapping, `deque([...])` a sequence, `Line(qty=6)` an object."""
    dotted = _dotted(node.func)
    cls = dotted.rsplit(".", 1)[-1]
    args = [_from_ast(a, placeholders) for a in node.args]
    fields = {k.arg: _from_ast(k.value, placeholders) for k in node.keywords if k.arg}
    if cls in _MAPPING_CLASSES and not fields:
        mapping = next((a for a in args if isinstance(a, dict)), {})
        return dict(mapping)
    if cls in _SEQUENCE_CLASSES and len(args) == 1 and isinstance(args[0], list | tuple) and not fields:
        return list(args[0])
    if cls in ("set", "frozenset") and len(args) <= 1:
        return frozenset(args[0]) if args else frozenset()
    for i, arg in enumerate(args):
        fields[f"#{i}"] = arg
    return Obj(cls, fields, name=dotted)


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise ValueError("not a class name")


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((repr(k), _hashable(v)) for k, v in value.items()))
    return value


# --- JavaScript: util.inspect and mocha's diff form ---------------------------------------------------


class _Reader:
    """A small recursive-descent reader over JavaScript-printed values (util.inspect and mocha's form)."""

    _WORDS: dict[str, Callable[[], Any]] = {
        "true": lambda: True, "false": lambda: False, "null": lambda: None, "undefined": lambda: None,
        "NaN": lambda: float("nan"), "Infinity": lambda: float("inf"),
    }  # fmt: skip
    _NUMBER = re.compile(r"-?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+)n?")
    _IDENT = re.compile(r"[A-Za-z_$][\w$]*")
    _ELIDED = re.compile(r"(?:…|\.\.\.)\s*\((\d+)\)|\.\.\. (\d+) more items?")

    def __init__(self, text: str, commas: bool, cut: bool = False, rust: bool = False) -> None:
        self.text, self.at, self.commas, self.cut = text, 0, commas, cut
        self.rust = rust  # Rust's Debug escapes in a "string": `\u{a0}` (JSON's `\u00a0` is not Rust's)

    def read_all(self) -> Any:
        value = self.value()
        self.space()
        if self.at != len(self.text):
            raise ValueError(f"trailing text at {self.at}")
        return value

    def space(self) -> None:
        while self.at < len(self.text) and self.text[self.at] in " \t\r\n":
            self.at += 1

    def peek(self) -> str:
        self.space()
        return self.text[self.at : self.at + 1]

    def value(self) -> Any:
        ch = self.peek()
        if ch == "[":
            return self.sequence()
        if ch == "{":
            return self.mapping()
        if ch in "'\"`":
            return self.string()
        elided = self._ELIDED.match(self.text, self.at)
        if elided:
            self.at = elided.end()
            return Elided(int(elided.group(1) or elided.group(2)))
        number = self._NUMBER.match(self.text, self.at)
        if number:
            self.at = number.end()
            literal = number.group(0)
            return int(literal[:-1]) if literal.endswith("n") else numeral(literal)
        ident = self._IDENT.match(self.text, self.at)
        if ident:
            self.at = ident.end()
            word = ident.group(0)
            if word in self._WORDS:
                return self._WORDS[word]()
            if self.peek() == "{":  # `Foo { a: 1 }`: an instance of class Foo
                mapping = self.mapping()
                return Obj(word, {str(k): v for k, v in mapping.items()}, braces=True)
            if self.peek() == "[" and word in ("Array", "Object"):
                return self.sequence()
            raise ValueError(f"a bare word: {word}")
        raise ValueError(f"unexpected {ch!r} at {self.at}")

    def string(self) -> str:
        quote = self.text[self.at]
        if quote == '"' and not self.rust:
            value, self.at = json.JSONDecoder().raw_decode(self.text, self.at)
            return value
        out, i = [], self.at + 1
        while i < len(self.text) and self.text[i] != quote:
            if self.text[i] == "\\" and i + 1 < len(self.text):
                escaped = self.text[i + 1]
                if escaped == "u" and self.rust and (braced := _RUST_UNICODE.match(self.text, i)):
                    out.append(chr(int(braced[1], 16)))
                    i = braced.end()
                    continue
                if escaped == "u" and i + 5 < len(self.text):
                    out.append(chr(int(self.text[i + 2 : i + 6], 16)))
                    i += 6
                    continue
                if escaped == "x" and _HEX_BYTE.fullmatch(self.text, i + 2, i + 4):  # JavaScript's `\x0B`
                    out.append(chr(int(self.text[i + 2 : i + 4], 16)))
                    i += 4
                    continue
                out.append(_ESCAPES.get(escaped, escaped))
                i += 2
                continue
            out.append(self.text[i])
            i += 1
        if i >= len(self.text):
            raise ValueError("an unterminated string")
        self.at = i + 1
        return "".join(out)

    def sequence(self) -> list[Any]:
        self.at += 1
        items: list[Any] = []
        while self.peek() != "]":
            if not self.peek():
                if self.cut:  # the text ends inside this list: what follows is unknown
                    return [*items, Cut()]
                raise ValueError("an unterminated list")
            try:
                items.append(self.value())
            except ValueError:
                if self.cut and self.at >= len(self.text) - 1:
                    return [*items, Cut()]
                raise
            self.separator("]")
        self.at += 1
        return items

    def mapping(self) -> dict[Any, Any]:
        self.at += 1
        out: dict[Any, Any] = {}
        while self.peek() != "}":
            ch = self.peek()
            if not ch:
                if self.cut:
                    out[Cut] = Cut()  # unknown keys follow: never the same keys as another mapping
                    return out
                raise ValueError("an unterminated object")
            if ch in "'\"":
                key: Any = self.string()
            else:
                ident = self._IDENT.match(self.text, self.at) or self._NUMBER.match(self.text, self.at)
                if ident is None:
                    raise ValueError(f"a key expected at {self.at}")
                key, self.at = ident.group(0), ident.end()
            if self.peek() != ":":
                raise ValueError(f"':' expected at {self.at}")
            self.at += 1
            out[key] = self.value()
            self.separator("}")
        self.at += 1
        return out

    def separator(self, closing: str) -> None:
        ch = self.peek()
        if ch == ",":
            self.at += 1
        elif ch != closing and self.commas:
            raise ValueError(f"',' expected at {self.at}")


_GO_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|Inf|NaN)")


def _go(text: str) -> Any:
    """Go's `%v`/`%q`: a number as Go prints one, true/false, nil, a quoted string; anything else is the text it
    printed (`%v` prints a string without quotes: `1,000` and `1_000` are texts), without the single quotes a
    test's format string put around it (Go prints no `'…'` of its own but a one-character rune literal)."""
    if _GO_NUMBER.fullmatch(text):
        if text.lstrip("+-") in ("Inf", "NaN"):
            return float(text.replace("Inf", "inf").replace("NaN", "nan"))
        return numeral(text)
    if text in ("true", "false"):
        return text == "true"
    if text in ("<nil>", "nil"):
        return None
    if len(text) >= 2 and text[0] == text[-1] == '"':
        unquoted = go_unquote(text)
        return Printed(text) if unquoted is None else unquoted
    if len(text) >= 2 and text[0] == text[-1] == "`" and "`" not in text[1:-1]:
        return text[1:-1]  # a raw string literal: its text as written
    if len(text) >= 2 and text[0] == text[-1] == "'" and "'" not in text[1:-1]:
        return Printed(text[1:-1])  # the test's own quotes around a `%s` / `%v` (`expected '1,000', but got '1,00'`)
    return Printed(text)


_GO_ESCAPE = re.compile(r'\\(?:(?P<c>[abfnrtv\\"\'])|x(?P<x>[0-9a-fA-F]{2})|u(?P<u>[0-9a-fA-F]{4})|U(?P<U>[0-9a-fA-F]{8})|(?P<o>[0-7]{3}))')
_GO_CHAR = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"', "'": "'"}


# a quoted text's one-character escapes (JavaScript's util.inspect/object-inspect, Rust's Debug): `\f` is a form feed,
# never the letter f
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "f": "\f", "v": "\v", "b": "\b"}
_HEX_BYTE = re.compile(r"[0-9A-Fa-f]{2}")


def go_unquote(text: str) -> str | None:
    """A Go interpreted string literal (`strconv.Quote`, `%q`) as its text, by Go's escapes; None when it is not one
    (a stray quote or backslash, or a `\\x`/octal byte above 0x7f, which is a byte of UTF-8, not a character)."""
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return None
    out: list[str] = []
    body, at = text[1:-1], 0
    for match in _GO_ESCAPE.finditer(body):
        plain = body[at : match.start()]
        if "\\" in plain or '"' in plain or "\n" in plain:
            return None
        out.append(plain)
        at = match.end()
        if match["c"]:
            out.append(_GO_CHAR[match["c"]])
            continue
        if match["x"] or match["o"]:
            code = int(match["x"], 16) if match["x"] else int(match["o"], 8)
        else:
            code = int(match["u"] or match["U"], 16)
        if (code > 0x7F and not (match["u"] or match["U"])) or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            return None
        out.append(chr(code))
    rest = body[at:]
    if "\\" in rest or '"' in rest or "\n" in rest:
        return None
    return "".join(out) + rest


_RUST_UNICODE = re.compile(r"\\u\{([0-9a-fA-F]{1,6})\}")


def _rust(text: str) -> Any:
    r"""Rust's Debug: `"text"` (its escapes: `\u{a0}`), numbers, true/false, `None`, `[1, 2]`, `Point { x: 1 }`
    (read as JavaScript-like)."""
    if text == "None":
        return None
    return _Reader(text, commas=True, rust=True).read_all()


def _js_inspect(text: str) -> Any:
    if not text.startswith(("{", "[", "Object", "Array")) and not re.match(r"[A-Z]\w* \{", text):
        raise ValueError("not an object or array")
    return _Reader(text, commas=True).read_all()


def _mocha_diff_form(text: str) -> Any:
    """mocha's diff form of an object: JSON with one item per line and no commas."""
    if not text.startswith(("{", "[")):
        raise ValueError("not an object or array")
    return _Reader(text, commas=False).read_all()


def _mocha(text: str) -> Any:
    """mocha's stringified value: its diff form for objects and arrays, JSON for the rest."""
    return json.loads(text) if not text.startswith(("{", "[")) else _mocha_diff_form(text)


def _js_value(text: str) -> Any:
    """A JavaScript-printed value of any kind (util.inspect, object-inspect, pretty-format, JSON)."""
    return _Reader(text, commas=True).read_all()


_GRAMMARS: dict[str, tuple[Callable[[str], Any], ...]] = {
    "any": (_json, _python, _js_inspect, _mocha_diff_form),
    "python": (_python,),
    "json": (_json,),
    "js": (_json, _js_value),
    "mocha": (_mocha,),
    "rust": (_rust,),
}
assert set(_GRAMMARS) | {"text", "go"} == set(get_args(ValueGrammar))


# --- the smallest difference --------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """Where two values first differ: the path to that part, the two parts there, and how many parts differed
    at each step of the path (1 everywhere: the only difference)."""

    path: tuple[str, ...]
    expected: Any
    got: Any
    siblings: tuple[int, ...] = ()

    @property
    def where(self) -> str:
        return "".join(self.path)

    @property
    def only(self) -> bool:  # 0: unknown (a cut-off value)
        return all(n == 1 for n in self.siblings)


def first_differing_part(expected: Any, got: Any) -> tuple[str, Any, Any, int] | None:
    """One step into two containers of the same shape (mappings with the same keys, sequences of one length,
    objects of one class with the same fields): the first differing part, its values, how many parts differ."""
    if isinstance(expected, Obj) and isinstance(got, Obj):
        if expected.cls != got.cls or expected.fields.keys() != got.fields.keys():
            return None
        pairs = [(_field_label(expected.cls, k), expected.fields[k], got.fields[k]) for k in expected.fields]
    elif isinstance(expected, dict) and isinstance(got, dict):
        if expected.keys() != got.keys():
            return None
        pairs = [(f"[{k!r}]", expected[k], got[k]) for k in expected]
    elif isinstance(expected, list | tuple) and isinstance(got, list | tuple):
        cut = any(isinstance(x, Cut) for x in (*expected, *got))
        if cut:  # only the items both sides hold (before the cut)
            known = min(_whole_items(expected), _whole_items(got))
            pairs = [(f"[{i}]", e, g) for i, (e, g) in enumerate(zip(expected[:known], got[:known], strict=True))]
            differing = [pair for pair in pairs if not _same(pair[1], pair[2])]
            return (*differing[0], 0) if differing else None  # 0: how many others differ is unknown
        if len(expected) != len(got) or any(isinstance(x, Elided) for x in (*expected, *got)):
            return None
        pairs = [(f"[{i}]", e, g) for i, (e, g) in enumerate(zip(expected, got, strict=True))]
    else:
        return None
    differing = [pair for pair in pairs if not _same(pair[1], pair[2])]
    return (*differing[0], len(differing)) if differing else None


def _field_label(cls: str, field: str) -> str:
    """`.qty` for a named field; a positional argument (`#0`) by its place in the call, `<OrderedSet argument 1>`,
    never a bare `#0` that reads like an index into the value."""
    return f"<{cls} argument {int(field[1:]) + 1}>" if field.startswith("#") else f".{field}"


def smallest_difference(expected: Any, got: Any, limit: int = 100) -> Difference:
    """Descend into the first differing part while both sides keep the same shape."""
    path: tuple[str, ...] = ()
    siblings: tuple[int, ...] = ()
    for _ in range(limit):
        step = first_differing_part(expected, got)
        if step is None:
            break
        label, expected, got, count = step
        path, siblings = (*path, label), (*siblings, count)
    return Difference(path, expected, got, siblings)


def _whole_items(items: list[Any] | tuple[Any, ...]) -> int:
    """How many leading items are known: those before a `Cut` (the last of them may hold a `Cut` itself, so it
    differs from anything; descending into it finds where it really differs, if before its cut)."""
    for i, item in enumerate(items):
        if isinstance(item, Cut):
            return i
    return len(items)


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b) and not (is_number(a) and is_number(b)):
        return False
    try:
        return bool(a == b)
    except Exception:  # a value whose comparison raises is not known to be the same
        return False


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def kind_of(value: Any) -> str:
    """The kind of a parsed value, in words: `a number`, `a string`, `an `Item` object`, …"""
    if isinstance(value, Printed):
        return "a printed value"
    if isinstance(value, bool):
        return "a boolean"
    if is_number(value):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "nothing (None/null/undefined)"
    if isinstance(value, tuple):  # only a Python repr prints one: named as its repr shows it
        return "a tuple"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, frozenset):
        return "a set"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, Obj):
        return f"{'an' if value.cls[:1].lower() in 'aeiou' else 'a'} `{value.cls}` object"
    if isinstance(value, bytes):
        return "bytes"
    return "a value"
