"""svc-sdk for Python: workers that register functions and triggers with an svc engine and call
each other by id (sdk.md §14; wire protocol: protocol.md).

Example:
    >>> from svc import register_worker, InitOptions, TriggerAction
    >>> client = register_worker("ws://127.0.0.1:49134", InitOptions(worker_name="math"))
    >>> client.register_function("math::add", lambda data: {"c": data["a"] + data["b"]})
    >>> client.trigger({"function_id": "math::add", "payload": {"a": 2, "b": 3}})
    {'c': 5}
    >>> client.trigger({"function_id": "audit::log", "payload": {}, "action": TriggerAction.Void()})
    >>> client.shutdown()
"""

from svc_helpers.backoff import ReconnectionConfig

from ._bindings import TriggerConfig
from ._codes import ErrorCode
from ._handler_context import HandlerContext, handler_context
from ._session import ClientTimings
from .client import DEFAULT_ENGINE_URL, FunctionRef, InitOptions, Svc, Trigger, TriggerTypeRef, __version__, register_worker
from .errors import EngineConnectionError, InvocationError, NonRetryableError, RegistrationRejectedError, RetryAfterError
from .trigger_action import TriggerAction
from .types import ConnectionState, EnqueueResult, RegistrationError, StreamChannelRef, TriggerRequest

__all__ = [
    "DEFAULT_ENGINE_URL",
    "ClientTimings",
    "ConnectionState",
    "EngineConnectionError",
    "EnqueueResult",
    "ErrorCode",
    "FunctionRef",
    "HandlerContext",
    "InitOptions",
    "InvocationError",
    "NonRetryableError",
    "ReconnectionConfig",
    "RegistrationError",
    "RegistrationRejectedError",
    "RetryAfterError",
    "StreamChannelRef",
    "Svc",
    "Trigger",
    "TriggerAction",
    "TriggerConfig",
    "TriggerRequest",
    "TriggerTypeRef",
    "__version__",
    "handler_context",
    "register_worker",
]
