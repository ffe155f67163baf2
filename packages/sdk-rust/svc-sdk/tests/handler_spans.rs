//! Handler spans recorded by the engine (svc addition to protocol.md §10.1; docs/reference/protocol.md
//! "Handler spans recorded by the engine"): the Rust SDK announces its resource, hands a span its
//! handler left untouched to the engine (only its times on the `invocationresult`) and exports
//! nothing for it; a span the handler changed is exported in full, with the same shape. Against a
//! real engine. Its own test binary: a process has one telemetry pipeline.

mod support;

use serde_json::{json, Value};
use support::{eventually, exported, request, span_of, Engine};
use svc_sdk::telemetry::{current_span_id, current_trace_id, internal, set_current_span_attribute, with_span_async};
use svc_sdk::{register_worker, Error, InitOptions, OtelConfig, RegisterFunction, Svc, WorkerMetadata};


/// Calls `function_id` inside a caller span: `(trace id, caller span id, outcome)`.
async fn call_traced(caller: &Svc, function_id: &str, payload: Value) -> (String, String, Result<Value, Error>) {
    let caller = caller.clone();
    let function_id = function_id.to_string();
    let out: Result<(String, String, Result<Value, Error>), Error> = with_span_async("caller operation", None, async move {
        let ids = (current_trace_id().unwrap(), current_span_id().unwrap());
        let outcome = caller.trigger(request(&function_id, payload)).await;
        Ok((ids.0, ids.1, outcome))
    })
    .await;
    out.unwrap()
}



