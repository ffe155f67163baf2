"""Cancellation from the caller's side (issue 21, docs/reference/protocol.md "cancelinvocation"),
against a real engine: a Python caller that gives up on a call makes the worker running it stop,
and a handler's own calls are cancelled with it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from typing import Any

import pytest

from conftest import Engine, eventually
from svc import InitOptions, InvocationError, handler_context, register_worker


@pytest.fixture()
def caller(engine: Engine) -> Any:
    c = register_worker(engine.url, InitOptions(worker_name="py-caller"))
    yield c
    c.shutdown()


@pytest.fixture()
def callee(engine: Engine) -> Any:
    c = register_worker(engine.url, InitOptions(worker_name="py-callee"))
    yield c
    c.shutdown()


def in_flight(client: Any, function_id: str) -> int:
    listed = client.trigger({"function_id": "engine::invocations::list", "payload": {"function_id": function_id}})
    return int(listed["total"])


def registered(client: Any, function_id: str) -> None:
    eventually(lambda: any(f["function_id"] == function_id for f in client.trigger({"function_id": "engine::functions::list", "payload": {"prefix": function_id}})["functions"]))


class Slow:
    """A handler that waits until cancelled, recording what it saw."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.reason: list[str | None] = []

    async def async_handler(self, data: Any) -> str:
        self.started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            ctx = handler_context()
            self.reason.append(ctx.reason if ctx is not None else "no context")
            self.cancelled.set()
            raise
        return "never"

    def sync_handler(self, data: Any) -> str:
        self.started.set()
        ctx = handler_context()
        assert ctx is not None
        if ctx.wait_cancelled(60):
            self.reason.append(ctx.reason)
            self.cancelled.set()
        return "late"


def test_a_caller_whose_wait_for_times_out_cancels_the_call_in_the_worker(caller: Any, callee: Any) -> None:
    slow = Slow()
    callee.register_function("pyc::slow", slow.async_handler)
    registered(caller, "pyc::slow")

    async def call() -> None:
        await asyncio.wait_for(caller.trigger_async({"function_id": "pyc::slow", "payload": None}), 1.0)

    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(call())
    assert slow.started.is_set()
    assert slow.cancelled.wait(10), "the handler was not cancelled"
    eventually(lambda: in_flight(caller, "pyc::slow") == 0)


def test_task_cancel_with_a_message_reaches_a_sync_handler_as_its_reason_and_rejects_at_once(caller: Any, callee: Any) -> None:
    slow = Slow()
    callee.register_function("pyc::slow-sync", slow.sync_handler)
    registered(caller, "pyc::slow-sync")

    async def call() -> None:
        task = asyncio.ensure_future(caller.trigger_async({"function_id": "pyc::slow-sync", "payload": None}))
        while not slow.started.is_set():
            await asyncio.sleep(0.01)
        task.cancel("the user closed the page")
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(call())
    assert slow.cancelled.wait(10), "the sync handler's context was not cancelled"
    assert slow.reason == ["the user closed the page"]
    eventually(lambda: in_flight(caller, "pyc::slow-sync") == 0)


