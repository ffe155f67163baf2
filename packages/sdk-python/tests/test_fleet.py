"""Several engine addresses (issue 19 §3): the checks (``engine_addresses``, ``SVC_URL`` lists,
credentials never in an error; Hypothesis), the order a session tries them in, and real engines: a
worker given ``[dead address, live engine]`` connects to the live one; a worker on engine A, after
``kill -9`` of A, reconnects to engine B at once (not after the backoff), its function callable
there and its channels on B."""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import Engine, eventually
from svc import InitOptions, register_worker
from svc._addresses import MAX_ENGINE_ADDRESSES, AddressRotation, display_address, engine_addresses, split_address_list
from svc.client import DEFAULT_ENGINE_URL, resolve_address
from svc.helpers import create_channel_async

#: A backoff no test could wait out: reaching the next engine proves none was waited.
NO_BACKOFF_WAIT = {"initial_delay_ms": 600_000, "max_delay_ms": 600_000, "jitter_factor": 0}


def test_one_address_as_given_or_a_list_in_order() -> None:
    assert engine_addresses("ws://a:1/?token=t,u") == ("ws://a:1/?token=t,u",)
    assert engine_addresses(["wss://a.example/x", "ws://[::1]:2"]) == ("wss://a.example/x", "ws://[::1]:2")


def test_refuses_bad_lists_naming_the_entry_by_position() -> None:
    cases: list[tuple[Any, str]] = [
        ([], "engine address list is empty"),
        (["ws://a:1", ""], "engine address 2 of 2 is empty"),
        (["ws://a:1", "  "], "engine address 2 of 2 is empty"),
        (["http://a:1/"], "engine address must be a ws:// or wss:// URL, got http"),
        (["ws://a:1", "ws://b:1", "nope"], "engine address 3 of 3 is not a URL"),
        (["ws://a:1", 7], "engine address 2 of 2 is not a string"),
        (["ws://"], "engine address is not a URL"),
        (7, "must be a ws:// or wss:// URL or a list of them"),
        (["ws://a:1"] * (MAX_ENGINE_ADDRESSES + 1), "65 entries, at most 64"),
    ]
    for value, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            engine_addresses(value)


def test_errors_never_show_user_password_query_or_fragment() -> None:
    with pytest.raises(ValueError) as err:
        engine_addresses(["ws://a:1", "https://user:hunter2@svc.example/p?token=s3cret#frag"])
    assert "https://svc.example/p" in str(err.value)
    assert not any(s in str(err.value) for s in ("hunter2", "s3cret", "user", "frag"))
    assert display_address("wss://u:p@svc.example:8443/ws?token=t#x") == "wss://svc.example:8443/ws"
    assert display_address("not a url token=t") == "(not a URL)"
    assert display_address("http://u:SECRET?x@h/") == "(not a URL)"
    with pytest.raises(ValueError) as stray:
        engine_addresses(["http://u:SECRET?x@h/"])
    assert "SECRET" not in str(stray.value)


def test_svc_url_is_a_comma_separated_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVC_URL", " ws://a:1 ,wss://b/x?t=%2C ")
    assert resolve_address(None) == ("ws://a:1", "wss://b/x?t=%2C")
    assert resolve_address(["ws://c:3", "ws://d:4"]) == ("ws://c:3", "ws://d:4")
    assert resolve_address("ws://c:3") == ("ws://c:3",)
    monkeypatch.setenv("SVC_URL", "ws://a:1,,ws://b:2")
    with pytest.raises(ValueError, match="SVC_URL 2 of 3 is empty"):
        resolve_address(None)
    monkeypatch.setenv("SVC_URL", "ws://a:1,http://b:2/?token=s3cret")
    with pytest.raises(ValueError, match="SVC_URL 2 of 2 must be a ws:// or wss:// URL") as err:
        resolve_address(None)
    assert "s3cret" not in str(err.value)
    monkeypatch.setenv("SVC_URL", "")
    assert resolve_address(None) == (DEFAULT_ENGINE_URL,)
    assert split_address_list("ws://a:1,") == ["ws://a:1", ""]


