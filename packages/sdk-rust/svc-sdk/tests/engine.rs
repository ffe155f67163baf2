//! The SDK against a real engine (`node bin/run.js`), sdk.md §14 with the semantics of §2–§9:
//! synchronous, void and enqueue calls; not found; handler errors with their stack; timeouts;
//! reconnection after the engine is killed and restarted (replay); HTTP-invoked functions;
//! trigger types across two workers; channels carrying text and binary with backpressure.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use support::{eventually, wait_for_state, Engine};
use svc_sdk::{
    create_channel, register_worker, ChannelItem, ChannelReader, ConnectionState, EnqueueResult, Error, HttpInvocationConfig, InitOptions,
    ReconnectionConfig, RegisterFunction, RegisterTriggerInput, RegisterTriggerType, Svc, TriggerAction, TriggerConfig, TriggerHandler,
    TriggerRequest, WorkerMetadata,
};
use tokio::sync::mpsc;

/// Telemetry off: the process has one pipeline, and it would follow the first test's engine
/// (tests/telemetry.rs covers it).
fn no_otel() -> Option<svc_sdk::OtelConfig> {
    Some(svc_sdk::OtelConfig { enabled: Some(false), ..Default::default() })
}

fn worker(engine: &Engine, name: &str) -> Svc {
    register_worker(&engine.url, InitOptions { metadata: Some(WorkerMetadata::detect().name(name)), headers: None, otel: no_otel(), namespace: None })
        .expect("register_worker")
}

fn request<P>(function_id: &str, payload: P) -> TriggerRequest<P> {
    TriggerRequest { function_id: function_id.into(), payload, action: None, timeout_ms: Some(20000) }
}

#[derive(Deserialize, JsonSchema)]
struct Add {
    a: f64,
    b: f64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    c: f64,
}