def test_the_sdks_own_timeout_cancels_the_call_in_the_worker(caller: Any, callee: Any) -> None:
    slow = Slow()
    callee.register_function("pyc::slow-timeout", slow.async_handler)
    registered(caller, "pyc::slow-timeout")
    with pytest.raises(InvocationError) as raised:
        caller.trigger({"function_id": "pyc::slow-timeout", "payload": None, "timeout_ms": 500})
    assert raised.value.code == "TIMEOUT"
    assert slow.cancelled.wait(10), "the handler was not cancelled"
    assert slow.reason == ["timed out after 500ms"]
    eventually(lambda: in_flight(caller, "pyc::slow-timeout") == 0)


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_the_calls_a_handler_made_are_cancelled_with_it(caller: Any, callee: Any, kind: str) -> None:
    """The engine cancels an outer invocation (engine::invocations::cancel, as the console does):
    the inner call its handler was waiting on is cancelled too, with the same reason."""
    inner = Slow()
    outcome: list[Any] = []
    callee.register_function(f"pyc::inner-{kind}", inner.async_handler)

    async def outer_async(data: Any) -> Any:
        try:
            return await callee.trigger_async({"function_id": f"pyc::inner-{kind}", "payload": None})
        except BaseException as err:
            outcome.append(type(err).__name__)
            raise

    def outer_sync(data: Any) -> Any:
        try:
            return callee.trigger({"function_id": f"pyc::inner-{kind}", "payload": None})
        except InvocationError as err:
            outcome.append(err.code)
            outcome.append(err.message)
            raise

    callee.register_function(f"pyc::outer-{kind}", outer_async if kind == "async" else outer_sync)
    registered(caller, f"pyc::outer-{kind}")
    registered(caller, f"pyc::inner-{kind}")
    caller_saw: list[str] = []
    pending = threading.Thread(target=lambda: caller_saw.append(_code_of(caller, f"pyc::outer-{kind}")))
    pending.start()
    assert inner.started.wait(10)
    [outer] = caller.trigger({"function_id": "engine::invocations::list", "payload": {"function_id": f"pyc::outer-{kind}"}})["invocations"]
    answer = caller.trigger({"function_id": "engine::invocations::cancel", "payload": {"invocation_id": outer["invocation_id"], "reason": "stop it all"}})
    assert answer == {"cancelled": True}
    assert inner.cancelled.wait(10), "the inner call was not cancelled"
    assert inner.reason == ["stop it all"]
    pending.join(10)
    assert caller_saw == ["cancelled"]
    # The outer handler saw its own cancellation: its task cancelled, or its blocking call failing.
    eventually(lambda: outcome)
    assert outcome == (["CancelledError"] if kind == "async" else ["cancelled", "Invocation cancelled: stop it all"])
    eventually(lambda: in_flight(caller, f"pyc::inner-{kind}") == 0 and in_flight(caller, f"pyc::outer-{kind}") == 0)


def _code_of(client: Any, function_id: str) -> str:
    try:
        client.trigger({"function_id": function_id, "payload": None})
    except InvocationError as err:
        return err.code
    return "ok"


def test_a_call_made_by_a_handler_already_cancelled_fails_at_once_unsent(caller: Any, callee: Any) -> None:
    seen: list[Any] = []
    done = threading.Event()
    callee.register_function("pyc::never", lambda data: seen.append("ran"))

    def late(data: Any) -> None:
        ctx = handler_context()
        assert ctx is not None
        ctx.wait_cancelled(30)
        try:
            callee.trigger({"function_id": "pyc::never", "payload": None})
        except InvocationError as err:
            seen.append(err.code)
        done.set()

    callee.register_function("pyc::late", late)
    registered(caller, "pyc::late")
    with pytest.raises(InvocationError) as raised:
        caller.trigger({"function_id": "pyc::late", "payload": None, "timeout_ms": 300})
    assert raised.value.code == "TIMEOUT"
    assert done.wait(10)
    assert seen == ["cancelled"]


INTERRUPTED_CALLER = """
import sys
from svc import InitOptions, register_worker

client = register_worker(sys.argv[1], InitOptions(worker_name="py-interrupted"))
print("calling", flush=True)
try:
    client.trigger({"function_id": "pyc::slow-interrupted", "payload": None, "timeout_ms": 60000})
except KeyboardInterrupt:
    print("interrupted", flush=True)
client.shutdown()
"""


def test_ctrl_c_in_a_blocking_trigger_cancels_the_call_in_the_worker(engine: Engine, callee: Any) -> None:
    slow = Slow()
    callee.register_function("pyc::slow-interrupted", slow.async_handler)
    registered(callee, "pyc::slow-interrupted")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "OTEL_ENABLED": "false"}
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED_CALLER, engine.url], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "calling"
        assert slow.started.wait(20), "the call did not reach the handler"
        proc.send_signal(signal.SIGINT)
        assert slow.cancelled.wait(10), "the handler was not cancelled"
        assert slow.reason == ["the caller was interrupted"]
        assert proc.stdout.readline().strip() == "interrupted"
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    eventually(lambda: in_flight(callee, "pyc::slow-interrupted") == 0)
