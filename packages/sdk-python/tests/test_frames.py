"""Property-based tests (Hypothesis) of the client's frame handling: hostile engine frames never
crash the session, and every call the engine makes is answered (protocol.md §3.5, §5.8)."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svc._codec import decode_engine_frame
from svc._session import ClientSession


class FakeConnection:
    """A connection whose inbound frames the test pushes and whose sent frames it reads."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.inbound: asyncio.Queue[Any] = asyncio.Queue()

    def send(self, text: str) -> None:
        self.sent.append(text)

    def ping(self) -> None:
        pass

    def terminate(self) -> None:
        self.inbound.put_nowait(None)

    async def close(self, code: int = 1000) -> None:
        self.inbound.put_nowait(None)

    async def run(self, on_frame: Callable[[str | bytes], None]) -> None:
        while (frame := await self.inbound.get()) is not None:
            on_frame(frame)


TYPES = [
    "invokefunction", "invocationresult", "workerregistered", "registertrigger", "unregistertrigger",
    "triggerregistrationresult", "registrationrejected", "ping", "pong", "error", "registerfunction", "reattach", "cancelinvocation", "???",
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
field_values = json_values | st.sampled_from(["echo::it", "sync::it", "missing::it", "FUNCTION_NAMESPACE_CONFLICT", "\ud800", "\x00"])
frame_dicts = st.fixed_dictionaries(
    {"type": st.sampled_from(TYPES)},
    optional={
        k: field_values
        for k in ("invocation_id", "function_id", "data", "metadata", "result", "error", "id", "trigger_type", "config", "worker_id", "reattach_token", "code", "message", "traceparent", "baggage", "namespace", "reason", "features")
    },
)


def _encode(d: dict[str, Any]) -> str:
    return json.dumps(d, allow_nan=True)


hostile = st.one_of(
    st.text(max_size=50),
    st.binary(max_size=50),
    json_values.map(lambda v: json.dumps(v)),
    frame_dicts.map(_encode),
    frame_dicts.map(lambda d: _encode(d).encode("utf-8", "surrogatepass")),
    st.integers(min_value=1, max_value=200_000).map(lambda n: "[" * n + "]" * n),
    st.just('{"type":"invokefunction","function_id":"echo::it","invocation_id":"x","data":' + "[" * 5000 + "]" * 5000 + "}"),
)


def _owed(frame: str | bytes) -> str | None:
    """The invocation id a frame asks an answer for, when it is a well-formed call."""
    msg = decode_engine_frame(frame)
    if msg is None or msg["type"] != "invokefunction":
        return None
    return msg["invocation_id"] if isinstance(msg["invocation_id"], str) else None


class Harness:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.executor = ThreadPoolExecutor(4)
        self.conn = FakeConnection.__new__(FakeConnection)

        async def connector(url: str, headers: Any, timeout: float, alive: Callable[[], None]) -> Any:
            return self.conn

        async def setup() -> ClientSession:
            FakeConnection.__init__(self.conn)
            session = ClientSession(self.loop, "ws://fake/", {"runtime": "test"}, self.executor, connector=connector, telemetry_enabled=False)

            async def echo(data: Any) -> Any:
                return data

            session.registrations.add_function("echo::it", echo, None, None, None, None)
            session.registrations.add_function("sync::it", lambda data: data, None, None, None, None)
            session.start()
            while session.state != "connected":
                await asyncio.sleep(0.001)
            return session

        self.session = self.loop.run_until_complete(setup())

    def answered(self) -> set[str]:
        ids = set()
        for text in self.conn.sent:
            msg = json.loads(text)
            if msg.get("type") == "invocationresult":
                ids.add(msg["invocation_id"])
        return ids

    def settle(self, owed: set[str]) -> None:
        async def wait() -> None:
            for _ in range(2000):
                if owed <= self.answered():
                    return
                await asyncio.sleep(0.001)

        self.loop.run_until_complete(wait())


HARNESS: Harness | None = None


def harness() -> Harness:
    global HARNESS
    if HARNESS is None:
        HARNESS = Harness()
    return HARNESS


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(hostile, max_size=8))
def test_hostile_frames_never_crash_the_session_and_owed_calls_are_answered(frames: list[str | bytes]) -> None:
    h = harness()
    owed: set[str] = set()
    for frame in frames:
        if _fatal(frame):
            continue  # ends the session on purpose (sdk.md §7.3); tested with the iii frames
        h.session._on_frame(h.conn, frame)  # raises nothing, whatever the frame
        call = _owed(frame)
        if call is not None:
            owed.add(call)
        cancel = decode_engine_frame(frame)
        if cancel is not None and cancel["type"] == "cancelinvocation":
            owed.discard(cancel["invocation_id"])  # the engine no longer waits for that answer
    # A well-formed call after the hostile ones is answered too: the session still works.
    h.session._on_frame(h.conn, '{"type":"invokefunction","invocation_id":"probe","function_id":"echo::it","data":[1]}')
    owed.add("probe")
    h.settle(owed)
    assert owed <= h.answered()
    assert h.session.state == "connected"
    h.conn.sent.clear()


