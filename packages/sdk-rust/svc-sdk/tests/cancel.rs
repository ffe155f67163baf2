//! Cancellation (issue 21, docs/reference/protocol.md "cancelinvocation") against a real engine:
//! a Rust caller that gives up on a call (drops its future, or its timeout passes) makes the
//! worker running it stop; a handler learns of its own cancellation from its `HandlerContext`;
//! the calls a handler made are cancelled with it.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{eventually, Engine};
use svc_sdk::{register_worker, Error, HandlerContext, InitOptions, RegisterFunction, Svc, TriggerRequest, WorkerMetadata};
use tokio::sync::mpsc;

fn worker(engine: &Engine, name: &str) -> Svc {
    let otel = Some(svc_sdk::OtelConfig { enabled: Some(false), ..Default::default() });
    register_worker(&engine.url, InitOptions { metadata: Some(WorkerMetadata::detect().name(name)), headers: None, otel, namespace: None })
        .expect("register_worker")
}

fn request(function_id: &str, timeout_ms: u64) -> TriggerRequest<Value> {
    TriggerRequest { function_id: function_id.into(), payload: Value::Null, action: None, timeout_ms: Some(timeout_ms) }
}

/// What a slow handler reports: it started, then how it ended (cancelled, with the reason).
#[derive(Debug, PartialEq)]
enum Seen {
    Started,
    Cancelled(Option<String>),
}

/// Reports `Cancelled` when the handler's future is dropped while its invocation is cancelled.
struct OnDrop(HandlerContext, mpsc::UnboundedSender<Seen>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if self.0.is_cancelled() {
            let _ = self.1.send(Seen::Cancelled(self.0.reason().map(str::to_string)));
        }
    }
}

/// An async handler that waits a minute; its future is dropped when it is cancelled.
fn slow_async(tx: mpsc::UnboundedSender<Seen>) -> RegisterFunction {
    RegisterFunction::new_async(move |_: Value| {
        let tx = tx.clone();
        async move {
            let cx = HandlerContext::current().expect("a handler has a context");
            let _report = OnDrop(cx, tx.clone());
            tx.send(Seen::Started).unwrap();
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok::<_, Error>("late")
        }
    })
}

