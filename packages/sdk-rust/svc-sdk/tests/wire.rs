//! The SDK against a scripted engine on a local socket: the frames an svc engine or the
//! reference iii engine sends (protocol.md §14 lists where they differ), replayed from recordings,
//! and hostile frames. What the SDK sends back is read off the socket.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use proptest::prelude::*;
use serde_json::{json, Value};
use svc_sdk::{
    register_worker, ConnectionState, Error, InitOptions, ReconnectionConfig, RegisterFunction, RegisterTriggerInput, RegisterTriggerType, Svc,
    TriggerConfig, TriggerHandler, TriggerRequest,
};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

struct Conn {
    ws: WebSocketStream<tokio::net::TcpStream>,
}

impl Conn {
    async fn send(&mut self, frame: &str) {
        self.ws.send(Message::text(frame.to_string())).await.unwrap();
    }

    /// The next JSON text frame the worker sent (pings skipped), at most 20 s.
    async fn recv(&mut self) -> Value {
        let next = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                match self.ws.next().await {
                    Some(Ok(Message::Text(t))) => { if std::env::var("WIRE_DEBUG").is_ok() { eprintln!("<< {t}"); } return serde_json::from_str::<Value>(&t).unwrap() }
                    Some(Ok(_)) => continue,
                    other => panic!("socket ended: {other:?}"),
                }
            }
        });
        next.await.expect("a frame from the worker")
    }

    /// Frames until one whose `type` is `kind`.
    async fn recv_type(&mut self, kind: &str) -> Value {
        loop {
            let frame = self.recv().await;
            if frame["type"] == kind {
                return frame;
            }
        }
    }
}

/// A scripted engine: every WebSocket accepted on `/` arrives on the receiver (`/otel` ones are dropped).
async fn fake_engine() -> (String, mpsc::UnboundedReceiver<Conn>) {
    let (url, conns, _upgrades) = recording_engine().await;
    (url, conns)
}

/// [`fake_engine`], also reporting the path and headers of every upgrade.
async fn recording_engine() -> (String, mpsc::UnboundedReceiver<Conn>, mpsc::UnboundedReceiver<(String, Vec<(String, String)>)>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let (tx, rx) = mpsc::unbounded_channel();
    let (upgrades_tx, upgrades) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let mut path = String::new();
            let mut headers = Vec::new();
            #[allow(clippy::result_large_err)] // the signature tungstenite asks for
            let callback = |request: &tokio_tungstenite::tungstenite::handshake::server::Request, response| {
                path = request.uri().path().to_string();
                headers = request.headers().iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string())).collect();
                Ok(response)
            };
            if let Ok(ws) = tokio_tungstenite::accept_hdr_async(stream, callback).await {
                let _ = upgrades_tx.send((path.clone(), headers));
                if path == "/" {
                    let _ = tx.send(Conn { ws });
                } else {
                    // Hold /otel sockets open (their frames are not read here).
                    tokio::spawn(async move {
                        let mut ws = ws;
                        while let Some(Ok(_)) = ws.next().await {}
                    });
                }
            }
        }
    });
    (url, rx, upgrades)
}

fn client(url: &str) -> Svc {
    let quick = ReconnectionConfig { initial_delay_ms: 20, max_delay_ms: 100, ..ReconnectionConfig::default() };
    let otel = svc_sdk::OtelConfig { enabled: Some(false), ..Default::default() };
    register_worker(url, InitOptions { otel: Some(otel), ..InitOptions::default() }.reconnection_config(quick)).unwrap()
}

struct Quiet;
impl TriggerHandler for Quiet {
    async fn register_trigger(&self, _t: TriggerConfig) -> Result<(), Error> {
        Ok(())
    }
    async fn unregister_trigger(&self, _t: TriggerConfig) -> Result<(), Error> {
        Ok(())
    }
}

