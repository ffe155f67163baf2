//! Telemetry against a real engine (sdk.md §12, protocol.md §10): handler spans `execute <id>`
//! parented on the caller's context, `Logger` records carrying the trace id, both reaching
//! `engine::traces::*` and `engine::logs::list` over `/otel`; `shutdown()` flushes what is pending.
//! Its own test binary: a process has one telemetry pipeline.

mod support;

use serde_json::{json, Value};
use support::{eventually, Engine};
use svc_sdk::telemetry::{current_trace_id, with_span_async, Logger};
use svc_sdk::{register_worker, Error, InitOptions, OtelConfig, RegisterFunction, Svc, TriggerRequest, WorkerMetadata};

fn request(function_id: &str, payload: Value) -> TriggerRequest {
    TriggerRequest { function_id: function_id.into(), payload, action: None, timeout_ms: Some(20000) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_spans_and_logs_reach_the_engine_and_shutdown_flushes_them() {
    let engine = Engine::start("");
    // Spans leave only every 60 s: what the engine gets before that, shutdown() flushed.
    let otel = OtelConfig { spans_flush_interval_ms: Some(60000), service_name: Some("rust-telemetry".into()), ..Default::default() };
    let options = |name: &str| InitOptions { metadata: Some(WorkerMetadata::detect().name(name)), headers: None, otel: Some(otel.clone()), namespace: None };
    let callee = register_worker(&engine.url, options("callee")).unwrap();
    let caller = register_worker(&engine.url, options("caller")).unwrap();
    callee.register_function(
        "t::traced",
        RegisterFunction::new_async(|v: Value| async move {
            Logger::new(None, None, None).info("inside the handler", Some(json!({"order": 42, "password": "hunter2"})));
            Ok::<_, Error>(json!({"trace_id": current_trace_id(), "echo": v}))
        }),
    );
    let out: Value = eventually(|| {
        let caller = caller.clone();
        async move {
            let call = with_span_async("client operation", None, async { caller.trigger(request("t::traced", json!({"n": 1}))).await });
            match call.await {
                Err(Error::Remote { code, .. }) if code == "function_not_found" => None,
                other => Some(other.unwrap()),
            }
        }
    })
    .await;
    let trace_id = out["trace_id"].as_str().expect("the handler ran inside a span").to_string();

    let stopping = callee.clone();
    tokio::task::spawn_blocking(move || stopping.shutdown()).await.unwrap();

    let tree = eventually(|| {
        let caller = caller.clone();
        let trace_id = trace_id.clone();
        async move {
            let tree = caller.trigger(request("engine::traces::tree", json!({"trace_id": trace_id}))).await.ok()?;
            tree.to_string().contains("execute t::traced").then_some(tree)
        }
    })
    .await;
    let text = tree.to_string();
    assert!(text.contains("client operation"), "the handler span is a child of the caller's: {text}");
    assert!(text.contains("svc.invocation.input"));

    let log = eventually(|| {
        let caller = caller.clone();
        let trace_id = trace_id.clone();
        async move {
            let logs = caller.trigger(request("engine::logs::list", json!({"trace_id": trace_id}))).await.ok()?;
            logs["logs"].as_array()?.iter().find(|l| l["body"] == "inside the handler").cloned()
        }
    })
    .await;
    assert_eq!(log["attributes"]["log.data.order"], json!(42));
    assert_eq!(log["attributes"]["log.data.password"], json!("[REDACTED]"));
    shutdown(caller).await;
}

async fn shutdown(client: Svc) {
    client.shutdown_async().await;
}