/// A blocking handler that runs until its context says it was cancelled.
fn slow_blocking(tx: mpsc::UnboundedSender<Seen>) -> RegisterFunction {
    RegisterFunction::new(move |_: Value| {
        let cx = HandlerContext::current().expect("a handler has a context");
        tx.send(Seen::Started).unwrap();
        for _ in 0..6000 {
            if cx.is_cancelled() {
                tx.send(Seen::Cancelled(cx.reason().map(str::to_string))).unwrap();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok::<_, Error>("late")
    })
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    tokio::time::timeout(Duration::from_secs(20), rx.recv()).await.expect("the handler reported in time").expect("open")
}

async fn in_flight(client: &Svc, function_id: &str) -> u64 {
    let listed = client.trigger(TriggerRequest { function_id: "engine::invocations::list".into(), payload: json!({"function_id": function_id}), action: None, timeout_ms: None }).await.expect("list");
    listed["total"].as_u64().expect("total")
}

async fn none_in_flight(client: &Svc, function_id: &str) {
    eventually(|| async { (in_flight(client, function_id).await == 0).then_some(()) }).await;
}

async fn registered(client: &Svc, function_id: &str) {
    eventually(|| async {
        let listed = client.trigger(TriggerRequest { function_id: "engine::functions::list".into(), payload: json!({"prefix": function_id}), action: None, timeout_ms: None }).await.ok()?;
        listed["functions"].as_array()?.iter().any(|f| f["function_id"] == function_id).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_gives_up_cancels_the_call_in_the_worker() {
    let engine = Engine::start("");
    let callee = worker(&engine, "callee");
    let caller = worker(&engine, "caller");
    let (tx, mut seen) = mpsc::unbounded_channel();
    callee.register_function("rsc::slow", slow_async(tx.clone()));
    callee.register_function("rsc::slow-blocking", slow_blocking(tx));
    registered(&caller, "rsc::slow").await;
    registered(&caller, "rsc::slow-blocking").await;

    // The caller's future is dropped (tokio::time::timeout): the async handler's future is dropped too.
    assert!(tokio::time::timeout(Duration::from_millis(1500), caller.trigger(request("rsc::slow", 60_000))).await.is_err());
    assert_eq!(next(&mut seen).await, Seen::Started);
    assert_eq!(next(&mut seen).await, Seen::Cancelled(None));
    none_in_flight(&caller, "rsc::slow").await;

    // The SDK's own timeout: TIMEOUT here, and the handler is told why.
    let err = caller.trigger(request("rsc::slow", 500)).await.unwrap_err();
    assert!(matches!(err, Error::Timeout), "{err:?}");
    assert_eq!(next(&mut seen).await, Seen::Started);
    assert_eq!(next(&mut seen).await, Seen::Cancelled(Some("timed out after 500ms".into())));
    none_in_flight(&caller, "rsc::slow").await;

    // An aborted task drops its call: a blocking handler sees its context cancelled.
    let task = tokio::spawn({
        let caller = caller.clone();
        async move { caller.trigger(request("rsc::slow-blocking", 60_000)).await }
    });
    assert_eq!(next(&mut seen).await, Seen::Started);
    task.abort();
    assert_eq!(next(&mut seen).await, Seen::Cancelled(None));
    none_in_flight(&caller, "rsc::slow-blocking").await;

    callee.shutdown_async().await;
    caller.shutdown_async().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_calls_a_handler_made_are_cancelled_with_it() {
    let engine = Engine::start("");
    let callee = worker(&engine, "callee");
    let caller = worker(&engine, "caller");
    let (tx, mut seen) = mpsc::unbounded_channel();
    let (outer_tx, mut outer_seen) = mpsc::unbounded_channel::<String>();
    callee.register_function("rsc::inner", slow_async(tx));
    let client = callee.clone();
    let reports = outer_tx.clone();
    callee.register_function(
        "rsc::outer-async",
        RegisterFunction::new_async(move |_: Value| {
            let client = client.clone();
            let reports = reports.clone();
            async move {
                let cx = HandlerContext::current().expect("context");
                let _report = OnDropText(cx, reports);
                client.trigger(request("rsc::inner", 60_000)).await
            }
        }),
    );
    let client = callee.clone();
    callee.register_function(
        "rsc::outer-blocking",
        RegisterFunction::new(move |_: Value| {
            // A blocking handler waits for its call on a runtime of its own; the call still follows its context.
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let out = runtime.block_on(client.trigger(request("rsc::inner", 60_000)));
            if let Err(e) = &out {
                outer_tx.send(format!("{}: {}", e.code(), e)).unwrap();
            }
            out
        }),
    );
    for outer in ["rsc::outer-async", "rsc::outer-blocking"] {
        registered(&caller, outer).await;
        let pending = tokio::spawn({
            let caller = caller.clone();
            async move { caller.trigger(request(outer, 60_000)).await }
        });
        assert_eq!(next(&mut seen).await, Seen::Started);
        let listed = caller.trigger(TriggerRequest { function_id: "engine::invocations::list".into(), payload: json!({"function_id": outer}), action: None, timeout_ms: None }).await.unwrap();
        let id = listed["invocations"][0]["invocation_id"].as_str().expect("the outer call is listed").to_string();
        let answer = caller
            .trigger(TriggerRequest { function_id: "engine::invocations::cancel".into(), payload: json!({"invocation_id": id, "reason": "stop it all"}), action: None, timeout_ms: None })
            .await
            .unwrap();
        assert_eq!(answer, json!({"cancelled": true}));
        // The inner call is cancelled with the outer invocation, with its reason.
        assert_eq!(next(&mut seen).await, Seen::Cancelled(Some("stop it all".into())));
        let outer_saw = tokio::time::timeout(Duration::from_secs(20), outer_seen.recv()).await.unwrap().unwrap();
        if outer == "rsc::outer-async" {
            assert_eq!(outer_saw, "dropped while cancelled: stop it all");
        } else {
            assert_eq!(outer_saw, "cancelled: cancelled: Invocation cancelled: stop it all");
        }
        let err = pending.await.unwrap().unwrap_err();
        assert_eq!(err.code(), "cancelled");
        none_in_flight(&caller, "rsc::inner").await;
        none_in_flight(&caller, outer).await;
    }
    callee.shutdown_async().await;
    caller.shutdown_async().await;
}

struct OnDropText(HandlerContext, mpsc::UnboundedSender<String>);

impl Drop for OnDropText {
    fn drop(&mut self) {
        if self.0.is_cancelled() {
            let _ = self.1.send(format!("dropped while cancelled: {}", self.0.reason().unwrap_or("")));
        }
    }
}
