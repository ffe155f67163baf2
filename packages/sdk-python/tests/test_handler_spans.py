"""Handler spans recorded by the engine (svc addition to protocol.md §10.1; docs/reference/protocol.md
"Handler spans recorded by the engine"): the Python SDK announces its resource, hands a span its
handler left untouched to the engine (only its times on the ``invocationresult``) and exports
nothing for it; a span the handler changed is exported in full, with the same shape. Against a real
engine started from this repository's CLI."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import Engine, eventually
from svc import InitOptions, register_worker
from svc_helpers.observability import extract_traceparent, flush_otel, otel_resource, otel_socket_stats, set_current_span_attribute, with_span


class Declined(Exception):
    code = "payment_failed"


@pytest.fixture(scope="module")
def worker(engine: Engine) -> Iterator[Any]:
    c = register_worker(engine.url, InitOptions(worker_name="py-spans", otel={"service_name": "py-spans"}))

    def plain(data: Any) -> Any:
        return {"doubled": data["n"] * 2, "token": "secret-value"}

    def touched(data: Any) -> Any:
        set_current_span_attribute("order.size", data["n"])
        return {"doubled": data["n"] * 2, "token": "secret-value"}

    def fails(_data: Any) -> Any:
        raise Declined("card declined")

    def fails_touched(data: Any) -> Any:
        set_current_span_attribute("order.size", data["n"])
        raise Declined("card declined")

    def child(data: Any) -> Any:
        if data.get("touch"):
            set_current_span_attribute("order.size", 1)
        return with_span("inner step", lambda _span: {"ok": True})

    for name, fn in (("plain", plain), ("touched", touched), ("fails", fails), ("fails_touched", fails_touched), ("child", child)):
        c.register_function(f"pyspans::{name}", fn)
    eventually(lambda: len(c.trigger({"function_id": "engine::functions::list", "payload": {"prefix": "pyspans::"}})["functions"]) == 5)
    yield c
    c.shutdown()


def call_traced(c: Any, function_id: str, payload: Any) -> tuple[str, str, Any]:
    """Calls ``function_id`` as a caller in a sampled remote trace would; ``(trace_id, parent span id, outcome)``."""
    from opentelemetry import context as otel_context

    trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)
    token = otel_context.attach(extract_traceparent(f"00-{trace_id}-{parent}-01"))
    try:
        outcome: Any = c.trigger({"function_id": function_id, "payload": payload})
    except Exception as err:
        outcome = err
    finally:
        otel_context.detach(token)
    return trace_id, parent, outcome


def span_of(c: Any, trace_id: str, name: str) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        stack = list(c.trigger({"function_id": "engine::traces::tree", "payload": {"trace_id": trace_id}}).get("roots") or [])
        while stack:
            node = stack.pop()
            if node["name"] == name:
                return node  # type: ignore[no-any-return]
            stack.extend(node.get("children") or [])
        return None

    return eventually(find)  # type: ignore[no-any-return]


def exported() -> int:
    flush_otel()
    stats = otel_socket_stats()
    assert stats is not None, "telemetry is on"
    return stats["spans_exported"]


def test_an_untouched_handler_span_is_recorded_by_the_engine_and_not_exported(worker: Any) -> None:
    before = exported()
    trace_id, parent, outcome = call_traced(worker, "pyspans::plain", {"n": 21, "password": "p"})
    assert outcome == {"doubled": 42, "token": "secret-value"}
    span = span_of(worker, trace_id, "execute pyspans::plain")
    assert exported() == before, "the SDK exported nothing for the span"
    resource = otel_resource()
    assert resource is not None
    assert span["parent_span_id"] == parent
    assert span["kind"] == "internal" and span["status"] == "ok"
    assert span["service_name"] == "py-spans"
    assert span["resource"] == resource, "the resource the worker announced"
    assert span["attributes"]["svc.function.id"] == "pyspans::plain"
    assert span["end_time_unix_nano"] >= span["start_time_unix_nano"]
    first, last = span["events"]
    assert first["name"] == "svc.invocation.input" and first["timestamp_unix_nano"] == span["start_time_unix_nano"]
    assert json.loads(first["attributes"]["svc.payload.json"]) == {"n": 21, "password": "[REDACTED]"}
    assert last["name"] == "svc.invocation.output" and last["timestamp_unix_nano"] == span["end_time_unix_nano"]
    assert json.loads(last["attributes"]["svc.payload.json"]) == {"doubled": 42, "token": "[REDACTED]"}
    assert last["attributes"]["svc.payload.ok"] is True and last["attributes"]["svc.payload.truncated"] is False


def shape(span: dict[str, Any]) -> dict[str, Any]:
    """What a touched span and the engine's record of an untouched one share."""
    return {
        "kind": span["kind"],
        "status": span["status"],
        "status_message": span.get("status_message"),
        "service_name": span["service_name"],
        "resource": span["resource"],
        "attributes": sorted(k for k in span["attributes"] if k != "order.size"),
        "error.type": span["attributes"].get("error.type"),
        "events": [e["name"] for e in span["events"]],
        "payloads": [
            {k: v for k, v in e["attributes"].items() if k != "svc.payload.json"} for e in span["events"] if e["name"].startswith("svc.invocation.")
        ],
    }


