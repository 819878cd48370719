"""JSON schemas as a model reads them: pydantic's, without the `title` keys it adds to every object and field.

A title repeats the field's name (or the class name, which the prompt never shows); the descriptions carry
the meaning. `title` is removed only where it is a schema keyword (a string), never a property named
"title", and never inside values (`default`, `enum`, `const`, `examples`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

VALUES = frozenset({"default", "enum", "const", "examples"})


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    return without_titles(model.model_json_schema())


def without_titles(schema: Any) -> Any:
    if isinstance(schema, list):
        return [without_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(value, dict):
            out[key] = {name: without_titles(sub) for name, sub in value.items()}
        elif key in VALUES:
            out[key] = value
        else:
            out[key] = without_titles(value)
    return out
