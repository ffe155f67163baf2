"""The Python SDK's conformance worker (test/conformance/README.md): registers the suite's functions
under ``CONF_PREFIX`` with ``svc`` and prints its ready line."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
from typing import Any

from svc import InitOptions, InvocationError, TriggerAction, TriggerConfig, register_worker

P = os.environ.get("CONF_PREFIX", "conf-python")
WORKER = os.environ.get("CONF_WORKER", "a")
SDK = "python"
MAX_DELAY_MS = float(os.environ.get("CONF_RECONNECT_MAX_MS", "1000"))

client = register_worker(
    os.environ.get("SVC_URL"),
    InitOptions(
        worker_name=f"{P}-{WORKER}",
        reconnection_config={"initial_delay_ms": 100, "max_delay_ms": MAX_DELAY_MS},
        otel={"enabled": False},
    ),
)
events: dict[str, list[Any]] = {"notes": [], "state": [], "ticks": []}
bindings: dict[str, TriggerConfig] = {}


class Failure(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def echo(data: Any, metadata: Any = None) -> Any:
    return {"data": data, "metadata": metadata}


def fail(data: dict[str, str]) -> None:
    raise Failure(data["code"], data["message"])


async def sleep(data: dict[str, Any]) -> Any:
    await asyncio.sleep(data["ms"] / 1000)
    return {"slept": data["ms"]}


async def call(data: dict[str, Any]) -> Any:
    request: dict[str, Any] = {"function_id": data["function_id"], "payload": data.get("payload")}
    action = data.get("action")
    if action and action.get("type") == "void":
        request["action"] = TriggerAction.Void()
    elif action and action.get("type") == "enqueue":
        request["action"] = TriggerAction.Enqueue(queue=action["queue"])
    if data.get("timeout_ms") is not None:
        request["timeout_ms"] = data["timeout_ms"]
    if data.get("metadata") is not None:
        request["metadata"] = data["metadata"]
    try:
        return {"ok": True, "result": await client.trigger_async(request)}
    except InvocationError as err:
        return {"ok": False, "code": err.code, "message": err.message, "stacktrace": bool(err.stacktrace)}


def note(data: Any) -> None:
    events["notes"].append(data)


def http(req: dict[str, Any]) -> Any:
    body = {k: req.get(k) for k in ("method", "path_params", "query_params", "body")}
    return {"status_code": 200, "body": {**body, "sdk": SDK}}


def on_tick(data: Any, metadata: Any = None) -> None:
    events["ticks"].append({"payload": data, "metadata": metadata})


def bind(data: dict[str, Any]) -> Any:
    trigger: dict[str, Any] = {"type": data["trigger_type"], "function_id": f"{P}::on-tick", "config": data.get("config") or {}}
    if data.get("metadata") is not None:
        trigger["metadata"] = data["metadata"]
    return {"id": client.register_trigger(trigger).id}


async def fire(data: dict[str, Any]) -> Any:
    held = list(bindings.values())
    for b in held:
        request: dict[str, Any] = {"function_id": b.function_id, "payload": data.get("payload"), "action": TriggerAction.Void(), "namespace": b.namespace}
        if b.metadata is not None:
            request["metadata"] = b.metadata
        await client.trigger_async(request)
    return {"fired": len(held)}


async def channel_read(data: dict[str, Any]) -> Any:
    items: list[dict[str, str]] = []
    async for item in data["reader"].items():
        items.append({"text": item.text} if item.kind == "text" else {"binary_hex": item.data.hex()})
    return {"items": items}


async def channel_write(data: dict[str, Any]) -> Any:
    writer = data["writer"]
    for item in data["items"]:
        if "text" in item:
            await writer.send_message(item["text"])
        else:
            await writer.write(bytes.fromhex(item["binary_hex"]))
    await writer.close()
    return {"written": len(data["items"])}


class Ticker:
    def register_trigger(self, cfg: TriggerConfig) -> None:
        bindings[cfg.id] = cfg

    def unregister_trigger(self, cfg: TriggerConfig) -> None:
        bindings.pop(cfg.id, None)


for name, handler in {
    "echo": echo,
    "fail": fail,
    "sleep": sleep,
    "whoami": lambda data: {"sdk": SDK, "worker": WORKER},
    "call": call,
    "note": note,
    "events": lambda data: events,
    "http": http,
    "state-event": lambda event: events["state"].append(event),
    "on-tick": on_tick,
    "bind": bind,
    "bindings": lambda data: {"bindings": [{"id": b.id, "function_id": b.function_id, "config": b.config, "metadata": b.metadata} for b in bindings.values()]},
    "fire": fire,
    "channel-read": channel_read,
    "channel-write": channel_write,
}.items():
    client.register_function(f"{P}::{name}", handler)
client.register_trigger_type({"id": f"{P}-ticker", "description": "conformance ticker"}, Ticker())
for method in ("GET", "POST"):
    client.register_trigger({"type": "http", "function_id": f"{P}::http", "config": {"api_path": f"conf/{SDK}/items/:id", "http_method": method}})
client.register_trigger({"type": "state", "function_id": f"{P}::state-event", "config": {"scope": P}})

print(json.dumps({"ready": True, "sdk": SDK, "prefix": P, "capabilities": ["channels"]}), flush=True)

done = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: done.set())
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
done.wait()
client.shutdown()
