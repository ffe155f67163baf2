"""The worker connection's transport (``svc._transport``) against a real ``websockets`` server on a
free port: inbound frames reach ``run``'s callback whole and in order however the server
fragments them (a Hypothesis property), including frames the server sends right after the
handshake, before ``run`` is called; a text frame that is not UTF-8 closes the connection with 1007
and is not delivered; frames sent while the socket's write buffer is full keep their order."""

from __future__ import annotations

import asyncio
from typing import Any, Union

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.server import ServerConnection, serve

from svc._transport import WsConnection, ws_connector

Message = Union[str, bytes]
#: One message as the server sends it: whole, or as fragments (websockets sends an iterable as one
#: fragmented message).
Planned = Union[Message, list[str], list[bytes]]


def _whole(planned: Planned) -> Message:
    if isinstance(planned, list):
        return "".join(planned) if planned and isinstance(planned[0], str) else b"".join(planned)  # type: ignore[arg-type]
    return planned


async def _exchange(plan: list[Planned], raw_tail: list[bytes] | None = None, delay_run: bool = False) -> tuple[list[Message], int | None]:
    """Serves ``plan`` (then ``raw_tail`` as text frames of raw bytes) to one client connection and
    returns what the client delivered and the close code the server saw."""
    closed: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()

    async def handler(ws: ServerConnection) -> None:
        for planned in plan:
            await ws.send(planned)
        for raw in raw_tail or []:
            await ws.send(raw, text=True)
        if raw_tail is None:
            await ws.close(1000)
        else:
            await ws.wait_closed()
        closed.set_result(ws.close_code)

    async with serve(handler, "127.0.0.1", 0, compression=None) as server:
        port = server.sockets[0].getsockname()[1]
        conn = await ws_connector(f"ws://127.0.0.1:{port}/", None, 5.0, lambda: None)
        if delay_run:
            await asyncio.sleep(0)  # let the server's first frames arrive before run() is called
            await asyncio.wait_for(asyncio.shield(closed), 5)
        got: list[Message] = []
        await asyncio.wait_for(conn.run(got.append), 10)
        return got, await asyncio.wait_for(closed, 10)


texts = st.text(max_size=40)
blobs = st.binary(max_size=40)
planned_messages = st.one_of(
    texts,
    blobs,
    st.lists(texts, min_size=1, max_size=4),
    st.lists(blobs, min_size=1, max_size=4),
    # One large enough to arrive in several reads.
    st.just(b"\x01" * 300_000),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(planned_messages, max_size=8), st.booleans())
def test_frames_arrive_whole_and_in_order_however_fragmented(plan: list[Planned], delay_run: bool) -> None:
    got, code = asyncio.run(_exchange(plan, delay_run=delay_run))
    assert got == [_whole(p) for p in plan]
    assert code == 1000


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(texts, max_size=3), st.sampled_from([b"\xff", b"ok\xc3", b"\xed\xa0\x80", b"a\x80b"]))
def test_a_text_frame_that_is_not_utf8_closes_with_1007_and_is_not_delivered(before: list[str], bad: bytes) -> None:
    got, code = asyncio.run(_exchange(list(before), raw_tail=[bad, b"never"]))
    assert got == before
    assert code == 1007


def test_frames_sent_while_the_write_buffer_is_full_keep_their_order() -> None:
    async def main() -> list[Any]:
        received: list[Any] = []
        done = asyncio.get_running_loop().create_future()
        count = 200

        async def handler(ws: ServerConnection) -> None:
            async for message in ws:
                received.append(message)
                if len(received) == count:
                    done.set_result(None)

        async with serve(handler, "127.0.0.1", 0, compression=None, max_size=None) as server:
            port = server.sockets[0].getsockname()[1]
            conn = await ws_connector(f"ws://127.0.0.1:{port}/", None, 5.0, lambda: None)
            assert isinstance(conn, WsConnection)
            runner = asyncio.ensure_future(conn.run(lambda _m: None))
            # 1 MiB frames fill the kernel buffers at once: later sends queue behind the writer task.
            for i in range(count):
                conn.send(f"{i:04d}" + ("x" * (1 << 20) if i % 20 == 0 else ""))
            await asyncio.wait_for(done, 60)
            await conn.close(1000)
            await runner
        return received

    received = asyncio.run(main())
    assert [m[:4] for m in received] == [f"{i:04d}" for i in range(200)]
