"""Stable error codes the Python SDK produces or reacts to: the values of the one catalogue,
``packages/protocol/src/errors.ts`` (protocol.md §7.2, sdk.md §7.2). A Node test checks every
value here against that catalogue.
"""

from __future__ import annotations


class ErrorCode:
    """Error codes (protocol.md §7.2). Codes are the contract; messages may change.
    ``NOT_CONNECTED``, ``SHUTDOWN``, ``UNKNOWN`` and the client-side ``TIMEOUT`` never travel on the wire."""

    FUNCTION_NOT_FOUND = "function_not_found"
    FUNCTION_NOT_INVOKABLE = "function_not_invokable"
    INVOCATION_FAILED = "invocation_failed"
    INVOCATION_STOPPED = "invocation_stopped"
    CANCELLED = "cancelled"
    TIMEOUT = "TIMEOUT"
    INVALID_MESSAGE = "invalid_message"
    INVALID_NAMESPACE = "INVALID_NAMESPACE"
    INVALID_ARGUMENTS = "INVALID_ARGUMENTS"
    INVALID_ID = "INVALID_ID"
    FORBIDDEN = "FORBIDDEN"
    ENQUEUE_ERROR = "enqueue_error"
    QUEUE_NOT_FOUND = "queue_not_found"
    TRIGGER_REGISTRATION_FAILED = "trigger_registration_failed"
    TRIGGER_TYPE_NOT_FOUND = "trigger_type_not_found"
    AUTH_ERROR = "AUTH_ERROR"
    FUNCTION_NAMESPACE_CONFLICT = "FUNCTION_NAMESPACE_CONFLICT"
    NOT_CONNECTED = "NOT_CONNECTED"
    SHUTDOWN = "SHUTDOWN"
    UNKNOWN = "UNKNOWN"
    NON_RETRYABLE = "NON_RETRYABLE"
    RETRY_AFTER = "RETRY_AFTER"
    CHANNEL_CLOSED = "CHANNEL_CLOSED"