_secret = st.text(min_size=1, max_size=10).map(lambda s: f"SECRET{quote(s, safe='')}X")
_entry = st.one_of(
    st.builds(
        lambda scheme, host, user, token, frag: f"{scheme}://{'' if user is None else f'u:{user}@'}{host}/{'' if token is None else f'?token={token}'}{'' if frag is None else f'#{frag}'}",
        st.sampled_from(["ws", "wss", "http", "https", "file", "javascript", "WS"]),
        st.sampled_from(["a:1", "[::1]:2", "h.example", "127.0.0.1:49134"]),
        st.none() | _secret,
        st.none() | _secret,
        st.none() | _secret,
    ),
    st.sampled_from(["", " ", "ws://", "ws:", "//h", "not a url", "ws://[::1", "ws://h/?a=%2C"]),
    # A password with a character that ends the authority: the parser sees no user part.
    st.builds(
        lambda scheme, special: f"{scheme}://u:SECRET{special}x@h/",
        st.sampled_from(["ws", "http", "wss"]),
        st.sampled_from(["?", "#", "/", "\\", "%", "[", " "]),
    ),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", " ", "\t"]), _entry, st.sampled_from(["", " "])), min_size=1, max_size=6))
def test_any_svc_url_is_read_as_its_entries_or_refused_without_credentials(parts: list[tuple[str, str, str]]) -> None:
    value = ",".join(f"{left}{entry}{right}" for left, entry, right in parts)
    try:
        found = engine_addresses(split_address_list(value), "SVC_URL")
    except ValueError as err:
        assert "SECRET" not in str(err)
        return
    assert list(found) == [entry.strip() for _, entry, _ in parts]
    for address in found:
        assert "SECRET" not in display_address(address)


def test_telemetry_goes_to_the_first_engine_of_an_svc_url_list(monkeypatch: pytest.MonkeyPatch) -> None:
    from svc_helpers.observability import OtelConfig, _engine_url

    monkeypatch.setenv("SVC_URL", " ws://a:1 , ws://b:2")
    assert _engine_url(OtelConfig()) == "ws://a:1"
    assert _engine_url(OtelConfig(engine_ws_url="ws://c:3")) == "ws://c:3"
    monkeypatch.setenv("SVC_URL", "")
    assert _engine_url(OtelConfig()) == "ws://127.0.0.1:49134"


def test_rotation_moves_on_at_once_and_waits_only_after_a_full_round() -> None:
    r = AddressRotation(("a", "b", "c"))
    steps = []
    for _ in range(6):
        steps.append((r.advance(), r.current))
    assert steps == [(False, "b"), (False, "c"), (True, "a"), (False, "b"), (False, "c"), (True, "a")]
    r.advance()
    r.settle()  # an engine took the worker on b: a drop there starts a new round
    assert [r.advance(), r.advance(), r.advance()] == [False, False, True]
    single = AddressRotation(("only",))
    assert [single.advance(), single.advance()] == [True, True] and single.current == "only"


def _dead_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"ws://127.0.0.1:{port}/?token=dead-secret"


@pytest.fixture()
def second_engine() -> Iterator[Engine]:
    directory = Path(tempfile.mkdtemp(prefix="svc-py-test-"))
    e = Engine(directory).start()
    try:
        yield e
    finally:
        e.stop()
        shutil.rmtree(directory, ignore_errors=True)


def _names(client: Any, prefix: str) -> list[str]:
    listing = client.trigger({"function_id": "engine::functions::list", "payload": {"prefix": prefix}})
    return [f["function_id"] for f in listing["functions"]]


def test_a_worker_given_a_dead_address_and_a_live_engine_connects_to_the_live_one(own_engine: Engine) -> None:
    dead = _dead_address()
    c = register_worker([dead, own_engine.url], InitOptions(worker_name="fleet-py", reconnection_config=NO_BACKOFF_WAIT, otel={"enabled": False}))
    try:
        assert c.get_connection_state() == "connected"
        assert c.address == own_engine.url
        assert c.addresses == (dead, own_engine.url)
        c.register_function("pyfleet::echo", lambda d: {"echo": d})
        eventually(lambda: _names(c, "pyfleet::") == ["pyfleet::echo"])
        assert c.trigger({"function_id": "pyfleet::echo", "payload": 1}) == {"echo": 1}
    finally:
        c.shutdown()


def test_a_worker_fails_over_to_engine_b_after_kill_9_of_engine_a(own_engine: Engine, second_engine: Engine, caplog: pytest.LogCaptureFixture) -> None:
    a, b = own_engine, second_engine
    caplog.set_level(logging.WARNING, logger="svc")
    worker = register_worker([a.url, b.url], InitOptions(worker_name="fleet-py", reconnection_config=NO_BACKOFF_WAIT, otel={"enabled": False}))
    on_b = register_worker(b.url, InitOptions(worker_name="observer", otel={"enabled": False}))
    try:
        worker.register_function("pyfleet::where", lambda d: "served")
        assert worker.address == a.url
        eventually(lambda: _names(worker, "pyfleet::") == ["pyfleet::where"])
        a.kill9()
        eventually(lambda: worker.get_connection_state() == "connected" and worker.address == b.url, 30)
        eventually(lambda: _names(on_b, "pyfleet::") == ["pyfleet::where"], 30)
        assert on_b.trigger({"function_id": "pyfleet::where", "payload": None}) == "served"
        assert f"connected to {display_address(b.url)} (engine address 2 of 2)" in caplog.text

        # A channel made now lives on B: its ends must connect to B, not to the first address.
        async def round_trip() -> bytes:
            ch = await create_channel_async(worker)
            reading = asyncio.ensure_future(ch.reader.read_all())
            await ch.writer.write(b"over B")
            await ch.writer.close()
            return await reading

        assert asyncio.run_coroutine_threadsafe(round_trip(), worker._loop).result(30) == b"over B"
    finally:
        on_b.shutdown()
        worker.shutdown()
