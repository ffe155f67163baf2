"""The id check the engine's codec makes (protocol.md §3.5; ``idProblem`` in
``packages/protocol/src/ids.ts``): an SDK refuses, before sending, what the engine would refuse."""

from __future__ import annotations

import re

#: Longest id or namespace accepted, in UTF-16 code units (as the engine counts).
MAX_ID_LENGTH = 1024

_CONTROL = re.compile("[\x00-\x1f\x7f]")


def _utf16_len(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot name a function, trigger type, trigger or namespace, or None when it can:
    at most 1024 UTF-16 code units, no lone surrogate, no control character (U+0000–U+001F, U+007F).
    Indexes count UTF-16 code units from 0, as in every svc SDK.

    Example:
        >>> id_problem("orders::\\x07")
        'contains a control character (U+0007) at index 8'
    """
    if value.isascii():
        # The common case, checked without a Python-level loop (one call per outgoing frame).
        if len(value) > MAX_ID_LENGTH:
            return f"is longer than {MAX_ID_LENGTH} characters ({len(value)})"
        found = _CONTROL.search(value)
        if found is not None:
            return f"contains a control character (U+{ord(found.group()):04X}) at index {found.start()}"
        return None
    length = _utf16_len(value)
    if length > MAX_ID_LENGTH:
        return f"is longer than {MAX_ID_LENGTH} characters ({length})"
    index = 0
    surrogate: int | None = None
    control: tuple[int, int] | None = None
    for ch in value:
        o = ord(ch)
        if 0xD800 <= o <= 0xDFFF and surrogate is None:
            surrogate = index
        elif (o < 0x20 or o == 0x7F) and control is None:
            control = (o, index)
        index += 2 if o > 0xFFFF else 1
    if surrogate is not None:
        return f"contains a lone UTF-16 surrogate at index {surrogate}"
    if control is not None:
        return f"contains a control character (U+{control[0]:04X}) at index {control[1]}"
    return None
