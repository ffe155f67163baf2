//! A handler span whose SDK span is made only when something writes to it (svc addition,
//! docs/reference/protocol.md "Handler spans recorded by the engine"): its context is fixed at the
//! start, so the spans the handler starts, the result's `traceparent` and the span itself — made
//! late or recorded by the engine — agree; baggage and an unsampled parent behave as before.
//! Against a real engine. Its own test binary: a process has one telemetry pipeline.

mod support;

use opentelemetry::baggage::BaggageExt;
use opentelemetry::trace::{FutureExt, SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry::{Context, KeyValue};
use serde_json::{json, Value};
use support::{eventually, exported, request, span_of, Engine};
use svc_sdk::telemetry::{
    current_span_id, current_span_is_recording, current_trace_id, get_baggage_entry, set_current_span_attribute, with_span_async,
};
use svc_sdk::{register_worker, Error, InitOptions, OtelConfig, RegisterFunction, Svc, WorkerMetadata};




/// What the handler saw: its span's ids and whether it records, the child span's ids, the baggage.
async fn child_step(touch_after: bool) -> Result<Value, Error> {
    let handler = json!({"trace_id": current_trace_id(), "span_id": current_span_id(), "recording": current_span_is_recording()});
    let child: Result<Value, Error> = with_span_async("child step", None, async { Ok(json!({"trace_id": current_trace_id(), "span_id": current_span_id()})) }).await;
    if touch_after {
        set_current_span_attribute("order.size", 3);
    }
    Ok(json!({"handler": handler, "child": child?, "tenant": get_baggage_entry("tenant")}))
}

/// Calls `function_id` from inside `cx`: the callee's answer.
async fn call_in(caller: &Svc, cx: Context, function_id: &str) -> Value {
    caller.trigger(request(function_id, json!({}))).with_context(cx).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_span_made_late_keeps_the_context_its_children_and_result_named() {
    let engine = Engine::start("");
    let otel = OtelConfig { service_name: Some("rust-span-context".into()), ..Default::default() };
    let options = |name: &str| InitOptions { metadata: Some(WorkerMetadata::detect().name(name)), headers: None, otel: Some(otel.clone()), namespace: None };
    let callee = register_worker(&engine.url, options("callee")).unwrap();
    let caller = register_worker(&engine.url, options("caller")).unwrap();
    callee.register_function("rs::child", RegisterFunction::new_async(|_: Value| child_step(false)));
    callee.register_function("rs::child_touched", RegisterFunction::new_async(|_: Value| child_step(true)));
    eventually(|| {
        let caller = caller.clone();
        async move {
            let listed = caller.trigger(request("engine::functions::list", json!({"prefix": "rs::"}))).await.ok()?;
            (listed["functions"].as_array()?.len() == 2).then_some(())
        }
    })
    .await;

    // A sampled remote parent with baggage, as another process would send it.
    let parent_id = SpanId::from_hex("00f067aa0ba902b7").unwrap();
    let remote = |trace_id: TraceId, flags: TraceFlags| {
        Context::new()
            .with_remote_span_context(SpanContext::new(trace_id, parent_id, flags, true, TraceState::default()))
            .with_baggage([KeyValue::new("tenant", "acme")])
    };

    for (function_id, trace) in [("rs::child", "4bf92f3577b34da6a3ce929d0e0e4736"), ("rs::child_touched", "5bf92f3577b34da6a3ce929d0e0e4736")] {
        let trace_id = TraceId::from_hex(trace).unwrap();
        let before = exported();
        let out = call_in(&caller, remote(trace_id, TraceFlags::SAMPLED), function_id).await;
        let span = span_of(&caller, &trace_id.to_string(), &format!("execute {function_id}")).await;
        let child = span_of(&caller, &trace_id.to_string(), "child step").await;
        let touched = function_id == "rs::child_touched";
        // Untouched: the child alone left this process; touched: the child and the handler span made late.
        assert_eq!(exported() - before, if touched { 2 } else { 1 }, "{function_id}");
        assert_eq!(out["handler"]["recording"], true);
        assert_eq!(out["handler"]["trace_id"], trace_id.to_string());
        assert_eq!(span["span_id"], out["handler"]["span_id"], "the span has the id the handler saw at its start");
        assert_eq!(span["parent_span_id"], parent_id.to_string());
        assert_eq!(child["span_id"], out["child"]["span_id"]);
        assert_eq!(child["parent_span_id"], out["handler"]["span_id"], "the child parents on the handler span");
        assert_eq!(out["tenant"], "acme", "the handler reads the caller's baggage");
        assert_eq!(span["attributes"]["tenant"], "acme", "baggage entries are the span's attributes");
        assert_eq!(span["attributes"]["svc.function.id"], function_id);
        assert_eq!(span["attributes"]["order.size"], if touched { json!(3) } else { Value::Null });
        let events: Vec<&str> = span["events"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(events, ["svc.invocation.input", "svc.invocation.output"]);
        assert_eq!(span["events"][0]["timestamp_unix_nano"], span["start_time_unix_nano"]);
    }

    // An unsampled parent: nothing recorded or exported, the ids still carried.
    let trace_id = TraceId::from_hex("6bf92f3577b34da6a3ce929d0e0e4736").unwrap();
    let before = exported();
    let out = call_in(&caller, remote(trace_id, TraceFlags::default()), "rs::child_touched").await;
    assert_eq!(out["handler"]["recording"], false);
    assert_eq!(out["handler"]["trace_id"], trace_id.to_string());
    assert_eq!(out["child"]["trace_id"], trace_id.to_string());
    assert_eq!(out["tenant"], "acme");
    assert_eq!(exported() - before, 0, "neither the handler's span nor its child is exported");

    callee.shutdown_async().await;
    caller.shutdown_async().await;
}
