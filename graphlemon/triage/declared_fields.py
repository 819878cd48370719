"""The fields a typed declaration in an SDD code block gives an answer, read with the language's parser.

An SDD may show an answer's shape as a type rather than an example: a TypeScript `interface` or object type
(tree-sitter), a Python class of annotated attributes — a dataclass, a pydantic model, a TypedDict — (`ast`),
or a JSON Schema object (`properties`). Each gives the answer's top-level field names; a block that is none of
these gives none.
"""

from __future__ import annotations

import ast
from typing import Any

from .handlers import js_parser, walk_nodes


def declared_fields(text: str, language: str) -> list[str]:
    """The field names the first type declared in `text` has; [] when it declares none."""
    language = language.strip().lower()
    if language in ("ts", "typescript", "tsx"):
        return _typescript(text)
    if language in ("py", "python"):
        return _python(text)
    return []


def schema_fields(doc: Any) -> list[str]:
    """A JSON Schema object's property names (`{"type": "object", "properties": {...}}`)."""
    if isinstance(doc, dict) and doc.get("type") == "object" and isinstance(doc.get("properties"), dict):
        return [str(k) for k in doc["properties"]]
    return []


def _typescript(text: str) -> list[str]:
    source = text.encode("utf-8")
    tree = js_parser(".ts").parse(source)
    for body in (*walk_nodes(tree.root_node, "interface_body"), *walk_nodes(tree.root_node, "object_type")):
        names = [
            source[n.start_byte : n.end_byte].decode("utf-8", "replace").strip("'\"")
            for prop in body.named_children
            if prop.type == "property_signature" and (n := prop.child_by_field_name("name")) is not None
        ]
        if names:
            return names
    return []


def _python(text: str) -> list[str]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            names = [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
            if names:
                return names
    return []


__all__ = ["declared_fields", "schema_fields"]