/// Calls `function_id` until it is registered (a replay may still be on its way).
async fn call_when_registered(client: &Svc, function_id: &str, payload: Value) -> Value {
    eventually(|| {
        let client = client.clone();
        let payload = payload.clone();
        async move {
            match client.trigger(request(function_id, payload)).await {
                Err(Error::Remote { code, .. }) if code == "function_not_found" => None,
                other => Some(other.expect("call")),
            }
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_void_and_enqueue_calls_between_two_workers() {
    let engine = Engine::start("  - name: queue\n    config:\n      queue_configs:\n        jobs:\n          max_retries: 0\n");
    let callee = worker(&engine, "callee");
    let caller = worker(&engine, "caller");
    let (seen_tx, mut seen) = mpsc::unbounded_channel::<(Value, Option<Value>)>();
    callee.register_function("math::add", RegisterFunction::new_async(|i: Add| async move { Ok::<_, Error>(Sum { c: i.a + i.b }) }).description("Add"));
    callee.register_function(
        "audit::record",
        RegisterFunction::new_with_metadata(move |v: Value, metadata: Option<Value>| {
            seen_tx.send((v, metadata)).unwrap();
            Ok::<_, Error>(())
        }),
    );

    let out = call_when_registered(&caller, "math::add", json!({"a": 2, "b": 3})).await;
    assert_eq!(out, json!({"c": 5.0}));

    let void = caller
        .trigger(TriggerRequest { function_id: "audit::record".into(), payload: json!({"n": 1}), action: Some(TriggerAction::Void), timeout_ms: None }.metadata(json!({"by": "caller"})))
        .await
        .unwrap();
    assert_eq!(void, Value::Null);
    assert_eq!(seen.recv().await.unwrap(), (json!({"n": 1}), Some(json!({"by": "caller"}))));

    let receipt: EnqueueResult = caller
        .trigger_as(TriggerRequest { function_id: "audit::record".into(), payload: json!({"n": 2}), action: Some(TriggerAction::Enqueue { queue: "jobs".into() }), timeout_ms: None })
        .await
        .unwrap();
    assert!(!receipt.message_receipt_id.is_empty());
    assert_eq!(seen.recv().await.unwrap().0, json!({"n": 2}));

    let missing = caller
        .trigger(TriggerRequest { function_id: "audit::record".into(), payload: json!({}), action: Some(TriggerAction::Enqueue { queue: "nope".into() }), timeout_ms: None })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), "queue_not_found");

    // The request format comes from the handler's input type (schemars).
    let info = caller.trigger(request("engine::functions::info", json!({"function_id": "math::add"}))).await.unwrap();
    assert_eq!(info["request_schema"]["required"], json!(["a", "b"]));
    assert_eq!(info["description"], "Add");
    caller.shutdown_async().await;
    callee.shutdown_async().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_reach_the_caller_with_their_codes() {
    let engine = Engine::start("");
    let client = worker(&engine, "errors");
    client.register_function("t::fail", RegisterFunction::new_async(|_: Value| async { Err::<(), _>(Error::Handler("boom".into())) }));
    client.register_function(
        "t::own",
        RegisterFunction::new(|_: Value| Err::<(), _>(Error::Remote { code: "payment.declined".into(), message: "card refused".into(), stacktrace: Some("at charge()".into()) })),
    );
    client.register_function("t::panic", RegisterFunction::new(|_: Value| -> Result<(), Error> { panic!("kaput") }));
    client.register_function("t::hang", RegisterFunction::new_async(|_: Value| async { std::future::pending::<Result<(), Error>>().await }));
    client.register_function("t::typed", RegisterFunction::new_async(|i: Add| async move { Ok::<_, Error>(Sum { c: i.a }) }));

    match call_when_registered_err(&client, "t::fail").await {
        Error::Remote { code, message, stacktrace } => {
            assert_eq!((code.as_str(), message.as_str()), ("invocation_failed", "boom"));
            assert!(stacktrace.is_some_and(|s| !s.is_empty()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        client.trigger(request("t::own", json!({}))).await.unwrap_err(),
        Error::Remote { code: "payment.declined".into(), message: "card refused".into(), stacktrace: Some("at charge()".into()) }
    );
    let panicked = client.trigger(request("t::panic", json!({}))).await.unwrap_err();
    assert!(matches!(&panicked, Error::Remote { code, message, .. } if code == "invocation_failed" && message.contains("kaput")), "{panicked:?}");
    assert_eq!(client.trigger(request("t::typed", json!({"a": "x"}))).await.unwrap_err().code(), "INVALID_ARGUMENTS");

    let missing = client.trigger(request("nobody::home", json!({}))).await.unwrap_err();
    assert!(matches!(&missing, Error::Remote { code, message, .. } if code == "function_not_found" && message == "Function nobody::home not found"), "{missing:?}");

    let timed_out = client.trigger(TriggerRequest { function_id: "t::hang".into(), payload: json!({}), action: None, timeout_ms: Some(300) }).await;
    assert_eq!(timed_out, Err(Error::Timeout));
    assert_eq!(client.trigger(request("bad\u{1}id", json!({}))).await.unwrap_err().code(), "INVALID_ID");

    client.shutdown_async().await;
    assert_eq!(client.get_connection_state(), ConnectionState::Disconnected);
    assert_eq!(client.trigger(request("t::fail", json!({}))).await, Err(Error::NotConnected));
}

async fn call_when_registered_err(client: &Svc, function_id: &str) -> Error {
    eventually(|| {
        let client = client.clone();
        async move {
            match client.trigger(request(function_id, json!({}))).await {
                Err(Error::Remote { code, .. }) if code == "function_not_found" => None,
                Err(e) => Some(e),
                Ok(v) => panic!("{function_id} answered {v}"),
            }
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrations_are_replayed_after_the_engine_is_killed_and_restarted() {
    let mut engine = Engine::start("");
    let quick = ReconnectionConfig { initial_delay_ms: 50, max_delay_ms: 300, ..ReconnectionConfig::default() };
    let callee = register_worker(&engine.url, InitOptions { otel: no_otel(), ..InitOptions::default() }.reconnection_config(quick)).unwrap();
    let caller = register_worker(&engine.url, InitOptions { otel: no_otel(), ..InitOptions::default() }.reconnection_config(quick)).unwrap();
    callee.register_function("t::echo", RegisterFunction::new_async(|v: Value| async move { Ok::<_, Error>(v) }));
    let (entered_tx, mut entered) = mpsc::unbounded_channel::<()>();
    callee.register_function(
        "t::held",
        RegisterFunction::new_async(move |_: Value| {
            let _ = entered_tx.send(());
            std::future::pending::<Result<(), Error>>()
        }),
    );
    assert_eq!(call_when_registered(&caller, "t::echo", json!(1)).await, json!(1));
    let first_id = callee.get_worker_id().unwrap();

    // A call in flight when the connection drops ends with invocation_stopped (sdk.md §6).
    let in_flight = tokio::spawn({
        let caller = caller.clone();
        async move { caller.trigger(request("t::held", json!({}))).await }
    });
    let states = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = states.clone();
    let _guard = callee.add_connection_state_listener(move |s| seen.lock().unwrap().push(s));
    entered.recv().await.unwrap(); // the held call reached the callee
    engine.kill9();
    let stopped = in_flight.await.unwrap().unwrap_err();
    assert_eq!(stopped, Error::remote("invocation_stopped", "Invocation stopped: connection to the engine was lost"));
    wait_for_state(&callee, ConnectionState::Reconnecting).await;

    engine.restart();
    wait_for_state(&callee, ConnectionState::Connected).await;
    wait_for_state(&caller, ConnectionState::Connected).await;
    assert_eq!(call_when_registered(&caller, "t::echo", json!({"back": true})).await, json!({"back": true}));
    assert!(states.lock().unwrap().contains(&ConnectionState::Reconnecting));
    assert_ne!(callee.get_worker_id().unwrap(), first_id);
    caller.shutdown_async().await;
    callee.shutdown_async().await;
}

/// A one-shot HTTP server answering every request with `body` (JSON); returns its URL and the requests seen.
async fn json_server(body: &'static str) -> (String, mpsc::UnboundedReceiver<String>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}/rates", listener.local_addr().unwrap().port());
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = vec![0u8; 65536];
            let mut got = Vec::new();
            loop {
                let n = socket.read(&mut buf).await.unwrap_or(0);
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got).to_string();
                if n == 0 || text.contains("\r\n\r\n") && text.split("\r\n\r\n").nth(1).is_some_and(|b| !b.is_empty()) {
                    let _ = tx.send(text);
                    break;
                }
            }
            let response = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    (url, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_invoked_function_is_called_by_the_engine() {
    let engine = Engine::start("");
    let (url, mut requests) = json_server(r#"{"eur":1.1}"#).await;
    let client = worker(&engine, "http");
    let f = client.register_function("rates::get", RegisterFunction::http(HttpInvocationConfig::new(url.clone())).description("Rates"));
    let out = call_when_registered(&client, "rates::get", json!({"base": "usd"})).await;
    assert_eq!(out, json!({"eur": 1.1}));
    let seen = requests.recv().await.unwrap();
    assert!(seen.starts_with("POST /rates"), "{seen}");
    assert!(seen.contains(r#"{"base":"usd"}"#));
    let info = client.trigger(request("engine::functions::info", json!({"function_id": "rates::get"}))).await.unwrap();
    assert_eq!(info["invocation"]["url"], url);
    f.unregister();
    eventually(|| {
        let client = client.clone();
        async move { client.trigger(request("rates::get", json!({}))).await.err().filter(|e| e.code() == "function_not_found") }
    })
    .await;
    client.shutdown_async().await;
}

#[derive(Clone)]
struct Ticks {
    events: mpsc::UnboundedSender<(&'static str, TriggerConfig)>,
}

impl TriggerHandler for Ticks {
    async fn register_trigger(&self, trigger: TriggerConfig) -> Result<(), Error> {
        if trigger.config.get("every").is_none() {
            return Err(Error::Handler("every is required".into()));
        }
        self.events.send(("register", trigger)).unwrap();
        Ok(())
    }

    async fn unregister_trigger(&self, trigger: TriggerConfig) -> Result<(), Error> {
        self.events.send(("unregister", trigger)).unwrap();
        Ok(())
    }
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct TickConfig {
    every: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_trigger_type_across_two_workers() {
    let engine = Engine::start("");
    let provider = worker(&engine, "provider");
    let consumer = worker(&engine, "consumer");
    let (events_tx, mut events) = mpsc::unbounded_channel();
    provider.register_trigger_type(RegisterTriggerType::new("tick", "Ticks", Ticks { events: events_tx }).trigger_request_format::<TickConfig>());
    let (fired_tx, mut fired) = mpsc::unbounded_channel::<(Value, Option<Value>)>();
    consumer.register_function(
        "app::on_tick",
        RegisterFunction::new_async_with_metadata(move |v: Value, m: Option<Value>| {
            let fired_tx = fired_tx.clone();
            async move {
                fired_tx.send((v, m)).unwrap();
                Ok::<_, Error>(())
            }
        }),
    );
    let (refused_tx, mut refused) = mpsc::unbounded_channel();
    let _g = consumer.add_registration_error_listener(move |e| {
        let _ = refused_tx.send(e.clone());
    });
    let trigger = consumer
        .register_trigger(RegisterTriggerInput {
            trigger_type: "tick".into(),
            function_id: "app::on_tick".into(),
            config: json!({"every": 5}),
            metadata: Some(serde_json::Map::from_iter([("team".to_string(), json!("core"))])),
        })
        .unwrap();
    let (what, binding) = events.recv().await.unwrap();
    assert_eq!((what, binding.id.as_str(), binding.function_id.as_str()), ("register", trigger.id.as_str(), "app::on_tick"));
    assert_eq!(binding.config, json!({"every": 5}));

    // The provider fires: it invokes the target itself (sdk.md §5).
    provider
        .trigger(
            TriggerRequest { function_id: binding.function_id.clone(), payload: json!({"tick": 1}), action: Some(TriggerAction::Void), timeout_ms: None }
                .metadata(binding.metadata.clone().unwrap())
                .namespace(binding.namespace.clone().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(fired.recv().await.unwrap(), (json!({"tick": 1}), Some(json!({"team": "core"}))));

    // A binding the provider refuses reaches the consumer's registration error listeners.
    let bad = consumer
        .register_trigger(RegisterTriggerInput { trigger_type: "tick".into(), function_id: "app::on_tick".into(), config: json!({}), metadata: None })
        .unwrap();
    let error = refused.recv().await.unwrap();
    assert_eq!((error.id.as_str(), error.code.as_str(), error.message.as_str()), (bad.id.as_str(), "trigger_registration_failed", "every is required"));

    let types = consumer.trigger(request("engine::triggers::info", json!({"id": "tick"}))).await.unwrap();
    assert_eq!(types["configuration_schema"]["required"], json!(["every"]));

    trigger.unregister();
    let (what, gone) = events.recv().await.unwrap();
    assert_eq!((what, gone.id.as_str()), ("unregister", trigger.id.as_str()));
    consumer.shutdown_async().await;
    provider.shutdown_async().await;
}

#[derive(Deserialize, JsonSchema)]
struct Upload {
    body: ChannelReader,
}

#[derive(Serialize, JsonSchema)]
struct Received {
    texts: Vec<String>,
    bytes: usize,
    checksum: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_carries_text_and_binary_in_order_with_backpressure() {
    let engine = Engine::start("");
    let reader_side = worker(&engine, "reader");
    let writer_side = worker(&engine, "writer");
    let (go_tx, go) = tokio::sync::oneshot::channel::<()>();
    let go = Arc::new(tokio::sync::Mutex::new(Some(go)));
    reader_side.register_function(
        "files::upload",
        RegisterFunction::new_async(move |u: Upload| {
            let go = go.clone();
            async move {
                if let Some(go) = go.lock().await.take() {
                    let _ = go.await;
                }
                let (mut texts, mut bytes, mut checksum) = (Vec::new(), 0usize, 0u64);
                while let Some(item) = u.body.next().await? {
                    match item {
                        ChannelItem::Text(t) => texts.push(t),
                        ChannelItem::Binary(b) => {
                            bytes += b.len();
                            checksum = b.iter().fold(checksum, |acc, x| acc.wrapping_mul(31).wrapping_add(u64::from(*x)));
                        }
                    }
                }
                Ok::<_, Error>(Received { texts, bytes, checksum })
            }
        }),
    );
    let channel = create_channel(&writer_side, Some(1)).await.unwrap();
    let call = tokio::spawn({
        let writer_side = writer_side.clone();
        let reader_ref = channel.reader_ref.clone();
        async move {
            eventually(|| {
                let writer_side = writer_side.clone();
                let reader_ref = reader_ref.clone();
                async move {
                    match writer_side.trigger(TriggerRequest { function_id: "files::upload".into(), payload: json!({"body": reader_ref}), action: None, timeout_ms: Some(60000) }).await {
                        Err(Error::Remote { code, .. }) if code == "function_not_found" => None,
                        other => Some(other),
                    }
                }
            })
            .await
        }
    });
    const CHUNK: usize = 1 << 20;
    const CHUNKS: usize = 48; // 48 MiB: more than every buffer between the two ends can hold
    let written = Arc::new(AtomicUsize::new(0));
    let writer = tokio::spawn({
        let w = channel.writer.clone();
        let written = written.clone();
        async move {
            w.send_message("start").await?;
            let mut expected = 0u64;
            for i in 0..CHUNKS {
                let chunk: Vec<u8> = (0..CHUNK).map(|j| ((i * 7 + j) % 251) as u8).collect();
                expected = chunk.iter().fold(expected, |acc, x| acc.wrapping_mul(31).wrapping_add(u64::from(*x)));
                w.write(&chunk).await?;
                written.fetch_add(1, Ordering::SeqCst);
            }
            w.send_message("end").await?;
            w.close().await?;
            Ok::<u64, Error>(expected)
        }
    });
    // The reader has not started: the writer gets some way, then has to wait.
    eventually(|| {
        let written = written.clone();
        async move { (written.load(Ordering::SeqCst) >= 1).then_some(()) }
    })
    .await;
    assert!(!writer.is_finished(), "the writer finished 48 MiB while nobody read");
    go_tx.send(()).unwrap();
    let expected = writer.await.unwrap().unwrap();
    let received = call.await.unwrap().unwrap();
    assert_eq!(received["texts"], json!(["start", "end"]));
    assert_eq!(received["bytes"], json!(CHUNK * CHUNKS));
    assert_eq!(received["checksum"], json!(expected));
    writer_side.shutdown_async().await;
    reader_side.shutdown_async().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_is_listed_with_its_namespace_and_functions() {
    let engine = Engine::start("");
    let client = register_worker(
        &engine.url,
        InitOptions { metadata: Some(WorkerMetadata::detect().name("rusty").description("Rust worker")), headers: None, otel: no_otel(), namespace: Some("payments".into()) },
    )
    .unwrap();
    client.register_function("pay::charge", RegisterFunction::new(|v: Value| Ok::<_, Error>(v)));
    let listed = eventually(|| {
        let client = client.clone();
        async move {
            let out = client.trigger(request("engine::functions::list", json!({"namespace": "payments"}))).await.ok()?;
            out["functions"].as_array().filter(|f| !f.is_empty()).cloned()
        }
    })
    .await;
    assert_eq!(listed[0]["function_id"], "pay::charge");
    assert_eq!(listed[0]["namespace"], "payments");
    let workers = client.trigger(request("engine::workers::list", json!({"runtime": "rust"}))).await.unwrap();
    let me = workers["workers"].as_array().unwrap().iter().find(|w| w["name"] == "rusty").cloned().unwrap();
    assert_eq!((me["namespace"].as_str(), me["description"].as_str()), (Some("payments"), Some("Rust worker")));
    // Calls default to the worker's namespace.
    assert_eq!(client.trigger(request("pay::charge", json!(7))).await.unwrap(), json!(7));
    client.shutdown();
}

/// `GET <http_url><path>` over a plain TCP socket; returns the status and the body.
async fn http_get(http_url: &str, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = http_url.trim_start_matches("http://");
    let mut socket = tokio::net::TcpStream::connect(host).await.unwrap();
    socket.write_all(format!("GET {path} HTTP/1.1\r\nhost: {host}\r\nx-tag: a\r\nconnection: close\r\n\r\n").as_bytes()).await.unwrap();
    let mut text = String::new();
    socket.read_to_string(&mut text).await.unwrap();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, text.split("\r\n\r\n").nth(1).unwrap_or("").to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_trigger_delivers_path_and_query_params() {
    use svc_sdk::{HttpRequest, HttpResponse};
    let engine = Engine::start("");
    let client = worker(&engine, "web");
    client.register_function(
        "web::greet",
        RegisterFunction::new(|req: HttpRequest| {
            let body = json!({
                "code": req.path_params.get("code"),
                "name": req.query_params.get("name").and_then(|v| v.first()),
                "tags": req.query_params.get("tag"),
                "method": req.method,
                "header": req.headers.get("x-tag").and_then(|v| v.first()),
            });
            Ok::<_, Error>(HttpResponse::json(201, body).header("x-made-by", "rust"))
        }),
    );
    client
        .register_trigger(RegisterTriggerInput { trigger_type: "http".into(), function_id: "web::greet".into(), config: json!({"api_path": "/s/:code", "http_method": "GET"}), metadata: None })
        .unwrap();
    let (status, body) = eventually(|| {
        let url = engine.http_url.clone();
        async move { Some(http_get(&url, "/s/abc?name=Ada&tag=x&tag=y").await).filter(|(status, _)| *status == 201) }
    })
    .await;
    assert_eq!(status, 201);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body, json!({"code": "abc", "name": "Ada", "tags": ["x", "y"], "method": "GET", "header": "a"}));
    client.shutdown_async().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_of_20_mib_arrives_whole() {
    let engine = Engine::start("");
    let client = worker(&engine, "big");
    client.register_function("t::grow", RegisterFunction::new(|n: usize| Ok::<_, Error>("x".repeat(n))));
    let n = 20 * 1024 * 1024;
    let out = call_when_registered(&client, "t::grow", json!(n)).await;
    assert_eq!(out.as_str().map(str::len), Some(n));
    assert_eq!(client.get_connection_state(), ConnectionState::Connected);
    client.shutdown_async().await;
}