/// `headers` go on the upgrade of `/` and of the telemetry socket `/otel` (for the listener's auth
/// function, protocol.md §13.2), whose URL keeps the address's query string (§10.2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_go_on_the_upgrade_of_both_sockets() {
    let (url, mut conns, mut upgrades) = recording_engine().await;
    let headers = std::collections::HashMap::from([("x-api-key".to_string(), "k-123".to_string())]);
    let svc = register_worker(format!("{url}/?tenant=a"), InitOptions { headers: Some(headers), ..InitOptions::default() }).unwrap();
    let _engine = conns.recv().await.unwrap();
    let mut paths = Vec::new();
    while paths.len() < 2 {
        let (path, headers) = upgrades.recv().await.unwrap();
        assert!(headers.contains(&("x-api-key".to_string(), "k-123".to_string())), "{path}: {headers:?}");
        paths.push(path);
    }
    paths.sort();
    assert_eq!(paths, ["/", "/otel"]);
    drop(_engine);
    svc.shutdown_async().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_open_sends_reattach_announce_replay_then_queued_calls() {
    let (url, mut conns) = fake_engine().await;
    let svc = client(&url);
    svc.register_function("math::add", RegisterFunction::new(|v: Value| Ok::<_, Error>(v)));
    svc.register_trigger_type(RegisterTriggerType::new("tick", "Ticks", Quiet));
    svc.register_trigger(RegisterTriggerInput { trigger_type: "tick".into(), function_id: "math::add".into(), config: json!({}), metadata: None }).unwrap();

    let mut first = conns.recv().await.unwrap();
    first.send(r#"{"type":"workerregistered","worker_id":"w-1","reattach_token":"t-1"}"#).await;
    let announce = first.recv().await;
    assert_eq!((announce["function_id"].as_str(), announce["action"]["type"].as_str()), (Some("engine::workers::register"), Some("void")));
    assert_eq!(announce["data"]["runtime"], "rust");
    wait_connected(&svc).await;
    let (states_tx, mut states) = mpsc::unbounded_channel();
    let _watch = svc.add_connection_state_listener(move |s| {
        let _ = states_tx.send(s);
    });
    drop(first); // the engine goes away
    while states.recv().await != Some(ConnectionState::Reconnecting) {}

    // A call made while disconnected is queued and sent after the replay.
    let call = tokio::spawn({
        let svc = svc.clone();
        async move { svc.trigger(TriggerRequest { function_id: "other::f".into(), payload: json!(1), action: None, timeout_ms: Some(20000) }).await }
    });
    let mut second = conns.recv().await.unwrap();
    let kinds: Vec<Value> = [second.recv().await, second.recv().await, second.recv().await, second.recv().await, second.recv().await, second.recv().await].into();
    assert_eq!(kinds[0], json!({"type": "reattach", "previous_worker_id": "w-1", "reattach_token": "t-1"}));
    assert_eq!(kinds[1]["function_id"], "engine::workers::register");
    let order: Vec<&str> = kinds[2..5].iter().map(|f| f["type"].as_str().unwrap()).collect();
    assert_eq!(order, ["registertriggertype", "registerfunction", "registertrigger"]);
    assert_eq!(kinds[5]["function_id"], "other::f");
    let id = kinds[5]["invocation_id"].as_str().unwrap().to_string();
    second.send(&json!({"type": "invocationresult", "invocation_id": id, "result": {"ok": true}}).to_string()).await;
    assert_eq!(call.await.unwrap().unwrap(), json!({"ok": true}));
    svc.shutdown_async().await;
}

async fn wait_connected(svc: &Svc) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let guard = svc.add_connection_state_listener(move |s| {
        let _ = tx.send(s);
    });
    while rx.recv().await != Some(ConnectionState::Connected) {}
    guard.remove();
}

