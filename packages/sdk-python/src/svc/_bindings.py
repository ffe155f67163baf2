"""The provider side of trigger types (protocol.md §8.3, sdk.md §5): bindings the engine delivered
to this client, each held by its type's handler from a ``register_trigger`` that succeeded until
``unregister_trigger``. Sync handler methods run in the client's executor, async ones on its loop.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Callable

from ._codes import ErrorCode
from ._registrations import LocalTriggerType

log = logging.getLogger("svc")


@dataclass(frozen=True)
class TriggerConfig:
    """A binding as delivered to a provider (protocol.md §8.3); also readable as ``cfg["id"]``.

    Attributes:
        id: the trigger id; key your tables by it.
        function_id: the target function.
        config: the binding's configuration.
        metadata: the binding's metadata, to pass on as the invocation ``metadata`` when firing.
        namespace: the namespace to invoke ``function_id`` in (``default`` when the binding named none).
    """

    id: str
    function_id: str
    config: Any
    metadata: Any = None
    namespace: str = "default"

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


class _Binding:
    __slots__ = ("type", "config", "ready")

    def __init__(self, type_: LocalTriggerType, config: TriggerConfig) -> None:
        self.type = type_
        self.config = config
        self.ready: asyncio.Future[bool] | None = None


class ProviderBindings:
    def __init__(self, loop: asyncio.AbstractEventLoop, executor: Executor) -> None:
        self._loop = loop
        self._executor = executor
        self._bindings: dict[str, _Binding] = {}

    @property
    def size(self) -> int:
        return len(self._bindings)

    async def _call(self, method: Callable[[TriggerConfig], Any], config: TriggerConfig) -> None:
        if inspect.iscoroutinefunction(method):
            await method(config)
            return
        result = await self._loop.run_in_executor(self._executor, method, config)
        if inspect.isawaitable(result):
            await result

    def deliver(self, msg: dict[str, Any], type_: LocalTriggerType, answer: Callable[[dict[str, Any] | None], None]) -> None:
        """Hands the delivered binding to ``type_``'s handler and answers once it settled: no error
        when ``register_trigger`` returned, ``trigger_registration_failed`` with its message when it
        raised. A known id is a replacement (protocol.md §5.5)."""
        config = TriggerConfig(msg["id"], msg["function_id"], msg["config"], msg.get("metadata"), msg.get("namespace") or "default")
        previous = self._bindings.get(config.id)
        if previous is not None and previous.type is not type_:
            self._release(previous)
        binding = _Binding(type_, config)
        self._bindings[config.id] = binding

        async def register() -> bool:
            try:
                await self._call(type_.handler.register_trigger, config)
            except Exception as err:  # the provider refused the binding
                if self._bindings.get(config.id) is binding:
                    del self._bindings[config.id]
                answer({"code": ErrorCode.TRIGGER_REGISTRATION_FAILED, "message": str(err) or type(err).__name__})
                return False
            answer(None)
            return True

        binding.ready = self._loop.create_task(register())

    def remove(self, trigger_id: str) -> None:
        """The engine removed binding ``trigger_id`` (§5.6): its handler's ``unregister_trigger`` gets the stored binding."""
        binding = self._bindings.pop(trigger_id, None)
        if binding is not None:
            self._release(binding)

    def release_all(self, type_: LocalTriggerType | None = None) -> None:
        """Lets go of the bindings of ``type_``, or of all of them (connection lost, shutdown)."""
        for trigger_id, binding in list(self._bindings.items()):
            if type_ is not None and binding.type is not type_:
                continue
            del self._bindings[trigger_id]
            self._release(binding)

    def _release(self, binding: _Binding) -> None:
        async def release() -> None:
            try:
                if binding.ready is not None and not await binding.ready:
                    return
                await self._call(binding.type.handler.unregister_trigger, binding.config)
            except Exception as err:
                log.warning("unregister_trigger of trigger type '%s' raised: %s", binding.type.id, err)

        self._loop.create_task(release())
