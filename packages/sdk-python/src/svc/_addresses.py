"""Engine addresses of a client (sdk.md §2, issue 19 §3), mirroring ``addresses.ts`` of the client
core: one ``ws://``/``wss://`` URL or several, the engines of one fleet, tried in order and in
rotation (as NATS clients' ``servers=[...]``). No error or log line names an address's credentials:
:func:`display_address` keeps scheme, host, port and path only.

Example:
    >>> engine_addresses(["ws://10.0.0.1:49134", "ws://10.0.0.2:49134"])
    ('ws://10.0.0.1:49134', 'ws://10.0.0.2:49134')
    >>> engine_addresses(split_address_list("ws://a:1, ws://b:1"), "SVC_URL")
    ('ws://a:1', 'ws://b:1')
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

#: Most addresses one client takes (a fleet is a handful of engines).
MAX_ENGINE_ADDRESSES = 64


def display_address(address: str) -> str:
    """``address`` as errors and logs may show it: ``scheme://host:port/path``, without user,
    password, query or fragment. ``'(not a URL)'`` when it does not parse.

    Example:
        >>> display_address("wss://u:p@svc.example:8443/ws?token=t#x")
        'wss://svc.example:8443/ws'
    """
    try:
        parts = urlsplit(address)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return "(not a URL)"
    if parts.scheme == "" or not host:
        return "(not a URL)"
    # Host and port as parsed, never the raw authority: text before a stray ``?``/``#``/``/`` in a
    # password would otherwise pass for the host.
    shown = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{shown}{'' if port is None else f':{port}'}{parts.path}"


def split_address_list(text: str) -> list[str]:
    """The entries of a comma-separated list (env ``SVC_URL``), each stripped of spaces; empty
    entries are kept so :func:`engine_addresses` refuses them by position. A comma inside an
    address is written ``%2C``."""
    return [entry.strip() for entry in text.split(",")]


def engine_addresses(value: object, source: str = "engine address") -> tuple[str, ...]:
    """Checks the engine address option: one address (a ``str``, used as given) or a non-empty
    sequence of them, each a ``ws://`` or ``wss://`` URL with a host. Returns them in order.

    Raises:
        ValueError: naming the entry by position (``engine address 2 of 3 …``) for an empty list or
            one of more than :data:`MAX_ENGINE_ADDRESSES`, an entry that is not a string, is empty,
            is not a URL or not a ``ws://``/``wss://`` one. Entries are shown only through
            :func:`display_address`.
    """
    if isinstance(value, str):
        entries: Sequence[object] = (value,)
    elif isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        entries = value
    else:
        raise ValueError(f"{source} must be a ws:// or wss:// URL or a list of them")
    if len(entries) == 0:
        raise ValueError(f"{source} list is empty: give at least one ws:// or wss:// URL")
    if len(entries) > MAX_ENGINE_ADDRESSES:
        raise ValueError(f"{source} list has {len(entries)} entries, at most {MAX_ENGINE_ADDRESSES} are allowed")
    out: list[str] = []
    for i, entry in enumerate(entries):
        name = source if len(entries) == 1 else f"{source} {i + 1} of {len(entries)}"
        if not isinstance(entry, str):
            raise ValueError(f"{name} is not a string")
        if entry.strip() == "":
            raise ValueError(f"{name} is empty: give a ws:// or wss:// URL")
        try:
            parts = urlsplit(entry)
            host = parts.hostname
            parts.port  # noqa: B018 -- raises ValueError for a port that is not a number in range
        except ValueError:
            raise ValueError(f"{name} is not a URL (expected ws://host:port/ or wss://host/)") from None
        if parts.scheme == "" or display_address(entry) == "(not a URL)":
            raise ValueError(f"{name} is not a URL (expected ws://host:port/ or wss://host/)")
        if parts.scheme not in ("ws", "wss"):
            raise ValueError(f"{name} must be a ws:// or wss:// URL, got {parts.scheme}: ({display_address(entry)})")
        if not host:
            raise ValueError(f"{name} has no host (expected ws://host:port/ or wss://host/)")
        out.append(entry)
    return tuple(out)


class AddressRotation:
    """Where a session connects next: the addresses in order and in rotation, one step on each
    failed attempt or dropped connection; a full round of steps without an engine taking the worker
    (its ``workerregistered``) ends in a backoff wait. With one address every step is a full round,
    the single-engine behaviour of sdk.md §8."""

    __slots__ = ("addresses", "index", "_ended")

    def __init__(self, addresses: tuple[str, ...]) -> None:
        self.addresses = addresses
        #: Position of :attr:`current`, 0-based.
        self.index = 0
        self._ended = 0

    @property
    def current(self) -> str:
        return self.addresses[self.index]

    def advance(self) -> bool:
        """The current attempt ended: moves on. True when that completed a round (backoff due)."""
        self.index = (self.index + 1) % len(self.addresses)
        self._ended += 1
        if self._ended < len(self.addresses):
            return False
        self._ended = 0
        return True

    def settle(self) -> None:
        """An engine took the worker: the next failure starts a new round."""
        self._ended = 0
