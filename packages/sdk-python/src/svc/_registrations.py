"""The registration store (sdk.md §3–§5, protocol.md §3.7): functions, trigger types and triggers
registered through a client, each with its frame, replayed on every open in the order of
protocol.md §3.1 (trigger types, functions, triggers). Registrations are replayed, never queued.

Registration methods may be called from any thread; the store is guarded by a lock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

from ._codes import ErrorCode
from ._codec import encode_frame
from ._formats import HandlerShape, handler_shape
from ._ids import id_problem
from .errors import InvocationError


@dataclass
class LocalFunction:
    id: str
    #: None for HTTP-invoked functions.
    handler: Callable[..., Any] | None
    shape: HandlerShape | None
    frame: str


@dataclass
class LocalTriggerType:
    id: str
    namespace: str | None
    key: tuple[str, str]
    handler: Any
    frame: str


@dataclass
class LocalTrigger:
    id: str
    trigger_type: str
    function_id: str
    namespace: str | None
    frame: str


def require_namespace(value: object, field: str) -> None:
    """Refuses a namespace the engine would refuse, before anything is sent.

    Raises:
        ValueError: for a blank value; InvocationError ``INVALID_NAMESPACE`` for text that is not well-formed.
    """
    if value is None:
        return
    if not isinstance(value, str) or value.strip() == "":
        raise ValueError(f"{field} is empty: give it a name, or omit it")
    problem = id_problem(value)
    if problem is not None:
        raise InvocationError(ErrorCode.INVALID_NAMESPACE, f"Invalid namespace: {field} {problem}")


def require_well_formed_id(value: str, what: str) -> None:
    """Raises InvocationError ``INVALID_ID`` for an id the engine would refuse (protocol.md §3.5)."""
    problem = id_problem(value)
    if problem is not None:
        raise InvocationError(ErrorCode.INVALID_ID, f"Invalid id: {what} {problem}")


def request_problem(function_id: str, namespace: object) -> InvocationError | None:
    """Why a call cannot be sent (an id or namespace the engine would refuse), or None."""
    problem = id_problem(function_id)
    if problem is not None:
        return InvocationError(ErrorCode.INVALID_ID, f"Invalid id: function_id {problem}", function_id)
    if namespace is None:
        return None
    if not isinstance(namespace, str) or namespace.strip() == "":
        return InvocationError(ErrorCode.INVALID_NAMESPACE, "namespace is empty: give it a name, or omit it to use `default`", function_id)
    ns_problem = id_problem(namespace)
    if ns_problem is not None:
        return InvocationError(ErrorCode.INVALID_NAMESPACE, f"Invalid namespace: namespace {ns_problem}", function_id)
    return None


class RegistrationStore:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.functions: dict[str, LocalFunction] = {}
        self.trigger_types: dict[tuple[str, str], LocalTriggerType] = {}
        self.triggers: dict[str, LocalTrigger] = {}

    def add_function(
        self,
        function_id: str,
        handler_or_http: Callable[..., Any] | dict[str, Any],
        description: str | None,
        metadata: dict[str, Any] | None,
        request_format: dict[str, Any] | None,
        response_format: dict[str, Any] | None,
    ) -> LocalFunction:
        """Checks and stores a function (sdk.md §4).

        Raises:
            ValueError: ``function id is required``; ``function id already registered: <id>``.
            TypeError: neither a callable nor an HttpInvocationConfig with a ``url``.
            InvocationError: ``INVALID_ID``.
        """
        if not isinstance(function_id, str) or function_id.strip() == "":
            raise ValueError("function id is required")
        require_well_formed_id(function_id, "function id")
        frame: dict[str, Any] = {"type": "registerfunction", "id": function_id}
        if description is not None:
            frame["description"] = description
        handler: Callable[..., Any] | None = None
        shape: HandlerShape | None = None
        if callable(handler_or_http):
            handler = handler_or_http
            shape = handler_shape(handler, request_format is None or response_format is None)
            request_format = request_format if request_format is not None else shape.request_format
            response_format = response_format if response_format is not None else shape.response_format
        elif isinstance(handler_or_http, dict) and isinstance(handler_or_http.get("url"), str):
            frame["invocation"] = dict(handler_or_http)
        else:
            raise TypeError(f"function {function_id}: expected a handler or an HttpInvocationConfig with a url")
        if request_format is not None:
            frame["request_format"] = request_format
        if response_format is not None:
            frame["response_format"] = response_format
        if metadata is not None:
            frame["metadata"] = metadata
        entry = LocalFunction(function_id, handler, shape, encode_frame(frame))
        with self.lock:
            if function_id in self.functions:
                raise ValueError(f"function id already registered: {function_id}")
            self.functions[function_id] = entry
        return entry

    def add_trigger(self, trigger_id: str, data: dict[str, Any], default_namespace: Callable[[str], str | None]) -> LocalTrigger:
        """Checks and stores a binding (sdk.md §5) under ``trigger_id``.

        Raises:
            ValueError: a blank ``type``, ``function_id``, ``namespace`` or ``trigger_namespace``.
            InvocationError: ``INVALID_ID`` / ``INVALID_NAMESPACE``.
        """
        trigger_type, function_id = data.get("type"), data.get("function_id")
        if not isinstance(trigger_type, str) or trigger_type.strip() == "":
            raise ValueError("trigger type is required")
        if not isinstance(function_id, str) or function_id.strip() == "":
            raise ValueError("function id is required")
        require_well_formed_id(trigger_type, "trigger type")
        require_well_formed_id(function_id, "function_id")
        require_namespace(data.get("namespace"), "namespace")
        require_namespace(data.get("trigger_namespace"), "trigger_namespace")
        namespace = data.get("namespace") or default_namespace(function_id)
        config = data.get("config")
        frame: dict[str, Any] = {
            "type": "registertrigger",
            "id": trigger_id,
            "trigger_type": trigger_type,
            "function_id": function_id,
            "config": {} if config is None else config,
        }
        if data.get("metadata") is not None:
            frame["metadata"] = data["metadata"]
        if namespace is not None:
            frame["namespace"] = namespace
        if data.get("trigger_namespace") is not None:
            frame["trigger_namespace"] = data["trigger_namespace"]
        entry = LocalTrigger(trigger_id, trigger_type, function_id, namespace, encode_frame(frame))
        with self.lock:
            self.triggers[trigger_id] = entry
        return entry

    def add_trigger_type(self, data: dict[str, Any], handler: Any, worker_namespace: str | None) -> tuple[LocalTriggerType, LocalTriggerType | None]:
        """Checks and stores a trigger type, replacing one of the same key; returns it and the replaced one.

        Raises:
            ValueError: a blank ``id`` or ``namespace``.
            TypeError: a handler without ``register_trigger`` and ``unregister_trigger``.
            InvocationError: ``INVALID_ID`` / ``INVALID_NAMESPACE``.
        """
        type_id = data.get("id")
        if not isinstance(type_id, str) or type_id.strip() == "":
            raise ValueError("trigger type id is required")
        require_well_formed_id(type_id, "trigger type id")
        require_namespace(data.get("namespace"), "namespace")
        if not callable(getattr(handler, "register_trigger", None)) or not callable(getattr(handler, "unregister_trigger", None)):
            raise TypeError(f"trigger type {type_id}: handler needs register_trigger and unregister_trigger methods")
        frame: dict[str, Any] = {"type": "registertriggertype", "id": type_id, "description": data.get("description") or ""}
        for name in ("trigger_request_format", "call_request_format", "namespace"):
            if data.get(name) is not None:
                frame[name] = data[name]
        namespace = data.get("namespace")
        key = (namespace or worker_namespace or "default", type_id)
        entry = LocalTriggerType(type_id, namespace, key, handler, encode_frame(frame))
        with self.lock:
            replaced = self.trigger_types.get(key)
            self.trigger_types[key] = entry
        return entry, replaced

    def find_trigger_type(self, type_id: str, namespace: str | None) -> LocalTriggerType | None:
        """The provided type a delivered binding names: exact namespace first, else any of that id."""
        with self.lock:
            exact = self.trigger_types.get((namespace or "default", type_id))
            if exact is not None:
                return exact
            for entry in self.trigger_types.values():
                if entry.id == type_id:
                    return entry
        return None

    def replay_frames(self) -> list[str]:
        """Every registration's frame in the replay order of protocol.md §3.1."""
        with self.lock:
            return (
                [t.frame for t in self.trigger_types.values()]
                + [f.frame for f in self.functions.values()]
                + [t.frame for t in self.triggers.values()]
            )
