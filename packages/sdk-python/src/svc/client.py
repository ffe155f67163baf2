"""The svc client for Python (sdk.md §14): :func:`register_worker` and :class:`Svc`, a thin facade
over :class:`svc._session.ClientSession` that runs the session on its own event loop thread and
moves calls from the caller's thread onto it (``httpx``-style pair: blocking ``trigger`` and
``await trigger_async``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import platform
import socket
import threading
import uuid
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, cast

from typing_extensions import TypeAlias

import svc_helpers.observability as observability
from svc_helpers.backoff import ReconnectionConfig

from . import _telemetry as telemetry
from ._addresses import display_address, engine_addresses, split_address_list
from ._codec import encode_frame
from ._calls import CallFuture, reject
from ._codes import ErrorCode
from ._handler_context import HandlerRun, current_run
from ._handoff import Inbox, LoopFuture, settle_in_loop
from ._ids import id_problem
from ._registrations import LocalTriggerType
from ._session import DEFAULT_INVOCATION_TIMEOUT_MS, ClientSession, ClientTimings
from ._transport import Connector
from .channels import materializer
from .errors import EngineConnectionError, InvocationError
from .types import ConnectionState, RegistrationError

__version__ = "0.1.0"

#: The engine address used when neither an argument nor ``SVC_URL`` gives one (protocol.md §2).
DEFAULT_ENGINE_URL = "ws://127.0.0.1:49134"
#: How long ``register_worker`` waits for the first connection, s (sdk.md §14).
FIRST_CONNECTION_WAIT_S = 30.0

#: A call on its way from another thread: request, trace context, where its outcome goes, its
#: invocation id and the handler run that makes it.
_Start: TypeAlias = tuple[dict[str, Any], tuple[str | None, str | None] | None, CallFuture, str, HandlerRun | None]


@dataclass
class InitOptions:
    """Options of :func:`register_worker` (sdk.md §2, §14); all optional.

    Attributes:
        worker_name: name in the announce; env ``SVC_WORKER_NAME``, else ``<hostname>:<pid>``. A label.
        worker_description: one-line summary shown by ``engine::workers::list``.
        namespace: the worker's namespace; env ``SVC_NAMESPACE`` (empty counts as unset), else none
            (the engine uses ``default``). A blank string raises ``ValueError``.
        invocation_timeout_ms: default timeout of synchronous and enqueue ``trigger`` calls, ms (30000).
        reconnection_config: backoff (sdk.md §2); a :class:`ReconnectionConfig` or a dict of its fields.
        enable_metrics_reporting: accepted for compatibility; this SDK sends no worker gauges yet.
        otel: telemetry (:class:`svc_helpers.observability.OtelConfig` or a dict of its fields);
            ``{"enabled": False}`` or env ``OTEL_ENABLED=false`` turns it off.
        headers: extra HTTP headers on the upgrade of ``/`` and ``/otel`` (for the auth function).
        telemetry: worker metadata for the announce: ``language``, ``project_name``, ``framework``.
        timings: keepalive and handshake durations (tests only).
        connector: opens the worker connection (tests only).
    """

    worker_name: str | None = None
    worker_description: str | None = None
    namespace: str | None = None
    invocation_timeout_ms: float = DEFAULT_INVOCATION_TIMEOUT_MS
    reconnection_config: ReconnectionConfig | Mapping[str, Any] | None = None
    enable_metrics_reporting: bool = True
    otel: observability.OtelConfig | Mapping[str, Any] | None = None
    headers: dict[str, str] | None = None
    telemetry: dict[str, str] = field(default_factory=dict)
    timings: ClientTimings | None = None
    connector: Connector | None = None


def resolve_address(address: str | Sequence[str] | None) -> tuple[str, ...]:
    """The engine addresses (protocol.md §2, issue 19 §3): the argument (one URL, or a sequence of
    the engines of a fleet), else env ``SVC_URL`` (one URL, or several separated by commas), else
    :data:`DEFAULT_ENGINE_URL`. An empty string counts as unset. The first is tried first.

    Raises:
        ValueError: naming the entry by position, for an empty list or an entry that is empty or
            not a ``ws://``/``wss://`` URL; the message never shows an address's credentials.

    Example:
        >>> resolve_address(["ws://10.0.0.1:49134", "ws://10.0.0.2:49134"])
        ('ws://10.0.0.1:49134', 'ws://10.0.0.2:49134')
    """
    if address is not None and address != "":
        return engine_addresses(address)
    from_env = os.environ.get("SVC_URL") or ""
    if from_env == "":
        return engine_addresses(DEFAULT_ENGINE_URL)
    return engine_addresses(split_address_list(from_env), "SVC_URL")


def _resolve_namespace(value: str | None) -> str | None:
    if value is not None:
        if not isinstance(value, str) or value.strip() == "":
            raise ValueError("namespace is empty: give it a name, or omit it to use `default`")
        namespace: str | None = value
    else:
        env = os.environ.get("SVC_NAMESPACE", "")
        namespace = env if env.strip() != "" else None
    if namespace is not None:
        problem = id_problem(namespace)
        if problem is not None:
            raise InvocationError(ErrorCode.INVALID_NAMESPACE, f"Invalid namespace: namespace {problem}")
    return namespace


def _project_name() -> str:
    for directory in [Path.cwd(), *Path.cwd().parents]:
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            try:
                import tomllib  # type: ignore[import-not-found,unused-ignore]

                name = tomllib.loads(pyproject.read_text("utf-8")).get("project", {}).get("name")
                if isinstance(name, str) and name:
                    return name
            except Exception:
                pass
            return directory.name
    return Path.cwd().name


def _reconnection(value: ReconnectionConfig | Mapping[str, Any] | None) -> ReconnectionConfig:
    if value is None:
        return ReconnectionConfig()
    if isinstance(value, ReconnectionConfig):
        return value
    return replace(ReconnectionConfig(), **dict(value))


class FunctionRef:
    """A registered function. :meth:`unregister` sends ``unregisterfunction`` and forgets the handler; idempotent."""

    def __init__(self, function_id: str, unregister: Callable[[], None]) -> None:
        self.id = function_id
        self._unregister = unregister

    def unregister(self) -> None:
        self._unregister()


class Trigger:
    """A binding registered by this client; ``id`` is stable across reconnects."""

    def __init__(self, trigger_id: str, unregister: Callable[[], None]) -> None:
        self.id = trigger_id
        self._unregister = unregister

    def unregister(self) -> None:
        self._unregister()


class TriggerTypeRef:
    """A trigger type this client provides (sdk.md §5)."""

    def __init__(self, client: Svc, entry: LocalTriggerType, namespace: str | None) -> None:
        self.id = entry.id
        self._client = client
        self._entry = entry
        self._namespace = namespace

    def register_trigger(self, function_id: str, config: Any, metadata: dict[str, Any] | None = None) -> Trigger:
        """Binds ``function_id`` to this type; the target namespace defaults to the worker's."""
        data: dict[str, Any] = {"type": self.id, "function_id": function_id, "config": config}
        if metadata is not None:
            data["metadata"] = metadata
        if self._namespace is not None:
            data["trigger_namespace"] = self._namespace
        return self._client.register_trigger(data)

    def register_function(self, function_id: str, handler: Callable[..., Any], config: Any, metadata: dict[str, Any] | None = None) -> FunctionRef:
        """Registers a function and binds it to this type; the ref's ``unregister()`` removes both."""
        fn = self._client.register_function(function_id, handler)
        try:
            trigger = self.register_trigger(function_id, config, metadata)
        except Exception:
            fn.unregister()
            raise

        def unregister() -> None:
            trigger.unregister()
            fn.unregister()

        return FunctionRef(function_id, unregister)

    def unregister(self) -> None:
        """Sends ``unregistertriggertype``; bindings held by the handler are let go."""
        self._client._on_loop(self._client._session.unregister_trigger_type_entry, self._entry)


