"""The Python SDK against the reference iii engine's wire format where protocol.md §14 says an SDK
must accept it, replayed from recorded frames (``fixtures/iii-engine-frames.json``) by a real
WebSocket server standing in for the engine: no ``reattach_token``, ``_caller_worker_id`` in
payloads, ``registrationrejected`` without ``reason``/``message`` (fatal unless
``FUNCTION_NAMESPACE_CONFLICT``), ``unregistertrigger`` without ``function_id``, results without
``result``, and no pings from the engine."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from conftest import eventually
from svc import ClientTimings, InitOptions, InvocationError, RegistrationRejectedError, TriggerAction, register_worker

FRAMES: dict[str, Any] = json.loads((Path(__file__).parent / "fixtures" / "iii-engine-frames.json").read_text())


class IiiEngine:
    """A WebSocket server on a free port that sends the recorded frames it is told to and records
    every frame a worker sends. It never pings (the iii engine does not)."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.connections: list[ServerConnection] = []
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.port = 0

        async def handler(ws: ServerConnection) -> None:
            self.connections.append(ws)
            try:
                async for message in ws:
                    self.received.append(json.loads(message))
            except Exception:
                pass

        async def main() -> None:
            self.server = await serve(handler, "127.0.0.1", 0, ping_interval=None, compression=None)
            self.port = self.server.sockets[0].getsockname()[1]
            ready.set()
            await self.server.serve_forever()

        threading.Thread(target=lambda: self.loop.run_until_complete(main()), daemon=True).start()
        ready.wait(10)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def send(self, name: str, **subst: str) -> None:
        text = json.dumps(FRAMES[name])
        for key, value in subst.items():
            text = text.replace(f"${key}", value)
        # The client may report "connected" before this server's thread has run the handler that
        # records the connection.
        eventually(lambda: self.connections)
        asyncio.run_coroutine_threadsafe(self.connections[-1].send(text), self.loop).result(5)

    def drop(self) -> None:
        ws = self.connections[-1]
        self.loop.call_soon_threadsafe(lambda: ws.transport.abort())

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.received if f.get("type") == kind]

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)


@pytest.fixture()
def iii() -> Any:
    engine = IiiEngine()
    yield engine
    engine.close()


def quick() -> InitOptions:
    return InitOptions(
        worker_name="iii-compat",
        otel={"enabled": False},
        reconnection_config={"initial_delay_ms": 50, "max_delay_ms": 200},
        timings=ClientTimings(ping_interval_ms=100, idle_timeout_ms=400),
    )


def test_calls_results_and_a_worker_id_without_reattach_token(iii: IiiEngine) -> None:
    client = register_worker(iii.url, quick())
    try:
        seen: list[Any] = []
        client.register_function("iii::echo", lambda data, metadata=None: seen.append(data) or data)
        iii.send("workerregistered_without_token")
        eventually(lambda: client.worker_id == FRAMES["workerregistered_without_token"]["worker_id"])
        # A call as the iii engine sends it: the caller's worker id added to the payload.
        iii.send("invoke_with_caller_id")
        answer = eventually(lambda: iii.of_type("invocationresult"))[0]
        assert answer["invocation_id"] == FRAMES["invoke_with_caller_id"]["invocation_id"]
        assert answer["result"] == FRAMES["invoke_with_caller_id"]["data"]
        iii.send("invoke_void_without_id")
        eventually(lambda: len(seen) == 2)
        assert len(iii.of_type("invocationresult")) == 1  # nothing is owed without an invocation id

        def call(request: dict[str, Any]) -> Any:
            out: dict[str, Any] = {}
            t = threading.Thread(target=lambda: out.setdefault("r", _catch(lambda: client.trigger(request))))
            t.start()
            sent = eventually(lambda: [f for f in iii.of_type("invokefunction") if f["function_id"] == request["function_id"] and f not in done])[0]
            done.append(sent)
            return t, out, sent

        done: list[dict[str, Any]] = []
        t, out, sent = call({"function_id": "remote::fn", "payload": {"a": 1}})
        iii.send("result_ok", CALL=sent["invocation_id"])
        t.join(5)
        assert out["r"] == {"ok": True}
        t, out, sent = call({"function_id": "remote::fn", "payload": None})
        iii.send("result_null", CALL=sent["invocation_id"])
        t.join(5)
        assert out["r"] is None
        t, out, sent = call({"function_id": "remote::fn", "payload": None})
        iii.send("result_error", CALL=sent["invocation_id"])
        t.join(5)
        assert isinstance(out["r"], InvocationError) and out["r"].code == "function_not_found"

        # The iii engine never pings; the client's own pings keep it connected past its idle timeout.
        connections = len(iii.connections)
        threading.Event().wait(1.0)
        assert client.get_connection_state() == "connected" and len(iii.connections) == connections

        # Without a reattach token the reconnect sends no reattach, then the announce and the replay.
        iii.drop()
        eventually(lambda: len(iii.connections) == connections + 1)
        eventually(lambda: len(iii.of_type("registerfunction")) == 2)
        assert iii.of_type("reattach") == []
        iii.send("workerregistered_with_token")
        eventually(lambda: client.worker_id == FRAMES["workerregistered_with_token"]["worker_id"])
        iii.drop()
        reattach = eventually(lambda: iii.of_type("reattach"))[0]
        assert reattach == {"type": "reattach", "previous_worker_id": FRAMES["workerregistered_with_token"]["worker_id"], "reattach_token": FRAMES["workerregistered_with_token"]["reattach_token"]}
    finally:
        client.shutdown()


