"""The client's answer types (handoff/api_types.py) are generated from docs/openapi.json, which
`npm run contract` writes from the contract: a contract change without a regeneration fails here."""

from __future__ import annotations

import importlib.util
import json
from types import ModuleType
from typing import Any

from conftest import PACKAGE, ROOT


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_types", PACKAGE / "scripts" / "generate_types.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def openapi() -> Any:
    return json.loads((ROOT / "docs" / "openapi.json").read_text("utf-8"))


def test_api_types_are_what_the_generator_writes_from_docs_openapi_json() -> None:
    committed = (PACKAGE / "src" / "handoff" / "api_types.py").read_text("utf-8")
    assert generator().render(openapi()) == committed, (
        "src/handoff/api_types.py is out of date with docs/openapi.json: "
        "run python3 packages/python/scripts/generate_types.py"
    )


def test_a_field_added_to_the_contract_changes_the_generated_types() -> None:
    document = openapi()
    resolved = document["components"]["schemas"]["ResolvedAgent"]
    # A field the contract does not have (key_proof, once the example here, now is one).
    resolved["properties"]["witness_note"] = {
        "type": ["object", "null"],
        "properties": {"leaf_index": {"type": "integer"}},
        "required": ["leaf_index"],
    }
    text = generator().render(document)
    assert "    witness_note: NotRequired[ResolvedAgentWitnessNote | None]\n" in text
    assert "class ResolvedAgentWitnessNote(TypedDict):\n    leaf_index: int\n" in text
