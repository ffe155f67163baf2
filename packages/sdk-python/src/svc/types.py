"""Public types of the client API (sdk.md §3–§6, §14), as ``TypedDict``s: requests and inputs are
plain dicts, so code ported from iii-sdk keeps its literals."""

from __future__ import annotations

from typing import Any, Literal, Union

from typing_extensions import NotRequired, Required, TypedDict

JsonValue = Any
"""Any value JSON can carry (dict, list, str, int, float, bool, None)."""

ConnectionState = Literal["disconnected", "connecting", "connected", "reconnecting", "failed"]
"""Connection states (sdk.md §8). ``failed`` and a ``disconnected`` reached through shutdown are terminal."""


class VoidAction(TypedDict):
    type: Literal["void"]


class EnqueueAction(TypedDict):
    type: Literal["enqueue"]
    queue: str
    delay_ms: NotRequired[int]
    idempotency_key: NotRequired[str]


TriggerActionValue = Union[VoidAction, EnqueueAction]


class TriggerRequest(TypedDict, total=False):
    """A call of ``trigger`` (sdk.md §6, §14).

    Keys: ``function_id`` (required); ``payload`` (None is sent as ``null``); ``action``
    (:class:`svc.TriggerAction`; absent means synchronous); ``timeout_ms`` (synchronous and enqueue
    calls, ms; default the client's ``invocation_timeout_ms``); ``metadata`` (delivered to the
    handler's ``metadata`` parameter); ``namespace`` (default the worker's; omitted for ids
    beginning ``engine::``).
    """

    function_id: Required[str]
    payload: Any
    action: TriggerActionValue | None
    timeout_ms: float
    metadata: Any
    namespace: str


class EnqueueResult(TypedDict):
    """Result of an enqueue call: the queue worker persisted the message."""

    messageReceiptId: str


class RegisterTriggerInput(TypedDict, total=False):
    """Input of ``register_trigger`` (sdk.md §5): ``type`` (trigger type id), ``function_id``,
    ``config``, optional ``metadata`` (delivered as the invocation metadata on every fire),
    ``namespace`` (target; default the worker's) and ``trigger_namespace`` (provider)."""

    type: Required[str]
    function_id: Required[str]
    config: Any
    metadata: dict[str, Any]
    namespace: str
    trigger_namespace: str


class RegisterTriggerTypeInput(TypedDict, total=False):
    """Input of ``register_trigger_type`` (sdk.md §5)."""

    id: Required[str]
    description: str
    trigger_request_format: dict[str, Any]
    call_request_format: dict[str, Any]
    namespace: str


class HttpInvocationConfig(TypedDict, total=False):
    """A function the engine executes by calling a URL (protocol.md §6.8): ``method`` default POST,
    ``timeout_ms`` default 30000, ``auth`` names engine-side environment variables, never secrets."""

    url: Required[str]
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    headers: dict[str, str]
    timeout_ms: int
    auth: dict[str, str]


class RegistrationError(TypedDict, total=False):
    """A non-fatal registration refusal (sdk.md §7.3), given to registration error listeners."""

    kind: Required[Literal["function", "trigger_type", "trigger"]]
    id: Required[str]
    code: Required[str]
    message: Required[str]
    reason: str
    namespace: str
    trigger_type: str
    function_id: str


class StreamChannelRef(TypedDict):
    """A channel end as it travels in payloads (protocol.md §9)."""

    channel_id: str
    access_key: str
    direction: Literal["read", "write"]
