"""The errors a client raises and its handlers may raise (sdk.md §7, §14).

Example:
    >>> from svc.errors import InvocationError
    >>> try:
    ...     client.trigger({"function_id": "math::add", "payload": {}})
    ... except InvocationError as err:
    ...     if err.code == "function_not_found":
    ...         ...
"""

from __future__ import annotations

import json
import math
import re
import traceback
from typing import Any

from ._codes import ErrorCode

__all__ = [
    "EngineConnectionError",
    "ErrorCode",
    "InvocationError",
    "NonRetryableError",
    "RegistrationRejectedError",
    "RetryAfterError",
    "is_error_body",
]

#: A handler error's own ``code`` is kept when it matches this (sdk.md §4).
OWN_CODE_PATTERN = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def is_error_body(value: object) -> bool:
    """True for a wire ErrorBody: a dict with string ``code`` and ``message`` (protocol.md §7.1)."""
    return isinstance(value, dict) and isinstance(value.get("code"), str) and isinstance(value.get("message"), str)


class InvocationError(Exception):
    """A failed invocation, local or remote (sdk.md §7.1, §14). ``str(err)`` is ``"<code>: <message>"``.

    Attributes:
        code: the stable error code (``function_not_found``, ``TIMEOUT``, a handler's own code, …).
        message: the message as the remote side sent it (``detail`` in the Node SDK).
        function_id: the function the caller invoked, when known.
        stacktrace: the remote stack, when sent.
        invocation_id: the call's invocation id, when there was one.
    """

    def __init__(
        self,
        code: str,
        message: str,
        function_id: str | None = None,
        stacktrace: str | None = None,
        invocation_id: str | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.function_id = function_id
        self.stacktrace = stacktrace
        self.invocation_id = invocation_id

    @property
    def detail(self) -> str:
        """The message as sent (the Node SDK's name)."""
        return self.message

    @classmethod
    def from_wire(cls, error: object, function_id: str | None = None, invocation_id: str | None = None) -> InvocationError:
        """From a wire ``error`` value; a value that is not an ErrorBody becomes ``UNKNOWN`` with its JSON text."""
        if is_error_body(error):
            assert isinstance(error, dict)
            trace = error.get("stacktrace")
            return cls(error["code"], error["message"], function_id, trace if isinstance(trace, str) else None, invocation_id)
        try:
            text = json.dumps(error)
        except (TypeError, ValueError):
            text = str(error)
        return cls(ErrorCode.UNKNOWN, text, function_id, None, invocation_id)

    def to_error_body(self) -> dict[str, Any]:
        """The wire form of this error."""
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.stacktrace is not None:
            body["stacktrace"] = self.stacktrace
        return body


class RegistrationRejectedError(Exception):
    """A fatal ``registrationrejected`` (any code but ``FUNCTION_NAMESPACE_CONFLICT``; sdk.md §7.3),
    sent only by non-svc engines: the client enters ``failed`` and pending calls raise this."""

    def __init__(
        self,
        code: str,
        message: str,
        namespace: str,
        owner_worker_id: str,
        worker_name: str | None = None,
        function_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.namespace = namespace
        self.owner_worker_id = owner_worker_id
        self.worker_name = worker_name
        self.function_id = function_id


class EngineConnectionError(ConnectionError):
    """A connection-level failure (sdk.md §8): ``register_worker`` raises it when the client enters
    ``failed`` before its first connection; ``AUTH_ERROR`` from the engine and ``TIMEOUT`` of a
    handshake or keepalive are kept as the client's last error.

    Attributes:
        code: ``AUTH_ERROR``, ``TIMEOUT``, ``NOT_CONNECTED``, or the fatal rejection's code.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class NonRetryableError(Exception):
    """Raised by a queue handler: dead-letter this message at once (builtins.md §7.7). Travels as
    ``{"code": "NON_RETRYABLE", "message": ...}``."""

    code = ErrorCode.NON_RETRYABLE


class RetryAfterError(Exception):
    """Raised by a queue handler: retry after ``retry_after_ms`` ms (builtins.md §7.7). Travels as
    ``{"code": "RETRY_AFTER", "message", "retry_after_ms"}``.

    Raises:
        ValueError: when ``retry_after_ms`` is not a finite number ≥ 0.
    """

    code = ErrorCode.RETRY_AFTER

    def __init__(self, retry_after_ms: float, message: str | None = None) -> None:
        if isinstance(retry_after_ms, bool) or not isinstance(retry_after_ms, (int, float)) or not math.isfinite(retry_after_ms) or retry_after_ms < 0:
            raise ValueError(f"retry_after_ms must be a finite number >= 0, got {retry_after_ms!r}")
        super().__init__(message if message is not None else f"retry after {retry_after_ms:g} ms")
        self.retry_after_ms = retry_after_ms


def to_error_body(thrown: BaseException) -> dict[str, Any]:
    """The wire ErrorBody of what a handler raised (sdk.md §4): the exception's own string ``code``
    when it is 1–64 characters of ``[A-Za-z0-9_.:-]``, else ``invocation_failed``; ``message`` is
    ``str(exc)`` (an :class:`InvocationError`'s own message); ``stacktrace`` the formatted traceback."""
    if isinstance(thrown, InvocationError):
        return thrown.to_error_body()
    own = getattr(thrown, "code", None)
    code = own if isinstance(own, str) and OWN_CODE_PATTERN.fullmatch(own) else ErrorCode.INVOCATION_FAILED
    message = str(thrown) or type(thrown).__name__
    body: dict[str, Any] = {"code": code, "message": message}
    body["stacktrace"] = "".join(traceback.format_exception(type(thrown), thrown, thrown.__traceback__))
    retry = getattr(thrown, "retry_after_ms", None)
    if isinstance(retry, (int, float)) and not isinstance(retry, bool) and math.isfinite(retry) and retry >= 0:
        body["retry_after_ms"] = retry
    return body
