"""``ClientSession``: one worker session with the engine (protocol.md §3) with the semantics of
sdk.md §3–§8, mirroring the client core of the Node SDK (``packages/protocol/src/client/``) part by
part: the connection state machine (connect, reconnect with backoff and jitter, ``reattach``,
shutdown), the keepalive (:class:`Heartbeat`), the call table with grouped timeouts
(:class:`CallTable`), the registration store replayed on every open (:class:`RegistrationStore`) and
the provider side of trigger types (:class:`ProviderBindings`).

Everything here runs on the session's event loop; the facade (:mod:`svc.client`) moves calls from
other threads onto it. Hot path: ``trigger`` → ``invocationresult`` costs one call-table entry, one
id and one frame encoding; ``invokefunction`` → handler → ``invocationresult`` one JSON decode, one
task (async handler) or executor job (sync handler) and one encoding.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from concurrent.futures import Executor
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any, Callable

from svc_helpers.backoff import ReconnectionConfig, backoff_delay

from . import _telemetry as telemetry
from ._addresses import AddressRotation, display_address, engine_addresses
from ._bindings import ProviderBindings
from ._calls import CallFuture, CallTable, PendingCall, format_ms, reject, resolve
from ._codec import decode_engine_frame, dumps, encode_cancel, encode_frame, encode_invoke, encode_result, encode_trigger_result
from ._handler_context import HandlerRun, bound_reason, cancelled_message, reset_current, set_current
from ._codes import ErrorCode
from ._heartbeat import Heartbeat, HeartbeatPeer
from ._registrations import LocalFunction, LocalTriggerType, RegistrationStore, request_problem
from ._transport import Connection, Connector, ws_connector
from .errors import EngineConnectionError, InvocationError, RegistrationRejectedError, to_error_body
from .types import ConnectionState, RegistrationError

log = logging.getLogger("svc")

_PONG = '{"type":"pong"}'
_ENGINE_PREFIX = "engine::"
_json_default_dumps = dumps


@dataclass(frozen=True)
class ClientTimings:
    """Fixed durations of sdk.md §8 / protocol.md §3.3, ms. Only tests change them."""

    handshake_timeout_ms: float = 10000
    ping_interval_ms: float = 20000
    idle_timeout_ms: float = 60000
    close_timeout_ms: float = 2000


#: Default timeout of synchronous and enqueue calls, ms (sdk.md §2).
DEFAULT_INVOCATION_TIMEOUT_MS = 30000

#: Turns a decoded payload or result into what the application receives (channel refs into live ends).
Materializer = Callable[[Any], Any]


class _Peer:
    """The heartbeat's view of the open connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def ping(self) -> None:
        self.conn.ping()

    def terminate(self) -> None:
        self.conn.terminate()


def _may_hold_refs(frame: str | bytes) -> bool:
    """False when ``frame`` (JSON text) cannot contain a channel ref: a ref's ``channel_id`` key
    appears in the text as such, or with ``\\u`` escapes."""
    if isinstance(frame, str):
        return "channel_id" in frame or "\\u" in frame
    return b"channel_id" in frame or b"\\u" in frame