/// Cancellation on the wire (issue 21): a dropped call sends one `cancelinvocation` and ignores its
/// late answer; the engine's `cancelinvocation` drops an async handler's future, with the reason cut
/// to 1024 characters, and no answer goes back for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_call_is_cancelled_and_a_cancelled_handler_sends_no_answer() {
    let (url, mut conns) = fake_engine().await;
    let svc = client(&url);
    let (dropped_tx, mut dropped) = mpsc::unbounded_channel::<Option<String>>();
    struct Report(svc_sdk::HandlerContext, mpsc::UnboundedSender<Option<String>>);
    impl Drop for Report {
        fn drop(&mut self) {
            let _ = self.1.send(self.0.reason().map(str::to_string));
        }
    }
    svc.register_function(
        "t::wait",
        RegisterFunction::new_async(move |_: Value| {
            let report = Report(svc_sdk::HandlerContext::current().unwrap(), dropped_tx.clone());
            async move {
                let _report = report;
                std::future::pending::<()>().await;
                Ok::<_, Error>(())
            }
        }),
    );
    svc.register_function("t::echo", RegisterFunction::new_async(|v: Value| async move { Ok::<_, Error>(v) }));
    let mut engine = conns.recv().await.unwrap();
    engine.send(r#"{"type":"workerregistered","worker_id":"w-1","reattach_token":"t-1"}"#).await;
    wait_connected(&svc).await;

    let call = svc.trigger(TriggerRequest { function_id: "remote::slow".into(), payload: json!(null), action: None, timeout_ms: Some(60_000) });
    let sent = tokio::select! {
        _ = call => panic!("the call was answered"),
        frame = async {
            loop {
                let frame = engine.recv_type("invokefunction").await;
                if frame["function_id"] == "remote::slow" {
                    return frame;
                }
            }
        } => frame,
    };
    // The select dropped the call's future.
    assert_eq!(engine.recv_type("cancelinvocation").await, json!({"type": "cancelinvocation", "invocation_id": sent["invocation_id"]}));
    engine.send(&json!({"type": "invocationresult", "invocation_id": sent["invocation_id"], "result": 1}).to_string()).await;

    engine.send(r#"{"type":"invokefunction","invocation_id":"leg-1","function_id":"t::wait","data":null}"#).await;
    engine.send(&json!({"type": "cancelinvocation", "invocation_id": "leg-1", "reason": "y".repeat(5000)}).to_string()).await;
    let reason = tokio::time::timeout(Duration::from_secs(20), dropped.recv()).await.unwrap().unwrap();
    assert_eq!(reason, Some("y".repeat(1024)));
    // No answer for leg-1: the next result is the echo's.
    engine.send(r#"{"type":"invokefunction","invocation_id":"leg-2","function_id":"t::echo","data":2}"#).await;
    let answer = engine.recv_type("invocationresult").await;
    assert_eq!((answer["invocation_id"].as_str(), &answer["result"]), (Some("leg-2"), &json!(2)));
    assert_eq!(svc.get_connection_state(), ConnectionState::Connected);
    drop(engine);
    svc.shutdown_async().await;
}

/// Frames recorded from the reference iii engine's wire format (protocol.md §14): payloads carry
/// `_caller_worker_id` (§14.9), results may lack `function_id`, errors may be bare values, a
/// `workerregistered` may lack the reattach token, and `WORKER_NAMESPACE_CONFLICT` is fatal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_iii_engine_frames() {
    let (url, mut conns) = fake_engine().await;
    let svc = client(&url);
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Add {
        a: i64,
        b: i64,
    }
    svc.register_function("math::add", RegisterFunction::new_async(|i: Add| async move { Ok::<_, Error>(json!({"c": i.a + i.b})) }));
    let (refused_tx, mut refused) = mpsc::unbounded_channel();
    let _g = svc.add_registration_error_listener(move |e| {
        let _ = refused_tx.send(e.clone());
    });
    let mut engine = conns.recv().await.unwrap();
    engine.send(r#"{"type":"workerregistered","worker_id":"3b0f5d1e-1111-4c1d-9e8f-3a2b1c0d9e8f"}"#).await;
    engine.recv_type("registerfunction").await;

    // iii adds the caller's worker id to the payload; the typed handler ignores it.
    engine
        .send(r#"{"type":"invokefunction","invocation_id":"8d5e0c2a-2222-4f6e-8a9b-0c1d2e3f4a5b","function_id":"math::add","data":{"a":2,"b":3,"_caller_worker_id":"4c1e9a4e-3333-4c1d-9e8f-3a2b1c0d9e8f"}}"#)
        .await;
    let answer = engine.recv_type("invocationresult").await;
    assert_eq!((answer["invocation_id"].as_str(), &answer["result"]), (Some("8d5e0c2a-2222-4f6e-8a9b-0c1d2e3f4a5b"), &json!({"c": 5})));

    // A result without function_id, and a bare error value.
    let ok = tokio::spawn({
        let svc = svc.clone();
        async move { svc.trigger(TriggerRequest { function_id: "a::b".into(), payload: json!({}), action: None, timeout_ms: Some(20000) }).await }
    });
    let sent = engine.recv_type("invokefunction").await;
    engine.send(&json!({"type": "invocationresult", "invocation_id": sent["invocation_id"], "result": 42}).to_string()).await;
    assert_eq!(ok.await.unwrap().unwrap(), json!(42));
    let bare = tokio::spawn({
        let svc = svc.clone();
        async move { svc.trigger(TriggerRequest { function_id: "a::b".into(), payload: json!({}), action: None, timeout_ms: Some(20000) }).await }
    });
    let sent = engine.recv_type("invokefunction").await;
    engine.send(&json!({"type": "invocationresult", "invocation_id": sent["invocation_id"], "function_id": "a::b", "error": "boom"}).to_string()).await;
    assert_eq!(bare.await.unwrap().unwrap_err(), Error::remote("UNKNOWN", "\"boom\""));

    // A binding for a trigger type this worker does not provide (protocol.md §8.3).
    engine.send(r#"{"type":"registertrigger","id":"b-1","trigger_type":"mqtt","function_id":"x::y","config":{}}"#).await;
    let refused_binding = engine.recv_type("triggerregistrationresult").await;
    assert_eq!((refused_binding["id"].as_str(), refused_binding["error"]["code"].as_str()), (Some("b-1"), Some("trigger_type_not_found")));

    // A non-fatal refusal without a reason goes to the listeners; the client keeps running.
    engine.send(r#"{"type":"registrationrejected","code":"FUNCTION_NAMESPACE_CONFLICT","message":"Function math::add is owned by another worker","namespace":"default","function_id":"math::add","owner_worker_id":"4c1e9a4e-3333-4c1d-9e8f-3a2b1c0d9e8f"}"#).await;
    let e = refused.recv().await.unwrap();
    assert_eq!((e.id.as_str(), e.code.as_str(), e.reason.as_deref()), ("math::add", "FUNCTION_NAMESPACE_CONFLICT", None));
    assert_eq!(svc.get_connection_state(), ConnectionState::Connected);

    // WORKER_NAMESPACE_CONFLICT is fatal: pending calls fail with it, the client is `failed`.
    let pending = tokio::spawn({
        let svc = svc.clone();
        async move { svc.trigger(TriggerRequest { function_id: "a::b".into(), payload: json!({}), action: None, timeout_ms: Some(20000) }).await }
    });
    engine.recv_type("invokefunction").await;
    engine.send(r#"{"type":"registrationrejected","code":"WORKER_NAMESPACE_CONFLICT","message":"worker name already in use","namespace":"default","worker_name":"w","owner_worker_id":"x"}"#).await;
    assert_eq!(pending.await.unwrap().unwrap_err().code(), "WORKER_NAMESPACE_CONFLICT");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let _s = svc.add_connection_state_listener(move |s| {
        let _ = tx.send(s);
    });
    while rx.recv().await != Some(ConnectionState::Failed) {}
    assert_eq!(svc.get_last_error().map(|e| e.code().to_string()).as_deref(), Some("WORKER_NAMESPACE_CONFLICT"));
    assert_eq!(svc.trigger(TriggerRequest { function_id: "a::b".into(), payload: json!({}), action: None, timeout_ms: None }).await, Err(Error::NotConnected));
    svc.shutdown_async().await;
}

/// After `max_retries` failed attempts the client is `failed` and queued calls end with NOT_CONNECTED (sdk.md §8).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_exhausted_fail_the_client_and_its_queued_calls() {
    let port = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap().port(); // released: nothing listens
    let config = ReconnectionConfig { initial_delay_ms: 10, max_delay_ms: 20, max_retries: 2, ..ReconnectionConfig::default() };
    let otel = svc_sdk::OtelConfig { enabled: Some(false), ..Default::default() };
    let svc = register_worker(format!("ws://127.0.0.1:{port}"), InitOptions { otel: Some(otel), ..InitOptions::default() }.reconnection_config(config)).unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let _watch = svc.add_connection_state_listener(move |s| {
        let _ = tx.send(s);
    });
    let queued = svc.trigger(TriggerRequest { function_id: "a::b".into(), payload: json!({}), action: None, timeout_ms: Some(60000) }).await;
    assert_eq!(queued, Err(Error::NotConnected));
    let mut seen = Vec::new();
    while let Some(state) = rx.recv().await {
        seen.push(state);
        if state == ConnectionState::Failed {
            break;
        }
    }
    // Two retries at most (the listener may come in after the first one).
    assert!((1..=2).contains(&seen.iter().filter(|s| **s == ConnectionState::Reconnecting).count()), "{seen:?}");
    assert!(matches!(svc.get_last_error(), Some(Error::WebSocket(_))));
    svc.shutdown_async().await;
}

fn hostile_frame() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,40}",
        Just("null".to_string()),
        Just("[1,2,3]".to_string()),
        Just(r#"{"type":"invocationresult","invocation_id":"nobody"}"#.to_string()),
        Just(r#"{"type":"registertrigger","id":"t","trigger_type":"nope","function_id":"f"}"#.to_string()),
        Just(r#"{"type":"unregistertrigger","id":7}"#.to_string()),
        Just(r#"{"type":"workerregistered","worker_id":{}}"#.to_string()),
        Just(r#"{"type":"error","error":"x"}"#.to_string()),
        // Cancels of calls this worker does not run (finished, unknown), or not readable: ignored.
        Just(r#"{"type":"cancelinvocation","invocation_id":"nobody","reason":"stop"}"#.to_string()),
        Just(r#"{"type":"cancelinvocation","invocation_id":7}"#.to_string()),
        Just(format!(r#"{{"type":"cancelinvocation","invocation_id":"nobody","reason":"{}"}}"#, "x".repeat(5000))),
        Just(format!(r#"{{"type":"ping","x":{}0{}}}"#, "[".repeat(4000), "]".repeat(4000))),
        // A registrationrejected with another code is fatal by design (protocol.md §5.11): only the non-fatal one is noise.
        Just(r#"{"type":"registrationrejected","code":"FUNCTION_NAMESPACE_CONFLICT","function_id":null}"#.to_string()),
        (0u32..4).prop_map(|n| format!(r#"{{"type":"{}"}}"#, ["pong", "triggerregistrationresult", "invokefunction", "x"][n as usize])),
    ]
}

fn owed_call(n: usize) -> impl Strategy<Value = (String, String)> {
    let id = format!("owed-{n}");
    prop_oneof![
        Just(format!(r#"{{"type":"invokefunction","invocation_id":"{id}","function_id":"t::echo","data":{{"n":{n}}}}}"#)),
        Just(format!(r#"{{"type":"invokefunction","invocation_id":"{id}","function_id":"missing::fn"}}"#)),
        Just(format!(r#"{{"type":"invokefunction","invocation_id":"{id}","function_id":["x"]}}"#)),
        Just(format!(r#"{{"type":"invokefunction","invocation_id":"{id}","function_id":"t::echo","function_id":"dup","data":null}}"#)),
        Just(format!(r#"{{"type":"invokefunction","invocation_id":"{id}","function_id":"t::typed","data":"not a number"}}"#)),
        Just(format!(r#"{{"type":"invokefunction","invocation_id":"{id}","function_id":"t::echo","data":{}1{}}}"#, "[".repeat(3000), "]".repeat(3000))),
    ]
    .prop_map(move |frame| (id.clone(), frame))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Hostile frames never stop the client, and every call it is sent is answered once.
    #[test]
    fn hostile_engine_frames_never_stop_the_worker_and_owed_calls_are_answered(
        noise in prop::collection::vec(hostile_frame(), 0..12),
        calls in (1usize..6).prop_flat_map(|k| (0..k).map(owed_call).collect::<Vec<_>>()),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async move {
            let (url, mut conns) = fake_engine().await;
            let svc = client(&url);
            svc.register_function("t::echo", RegisterFunction::new_async(|v: Value| async move { Ok::<_, Error>(v) }));
            svc.register_function("t::typed", RegisterFunction::new(|n: u32| Ok::<_, Error>(n)));
            let mut engine = conns.recv().await.unwrap();
            let mut expected: Vec<String> = Vec::new();
            let mut noise = noise.into_iter();
            for (id, frame) in calls {
                if let Some(n) = noise.next() { engine.send(&n).await; }
                engine.send(&frame).await;
                expected.push(id);
            }
            for n in noise { engine.send(&n).await; }
            let mut answered = Vec::new();
            while answered.len() < expected.len() {
                let frame = engine.recv().await;
                if frame["type"] == "invocationresult" {
                    answered.push(frame["invocation_id"].as_str().unwrap().to_string());
                }
            }
            answered.sort();
            expected.sort();
            assert_eq!(answered, expected);
            assert_eq!(svc.get_connection_state(), ConnectionState::Connected);
            drop(engine); // nobody would answer the closing handshake
            svc.shutdown_async().await;
        });
    }
}
