"""Stand-in for autogen_core.tools (not AutoGen): ``FunctionTool`` with the signature of
autogen-core's autogen_core/tools/_function_tool.py, refusing what it cannot describe (every
parameter and the return need a type annotation)."""

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any


class FunctionTool:
    def __init__(
        self,
        func: Callable[..., Any],
        description: str,
        name: str | None = None,
        global_imports: Sequence[Any] = (),
        strict: bool = False,
    ) -> None:
        signature = inspect.signature(func, eval_str=True)
        unannotated = [p.name for p in signature.parameters.values() if p.annotation is inspect.Parameter.empty]
        if unannotated or signature.return_annotation is inspect.Signature.empty:
            raise ValueError(f"{func.__name__}: every parameter and the return need a type annotation")
        self._func, self.description, self.name = func, description, name or func.__name__

    async def run_json(self, args: Mapping[str, Any], cancellation_token: object) -> Any:
        return self._func(**args)