def _fatal(frame: str | bytes) -> bool:
    msg = decode_engine_frame(frame)
    return msg is not None and msg["type"] == "registrationrejected" and msg["code"] != "FUNCTION_NAMESPACE_CONFLICT"


@settings(max_examples=100, deadline=None)
@given(st.lists(hostile, max_size=5), json_values)
def test_a_pending_call_resolves_with_its_result_amid_hostile_frames(frames: list[str | bytes], result: Any) -> None:
    h = Harness()
    try:
        future = h.session.trigger({"function_id": "remote::x", "payload": None}, None)
        sent = json.loads(h.conn.sent[-1])
        for frame in frames:
            if _fatal(frame) or (decode_engine_frame(frame) or {}).get("type") == "invocationresult":
                continue
            h.session._on_frame(h.conn, frame)
        h.session._on_frame(h.conn, json.dumps({"type": "invocationresult", "invocation_id": sent["invocation_id"], "function_id": "remote::x", "result": result}))
        value = h.loop.run_until_complete(asyncio.wait_for(future, 5))
        assert json.dumps(value, sort_keys=True) == json.dumps(result, sort_keys=True)
    finally:
        h.loop.run_until_complete(h.session.shutdown())
        h.loop.close()
        h.executor.shutdown()


#: Reasons a caller may give: any text (lone surrogates, NULs, far past the 1024 kept), or none.
reasons = st.none() | st.text(max_size=40) | st.sampled_from(["\ud800", "\x00", "é" * 1500, "x" * 5000, "\U0001f600" * 1100, ""])


@settings(max_examples=100, deadline=None)
@given(reasons, st.booleans())
def test_a_cancelled_call_fails_at_once_and_the_engine_gets_one_bounded_cancelinvocation(reason: str | None, connected: bool) -> None:
    """Caller side (issue 21): a call cancelled with any reason text fails ``cancelled`` at once;
    the engine is sent exactly one well-formed ``cancelinvocation`` naming it, its reason at most
    1024 characters, when it had the call (none for a call still queued); a late answer is dropped."""
    h = harness()
    h.conn.sent.clear()
    if not connected:
        h.session._connected = False  # the call is queued, as while reconnecting
    try:
        future = h.session.trigger({"function_id": "remote::x", "payload": None}, None, call_id="call-1")
        h.session.cancel_call("call-1", reason)
        h.session.cancel_call("call-1", reason)  # twice: nothing more
        with_error = h.loop.run_until_complete(asyncio.wait_for(asyncio.gather(future, return_exceptions=True), 5))[0]
        assert getattr(with_error, "code", None) == "cancelled"
        expected = "Invocation cancelled" if not reason else f"Invocation cancelled: {reason[:1024]}"
        assert with_error.message == expected
        cancels = [json.loads(t) for t in h.conn.sent if json.loads(t).get("type") == "cancelinvocation"]
        if connected:
            assert len(cancels) == 1 and cancels[0]["invocation_id"] == "call-1"
            assert len(cancels[0].get("reason", "")) <= 1024
            assert ("reason" in cancels[0]) == bool(reason)
        else:
            assert cancels == []
        h.session._on_frame(h.conn, json.dumps({"type": "invocationresult", "invocation_id": "call-1", "function_id": "remote::x", "result": 1}))
        assert h.session.calls.size == 0
    finally:
        h.session._connected = True
        h.session.calls.fail_all(lambda call: RuntimeError("cleared"))
        h.session.calls._queue = []


@given(st.none() | json_values | st.lists(json_values, max_size=6))
def test_a_workerregistered_lists_the_string_entries_of_its_features(features: Any) -> None:
    frame: dict[str, Any] = {"type": "workerregistered", "worker_id": "w-1", "reattach_token": "t-1"}
    if features is not None:
        frame["features"] = features
    msg = decode_engine_frame(json.dumps(frame, allow_nan=True))
    assert msg is not None and msg["worker_id"] == "w-1"
    assert msg["features"] == frozenset(f for f in features if isinstance(f, str)) if isinstance(features, list) else msg["features"] == frozenset()