@pytest.mark.parametrize("plain,touched", [("plain", "touched"), ("fails", "fails_touched")])
def test_a_span_the_handler_changed_is_exported_in_full_with_the_same_shape(worker: Any, plain: str, touched: str) -> None:
    before = exported()
    a_trace, _, a_outcome = call_traced(worker, f"pyspans::{plain}", {"n": 3})
    b_trace, _, b_outcome = call_traced(worker, f"pyspans::{touched}", {"n": 3})
    assert type(a_outcome) is type(b_outcome)
    b = span_of(worker, b_trace, f"execute pyspans::{touched}")
    a = span_of(worker, a_trace, f"execute pyspans::{plain}")
    assert exported() - before == 1, "only the changed span was exported by the SDK"
    assert b["attributes"]["order.size"] == 3, "the handler's attribute"
    assert shape(a) == shape(b), "the engine records the span the SDK would have exported"
    assert b["events"][0]["timestamp_unix_nano"] == b["start_time_unix_nano"], "the deferred input event keeps the start time"


def test_a_failed_handler_span_has_the_error_the_exception_with_the_traceback_and_a_failed_output(worker: Any) -> None:
    trace_id, _, outcome = call_traced(worker, "pyspans::fails", {"n": 1})
    assert getattr(outcome, "code", None) == "payment_failed"
    span = span_of(worker, trace_id, "execute pyspans::fails")
    assert span["status"] == "error" and span["status_message"] == "card declined"
    assert span["attributes"]["error.type"] == "payment_failed"
    assert [e["name"] for e in span["events"]] == ["svc.invocation.input", "exception", "svc.invocation.output"]
    exception = span["events"][1]["attributes"]
    assert exception["exception.type"] == "payment_failed" and exception["exception.message"] == "card declined"
    assert "test_handler_spans.py" in exception["exception.stacktrace"], "the handler's own traceback"
    assert span["events"][2]["attributes"]["svc.payload.ok"] is False


@pytest.mark.parametrize(
    "resource,announced",
    [
        ({"service.name": "orders", "deployment.environment": "prod"}, True),
        ({"service.name": "orders", "k": "é" * 4096}, True),
        ({"service.name": "orders", "k": "😀" * 2049}, False),  # 4,098 UTF-16 code units
        ({"service.name": "orders", "k" * 257: "v"}, False),
        ({"service.name": "orders", **{f"a{i}": "v" for i in range(32)}}, False),
        ({"service.name": "orders", "k": "\ud800"}, False),
        ({"deployment.environment": "prod"}, False),
        (None, False),
    ],
)
def test_the_announce_carries_only_a_resource_the_engine_takes(monkeypatch: pytest.MonkeyPatch, resource: Any, announced: bool) -> None:
    # A resource the engine would ignore would lose every span handed over: the SDK exports them itself.
    import svc._telemetry as telemetry

    monkeypatch.setattr(telemetry, "otel_resource", lambda: resource)
    out = telemetry.handler_spans_announce()
    assert (out is not None) is announced
    if out is not None:
        assert out["resource"] == resource