class Svc:
    """A connection to the engine (sdk.md §3, §14), made by :func:`register_worker`. Registration
    methods work in any state and from any thread: registrations are stored and (re)sent on every
    open. Calls from the client's own loop thread must use the ``*_async`` methods.
    """

    def __init__(self, address: str | Sequence[str], options: InitOptions) -> None:
        addresses = engine_addresses(address)
        self._addresses = addresses
        self._options = options
        self._namespace = _resolve_namespace(options.namespace)
        if not (isinstance(options.invocation_timeout_ms, (int, float)) and options.invocation_timeout_ms >= 1):
            raise ValueError(f"invocation_timeout_ms must be a number >= 1, got {options.invocation_timeout_ms!r}")
        reconnection = _reconnection(options.reconnection_config)
        otel_config = observability.OtelConfig.of(options.otel)
        self._otel = observability.otel_enabled(otel_config.enabled)
        worker_name = options.worker_name or os.environ.get("SVC_WORKER_NAME") or f"{socket.gethostname()}:{os.getpid()}"
        announce: dict[str, Any] = {
            "runtime": "python",
            "version": __version__,
            "name": worker_name,
            "os": f"{platform.system().lower()} {platform.release()} ({platform.machine()})",
            "pid": os.getpid(),
            "isolation": os.environ.get("SVC_ISOLATION") or None,
            "telemetry": {
                "language": "python",
                "project_name": _project_name(),
                "framework": "svc-python",
                **(options.telemetry or {}),
            },
        }
        if options.worker_description is not None:
            announce["description"] = options.worker_description
        if self._namespace is not None:
            announce["namespace"] = self._namespace
        self._owns_otel = False
        if self._otel:
            self._owns_otel = observability.init_otel(
                replace(otel_config, engine_ws_url=addresses[0], headers=options.headers, reconnection_config=otel_config.reconnection_config or reconnection)
            )
        if self._otel:
            handler_spans = telemetry.handler_spans_announce()
            if handler_spans is not None:
                announce["handler_spans"] = handler_spans
        self._loop = asyncio.new_event_loop()
        self._executor = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="svc-handler")
        self._first = threading.Event()
        self._session = ClientSession(
            self._loop,
            addresses,
            announce,
            self._executor,
            namespace=self._namespace,
            headers=options.headers,
            invocation_timeout_ms=options.invocation_timeout_ms,
            reconnection=reconnection,
            timings=options.timings,
            connector=options.connector,
            telemetry_enabled=self._otel,
            materialize=materializer(self._loop, lambda: self._session.address),
        )
        self._state: ConnectionState = "disconnected"
        self._session.add_connection_state_listener(self._track_state)
        #: Calls made outside the loop thread, on their way to the session.
        self._starts: Inbox[_Start] = Inbox(self._loop, self._start_call, self._not_connected)
        self._inboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Inbox[tuple[asyncio.Future[Any], bool, Any]]] = weakref.WeakKeyDictionary()
        self._inboxes_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="svc-client", daemon=True)
        self._thread.start()
        self._closed = False

    def _track_state(self, state: ConnectionState) -> None:
        self._state = state
        if state in ("connected", "failed"):
            self._first.set()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(self._session.start)
        self._loop.run_forever()

    def _on_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def _on_loop(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._on_loop_thread():
            fn(*args)
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(fn, *args)

    def _wait_first_connection(self, timeout_s: float) -> None:
        self._first.wait(timeout_s)
        if self._session.state == "failed":
            error = self._session.last_error
            code = getattr(error, "code", ErrorCode.NOT_CONNECTED)
            raise EngineConnectionError(code if isinstance(code, str) else ErrorCode.NOT_CONNECTED, f"could not connect to the engine at {', '.join(display_address(a) for a in self._addresses)}: {error}")

    # ------------------------------------------------------------ registration (sdk.md §4–§5)

    def register_function(
        self,
        function_id: str,
        handler_or_http_config: Callable[..., Any] | Mapping[str, Any],
        *,
        description: str | None = None,
        metadata: dict[str, Any] | None = None,
        request_format: dict[str, Any] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> FunctionRef:
        """Registers a function served by a handler, or by the engine calling a URL when given an
        :class:`svc.types.HttpInvocationConfig` (sdk.md §4, protocol.md §6.8). Sent now when
        connected and replayed on every open.

        The handler may be sync (run in the client's thread pool) or async (run on its loop); it
        gets the payload as its first positional parameter (validated into a Pydantic model or a
        dataclass when annotated so) and the invocation metadata only if it declares a parameter
        named ``metadata``. ``request_format``/``response_format`` default to the JSON Schema of the
        type hints (Pydantic). The return value is the result (Pydantic models and dataclasses are
        converted); a raised exception becomes the error body (its own ``code`` attribute when
        valid, else ``invocation_failed``, with the traceback as ``stacktrace``).

        Raises:
            ValueError: ``function id is required``; ``function id already registered: <id>``.
            TypeError: neither a callable nor an HttpInvocationConfig with a ``url``.
            InvocationError: ``INVALID_ID`` for an id the engine would refuse (protocol.md §3.5).

        Example:
            >>> class Sum(pydantic.BaseModel):
            ...     a: int
            ...     b: int
            >>> client.register_function("math::add", lambda s: {"c": s.a + s.b}, description="Add")
            >>> async def add(data: Sum, metadata=None) -> int:
            ...     return data.a + data.b
            >>> client.register_function("math::add_async", add)
        """
        handler: Any = handler_or_http_config if callable(handler_or_http_config) else dict(handler_or_http_config)
        store = self._session.registrations
        entry = store.add_function(function_id, handler, description, metadata, request_format, response_format)
        self._on_loop(self._session.send_if_connected, entry.frame)

        def unregister() -> None:
            with store.lock:
                if store.functions.get(function_id) is not entry:
                    return
                del store.functions[function_id]
            self._on_loop(self._session.send_if_connected, encode_frame({"type": "unregisterfunction", "id": function_id}))

        return FunctionRef(function_id, unregister)

    def register_trigger(self, trigger: Mapping[str, Any]) -> Trigger:
        """Binds a function to a trigger type (sdk.md §5) under a generated id (UUID v4), replayed
        with that id on every open. Keys: ``type``, ``function_id``, ``config``, optional
        ``metadata``, ``namespace``, ``trigger_namespace``.

        Raises:
            ValueError: a blank ``type``, ``function_id``, ``namespace`` or ``trigger_namespace``.
            InvocationError: ``INVALID_ID`` / ``INVALID_NAMESPACE`` (protocol.md §3.5).

        Example:
            >>> client.register_trigger({"type": "http", "function_id": "math::add", "config": {"api_path": "/add", "http_method": "POST"}})
        """
        store = self._session.registrations
        entry = store.add_trigger(str(uuid.uuid4()), dict(trigger), self._session.default_namespace)
        self._on_loop(self._session.send_if_connected, entry.frame)

        def unregister() -> None:
            with store.lock:
                if store.triggers.get(entry.id) is not entry:
                    return
                del store.triggers[entry.id]
            self._on_loop(self._session.send_if_connected, encode_frame({"type": "unregistertrigger", "id": entry.id, "trigger_type": entry.trigger_type}))

        return Trigger(entry.id, unregister)

    def register_trigger_type(self, trigger_type: Mapping[str, Any], handler: Any) -> TriggerTypeRef:
        """Provides a trigger type (sdk.md §5, protocol.md §8.3): bindings the engine delivers go to
        ``handler.register_trigger(cfg)`` / ``handler.unregister_trigger(cfg)`` (sync or async;
        ``cfg`` is a :class:`svc.TriggerConfig`). Raising in ``register_trigger`` refuses the
        binding (``trigger_registration_failed``). Registering the same type again replaces the handler.

        Raises:
            ValueError: a blank ``id`` or ``namespace``. TypeError: a handler without both methods.
            InvocationError: ``INVALID_ID`` / ``INVALID_NAMESPACE``.
        """
        data = dict(trigger_type)
        entry, replaced = self._session.registrations.add_trigger_type(data, handler, self._namespace)
        if replaced is not None:
            self._on_loop(self._session.bindings.release_all, replaced)
        self._on_loop(self._session.send_if_connected, entry.frame)
        return TriggerTypeRef(self, entry, data.get("namespace"))

    def unregister_trigger_type(self, trigger_type: Mapping[str, Any]) -> None:
        """Stops providing a trigger type (``unregistertriggertype``); keys ``id`` and optional ``namespace``."""
        key = (trigger_type.get("namespace") or self._namespace or "default", trigger_type.get("id"))
        with self._session.registrations.lock:
            entry = self._session.registrations.trigger_types.get(cast(tuple[str, str], key))
        if entry is not None:
            self._on_loop(self._session.unregister_trigger_type_entry, entry)

    # ------------------------------------------------------------ invocation (sdk.md §6)

    def _start_call(self, item: _Start) -> None:
        """Starts a call handed over by :meth:`_submit` (on the loop)."""
        req, trace, out, call_id, run = item
        try:
            self._session.trigger_into(req, trace, out, call_id=call_id, run=run)
        except BaseException as err:  # never expected: trigger reports through its future
            reject(out, err)

    @staticmethod
    def _not_connected(item: _Start) -> None:
        reject(item[2], InvocationError(ErrorCode.NOT_CONNECTED, "not connected to the engine", item[0].get("function_id")))

    def _submit(self, request: Mapping[str, Any], trace: tuple[str | None, str | None] | None, out: CallFuture, call_id: str, run: HandlerRun | None) -> None:
        """Hands a call made outside the loop thread to the session; its outcome goes to ``out``
        (settled by the session in place when the answer is read)."""
        item = (request if isinstance(request, dict) else dict(request), trace, out, call_id, run)
        if self._loop.is_closed():
            self._not_connected(item)
        else:
            self._starts.put(item)

    def _cancel(self, call_id: str, reason: str | None) -> None:
        """Cancels call ``call_id`` from any thread (on the loop); nothing once the client is closed."""
        if self._on_loop_thread():
            self._session.cancel_call(call_id, reason)
        elif not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._session.cancel_call, call_id, reason)
            except RuntimeError:  # closed meanwhile
                pass

    def _inbox_of(self, loop: asyncio.AbstractEventLoop) -> Inbox[tuple[asyncio.Future[Any], bool, Any]]:
        """The inbox through which outcomes reach callers on ``loop`` (one per loop, kept while it lives)."""
        with self._inboxes_lock:
            inbox = self._inboxes.get(loop)
            if inbox is None:
                inbox = Inbox(loop, settle_in_loop, lambda _item: None)
                self._inboxes[loop] = inbox
            return inbox

    def trigger(self, request: Mapping[str, Any]) -> Any:
        """Invokes a function and blocks until it answers (sdk.md §6, §14). Keys: ``function_id``,
        ``payload``, ``action`` (:class:`svc.TriggerAction`), ``timeout_ms``, ``metadata``,
        ``namespace``. Returns the result (None when none); with ``TriggerAction.Void()`` None at
        once; with ``TriggerAction.Enqueue(queue=…)`` ``{"messageReceiptId": …}`` once persisted.

        Cancellation (docs/reference/protocol.md "cancelinvocation"): when the timeout passes, or
        the wait is interrupted (``KeyboardInterrupt``), the engine is sent ``cancelinvocation`` so
        the worker running the call is told to stop. Inside a handler, the call is cancelled with
        the handler's own invocation (it raises ``cancelled`` then).

        Raises:
            InvocationError: ``TIMEOUT`` (``invocation timed out after <ms>ms``), ``cancelled``
                (``Invocation cancelled: <reason>``), ``invocation_stopped``, ``NOT_CONNECTED``,
                ``SHUTDOWN``, the remote code (with ``stacktrace``), or at once
                ``INVALID_ARGUMENTS`` / ``INVALID_ID`` / ``INVALID_NAMESPACE``.
            RuntimeError: when called on the client's own loop thread (use :meth:`trigger_async`).

        Example:
            >>> client.trigger({"function_id": "math::add", "payload": {"a": 2, "b": 3}})
            {'c': 5}
        """
        if self._on_loop_thread():
            raise RuntimeError("trigger() blocks: call it outside the client's event loop, or await trigger_async() there")
        out: concurrent.futures.Future[Any] = concurrent.futures.Future()
        call_id = self._session.new_id()
        self._submit(request, telemetry.outgoing(), out, call_id, current_run())
        try:
            return out.result()
        except BaseException:
            if not out.done():  # interrupted while waiting (KeyboardInterrupt): nobody waits any more
                out.cancel()
                self._cancel(call_id, "the caller was interrupted")
            raise

    async def trigger_async(self, request: Mapping[str, Any]) -> Any:
        """:meth:`trigger` as a coroutine, awaitable on any event loop (the client's own included).

        Cancelling the awaiting task (``task.cancel(msg)``, ``asyncio.wait_for``'s or
        ``asyncio.timeout``'s deadline, a ``TaskGroup`` whose sibling failed) cancels the call: the
        engine is sent ``cancelinvocation`` (reason: ``msg`` when one was given, cut to 1024
        characters) so the worker running it is told to stop, and its late answer is dropped. The
        SDK's own timeout (``timeout_ms``) cancels it the same way and raises ``TIMEOUT``. Inside a
        handler, the call is cancelled with the handler's own invocation.

        Raises:
            InvocationError: as :meth:`trigger`.
            asyncio.CancelledError: the awaiting task was cancelled (the call is cancelled with it).

        Example:
            >>> try:
            ...     report = await asyncio.wait_for(client.trigger_async({"function_id": "report::build", "payload": {}}), 5)
            ... except asyncio.TimeoutError:
            ...     ...  # the worker building the report was told to stop
        """
        trace = telemetry.outgoing()
        running = asyncio.get_running_loop()
        call_id = self._session.new_id()
        run = current_run()
        if running is self._loop:
            req = request if isinstance(request, dict) else dict(request)
            future = self._session.trigger(req, trace, call_id=call_id, run=run)
        else:
            # Another loop: the outcome comes back through that loop's inbox (one wake-up per batch).
            future = running.create_future()
            self._submit(request, trace, LoopFuture(future, self._inbox_of(running)), call_id, run)
        try:
            return await future
        except asyncio.CancelledError as err:
            self._cancel(call_id, _cancel_message(err))
            raise

    # ------------------------------------------------------------ state and accessors

    def get_connection_state(self) -> ConnectionState:
        """The connection state now (sdk.md §8)."""
        return self._session.state

    def add_connection_state_listener(self, listener: Callable[[ConnectionState], None]) -> Callable[[], None]:
        """Calls ``listener`` with the current state now, then (on the client's loop thread) on every
        change, until the returned function is called."""
        listener(self._session.state)
        handle: dict[str, Callable[[], None]] = {}

        # The session calls a new listener at once; skip that call, it was made above.
        def add_skipping_first() -> None:
            first = [True]

            def relay(state: ConnectionState) -> None:
                if first[0]:
                    first[0] = False
                    return
                listener(state)

            handle["remove"] = self._session.add_connection_state_listener(relay)

        self._on_loop(add_skipping_first)

        def remove() -> None:
            self._on_loop(lambda: handle.get("remove", lambda: None)())

        return remove

    def add_registration_error_listener(self, listener: Callable[[RegistrationError], None]) -> Callable[[], None]:
        """Calls ``listener`` (on the client's loop thread) with every non-fatal refusal (sdk.md §7.3)."""
        handle: dict[str, Callable[[], None]] = {}
        self._on_loop(lambda: handle.__setitem__("remove", self._session.add_registration_error_listener(listener)))
        return lambda: self._on_loop(lambda: handle.get("remove", lambda: None)())

    @property
    def worker_id(self) -> str | None:
        """From the latest ``workerregistered``."""
        return self._session.worker_id

    def get_worker_id(self) -> str | None:
        return self._session.worker_id

    @property
    def address(self) -> str:
        """The engine address the client is connected to; while it is not, the one it tries next
        (one of :attr:`addresses`, issue 19 §3). As given, credentials included."""
        return self._session.address

    def get_address(self) -> str:
        return self._session.address

    @property
    def addresses(self) -> tuple[str, ...]:
        """Every engine address of the client, in the order they are tried."""
        return self._addresses

    def get_addresses(self) -> tuple[str, ...]:
        return self._addresses

    @property
    def namespace(self) -> str | None:
        return self._namespace

    def get_namespace(self) -> str | None:
        return self._namespace

    def get_last_error(self) -> BaseException | None:
        """The fatal error in ``failed``, else the last connection-level error."""
        return self._session.last_error

    # ------------------------------------------------------------ shutdown (sdk.md §8)

    def shutdown(self) -> None:
        """Fails pending calls with ``SHUTDOWN``, closes with code 1000, flushes telemetry (and shuts
        its pipeline down when no other client of the process uses it), stops the loop thread.
        Idempotent.

        Raises:
            RuntimeError: when called on the client's own loop thread (use :meth:`shutdown_async`).
        """
        if self._on_loop_thread():
            raise RuntimeError("shutdown() blocks: await shutdown_async() on the client's loop")
        if self._closed:
            return
        self._closed = True
        try:
            asyncio.run_coroutine_threadsafe(self._close_session(), self._loop).result(10)
        except Exception:
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()
        self._executor.shutdown(wait=False)
        if self._owns_otel:
            self._owns_otel = False
            observability.shutdown_otel()

    async def _close_session(self) -> None:
        await self._session.shutdown()

    async def shutdown_async(self) -> None:
        """:meth:`shutdown` as a coroutine; on the client's own loop it closes the session and
        leaves the thread to stop right after."""
        running = asyncio.get_running_loop()
        if running is self._loop:
            await self._session.shutdown()
            if not self._closed:
                self._closed = True
                self._executor.shutdown(wait=False)
                if self._owns_otel:
                    self._owns_otel = False
                    await asyncio.get_running_loop().run_in_executor(None, observability.shutdown_otel)
                self._loop.call_soon(self._loop.stop)
            return
        await running.run_in_executor(None, self.shutdown)

    def __enter__(self) -> Svc:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.shutdown()


def _cancel_message(err: asyncio.CancelledError) -> str | None:
    """The message ``task.cancel(msg)`` gave, when a text."""
    return err.args[0] if err.args and isinstance(err.args[0], str) else None


def register_worker(address: str | Sequence[str] | None = None, options: InitOptions | None = None) -> Svc:
    """Connects a worker to the engine (sdk.md §2, §14). Starts the client's event loop on a
    background thread, initialises telemetry unless disabled, and waits up to 30 s for the first
    connection; after that it keeps retrying in the background (connection failures never raise).

    Args:
        address: ``ws://`` or ``wss://`` URL of the engine, or a sequence of the URLs of several
            engines of a fleet (issue 19 §3): the first is tried first, a failed attempt or a lost
            connection moves on to the next at once (registrations are replayed there), and the
            backoff waits only after a full round. Default env ``SVC_URL`` (one URL, or several
            separated by commas), else ``ws://127.0.0.1:49134``. :attr:`Svc.address` is the engine
            the client is on; a failover is logged (``svc`` logger) without credentials.
        options: :class:`InitOptions`.

    Raises:
        ValueError: an empty address list, an empty or non-WebSocket URL (named by position, never
            with its credentials), a blank namespace, invalid numbers in the options.
        InvocationError: ``INVALID_NAMESPACE`` for a namespace that is not well-formed text.
        EngineConnectionError: the client entered ``failed`` before it connected (``max_retries``
            exhausted, a fatal registration rejection).

    Example:
        >>> from svc import register_worker, InitOptions
        >>> client = register_worker("ws://127.0.0.1:49134", InitOptions(worker_name="orders"))
        >>> client.register_function("orders::ping", lambda data: "pong")
        >>> client.trigger({"function_id": "orders::ping", "payload": None})
        'pong'
        >>> fleet = register_worker(["ws://10.0.0.1:49134", "ws://10.0.0.2:49134"])
        >>> fleet.address  # the engine it is connected to
        'ws://10.0.0.1:49134'
    """
    client = Svc(resolve_address(address), options or InitOptions())
    try:
        client._wait_first_connection(FIRST_CONNECTION_WAIT_S)
    except BaseException:
        client.shutdown()
        raise
    return client
