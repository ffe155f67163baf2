"""The Python SDK against a real engine (sdk.md §2–§9, §14): what a worker author sees."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import secrets
import threading
import time
from typing import Any

import pydantic
import pytest

from conftest import Engine, eventually
from svc import (
    EngineConnectionError,
    InitOptions,
    InvocationError,
    ReconnectionConfig,
    TriggerAction,
    register_worker,
)
from svc.helpers import create_channel, create_channel_async
from svc_helpers.observability import Logger, current_trace_id


def names(client: Any, prefix: str) -> list[str]:
    listing = client.trigger({"function_id": "engine::functions::list", "payload": {"prefix": prefix}})
    return [f["function_id"] for f in listing["functions"]]


@pytest.fixture()
def client(engine: Engine) -> Any:
    c = register_worker(engine.url, InitOptions(worker_name="py-test"))
    yield c
    c.shutdown()


class Sum(pydantic.BaseModel):
    a: int
    b: int


@dataclasses.dataclass
class Point:
    x: float
    y: float


def test_sync_async_void_and_enqueue_calls(client: Any) -> None:
    seen: list[Any] = []
    client.register_function("pyt::echo", lambda data, metadata=None: {"data": data, "metadata": metadata})

    async def add(data: Sum) -> int:
        return data.a + data.b

    client.register_function("pyt::add", add)
    client.register_function("pyt::record", lambda data: seen.append(data))
    eventually(lambda: len(names(client, "pyt::")) == 3)
    assert client.trigger({"function_id": "pyt::echo", "payload": {"x": 1}, "metadata": {"m": 2}}) == {"data": {"x": 1}, "metadata": {"m": 2}}
    assert client.trigger({"function_id": "pyt::echo", "payload": None}) == {"data": None, "metadata": None}
    assert client.trigger({"function_id": "pyt::add", "payload": {"a": 2, "b": 3}}) == 5
    assert client.trigger({"function_id": "pyt::record", "payload": 7, "action": TriggerAction.Void()}) is None
    eventually(lambda: seen == [7])
    receipt = client.trigger({"function_id": "pyt::record", "payload": 8, "action": TriggerAction.Enqueue(queue="jobs")})
    assert isinstance(receipt["messageReceiptId"], str) and len(receipt["messageReceiptId"]) == 36
    eventually(lambda: seen == [7, 8])
    # The async form, from a loop of the caller's own.
    assert asyncio.run(client.trigger_async({"function_id": "pyt::add", "payload": {"a": 1, "b": 1}})) == 2


def test_formats_come_from_type_hints_and_models_are_validated_and_converted(client: Any) -> None:
    def move(p: Point, metadata: Any = None) -> Point:
        return Point(p.x + 1, p.y + (metadata or {}).get("dy", 0))

    client.register_function("pyt::move", move, description="Move a point")
    info = eventually(lambda: client.trigger({"function_id": "engine::functions::info", "payload": {"function_id": "pyt::move"}}))
    assert info["description"] == "Move a point"
    assert info["request_schema"]["properties"] == {"x": {"title": "X", "type": "number"}, "y": {"title": "Y", "type": "number"}}
    assert info["response_schema"]["required"] == ["x", "y"]
    assert client.trigger({"function_id": "pyt::move", "payload": {"x": 1, "y": 2}, "metadata": {"dy": 5}}) == {"x": 2.0, "y": 7.0}
    with pytest.raises(InvocationError) as bad:
        client.trigger({"function_id": "pyt::move", "payload": {"x": "not a number"}})
    assert bad.value.code == "invocation_failed" and "x" in bad.value.message


def test_not_found_handler_errors_with_stacktrace_and_timeouts(client: Any) -> None:
    class Declined(Exception):
        code = "card_declined"

    def fail(data: Any) -> None:
        raise Declined("the card was declined")

    async def slow(data: Any) -> str:
        await asyncio.sleep(data)
        return "late"

    client.register_function("pyt::fail", fail)
    client.register_function("pyt::slow", slow)
    eventually(lambda: len(names(client, "pyt::")) >= 2)
    with pytest.raises(InvocationError) as missing:
        client.trigger({"function_id": "pyt::nothing", "payload": {}})
    assert (missing.value.code, missing.value.message, missing.value.function_id) == ("function_not_found", "Function pyt::nothing not found", "pyt::nothing")
    with pytest.raises(InvocationError) as failed:
        client.trigger({"function_id": "pyt::fail", "payload": {}})
    assert failed.value.code == "card_declined"
    assert failed.value.message == "the card was declined"
    assert failed.value.stacktrace is not None and "Declined: the card was declined" in failed.value.stacktrace and "def fail" not in failed.value.message
    assert str(failed.value) == "card_declined: the card was declined"
    with pytest.raises(InvocationError) as timed_out:
        client.trigger({"function_id": "pyt::slow", "payload": 2, "timeout_ms": 100})
    assert (timed_out.value.code, timed_out.value.message) == ("TIMEOUT", "invocation timed out after 100ms")


def test_refuses_what_the_engine_would_refuse_before_sending(client: Any) -> None:
    with pytest.raises(ValueError, match="function id is required"):
        client.register_function(" ", lambda d: d)
    client.register_function("pyt::once", lambda d: d)
    with pytest.raises(ValueError, match="already registered: pyt::once"):
        client.register_function("pyt::once", lambda d: d)
    with pytest.raises(InvocationError) as bad_id:
        client.register_function("pyt::\x07", lambda d: d)
    assert bad_id.value.code == "INVALID_ID" and "U+0007" in bad_id.value.message
    with pytest.raises(InvocationError) as bad_ns:
        client.trigger({"function_id": "pyt::once", "payload": 1, "namespace": " "})
    assert bad_ns.value.code == "INVALID_NAMESPACE"
    with pytest.raises(InvocationError) as bad_payload:
        client.trigger({"function_id": "pyt::once", "payload": {1, 2}.__class__})
    assert bad_payload.value.code == "INVALID_ARGUMENTS"
    with pytest.raises(ValueError, match="ws:// or wss://"):
        register_worker("http://127.0.0.1:1")


def test_reserved_ids_reach_the_registration_error_listener(client: Any) -> None:
    errors: list[Any] = []
    client.add_registration_error_listener(errors.append)
    client.register_function("engine::functions::list", lambda d: d)
    eventually(lambda: errors)
    assert errors[0]["kind"] == "function" and errors[0]["code"] == "FUNCTION_NAMESPACE_CONFLICT" and errors[0]["reason"] == "reserved_id"
    assert client.get_connection_state() == "connected"


def test_a_custom_trigger_type_served_by_one_worker_fires_a_function_of_another(engine: Engine) -> None:
    provider = register_worker(engine.url, InitOptions(worker_name="provider"))
    consumer = register_worker(engine.url, InitOptions(worker_name="consumer"))
    try:
        bindings: dict[str, Any] = {}

        class Ticker:
            def register_trigger(self, cfg: Any) -> None:
                if cfg.config.get("refuse"):
                    raise ValueError("refused by the ticker")
                bindings[cfg.id] = cfg

            async def unregister_trigger(self, cfg: Any) -> None:
                bindings.pop(cfg.id, None)

        provider.register_trigger_type({"id": "pyt-ticker", "description": "ticks"}, Ticker())
        got: list[Any] = []
        consumer.register_function("pyt::on-tick", lambda data, metadata=None: got.append((data, metadata)))
        trigger = consumer.register_trigger({"type": "pyt-ticker", "function_id": "pyt::on-tick", "config": {"every": 1}, "metadata": {"m": 1}})
        eventually(lambda: trigger.id in bindings)
        cfg = bindings[trigger.id]
        assert (cfg.function_id, cfg.config, cfg["metadata"], cfg.namespace) == ("pyt::on-tick", {"every": 1}, {"m": 1}, "default")
        provider.trigger({"function_id": cfg.function_id, "payload": {"tick": 1}, "metadata": cfg.metadata, "action": TriggerAction.Void()})
        eventually(lambda: got == [({"tick": 1}, {"m": 1})])
        refused: list[Any] = []
        consumer.add_registration_error_listener(refused.append)
        consumer.register_trigger({"type": "pyt-ticker", "function_id": "pyt::on-tick", "config": {"refuse": True}})
        eventually(lambda: refused)
        assert (refused[0]["kind"], refused[0]["code"], refused[0]["message"]) == ("trigger", "trigger_registration_failed", "refused by the ticker")
        trigger.unregister()
        eventually(lambda: trigger.id not in bindings)
    finally:
        consumer.shutdown()
        provider.shutdown()


def test_two_replicas_share_the_calls(engine: Engine) -> None:
    a = register_worker(engine.url, InitOptions(worker_name="replica-a"))
    b = register_worker(engine.url, InitOptions(worker_name="replica-b"))
    try:
        a.register_function("pyt::who", lambda d: "a")
        b.register_function("pyt::who", lambda d: "b")
        eventually(lambda: a.trigger({"function_id": "engine::functions::info", "payload": {"function_id": "pyt::who"}})["replica_count"] == 2)
        answers = {a.trigger({"function_id": "pyt::who", "payload": None}) for _ in range(10)}
        assert answers == {"a", "b"}
    finally:
        a.shutdown()
        b.shutdown()


def test_calls_from_handlers_and_threads_run_concurrently(client: Any) -> None:
    async def double(n: int) -> int:
        return 2 * n

    async def via(n: int) -> int:
        return int(await client.trigger_async({"function_id": "pyt::double", "payload": n})) + 1

    def via_sync(n: int) -> int:
        return int(client.trigger({"function_id": "pyt::double", "payload": n})) + 2

    client.register_function("pyt::double", double)
    client.register_function("pyt::via", via)
    client.register_function("pyt::via-sync", via_sync)
    eventually(lambda: len(names(client, "pyt::")) >= 3)
    assert client.trigger({"function_id": "pyt::via", "payload": 5}) == 11
    assert client.trigger({"function_id": "pyt::via-sync", "payload": 5}) == 12
    results: list[int] = []
    threads = [threading.Thread(target=lambda i=i: results.append(client.trigger({"function_id": "pyt::via", "payload": i}))) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [2 * i + 1 for i in range(20)]


def test_many_calls_from_other_loops_and_threads_each_get_their_own_answer(client: Any) -> None:
    """Calls made outside the client's loop reach it, and come back, in batches (one wake-up per
    batch): every one of 300 concurrent calls from two other event loops and four threads gets its
    own answer, and a caller that gives up (cancelled) leaves the others alone."""

    async def echo(n: Any) -> Any:
        if n == "slow":
            await asyncio.sleep(0.5)
        return n

    client.register_function("pyt::echo-n", echo)
    eventually(lambda: "pyt::echo-n" in names(client, "pyt::"))

    async def burst(base: int) -> list[Any]:
        slow = asyncio.ensure_future(client.trigger_async({"function_id": "pyt::echo-n", "payload": "slow"}))
        calls = [client.trigger_async({"function_id": "pyt::echo-n", "payload": base + i}) for i in range(100)]
        await asyncio.sleep(0)
        slow.cancel()
        return list(await asyncio.gather(*calls))

    loop_results: dict[int, list[Any]] = {}
    thread_results: dict[int, list[Any]] = {}

    def in_loop(base: int) -> None:
        loop_results[base] = asyncio.run(burst(base))

    def blocking(base: int) -> None:
        thread_results[base] = [client.trigger({"function_id": "pyt::echo-n", "payload": base + i}) for i in range(25)]

    threads = [threading.Thread(target=in_loop, args=(b,)) for b in (1000, 2000)]
    threads += [threading.Thread(target=blocking, args=(b,)) for b in (3000, 4000, 5000, 6000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert {b: r for b, r in loop_results.items()} == {b: [b + i for i in range(100)] for b in (1000, 2000)}
    assert {b: r for b, r in thread_results.items()} == {b: [b + i for i in range(25)] for b in (3000, 4000, 5000, 6000)}
    # Each of the 22 caller loops had its inbox; finished loops are not kept alive by theirs.
    for _ in range(20):
        asyncio.run(client.trigger_async({"function_id": "pyt::echo-n", "payload": 1}))
    gc.collect()
    assert len(client._inboxes) < 5


def test_a_blocking_call_on_the_clients_own_loop_raises(client: Any) -> None:
    async def bad(data: Any) -> Any:
        return client.trigger({"function_id": "pyt::x", "payload": None})

    client.register_function("pyt::bad", bad)
    eventually(lambda: names(client, "pyt::bad"))
    with pytest.raises(InvocationError) as raised:
        client.trigger({"function_id": "pyt::bad", "payload": None})
    assert "trigger_async" in raised.value.message


def test_channels_carry_text_and_binary_between_two_python_workers(engine: Engine) -> None:
    a = register_worker(engine.url, InitOptions(worker_name="chan-a"))
    b = register_worker(engine.url, InitOptions(worker_name="chan-b"))
    try:
        async def consume(data: Any) -> dict[str, Any]:
            texts: list[str] = []
            chunks: list[bytes] = []
            async for item in data["reader"].items():
                (texts.append(item.text) if item.kind == "text" else chunks.append(item.data))
            return {"texts": texts, "bytes": b"".join(chunks).hex()}

        async def produce(data: Any) -> None:
            await data["writer"].send_message("hello")
            await data["writer"].write(bytes(range(256)) * 600)  # 153600 bytes: three frames
            await data["writer"].send_message("bye")
            await data["writer"].close()

        b.register_function("chan::consume", consume)
        b.register_function("chan::produce", produce)
        eventually(lambda: len(names(a, "chan::")) == 2)
        # a writes, b reads
        channel = create_channel(a, 4)
        a.trigger({"function_id": "chan::produce", "payload": {"writer": channel.writer_ref}, "action": TriggerAction.Void()})

        async def read_here() -> tuple[list[str], bytes]:
            texts: list[str] = []
            channel.reader.on_message(texts.append)
            return texts, await channel.reader.read_all()

        texts, body = asyncio.run_coroutine_threadsafe(read_here(), a._loop).result(30)
        assert texts == ["hello", "bye"] and body == bytes(range(256)) * 600

        async def write_there() -> Any:
            ch = await create_channel_async(a)
            pending = asyncio.ensure_future(a.trigger_async({"function_id": "chan::consume", "payload": {"reader": ch.reader_ref}}))
            await ch.writer.send_message("one")
            await ch.writer.write(b"\x00\xff")
            await ch.writer.write("é")
            await ch.writer.close()
            return await pending

        assert asyncio.run_coroutine_threadsafe(write_there(), a._loop).result(30) == {"texts": ["one"], "bytes": "00ffc3a9"}
    finally:
        a.shutdown()
        b.shutdown()


def test_a_reader_reports_a_writer_that_ended_abnormally(client: Any) -> None:
    async def run() -> str:
        ch = await create_channel_async(client)
        await ch.writer.write(b"partial")
        await ch.writer.abort()
        try:
            await ch.reader.read_all()
        except InvocationError as err:
            return err.code
        return "no error"

    assert asyncio.run_coroutine_threadsafe(run(), client._loop).result(30) == "CHANNEL_CLOSED"


def test_connection_states_and_re_registration_after_kill_9_and_restart(own_engine: Engine) -> None:
    states: list[str] = []
    c = register_worker(
        own_engine.url,
        InitOptions(worker_name="survivor", reconnection_config=ReconnectionConfig(initial_delay_ms=100, max_delay_ms=500)),
    )
    observer = None
    try:
        c.add_connection_state_listener(states.append)
        c.register_function("pyt::alive", lambda d: "yes")
        eventually(lambda: names(c, "pyt::") == ["pyt::alive"])
        first_worker = c.worker_id
        pending: dict[str, Any] = {}
        running = threading.Event()

        def hang(data: Any) -> None:
            running.set()
            time.sleep(30)

        c.register_function("pyt::hang", hang)
        eventually(lambda: len(names(c, "pyt::")) == 2)
        caller = threading.Thread(target=lambda: pending.setdefault("result", _catch(lambda: c.trigger({"function_id": "pyt::hang", "payload": None}))))
        caller.start()
        assert running.wait(10)
        port = own_engine.port
        own_engine.kill9()
        caller.join(20)
        assert isinstance(pending["result"], InvocationError) and pending["result"].code == "invocation_stopped"
        eventually(lambda: c.get_connection_state() == "reconnecting")
        own_engine.start(port)
        eventually(lambda: c.get_connection_state() == "connected", 30)
        observer = register_worker(own_engine.url, InitOptions(worker_name="observer"))
        eventually(lambda: names(observer, "pyt::") == ["pyt::alive", "pyt::hang"], 30)
        assert observer.trigger({"function_id": "pyt::alive", "payload": None}) == "yes"
        assert c.worker_id != first_worker
        assert states[:1] == ["connected"] and "reconnecting" in states and states[-1] == "connected"
    finally:
        if observer is not None:
            observer.shutdown()
        c.shutdown()
    assert c.get_connection_state() == "disconnected"
    with pytest.raises(InvocationError) as after:
        c.trigger({"function_id": "pyt::alive", "payload": None})
    assert after.value.code == "NOT_CONNECTED"


def _catch(fn: Any) -> Any:
    try:
        return fn()
    except Exception as err:
        return err


def test_register_worker_raises_when_retries_run_out() -> None:
    with pytest.raises(EngineConnectionError):
        register_worker("ws://127.0.0.1:1", InitOptions(reconnection_config={"max_retries": 1, "initial_delay_ms": 10}, otel={"enabled": False}))


def test_shutdown_fails_pending_calls_with_shutdown(client: Any) -> None:
    started = threading.Event()

    def hang(data: Any) -> None:
        started.set()
        time.sleep(5)

    client.register_function("pyt::hang2", hang)
    eventually(lambda: names(client, "pyt::hang2"))
    out: dict[str, Any] = {}
    t = threading.Thread(target=lambda: out.setdefault("r", _catch(lambda: client.trigger({"function_id": "pyt::hang2", "payload": None}))))
    t.start()
    started.wait(10)
    client.shutdown()
    t.join(10)
    assert isinstance(out["r"], InvocationError) and out["r"].code == "SHUTDOWN"


def test_handler_spans_and_logger_records_carry_the_invocations_trace(engine: Engine) -> None:
    c = register_worker(engine.url, InitOptions(worker_name="py-traced", otel={"service_name": "py-traced"}))
    try:
        def handle(data: Any) -> dict[str, Any]:
            Logger().info("inside handler", {"n": data["n"], "password": "hunter2"})
            return {"trace_id": current_trace_id()}

        c.register_function("pyt::traced", handle)
        eventually(lambda: names(c, "pyt::traced"))
        trace_id = secrets.token_hex(16)
        traceparent = f"00-{trace_id}-{secrets.token_hex(8)}-01"
        # An invocation carrying a trace context, as a caller with an active span sends it.
        from opentelemetry import context as otel_context

        from svc_helpers.observability import extract_traceparent

        token = otel_context.attach(extract_traceparent(traceparent))
        try:
            answer = c.trigger({"function_id": "pyt::traced", "payload": {"n": 7}})
        finally:
            otel_context.detach(token)
        assert answer == {"trace_id": trace_id}

        def logged() -> Any:
            logs = c.trigger({"function_id": "engine::logs::list", "payload": {"trace_id": trace_id}})["logs"]
            return logs

        logs = eventually(logged)
        assert logs[0]["body"] == "inside handler"
        assert logs[0]["attributes"]["log.data.n"] == 7 and logs[0]["attributes"]["log.data.password"] == "[REDACTED]"

        def spans() -> Any:
            return [s for s in c.trigger({"function_id": "engine::traces::list", "payload": {"trace_id": trace_id}})["spans"] if s["name"] == "execute pyt::traced"]

        span = eventually(spans)[0]
        assert span["attributes"]["svc.function.id"] == "pyt::traced"
    finally:
        c.shutdown()


def test_a_cancelled_async_handler_has_its_task_cancelled_and_sends_no_answer(client: Any) -> None:
    started = threading.Event()
    cancelled = threading.Event()

    async def wait(data: Any) -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    client.register_function("pyt::wait", wait)
    eventually(lambda: "pyt::wait" in names(client, "pyt::"))
    client.trigger({"function_id": "pyt::wait", "payload": None, "action": TriggerAction.Void()})
    assert started.wait(10)
    listed = client.trigger({"function_id": "engine::invocations::list", "payload": {"function_id": "pyt::wait"}})
    [invocation] = listed["invocations"]
    answer = client.trigger({"function_id": "engine::invocations::cancel", "payload": {"invocation_id": invocation["invocation_id"], "reason": "stop"}})
    assert answer == {"cancelled": True}
    assert cancelled.wait(10)
    # The worker is still serving, and nothing of the cancelled call is left in flight.
    client.register_function("pyt::ok", lambda data: "ok")
    eventually(lambda: "pyt::ok" in names(client, "pyt::"))
    assert client.trigger({"function_id": "pyt::ok", "payload": None}) == "ok"
    eventually(lambda: client.trigger({"function_id": "engine::invocations::list", "payload": {"function_id": "pyt::wait"}})["total"] == 0)
