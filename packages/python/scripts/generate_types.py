"""Writes src/handoff/api_types.py: TypedDicts of the API answers the Python client returns, from
docs/openapi.json (which `npm run contract` writes from the contract's zod schemas), so each wire
type is declared once. Standard library only; run from anywhere:

    python3 packages/python/scripts/generate_types.py          # rewrite the module
    python3 packages/python/scripts/generate_types.py --check  # exit 1 when it is out of date

tests/test_api_types.py runs the check, so a contract change without a regeneration fails.
"""

from __future__ import annotations

import json
import keyword
import sys
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[1]
OPENAPI = PACKAGE.parents[1] / "docs" / "openapi.json"
OUTPUT = PACKAGE / "src" / "handoff" / "api_types.py"

#: The component schemas the client answers with; the schemas they refer to come along.
ROOTS = [
    "RegisteredAgent",
    "ResolvedAgent",
    "Transfer",
    "PresignedTransfer",
    "InboxPage",
    "TransferDownload",
    "Profile",
    "BroadcastPage",
    "ConnectionList",
    "SendableAgentList",
    "IssuedRequestLink",
    "RequestLinkList",
    "PublicRequest",
    "RequestTransfer",
    "ConfirmedRequestTransfer",
]

HEADER = '''"""The API's answers as the Python client returns them: generated from docs/openapi.json by
packages/python/scripts/generate_types.py. Do not edit; run the script after `npm run contract`."""

from __future__ import annotations

from typing import {imports}


'''


def _literal(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _line(text: str) -> str:
    return " ".join(text.split())


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.replace("-", "_").split("_"))


class Generator:
    def __init__(self, schemas: dict[str, Any]) -> None:
        self.schemas = schemas
        #: Definitions in the order they are first needed: (name, source).
        self.definitions: dict[str, str] = {}

    def named(self, name: str) -> str:
        """The Python name of a component schema, defining it (and what it uses) once."""
        if name not in self.definitions:
            self.definitions[name] = ""  # reserved: a schema may refer to itself
            self.definitions[name] = self.define(name, self.schemas[name])
        return name

    def define(self, name: str, schema: dict[str, Any]) -> str:
        if schema.get("type") == "object" and "properties" in schema:
            return self.typed_dict(name, schema)
        doc = f"#: {_line(schema['description'])}\n" if schema.get("description") else ""
        return f"{doc}{name} = {self.type_of(schema, name)}\n"

    def typed_dict(self, name: str, schema: dict[str, Any]) -> str:
        required = set(schema.get("required", []))
        fields: list[tuple[str, str, str | None]] = []
        for prop, prop_schema in schema["properties"].items():
            annotation = self.type_of(prop_schema, name + _camel(prop))
            if prop not in required:
                annotation = f"NotRequired[{annotation}]"
            fields.append((prop, annotation, prop_schema.get("description")))
        if all(prop.isidentifier() and not keyword.iskeyword(prop) for prop, _, _ in fields):
            lines = [f"class {name}(TypedDict):"]
            if schema.get("description"):
                lines.append(f'    """{_line(schema["description"])}"""')
                lines.append("")
            for prop, annotation, description in fields:
                if description:
                    lines.append(f"    #: {_line(description)}")
                lines.append(f"    {prop}: {annotation}")
            return "\n".join(lines) + "\n"
        # A key that is no identifier (a header name) needs the functional form.
        members = ", ".join(f"{json.dumps(prop)}: {json.dumps(annotation)}" for prop, annotation, _ in fields)
        return f"{name} = TypedDict({json.dumps(name)}, {{{members}}})\n"

    def type_of(self, schema: dict[str, Any], context: str) -> str:
        if "$ref" in schema:
            return self.named(schema["$ref"].rsplit("/", 1)[1])
        if "anyOf" in schema:
            return self.union([self.type_of(option, context) for option in schema["anyOf"]])
        if "const" in schema:
            return f"Literal[{_literal(schema['const'])}]"
        if "enum" in schema:
            return "Literal[" + ", ".join(_literal(value) for value in schema["enum"]) + "]"
        kinds = schema.get("type")
        if isinstance(kinds, list):
            return self.union([self.type_of({**schema, "type": kind}, context) for kind in kinds])
        if kinds == "object":
            if "properties" in schema:
                if context not in self.definitions:
                    self.definitions[context] = ""
                    self.definitions[context] = self.typed_dict(context, schema)
                return context
            values = schema.get("additionalProperties")
            return f"dict[str, {self.type_of(values, context) if isinstance(values, dict) else 'Any'}]"
        if kinds == "array":
            return f"list[{self.type_of(schema.get('items', {}), context + 'Item')}]"
        simple = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
        return simple.get(kinds, "Any") if isinstance(kinds, str) else "Any"

    @staticmethod
    def union(options: list[str]) -> str:
        return " | ".join(dict.fromkeys(options))


def render(openapi: dict[str, Any]) -> str:
    generator = Generator(openapi["components"]["schemas"])
    for root in ROOTS:
        generator.named(root)
    body = "\n\n".join(generator.definitions[name] for name in sorted(generator.definitions))
    used = [name for name in ("Any", "Literal", "NotRequired") if f"{name}[" in body or f"{name}]" in body]
    return HEADER.format(imports=", ".join([*used, "TypedDict"])) + body


def main(argv: list[str]) -> int:
    text = render(json.loads(OPENAPI.read_text("utf-8")))
    if "--check" in argv:
        if OUTPUT.read_text("utf-8") != text:
            sys.stderr.write(f"{OUTPUT} is out of date with {OPENAPI}: run {Path(__file__).name}\n")
            return 1
        return 0
    OUTPUT.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
