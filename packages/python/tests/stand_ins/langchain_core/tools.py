"""Stand-in for langchain_core.tools (not LangChain): ``StructuredTool.from_function`` with the
signature of langchain-core's libs/core/langchain_core/tools/structured.py and its refusals."""

from collections.abc import Awaitable, Callable
from typing import Any, Literal


class StructuredTool:
    def __init__(self, name: str, description: str, args_schema: Any, func: Callable[..., Any] | None) -> None:
        self.name, self.description, self.args_schema, self.func = name, description, args_schema, func

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any] | None = None,
        coroutine: Callable[..., Awaitable[Any]] | None = None,
        name: str | None = None,
        description: str | None = None,
        return_direct: bool = False,
        args_schema: Any = None,
        infer_schema: bool = True,
        *,
        response_format: Literal["content", "content_and_artifact"] = "content",
        parse_docstring: bool = False,
        error_on_invalid_docstring: bool = False,
        **kwargs: Any,
    ) -> "StructuredTool":
        source = func or coroutine
        if source is None:
            raise ValueError("Function and/or coroutine must be provided")
        if args_schema is not None and not isinstance(args_schema, dict):
            raise TypeError(f"Invalid args_schema: expected BaseModel or dict, got {args_schema}")
        text = description if description is not None else source.__doc__
        if text is None:
            raise ValueError("Function must have a docstring if description not provided.")
        return cls(name or source.__name__, text.strip(), args_schema, func)

    def invoke(self, input: dict[str, Any]) -> Any:
        assert self.func is not None
        return self.func(**input)
