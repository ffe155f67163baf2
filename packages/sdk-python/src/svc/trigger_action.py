"""Builders of an invocation's routing action (sdk.md §6, protocol.md §6.3–§6.4)."""

from __future__ import annotations

from .types import EnqueueAction, VoidAction


class TriggerAction:
    """Example:
        >>> client.trigger({"function_id": "audit::record", "payload": event, "action": TriggerAction.Void()})
        >>> client.trigger({"function_id": "billing::charge", "payload": order, "action": TriggerAction.Enqueue(queue="payments")})
        {'messageReceiptId': '…'}
    """

    @staticmethod
    def Void() -> VoidAction:  # noqa: N802 (the name of sdk.md)
        """Fire and forget: no reply, errors are never reported; ``trigger`` returns None at once."""
        return {"type": "void"}

    @staticmethod
    def Enqueue(*, queue: str, delay_ms: int | None = None, idempotency_key: str | None = None) -> EnqueueAction:  # noqa: N802
        """Hand the call to the queue worker; ``trigger`` returns ``{"messageReceiptId"}`` once the
        message is persisted. ``delay_ms`` and ``idempotency_key`` are optional (builtins.md §7.4).

        Raises:
            ValueError: for an empty queue name.
        """
        if not isinstance(queue, str) or queue.strip() == "":
            raise ValueError("queue is required")
        action: EnqueueAction = {"type": "enqueue", "queue": queue}
        if delay_ms is not None:
            action["delay_ms"] = delay_ms
        if idempotency_key is not None:
            action["idempotency_key"] = idempotency_key
        return action