def _catch(fn: Any) -> Any:
    try:
        return fn()
    except Exception as err:
        return err


def test_bindings_and_non_fatal_rejections_in_the_iii_shapes(iii: IiiEngine) -> None:
    client = register_worker(iii.url, quick())
    try:
        held: dict[str, Any] = {}

        class Ticker:
            def register_trigger(self, cfg: Any) -> None:
                held[cfg.id] = cfg

            def unregister_trigger(self, cfg: Any) -> None:
                held.pop(cfg.id)

        client.register_trigger_type({"id": "iii-ticker", "description": "ticks"}, Ticker())
        errors: list[Any] = []
        client.add_registration_error_listener(errors.append)
        eventually(lambda: iii.of_type("registertriggertype"))
        iii.send("deliver_binding")
        result = eventually(lambda: iii.of_type("triggerregistrationresult"))[0]
        assert result == {"type": "triggerregistrationresult", "id": FRAMES["deliver_binding"]["id"], "trigger_type": "iii-ticker", "function_id": "iii::echo"}
        cfg = held[FRAMES["deliver_binding"]["id"]]
        assert (cfg.config, cfg.metadata, cfg.namespace) == ({"every": 1}, None, "default")
        # unregistertrigger without function_id: the provider still gets the binding it stored.
        iii.send("remove_binding")
        eventually(lambda: held == {})

        trigger = client.register_trigger({"type": "cron", "function_id": "iii::echo", "config": {"expression": "nonsense"}})
        iii.send("binding_failed", TRIGGER=trigger.id)
        iii.send("rejected_function")
        eventually(lambda: len(errors) == 2)
        assert errors[0] == {"kind": "trigger", "id": trigger.id, "code": "trigger_registration_failed", "message": "invalid cron expression", "trigger_type": "cron", "function_id": "iii::echo"}
        assert errors[1]["kind"] == "function" and errors[1]["id"] == "iii::taken" and errors[1]["code"] == "FUNCTION_NAMESPACE_CONFLICT"
        assert errors[1]["message"] == "registration rejected: FUNCTION_NAMESPACE_CONFLICT"
        assert client.get_connection_state() == "connected"
    finally:
        client.shutdown()


def test_a_worker_namespace_conflict_is_fatal(iii: IiiEngine) -> None:
    client = register_worker(iii.url, quick())
    try:
        out: dict[str, Any] = {}
        t = threading.Thread(target=lambda: out.setdefault("r", _catch(lambda: client.trigger({"function_id": "remote::fn", "payload": None}))))
        t.start()
        eventually(lambda: [f for f in iii.of_type("invokefunction") if f["function_id"] == "remote::fn"])
        iii.send("rejected_worker")
        t.join(5)
        assert isinstance(out["r"], RegistrationRejectedError) and out["r"].code == "WORKER_NAMESPACE_CONFLICT"
        eventually(lambda: client.get_connection_state() == "failed")
        assert isinstance(client.get_last_error(), RegistrationRejectedError)
        with pytest.raises(InvocationError) as after:
            client.trigger({"function_id": "remote::fn", "payload": None, "action": TriggerAction.Void()})
        assert after.value.code == "NOT_CONNECTED"
        connections = len(iii.connections)
        threading.Event().wait(0.5)
        assert len(iii.connections) == connections  # no reconnect after a fatal rejection
    finally:
        client.shutdown()
