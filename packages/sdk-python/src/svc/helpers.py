"""Helpers over a client (sdk.md §9, §10, §14): channels and the streams helper.

Example:
    >>> from svc.helpers import create_channel
    >>> channel = create_channel(client)
    >>> client.trigger({"function_id": "files::upload", "payload": {"body": channel.reader_ref}, "action": TriggerAction.Void()})
"""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any, Callable, Protocol

from .channels import Channel, ChannelDirection, ChannelItem, ChannelReader, ChannelWriter, extract_channel_refs, is_channel_ref
from .types import StreamChannelRef

if TYPE_CHECKING:
    from .client import FunctionRef, Svc

__all__ = [
    "Channel",
    "ChannelDirection",
    "ChannelItem",
    "ChannelReader",
    "ChannelWriter",
    "IStream",
    "create_channel",
    "create_channel_async",
    "create_stream",
    "extract_channel_refs",
    "is_channel_ref",
]

#: Items a channel holds before its writer waits, by default (protocol.md §9: 1–1024).
DEFAULT_BUFFER_SIZE = 64


def _channel(client: Svc, result: Any) -> Channel:
    loop, url = client._loop, client.address
    writer_ref: StreamChannelRef = dict(result["writer"].ref if isinstance(result["writer"], ChannelWriter) else result["writer"])  # type: ignore[assignment]
    reader_ref: StreamChannelRef = dict(result["reader"].ref if isinstance(result["reader"], ChannelReader) else result["reader"])  # type: ignore[assignment]
    return Channel(ChannelWriter(loop, url, writer_ref), ChannelReader(loop, url, reader_ref), writer_ref, reader_ref)


async def create_channel_async(client: Svc, buffer_size: int = DEFAULT_BUFFER_SIZE) -> Channel:
    """Creates a channel (``engine::channels::create {buffer_size}``, protocol.md §9): both live
    ends and both refs. Pass a ref in any payload or result; the receiving SDK opens it.

    Raises:
        InvocationError: ``INVALID_ARGUMENTS`` for a ``buffer_size`` outside 1–1024, and any call error.
    """
    result = await client.trigger_async({"function_id": "engine::channels::create", "payload": {"buffer_size": buffer_size}})
    return _channel(client, result)


def create_channel(client: Svc, buffer_size: int = DEFAULT_BUFFER_SIZE) -> Channel:
    """:func:`create_channel_async`, blocking (not on the client's loop thread)."""
    result = client.trigger({"function_id": "engine::channels::create", "payload": {"buffer_size": buffer_size}})
    return _channel(client, result)


class IStream(Protocol):
    """What :func:`create_stream` serves (sdk.md §10). Methods may be sync or async; ``update`` is optional."""

    def get(self, input: dict[str, Any]) -> Any: ...
    def set(self, input: dict[str, Any]) -> Any: ...
    def delete(self, input: dict[str, Any]) -> Any: ...
    def list(self, input: dict[str, Any]) -> Any: ...
    def list_groups(self, input: dict[str, Any]) -> Any: ...


class StreamRef:
    """The functions of a stream implementation; :meth:`unregister` removes them all."""

    def __init__(self, refs: list[FunctionRef]) -> None:
        self._refs = refs

    def unregister(self) -> None:
        for ref in self._refs:
            ref.unregister()


def _adapt(method: Callable[..., Any], wrap: Callable[[Any], Any] | None = None) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(method):

        async def run_async(data: Any) -> Any:
            value = await method(data)
            return wrap(value) if wrap else value

        return run_async

    def run(data: Any) -> Any:
        value = method(data)
        if inspect.isawaitable(value):
            raise TypeError("stream methods must be async functions to return awaitables")
        return wrap(value) if wrap else value

    return run


def create_stream(client: Svc, stream_name: str, impl: Any) -> StreamRef:
    """Serves a stream from this worker (sdk.md §10): registers ``stream::get(<name>)``,
    ``stream::set(<name>)``, ``stream::delete(<name>)``, ``stream::list(<name>)``,
    ``stream::list_groups(<name>)`` and, when ``impl`` has ``update``, ``stream::update(<name>)``;
    the stream worker then routes operations on ``stream_name`` here. ``list_groups`` returns a
    list of group ids (sent as ``{"groups": [...]}``? no: as the list itself, as the Node SDK does).

    Raises:
        ValueError: a blank ``stream_name``. TypeError: ``impl`` lacks a required method.
    """
    if not isinstance(stream_name, str) or stream_name.strip() == "":
        raise ValueError("stream name is required")
    refs: list[FunctionRef] = []
    try:
        for op, attr in (("get", "get"), ("set", "set"), ("delete", "delete"), ("list", "list"), ("list_groups", "list_groups"), ("update", "update")):
            method = getattr(impl, attr, None)
            if method is None and attr == "list_groups":
                method = getattr(impl, "listGroups", None)
            if method is None:
                if op == "update":
                    continue
                raise TypeError(f"stream {stream_name}: impl needs a {attr} method")
            refs.append(client.register_function(f"stream::{op}({stream_name})", _adapt(method)))
    except Exception:
        for ref in refs:
            ref.unregister()
        raise
    return StreamRef(refs)


def _unused(_: asyncio.AbstractEventLoop) -> None:  # keeps asyncio imported for type checkers of callers
    return None