def test_inbound_baggage_is_parsed_once_per_header_and_the_parsed_headers_kept_are_bounded() -> None:
    import svc_helpers.observability as observability
    from opentelemetry import baggage, trace

    parent = f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"
    for i in range(1000):
        ctx = observability.extract_context(parent, f"svc.function.id=orders%3A%3Avalidate,n={i}")
        assert baggage.get_all(ctx) == {"svc.function.id": "orders::validate", "n": str(i)}
        assert f"{trace.get_current_span(ctx).get_span_context().span_id:016x}" == parent[36:52]
    assert len(observability._baggage_contexts) <= observability._BAGGAGE_CACHE_SIZE
    long = "k=" + "v" * 2000
    assert baggage.get_all(observability.extract_context(None, long)) == {"k": "v" * 2000}
    assert long not in observability._baggage_contexts, "a long header is not kept"


@pytest.mark.parametrize("touch", [False, True])
def test_a_span_the_handler_starts_is_a_child_of_the_handler_span_recorded_or_exported(worker: Any, touch: bool) -> None:
    # The handler span's ids are fixed at its start: the SDK's span made when the handler changes it
    # (or the engine's record of an untouched one) has the id its child spans name as their parent.
    trace_id, parent, outcome = call_traced(worker, "pyspans::child", {"touch": touch})
    assert outcome == {"ok": True}
    handler = span_of(worker, trace_id, "execute pyspans::child")
    inner = span_of(worker, trace_id, "inner step")
    assert handler["parent_span_id"] == parent
    assert inner["parent_span_id"] == handler["span_id"]
    assert (handler["attributes"].get("order.size") == 1) is touch
    assert handler["start_time_unix_nano"] <= inner["start_time_unix_nano"]


_hex = st.text("0123456789abcdefABCDEF", min_size=0, max_size=34)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.builds(lambda v, t, s, f, tail: f"{v}-{t}-{s}-{f}{tail}", st.sampled_from(["00", "01", "ff", "0g", "0"]), _hex, _hex, _hex, st.sampled_from(["", "-x", " ", "\t"])),
        st.builds(lambda t, s, f: f"00-{t:032x}-{s:016x}-{f:02x}", st.integers(0, 2**128 - 1) | st.just(0), st.integers(0, 2**64 - 1) | st.just(0), st.integers(0, 255)),
        st.text(max_size=60),
    )
)
def test_a_traceparent_is_read_as_the_w3c_propagator_reads_it(traceparent: str) -> None:
    from opentelemetry import trace
    from opentelemetry.context import Context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    base = Context({"k": "v"})
    ours = extract_traceparent(traceparent, base)
    theirs = TraceContextTextMapPropagator().extract({"traceparent": traceparent}, base)
    assert trace.get_current_span(ours).get_span_context() == trace.get_current_span(theirs).get_span_context()
    assert dict(ours).keys() == dict(theirs).keys()
    assert ours.get("k") == "v"


@pytest.mark.parametrize(
    "traceparent",
    [
        None,
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03",
    ],
)
@pytest.mark.parametrize("tracestate", [None, "vendor=a,other=b"])
def test_the_default_samplers_decision_is_the_one_it_gives(traceparent: str | None, tracestate: str | None) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, DEFAULT_ON, ParentBasedTraceIdRatio
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    from svc._telemetry import _sample

    carrier = {"traceparent": traceparent} if traceparent else {}
    if tracestate:
        carrier["tracestate"] = tracestate
    parent = TraceContextTextMapPropagator().extract(carrier)
    parent_context = trace.get_current_span(parent).get_span_context()
    trace_id = parent_context.trace_id if parent_context.is_valid else 0x1234
    attributes: dict[str, Any] = {"svc.function.id": "f"}
    for sampler in (DEFAULT_ON, ALWAYS_OFF, ParentBasedTraceIdRatio(0.5)):
        result = sampler.should_sample(parent, trace_id, "execute f", trace.SpanKind.INTERNAL, attributes)
        expected = (result.decision.is_sampled(), result.decision.is_recording(), result.trace_state)
        assert _sample(sampler, parent, parent_context, trace_id, "execute f", attributes) == expected
