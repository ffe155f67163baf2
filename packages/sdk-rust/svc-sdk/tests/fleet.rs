//! Several engine addresses (issue 19 §3) against real engines: a worker given [dead address,
//! live engine] connects to the live one; a worker on engine A, after `kill -9` of A, reconnects to
//! engine B at once (not after the backoff), its function callable there and its channels on B;
//! `SVC_URL`-style comma-separated lists.

mod support;

use serde_json::{json, Value};
use support::{eventually, free_port, wait_for_state, Engine};
use svc_sdk::{create_channel, register_worker, ConnectionState, Error, InitOptions, ReconnectionConfig, RegisterFunction, Svc, TriggerRequest, WorkerOptions};

fn no_otel() -> Option<svc_sdk::OtelConfig> {
    Some(svc_sdk::OtelConfig { enabled: Some(false), ..Default::default() })
}

/// A backoff no test could wait out: reaching the next engine proves none was waited.
fn no_backoff_wait() -> WorkerOptions {
    let config = ReconnectionConfig { initial_delay_ms: 600_000, max_delay_ms: 600_000, jitter_factor: 0.0, ..ReconnectionConfig::default() };
    InitOptions { otel: no_otel(), ..InitOptions::default() }.reconnection_config(config)
}

async fn call_when_registered(client: &Svc, function_id: &str, payload: Value) -> Value {
    eventually(|| {
        let client = client.clone();
        let payload = payload.clone();
        async move {
            match client.trigger(TriggerRequest { function_id: function_id.into(), payload, action: None, timeout_ms: Some(20000) }).await {
                Err(Error::Remote { code, .. }) if code == "function_not_found" => None,
                other => Some(other.expect("call")),
            }
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_given_a_dead_address_and_a_live_engine_connects_to_the_live_one() {
    let live = Engine::start("");
    let dead = format!("ws://127.0.0.1:{}/?token=dead-secret", free_port());
    let worker = register_worker([dead.as_str(), live.url.as_str()], no_backoff_wait()).unwrap();
    worker.register_function("rsfleet::echo", RegisterFunction::new(|v: Value| Ok::<_, Error>(json!({ "echo": v }))));
    wait_for_state(&worker, ConnectionState::Connected).await;
    assert_eq!(worker.address(), live.url);
    assert_eq!(worker.addresses(), [dead.clone(), live.url.clone()]);
    assert!(!format!("{worker:?}").contains("dead-secret"));
    assert_eq!(call_when_registered(&worker, "rsfleet::echo", json!(1)).await, json!({ "echo": 1 }));
    worker.shutdown_async().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_fails_over_to_engine_b_after_kill_9_of_engine_a() {
    let mut a = Engine::start("");
    let b = Engine::start("");
    // One string, as SVC_URL would give it.
    let worker = register_worker(format!("{}, {}", a.url, b.url), no_backoff_wait()).unwrap();
    worker.register_function("rsfleet::where", RegisterFunction::new(|_: Value| Ok::<_, Error>(json!("served"))));
    wait_for_state(&worker, ConnectionState::Connected).await;
    assert_eq!(worker.address(), a.url);
    let on_b = register_worker(&b.url, InitOptions { otel: no_otel(), ..InitOptions::default() }).unwrap();

    a.kill9();
    eventually(|| {
        let worker = worker.clone();
        let b_url = b.url.clone();
        async move { (worker.get_connection_state() == ConnectionState::Connected && worker.address() == b_url).then_some(()) }
    })
    .await;
    assert_eq!(call_when_registered(&on_b, "rsfleet::where", Value::Null).await, json!("served"));

    // A channel made now lives on B: its ends must connect to B, not to the first address.
    let channel = create_channel(&worker, None).await.unwrap();
    let reading = tokio::spawn({
        let reader = channel.reader.clone();
        async move { reader.read_all().await }
    });
    channel.writer.write(b"over B").await.unwrap();
    channel.writer.close().await.unwrap();
    assert_eq!(reading.await.unwrap().unwrap(), b"over B");
    on_b.shutdown_async().await;
    worker.shutdown_async().await;
}

#[test]
fn invalid_lists_are_refused_at_construction_without_credentials() {
    let refused = |result: Result<Svc, Error>| match result {
        Err(Error::Runtime(message)) => message,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let empty: Vec<String> = vec![];
    assert!(refused(register_worker(empty, InitOptions { otel: no_otel(), ..InitOptions::default() })).contains("list is empty"));
    let m = refused(register_worker("ws://127.0.0.1:1,,ws://127.0.0.1:2", InitOptions { otel: no_otel(), ..InitOptions::default() }));
    assert!(m.contains("engine address 2 of 3 is empty"), "{m}");
    let m = refused(register_worker(["ws://127.0.0.1:1", "http://u:hunter2@h/?token=s3cret"], InitOptions { otel: no_otel(), ..InitOptions::default() }));
    assert!(m.contains("engine address 2 of 2 must be a ws:// or wss:// URL, got http: (http://h/)") && !m.contains("hunter2") && !m.contains("s3cret"), "{m}");
}
