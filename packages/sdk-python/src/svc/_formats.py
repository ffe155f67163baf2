"""How a handler is called and what its formats are, read once at registration from its signature
and type hints (sdk.md §14): sync or async, whether it takes the payload and ``metadata``, the
``request_format``/``response_format`` derived from the hints with Pydantic, and how an input is
validated into a Pydantic model or dataclass parameter.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from dataclasses import dataclass
from typing import Any, Callable

import pydantic
from pydantic_core import to_jsonable_python


@dataclass(frozen=True)
class HandlerShape:
    is_async: bool
    #: 0: handler(); 1: handler(data); 2: handler(data, metadata=...)
    takes_data: bool
    takes_metadata: bool
    #: Validates the raw payload into the declared model, or None to pass it as decoded.
    validate: Callable[[Any], Any] | None
    request_format: dict[str, Any] | None
    response_format: dict[str, Any] | None


def _is_async(fn: Callable[..., Any]) -> bool:
    target: Any = fn
    while isinstance(target, functools.partial):
        target = target.func
    if inspect.iscoroutinefunction(target):
        return True
    call = getattr(target, "__call__", None)  # noqa: B004
    return call is not None and not inspect.isfunction(target) and not inspect.ismethod(target) and inspect.iscoroutinefunction(call)


def _plain(hint: Any) -> bool:
    return hint is inspect.Parameter.empty or hint is Any or hint is None or hint is type(None) or hint is object


def _schema(hint: Any, mode: typing.Literal["validation", "serialization"]) -> dict[str, Any] | None:
    try:
        return pydantic.TypeAdapter(hint).json_schema(mode=mode)
    except Exception:
        return None  # a hint Pydantic cannot describe: no format, the handler still registers


def _needs_validation(hint: Any) -> bool:
    origin = typing.get_origin(hint) or hint
    return isinstance(origin, type) and (issubclass(origin, pydantic.BaseModel) or dataclasses.is_dataclass(origin))


def handler_shape(handler: Callable[..., Any], derive_formats: bool = True) -> HandlerShape:
    """Reads ``handler``'s shape.

    Raises:
        TypeError: when ``handler`` is not callable.
    """
    if not callable(handler):
        raise TypeError("handler must be callable")
    is_async = _is_async(handler)
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):
        return HandlerShape(is_async, True, False, None, None, None)
    try:
        hints = typing.get_type_hints(handler)
    except Exception:
        hints = {}
    params = list(signature.parameters.values())
    takes_metadata = "metadata" in signature.parameters or any(p.kind is p.VAR_KEYWORD for p in params)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "metadata"]
    takes_data = bool(positional) or any(p.kind is p.VAR_POSITIONAL for p in params)
    data_hint = hints.get(positional[0].name, inspect.Parameter.empty) if positional else inspect.Parameter.empty
    return_hint = hints.get("return", inspect.Parameter.empty)
    validate: Callable[[Any], Any] | None = None
    request_format = response_format = None
    if not _plain(data_hint):
        if _needs_validation(data_hint):
            validate = pydantic.TypeAdapter(data_hint).validate_python
        if derive_formats:
            request_format = _schema(data_hint, "validation")
    if derive_formats and not _plain(return_hint):
        response_format = _schema(return_hint, "serialization")
    return HandlerShape(is_async, takes_data, takes_metadata, validate, request_format, response_format)


def jsonable(value: Any) -> Any:
    """``default`` hook of the JSON encoder: Pydantic models, dataclasses, datetimes, UUIDs, enums,
    sets… as JSON values (pydantic-core's ``to_jsonable_python``).

    Raises:
        pydantic_core.PydanticSerializationError: for values it cannot convert.
    """
    ref = getattr(value, "__svc_ref__", None)
    if callable(ref):
        return ref()  # a live channel end travels as its ref
    return to_jsonable_python(value)