class ClientSession:
    """A worker session on ``loop``. Call :meth:`start` on the loop to connect; it reconnects with
    backoff until :meth:`shutdown` or a terminal failure (sdk.md §8).

    ``address`` is one engine URL or several (issue 19 §3): the first attempt goes to the first, a
    failed attempt or a dropped connection moves to the next at once (round-robin), and the backoff
    waits only after a full round without an engine taking the worker.

    Raises:
        ValueError: for an address list :func:`svc._addresses.engine_addresses` refuses.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        address: str | Sequence[str],
        announce: dict[str, Any],
        executor: Executor,
        *,
        namespace: str | None = None,
        headers: dict[str, str] | None = None,
        invocation_timeout_ms: float = DEFAULT_INVOCATION_TIMEOUT_MS,
        reconnection: ReconnectionConfig | None = None,
        timings: ClientTimings | None = None,
        connector: Connector | None = None,
        telemetry_enabled: bool = True,
        materialize: Materializer | None = None,
        new_id: Callable[[], str] | None = None,
        rand: Callable[[], float] = random.random,
        registrations: RegistrationStore | None = None,
    ) -> None:
        self.loop = loop
        self._rotation = AddressRotation(engine_addresses(address))
        self._opened_address: str | None = None
        self.namespace = namespace
        self.executor = executor
        self._headers = headers
        self._timeout_ms = invocation_timeout_ms
        self._reconnection = reconnection or ReconnectionConfig()
        self._timings = timings or ClientTimings()
        self._connector: Connector = connector or ws_connector
        self._telemetry = telemetry_enabled
        self._materialize = materialize
        self._new_id = new_id or (lambda: str(uuid.uuid4()))
        self._random = rand
        # The announce is a void call of engine::workers::register (protocol.md §3.2).
        self._announce_frame = encode_invoke("engine::workers::register", announce, action={"type": "void"})
        self._announces_spans = "handler_spans" in announce
        #: This connection's engine records the handler spans handed to it (set by ``workerregistered``).
        self._engine_records_spans = False

        self.state: ConnectionState = "disconnected"
        self._conn: Connection | None = None
        self._connected = False
        self._terminal = False
        self._shutdown: asyncio.Future[None] | None = None
        self._retries = 0
        self._reconnect_timer: asyncio.TimerHandle | None = None
        self._drop_reason: EngineConnectionError | None = None
        self.worker_id: str | None = None
        self._reattach_token: str | None = None
        self.last_error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None

        # A call that timed out here is cancelled in the engine too: its worker need not run on for nobody.
        self.calls = CallTable(loop, self._on_call_timeout)
        # Handlers running, by the invocation id the engine sent (what its cancelinvocation names).
        self._running: dict[str, HandlerRun] = {}
        self.registrations = registrations or RegistrationStore()
        self.bindings = ProviderBindings(loop, executor)
        self._state_listeners: list[Callable[[ConnectionState], None]] = []
        self._registration_listeners: list[Callable[[RegistrationError], None]] = []
        self._heartbeat = Heartbeat(loop, self._timings.ping_interval_ms, self._timings.idle_timeout_ms, self._on_idle)
        self._heard: Callable[[], None] = lambda: None
        #: Called with the worker id on every ``workerregistered``.
        self.on_worker_registered: Callable[[str], None] | None = None

    @property
    def address(self) -> str:
        """The engine address the session is connected to; while it is not, the one it tries next.
        As given, credentials included (log it through :func:`display_address`)."""
        return self._rotation.current

    @property
    def addresses(self) -> tuple[str, ...]:
        """Every engine address of the session, in the order they are tried."""
        return self._rotation.addresses

    # ------------------------------------------------------------ connection (sdk.md §8)

    def start(self) -> None:
        """Starts connecting (on the loop)."""
        self._connect()

    def _connect(self) -> None:
        self._set_state("connecting")
        self._task = self.loop.create_task(self._run())

    async def _run(self) -> None:
        try:
            conn = await self._connector(self.address, self._headers, self._timings.handshake_timeout_ms / 1000, lambda: self._heard())
        except asyncio.CancelledError:
            raise
        except asyncio.TimeoutError:
            self.last_error = EngineConnectionError(ErrorCode.TIMEOUT, f"opening handshake timed out after {self._timings.handshake_timeout_ms:g}ms")
            self._schedule_reconnect()
            return
        except Exception as err:
            if not (isinstance(self.last_error, EngineConnectionError) and self.last_error.code == ErrorCode.AUTH_ERROR):
                self.last_error = err
            self._schedule_reconnect()
            return
        if self._terminal:
            await conn.close(1000)
            return
        self._on_open(conn)

        def on_frame(data: str | bytes) -> None:
            if self._conn is conn:  # not after a drop (terminate) of this connection
                self._on_frame(conn, data)

        try:
            await conn.run(on_frame)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            if self._drop_reason is None and not self._terminal:
                self.last_error = err
        finally:
            if self._conn is conn:
                self._on_close()

    def _on_open(self, conn: Connection) -> None:
        self._conn = conn
        self._connected = True
        self._retries = 0
        self._engine_records_spans = False
        # Order of protocol.md §3.1: reattach, announce, replay, then calls queued while disconnected.
        if self.worker_id is not None and self._reattach_token is not None:
            conn.send(encode_frame({"type": "reattach", "previous_worker_id": self.worker_id, "reattach_token": self._reattach_token}))
        conn.send(self._announce_frame)
        for frame in self.registrations.replay_frames():
            conn.send(frame)
        self.calls.flush(conn.send)
        self._heard = self._heartbeat.track(_Peer(conn))
        rotation = self._rotation
        address = rotation.current
        if len(rotation.addresses) > 1 and address != self._opened_address and (self._opened_address is not None or rotation.index != 0):
            log.warning("connected to %s (engine address %d of %d)", display_address(address), rotation.index + 1, len(rotation.addresses))
        self._opened_address = address
        self._set_state("connected")

    def _on_idle(self, _peer: HeartbeatPeer, _silent_ms: float) -> None:
        self._drop_reason = EngineConnectionError(ErrorCode.TIMEOUT, f"no frame from the engine for {self._timings.idle_timeout_ms:g}ms; reconnecting")
        self.last_error = self._drop_reason

    def _on_close(self) -> None:
        self._conn = None
        self._drop_reason = None
        was_open = self._connected
        self._connected = False
        self._heartbeat.stop()
        self._heard = lambda: None
        if was_open:
            self.calls.fail_sent(
                lambda call: InvocationError(ErrorCode.INVOCATION_STOPPED, "Invocation stopped: connection to the engine was lost", call.function_id, None, call.id)
            )
        # Handlers of that connection cannot answer any more (the engine ended their calls).
        for invocation_id in list(self._running):
            self._on_cancel(invocation_id, "connection to the engine was lost")
        # The engine moved our bindings elsewhere or parked them; a new connection gets them again.
        self.bindings.release_all()
        if self._terminal:
            return
        self._schedule_reconnect()

    def _schedule_reconnect(self) -> None:
        """The attempt ended: the next goes to the next address at once, or after a full round of
        the addresses (every attempt with one address) after the backoff delay (sdk.md §2)."""
        config = self._reconnection
        if self._terminal:
            return
        if not self._rotation.advance():
            self._set_state("reconnecting")

            def next_address() -> None:
                self._reconnect_timer = None
                if not self._terminal:
                    self._connect()

            self._reconnect_timer = self.loop.call_later(0, next_address)
            return
        if config.max_retries != -1 and self._retries >= config.max_retries:
            self._fail(InvocationError(ErrorCode.NOT_CONNECTED, "not connected to the engine"), retries_exhausted=True)
            return
        delay = backoff_delay(self._retries, config, self._random)
        self._retries += 1
        self._set_state("reconnecting")

        def again() -> None:
            self._reconnect_timer = None
            if not self._terminal:
                self._connect()

        self._reconnect_timer = self.loop.call_later(delay / 1000, again)

    def _fail(self, error: BaseException, retries_exhausted: bool) -> None:
        """Enters the terminal ``failed`` state (sdk.md §7.3, §8)."""
        if self._terminal:
            return
        self._terminal = True
        self._clear_reconnect()
        if retries_exhausted:
            if self.last_error is None:
                self.last_error = error
            self.calls.fail_all(lambda call: InvocationError(ErrorCode.NOT_CONNECTED, "not connected to the engine", call.function_id))
        else:
            self.last_error = error
            self.calls.fail_all(lambda call: error)
        conn = self._conn
        if conn is not None:
            self._connected = False
            self.loop.create_task(conn.close(1000))
        self._set_state("failed")

    def _clear_reconnect(self) -> None:
        if self._reconnect_timer is not None:
            self._reconnect_timer.cancel()
            self._reconnect_timer = None

    def _set_state(self, state: ConnectionState) -> None:
        if self.state == state:
            return
        self.state = state
        for listener in list(self._state_listeners):
            try:
                listener(state)
            except Exception as err:
                log.warning("connection state listener raised: %s", err)

    def add_connection_state_listener(self, listener: Callable[[ConnectionState], None]) -> Callable[[], None]:
        self._state_listeners.append(listener)
        listener(self.state)

        def remove() -> None:
            if listener in self._state_listeners:
                self._state_listeners.remove(listener)

        return remove

    def add_registration_error_listener(self, listener: Callable[[RegistrationError], None]) -> Callable[[], None]:
        self._registration_listeners.append(listener)

        def remove() -> None:
            if listener in self._registration_listeners:
                self._registration_listeners.remove(listener)

        return remove

    # ------------------------------------------------------------ inbound frames

    def _on_frame(self, conn: Connection, data: str | bytes) -> None:
        self._heard()
        msg = decode_engine_frame(data)
        if msg is None:
            return  # nothing to answer or act on (protocol.md §3.5)
        # Only a frame whose text names "channel_id" (or escapes a character) can hold a channel
        # ref: the others skip the materializer's walk of their payload or result.
        msg["may_hold_refs"] = _may_hold_refs(data)
        kind = msg["type"]
        if kind == "invocationresult":
            self._on_result(msg)
        elif kind == "invokefunction":
            self._on_invoke(conn, msg)
        elif kind == "workerregistered":
            self._rotation.settle()
            self.worker_id = msg["worker_id"]
            self._reattach_token = msg["reattach_token"]
            # The engine records handler spans this worker hands over (docs/reference/protocol.md
            # "Handler spans recorded by the engine") only when its announce carried handler_spans.
            self._engine_records_spans = self._announces_spans and "handler_spans" in msg["features"]
            if self.on_worker_registered is not None:
                self.on_worker_registered(msg["worker_id"])
        elif kind == "cancelinvocation":
            self._on_cancel(msg["invocation_id"], msg["reason"])
        elif kind == "registertrigger":
            self._on_deliver_binding(conn, msg)
        elif kind == "unregistertrigger":
            self.bindings.remove(msg["id"])
        elif kind == "triggerregistrationresult":
            if msg["error"] is not None:
                self._on_trigger_failed(msg)
        elif kind == "registrationrejected":
            self._on_rejected(msg)
        elif kind == "ping":
            conn.send(_PONG)
        elif kind == "error":
            self.last_error = EngineConnectionError(msg["error"]["code"], msg["error"]["message"])

    def _on_result(self, msg: dict[str, Any]) -> None:
        call = self.calls.settle(msg["invocation_id"])
        if call is None or call.future.done():
            return  # a late answer after a timeout, or not ours
        error = msg.get("error")
        if error is not None:
            reject(call.future, InvocationError.from_wire(error, call.function_id, call.id))
            return
        result = msg.get("result")
        if self._materialize is not None and result is not None and msg.get("may_hold_refs", True):
            try:
                result = self._materialize(result)
            except Exception as err:
                reject(call.future, err)
                return
        resolve(call.future, result)

    def _on_invoke(self, conn: Connection, msg: dict[str, Any]) -> None:
        function_id = msg["function_id"]
        with self.registrations.lock:
            fn = self.registrations.functions.get(function_id)
        if fn is None or fn.handler is None or fn.shape is None:
            error = (
                {"code": ErrorCode.FUNCTION_NOT_FOUND, "message": f"Function {function_id} not found"}
                if fn is None
                else {"code": ErrorCode.FUNCTION_NOT_INVOKABLE, "message": f"Function {function_id} is HTTP-invoked and cannot be invoked locally"}
            )
            self._answer(conn, msg, None, error, None)
            return
        scope = (
            telemetry.start_handler(function_id, msg["data"], msg["traceparent"], msg["baggage"], self._engine_records_spans)
            if self._telemetry
            else None
        )
        invocation_id = msg["invocation_id"]
        # A void call from an engine that sends no id cannot be cancelled; its run is not listed.
        run = HandlerRun(invocation_id if invocation_id is not None else "", function_id)
        if fn.shape.is_async:
            task = self.loop.create_task(self._run_async(conn, msg, fn, scope, run))
            run.task = task
            if invocation_id is not None:
                self._running[invocation_id] = run
                task.add_done_callback(lambda _: self._forget(invocation_id, run))
        else:
            future = self.loop.run_in_executor(self.executor, self._run_sync, msg, fn, scope, run)
            if invocation_id is not None:
                self._running[invocation_id] = run
            future.add_done_callback(lambda f: self._sync_done(conn, msg, f, scope, run))

    def _on_cancel(self, invocation_id: str, reason: str | None) -> None:
        """The engine cancelled a call this worker runs: the calls its handler made are cancelled
        with the same reason, then an async handler's task is cancelled (``asyncio.CancelledError``
        at its ``await``); a sync handler runs on in its thread (its :class:`HandlerContext`
        reads cancelled). Either way no answer is sent: the engine answered the caller already."""
        run = self._running.pop(invocation_id, None)
        if run is None or not run.abort(reason):
            return
        for call_id in list(run.calls):
            self.cancel_call(call_id, run.reason)
        if run.task is not None:
            run.task.cancel()

    def _forget(self, invocation_id: str, run: HandlerRun) -> None:
        if self._running.get(invocation_id) is run:
            del self._running[invocation_id]

    def _args(self, msg: dict[str, Any], fn: LocalFunction) -> tuple[tuple[Any, ...], dict[str, Any]]:
        shape = fn.shape
        assert shape is not None
        data = msg["data"]
        if self._materialize is not None and data is not None and msg.get("may_hold_refs", True):
            data = self._materialize(data)
        if shape.validate is not None:
            data = shape.validate(data)
        args = (data,) if shape.takes_data else ()
        return args, ({"metadata": msg["metadata"]} if shape.takes_metadata else {})

    def _context_of(self, msg: dict[str, Any], scope: telemetry.HandlerScope | None) -> Any:
        if scope is not None:
            return scope.context
        return telemetry.unsampled_context(msg["traceparent"])

    async def _run_async(self, conn: Connection, msg: dict[str, Any], fn: LocalFunction, scope: telemetry.HandlerScope | None, run: HandlerRun) -> None:
        ctx = self._context_of(msg, scope)
        token = telemetry.attach(ctx) if ctx is not None else None
        # The task's own context: the calls the handler makes see its run (and are cancelled with it).
        set_current(run)
        try:
            args, kwargs = self._args(msg, fn)
            assert fn.handler is not None
            result = await fn.handler(*args, **kwargs)
        except asyncio.CancelledError:
            # Cancelled by the engine (issue 21): no answer goes out; the span ends as cancelled.
            if run.cancelled:
                self._answer(conn, msg, None, {"code": ErrorCode.CANCELLED, "message": cancelled_message(run.reason)}, scope, run)
            raise
        except Exception as err:
            self._answer(conn, msg, None, to_error_body(err), scope, run)
        else:
            self._answer(conn, msg, result, None, scope, run)
        finally:
            if token is not None:
                telemetry.detach(token)

    def _run_sync(self, msg: dict[str, Any], fn: LocalFunction, scope: telemetry.HandlerScope | None, run: HandlerRun) -> Any:
        ctx = self._context_of(msg, scope)
        token = telemetry.attach(ctx) if ctx is not None else None
        # A pool thread's context: the run is current while the handler runs, then reset.
        current = set_current(run)
        try:
            args, kwargs = self._args(msg, fn)
            assert fn.handler is not None
            return fn.handler(*args, **kwargs)
        finally:
            reset_current(current)
            if token is not None:
                telemetry.detach(token)

    def _sync_done(self, conn: Connection, msg: dict[str, Any], future: asyncio.Future[Any], scope: telemetry.HandlerScope | None, run: HandlerRun) -> None:
        if msg["invocation_id"] is not None:
            self._forget(msg["invocation_id"], run)
        try:
            result = future.result()
        except Exception as err:
            self._answer(conn, msg, None, to_error_body(err), scope, run)
            return
        if asyncio.iscoroutine(result):
            # A sync callable that returned a coroutine (a partial of an async function, say).
            async def finish(coro: Any) -> None:
                set_current(run)
                try:
                    value = await coro
                except Exception as err:
                    self._answer(conn, msg, None, to_error_body(err), scope, run)
                else:
                    self._answer(conn, msg, value, None, scope, run)

            self.loop.create_task(finish(result))
            return
        self._answer(conn, msg, result, None, scope, run)

    def _answer(
        self,
        conn: Connection,
        msg: dict[str, Any],
        result: Any,
        error: dict[str, Any] | None,
        scope: telemetry.HandlerScope | None,
        run: HandlerRun | None = None,
    ) -> None:
        result_json: str | None = None
        if error is None and result is not None:
            try:
                result_json = _json_default_dumps(result)
            except Exception as err:
                error = {"code": ErrorCode.INVOCATION_FAILED, "message": f"result is not JSON-serialisable: {err}"}
        invocation_id = msg["invocation_id"]
        # A cancelled call's answer is dropped by the engine: it is not sent.
        cancelled = run is not None and run.cancelled
        if not cancelled and conn is self._conn and self._connected and invocation_id is not None:
            tp = bg = None
            span: tuple[str, str] | None = None
            if scope is not None:
                tp, bg = scope.traceparent, scope.baggage
                if self._engine_records_spans and tp is not None:
                    span = telemetry.hand_over(scope)
            try:
                text = encode_result(invocation_id, msg["function_id"], result_json, error, tp, bg, span)
            except Exception as err:
                text = encode_result(
                    invocation_id, msg["function_id"], None, {"code": ErrorCode.INVOCATION_FAILED, "message": f"error is not JSON-serialisable: {err}"}
                )
            conn.send(text)
        if scope is not None:
            try:
                telemetry.end_handler(scope, result, error)
            except Exception as err:
                log.debug("ending a handler span failed: %s", err)

    def _on_rejected(self, msg: dict[str, Any]) -> None:
        if msg["code"] != ErrorCode.FUNCTION_NAMESPACE_CONFLICT:
            # Any other code is fatal (protocol.md §5.11); svc engines never send one.
            self._fail(
                RegistrationRejectedError(
                    msg["code"], msg["message"], msg["namespace"] or "default", msg["owner_worker_id"], msg["worker_name"], msg["function_id"]
                ),
                retries_exhausted=False,
            )
            return
        is_type = msg["function_id"] is None and msg["trigger_type_id"] is not None
        error: RegistrationError = {
            "kind": "trigger_type" if is_type else "function",
            "id": (msg["trigger_type_id"] if is_type else msg["function_id"]) or "",
            "code": msg["code"],
            "message": msg["message"],
        }
        for key in ("reason", "namespace", "function_id"):
            if msg[key] is not None:
                error[key] = msg[key]
        self._report_registration_error(error)

    def _on_trigger_failed(self, msg: dict[str, Any]) -> None:
        body = msg["error"]
        error: RegistrationError = {
            "kind": "trigger",
            "id": msg["id"],
            "code": body["code"],
            "message": body["message"],
            "trigger_type": msg["trigger_type"],
            "function_id": msg["function_id"],
        }
        with self.registrations.lock:
            entry = self.registrations.triggers.get(msg["id"])
        if entry is not None and entry.namespace is not None:
            error["namespace"] = entry.namespace
        self._report_registration_error(error)

    def _report_registration_error(self, error: RegistrationError) -> None:
        log.warning("registration of %s '%s' refused: %s: %s", error["kind"], error["id"], error["code"], error["message"])
        for listener in list(self._registration_listeners):
            try:
                listener(error)
            except Exception as err:
                log.warning("registration error listener raised: %s", err)

    def _on_deliver_binding(self, conn: Connection, msg: dict[str, Any]) -> None:
        def answer(error: dict[str, Any] | None) -> None:
            if conn is self._conn and self._connected:
                conn.send(encode_trigger_result(msg["id"], msg["trigger_type"], msg["function_id"], error))

        entry = self.registrations.find_trigger_type(msg["trigger_type"], msg["trigger_namespace"])
        if entry is None:
            answer({"code": ErrorCode.TRIGGER_TYPE_NOT_FOUND, "message": "Trigger type not found"})
        else:
            self.bindings.deliver(msg, entry, answer)

    # ------------------------------------------------------------ sending

    def send_if_connected(self, text: str) -> None:
        """Sends a frame now when connected; otherwise drops it (registrations are replayed, not queued)."""
        if self._connected and self._conn is not None:
            self._conn.send(text)

    def default_namespace(self, function_id: str) -> str | None:
        """The namespace calls and bindings get by default (protocol.md §3.4)."""
        return self.namespace if self.namespace is not None and not function_id.startswith(_ENGINE_PREFIX) else None

    # ------------------------------------------------------------ invocation (sdk.md §6)

    def new_id(self) -> str:
        """A new invocation id (thread-safe): callers take one up front so that they can cancel the call."""
        return self._new_id()

    def trigger(
        self,
        request: dict[str, Any],
        trace: tuple[str | None, str | None] | None,
        *,
        call_id: str | None = None,
        run: HandlerRun | None = None,
    ) -> asyncio.Future[Any]:
        """Invokes a function (sdk.md §6) on the loop; ``trace`` is the caller's trace context.
        The future fails with an :class:`InvocationError` (``TIMEOUT``, ``cancelled``,
        ``invocation_stopped``, ``NOT_CONNECTED``, ``SHUTDOWN``, the remote code; at once
        ``INVALID_ARGUMENTS`` for a missing id or a payload JSON cannot encode,
        ``INVALID_ID``/``INVALID_NAMESPACE``). ``call_id``/``run``: see :meth:`trigger_into`."""
        future: asyncio.Future[Any] = self.loop.create_future()
        self.trigger_into(request, trace, future, call_id=call_id, run=run)
        return future

    def trigger_into(
        self,
        request: dict[str, Any],
        trace: tuple[str | None, str | None] | None,
        future: CallFuture,
        *,
        call_id: str | None = None,
        run: HandlerRun | None = None,
    ) -> None:
        """:meth:`trigger` settling ``future``: an asyncio future of the loop, or a
        ``concurrent.futures.Future`` that another thread waits on (settled in place when the
        answer is read, so that thread wakes at once). Called on the loop.

        ``call_id`` is the invocation id of a synchronous or enqueue call (a new one when None):
        :meth:`cancel_call` takes it. ``run`` is the handler run making the call: the call is
        cancelled with it, and fails with ``cancelled`` at once, unsent, when the run already is.
        A ``future`` already done (its caller gave up before the call started) sends nothing."""
        function_id = request.get("function_id") if isinstance(request, dict) else None
        if future.done():
            return
        if self._terminal:
            reject(future, InvocationError(ErrorCode.NOT_CONNECTED, "not connected to the engine", function_id if isinstance(function_id, str) else None))
            return
        if not isinstance(function_id, str) or function_id == "":
            reject(future, InvocationError(ErrorCode.INVALID_ARGUMENTS, "function_id is required"))
            return
        namespace = request.get("namespace")
        refused = request_problem(function_id, namespace)
        if refused is not None:
            reject(future, refused)
            return
        action = request.get("action")
        is_void = isinstance(action, dict) and action.get("type") == "void"
        if is_void:
            call_id = None
        elif call_id is None:
            call_id = self._new_id()
        if call_id is not None and run is not None and run.cancelled:
            reject(future, InvocationError(ErrorCode.CANCELLED, cancelled_message(run.reason), function_id, None, call_id))
            return
        timeout_ms = request.get("timeout_ms")
        if timeout_ms is None:
            timeout_ms = self._timeout_ms
        try:
            text = encode_invoke(
                function_id,
                request.get("payload"),
                invocation_id=call_id,
                metadata=request.get("metadata"),
                action=action,
                namespace=namespace if namespace is not None else self.default_namespace(function_id),
                traceparent=trace[0] if trace else None,
                baggage=trace[1] if trace else None,
            )
        except Exception as err:
            reject(future, InvocationError(ErrorCode.INVALID_ARGUMENTS, f"payload is not JSON-serialisable: {err}", function_id))
            return
        if call_id is None:
            if self._connected and self._conn is not None:
                self._conn.send(text)
            else:
                self.calls.queue_void(text)
            resolve(future, None)
            return
        conn = self._conn
        self.calls.open(call_id, function_id, timeout_ms, text, conn.send if self._connected and conn is not None else None, future, run.calls if run is not None else None)

    def cancel_call(self, call_id: str, reason: str | None = None) -> None:
        """Cancels a call of this client (called on the loop): it fails with ``cancelled``
        (``Invocation cancelled: <reason>``) now, and the engine is sent ``cancelinvocation`` when
        it has the call (one still queued while disconnected is dropped unsent). ``reason`` is cut
        to 1024 characters. A call that already ended (or never started) is left alone."""
        reason = bound_reason(reason)
        call = self.calls.cancel(call_id, lambda c: InvocationError(ErrorCode.CANCELLED, cancelled_message(reason), c.function_id, None, c.id))
        if call is not None and call.sent:
            self.send_if_connected(encode_cancel(call_id, reason))

    def _on_call_timeout(self, call: PendingCall) -> None:
        self.send_if_connected(encode_cancel(call.id, f"timed out after {format_ms(call.timeout_ms)}ms"))

    # ------------------------------------------------------------ registration helpers

    def unregister_trigger_type_entry(self, entry: LocalTriggerType) -> None:
        """Stops providing a trigger type (``unregistertriggertype``); its bindings are let go."""
        with self.registrations.lock:
            if self.registrations.trigger_types.get(entry.key) is not entry:
                return
            del self.registrations.trigger_types[entry.key]
        self.bindings.release_all(entry)
        frame: dict[str, Any] = {"type": "unregistertriggertype", "id": entry.id}
        if entry.namespace is not None:
            frame["namespace"] = entry.namespace
        self.send_if_connected(encode_frame(frame))

    # ------------------------------------------------------------ shutdown

    def shutdown(self) -> asyncio.Future[None]:
        """Fails pending calls with ``SHUTDOWN``, closes with code 1000. Idempotent (on the loop)."""
        if self._shutdown is None:
            self._shutdown = asyncio.ensure_future(self._close(), loop=self.loop)
        return self._shutdown

    async def _close(self) -> None:
        self._terminal = True
        self._clear_reconnect()
        self.calls.fail_all(lambda call: InvocationError(ErrorCode.SHUTDOWN, "worker is shutting down", call.function_id, None, call.id))
        conn = self._conn
        task = self._task
        if conn is not None:
            self._connected = False
            try:
                await asyncio.wait_for(conn.close(1000), self._timings.close_timeout_ms / 1000)
            except Exception:
                conn.terminate()
        elif task is not None and not task.done():
            task.cancel()
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), self._timings.close_timeout_ms / 1000)
            except BaseException:
                task.cancel()
        self._heartbeat.stop()
        self.bindings.release_all()
        self._set_state("disconnected")


def encode_json(value: Any) -> str:
    """JSON text of a value, with Pydantic models, dataclasses and the like converted (the SDK's one encoder)."""
    return _json_default_dumps(value)


__all__ = ["ClientSession", "ClientTimings", "DEFAULT_INVOCATION_TIMEOUT_MS", "dumps", "encode_json"]
