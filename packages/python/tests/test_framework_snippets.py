"""docs/python.md's one line per agent framework, run as written against STAND-INS of the frameworks.

LangChain, CrewAI and AutoGen cannot be installed here (no PyPI). tests/stand_ins/ holds small
modules with the same import paths that offer exactly the call each line makes, with the signature
and refusals of the framework's current source. Passing shows the documented lines fit those
signatures and wrap the right function, name and description; it does not show the real
frameworks accept them.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from conftest import ROOT

from handoff import Client, tools

STAND_INS = Path(__file__).parent / "stand_ins"
FRAMEWORKS = ["langchain_core", "crewai", "autogen_core"]


def documented_snippets() -> dict[str, str]:
    """Each framework's lines from docs/python.md, after the block's shared import."""
    page = (ROOT / "docs" / "python.md").read_text()
    section = page[page.index("## Tools for agent frameworks") :]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None
    shared, *parts = block.group(1).strip().split("\n\n")
    found = {framework: part for part in parts for framework in FRAMEWORKS if f"from {framework}." in part}
    assert sorted(found) == sorted(FRAMEWORKS)
    return {framework: f"{shared}\n{part}" for framework, part in found.items()}


@pytest.fixture()
def stand_ins() -> Iterator[None]:
    sys.path.insert(0, str(STAND_INS))
    try:
        yield
    finally:
        sys.path.remove(str(STAND_INS))
        for name in [name for name in sys.modules if name.split(".")[0] in FRAMEWORKS]:
            del sys.modules[name]


class FakeClient:
    """Answers the profile, so a wrapped tool can be called without a server."""

    def profile(self) -> dict[str, Any]:
        return {"agent": {"agent_id": "stand-in-agent"}}


def wrapped(framework: str) -> list[Any]:
    namespace: dict[str, Any] = {}
    exec(documented_snippets()[framework], namespace)
    made: list[Any] = namespace["tools"]
    return made


def test_each_framework_line_wraps_every_tool_with_its_name_and_mcp_description(stand_ins: None) -> None:
    for framework in FRAMEWORKS:
        made = wrapped(framework)
        assert [(t.name, t.description) for t in made] == [(t["name"], t["description"]) for t in tools.TOOLS], framework
    langchain = wrapped("langchain_core")
    assert [t.args_schema for t in langchain] == [t["input_schema"] for t in tools.TOOLS]


def test_the_wrapped_tools_call_the_handoff_functions(stand_ins: None) -> None:
    tools.configure(cast(Client, FakeClient()))
    try:
        profile = {"agent": {"agent_id": "stand-in-agent"}}
        by_framework = {framework: {t.name: t for t in wrapped(framework)} for framework in FRAMEWORKS}
        assert by_framework["langchain_core"]["get_profile"].invoke({}) == profile
        assert by_framework["crewai"]["get_profile"].run() == profile
        assert asyncio.run(by_framework["autogen_core"]["get_profile"].run_json({}, object())) == profile
    finally:
        tools.configure()


def test_the_stand_ins_refuse_what_the_frameworks_refuse(stand_ins: None) -> None:
    """The stand-ins are not push-overs: a function without a docstring or annotations fails."""
    from autogen_core.tools import FunctionTool
    from crewai.tools import tool

    def bare(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(ValueError, match="docstring"):
        tool("bare")(bare)
    with pytest.raises(ValueError, match="annotation"):
        FunctionTool(bare, description="bare")