/// What a changed span and the engine's record of an untouched one share.
fn shape(span: &Value) -> Value {
    let mut attributes: Vec<String> = span["attributes"].as_object().unwrap().keys().filter(|k| *k != "order.size").cloned().collect();
    attributes.sort();
    let events: Vec<Value> = span["events"].as_array().unwrap().iter().map(|e| e["name"].clone()).collect();
    let payloads: Vec<Value> = span["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"].as_str().unwrap().starts_with("svc.invocation."))
        .map(|e| json!([e["attributes"]["svc.payload.ok"], e["attributes"]["svc.payload.truncated"]]))
        .collect();
    json!({
        "kind": span["kind"], "status": span["status"], "status_message": span["status_message"],
        "service_name": span["service_name"], "resource": span["resource"], "attributes": attributes,
        "error.type": span["attributes"]["error.type"], "events": events, "payloads": payloads,
        "parented": !span["parent_span_id"].is_null(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untouched_handler_spans_are_recorded_by_the_engine_and_changed_ones_exported_in_full() {
    let engine = Engine::start("");
    let otel = OtelConfig { service_name: Some("rust-spans".into()), ..Default::default() };
    let options = |name: &str| InitOptions { metadata: Some(WorkerMetadata::detect().name(name)), headers: None, otel: Some(otel.clone()), namespace: None };
    let callee = register_worker(&engine.url, options("callee")).unwrap();
    let caller = register_worker(&engine.url, options("caller")).unwrap();
    let doubled = |v: &Value| json!({"doubled": v["n"].as_i64().unwrap_or(0) * 2, "token": "secret-value"});
    callee.register_function("rs::plain", RegisterFunction::new_async(move |v: Value| async move { Ok::<_, Error>(doubled(&v)) }));
    callee.register_function(
        "rs::touched",
        RegisterFunction::new_async(move |v: Value| async move {
            set_current_span_attribute("order.size", v["n"].as_i64().unwrap_or(0));
            Ok::<_, Error>(doubled(&v))
        }),
    );
    let declined = || Error::Remote { code: "payment_failed".into(), message: "card declined".into(), stacktrace: Some("at charge (billing.rs:12)".into()) };
    callee.register_function("rs::fails", RegisterFunction::new_async(move |_: Value| async move { Err::<Value, _>(declined()) }));
    callee.register_function(
        "rs::fails_touched",
        RegisterFunction::new_async(move |v: Value| async move {
            set_current_span_attribute("order.size", v["n"].as_i64().unwrap_or(0));
            Err::<Value, _>(declined())
        }),
    );
    eventually(|| {
        let caller = caller.clone();
        async move {
            let listed = caller.trigger(request("engine::functions::list", json!({"prefix": "rs::"}))).await.ok()?;
            (listed["functions"].as_array()?.len() == 4).then_some(())
        }
    })
    .await;

    // Untouched: the engine records it; only the caller's own span left this process.
    let before = exported();
    let (trace_id, caller_span, outcome) = call_traced(&caller, "rs::plain", json!({"n": 21, "password": "p"})).await;
    assert_eq!(outcome.unwrap(), json!({"doubled": 42, "token": "secret-value"}));
    let span = span_of(&caller, &trace_id, "execute rs::plain").await;
    assert_eq!(exported() - before, 1, "the handler span was not exported by the SDK");
    assert_eq!(span["parent_span_id"], json!(caller_span));
    assert_eq!((span["kind"].as_str(), span["status"].as_str()), (Some("internal"), Some("ok")));
    assert_eq!(span["service_name"], "rust-spans");
    let resource: serde_json::Map<String, Value> = internal::resource().unwrap().into_iter().map(|(k, v)| (k, Value::String(v))).collect();
    assert_eq!(span["resource"], Value::Object(resource), "the resource the worker announced");
    assert_eq!(span["attributes"]["svc.function.id"], "rs::plain");
    assert!(span.to_string().find("svc.internal.handed_over").is_none(), "the marker stays in the worker");
    let events = span["events"].as_array().unwrap();
    assert_eq!(events[0]["name"], "svc.invocation.input");
    assert_eq!(events[0]["timestamp_unix_nano"], span["start_time_unix_nano"]);
    let input: Value = serde_json::from_str(events[0]["attributes"]["svc.payload.json"].as_str().unwrap()).unwrap();
    assert_eq!(input, json!({"n": 21, "password": "[REDACTED]"}));
    assert_eq!(events[1]["name"], "svc.invocation.output");
    assert_eq!(events[1]["timestamp_unix_nano"], span["end_time_unix_nano"]);
    let output: Value = serde_json::from_str(events[1]["attributes"]["svc.payload.json"].as_str().unwrap()).unwrap();
    assert_eq!(output, json!({"doubled": 42, "token": "[REDACTED]"}));

    // A changed span (and a failed one) is exported in full, with the shape the engine gives an untouched one.
    for (plain, touched) in [("rs::plain", "rs::touched"), ("rs::fails", "rs::fails_touched")] {
        let before = exported();
        let (a_trace, _, a_outcome) = call_traced(&caller, plain, json!({"n": 3})).await;
        let (b_trace, _, b_outcome) = call_traced(&caller, touched, json!({"n": 3})).await;
        assert_eq!(a_outcome.is_ok(), b_outcome.is_ok());
        let b = span_of(&caller, &b_trace, &format!("execute {touched}")).await;
        let a = span_of(&caller, &a_trace, &format!("execute {plain}")).await;
        assert_eq!(exported() - before, 3, "two caller spans and the changed handler span");
        assert_eq!(b["attributes"]["order.size"], 3, "the handler's attribute");
        assert_eq!(shape(&a), shape(&b), "the engine records the span the SDK would have exported");
        assert_eq!(b["events"][0]["timestamp_unix_nano"], b["start_time_unix_nano"], "the deferred input event keeps the start time");
    }

    // A failure: status ERROR with the message, error.type, the exception with the handler's stack.
    let (trace_id, _, outcome) = call_traced(&caller, "rs::fails", json!({})).await;
    assert_eq!(outcome.unwrap_err().code(), "payment_failed");
    let span = span_of(&caller, &trace_id, "execute rs::fails").await;
    assert_eq!((span["status"].as_str(), span["status_message"].as_str()), (Some("error"), Some("card declined")));
    assert_eq!(span["attributes"]["error.type"], "payment_failed");
    let names: Vec<&str> = span["events"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["svc.invocation.input", "exception", "svc.invocation.output"]);
    assert_eq!(span["events"][1]["attributes"]["exception.stacktrace"], "at charge (billing.rs:12)");
    assert_eq!(span["events"][2]["attributes"]["svc.payload.ok"], false);

    callee.shutdown_async().await;
    caller.shutdown_async().await;
}
