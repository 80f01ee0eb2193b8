"""Stand-in for crewai.tools (not CrewAI): the ``tool`` decorator with the signature of crewAI's
lib/crewai/src/crewai/tools/base_tool.py and its refusals (a docstring is required)."""

from collections.abc import Callable
from typing import Any


class Tool:
    def __init__(self, name: str, description: str, func: Callable[..., Any]) -> None:
        self.name, self.description, self.func = name, description, func

    def run(self, **kwargs: Any) -> Any:
        return self.func(**kwargs)


def tool(
    *args: Callable[..., Any] | str, result_as_answer: bool = False, max_usage_count: int | None = None
) -> Any:
    def with_name(name: str) -> Callable[[Callable[..., Any]], Tool]:
        def make(function: Callable[..., Any]) -> Tool:
            if function.__doc__ is None:
                raise ValueError("Function must have a docstring")
            return Tool(name, function.__doc__, function)

        return make

    if len(args) == 1 and isinstance(args[0], str):
        return with_name(args[0])
    if len(args) == 1 and callable(args[0]):
        return with_name(args[0].__name__)(args[0])
    raise ValueError("Invalid arguments")
