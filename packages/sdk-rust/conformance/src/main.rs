//! The Rust SDK's conformance worker (test/conformance/README.md): registers the suite's functions,
//! trigger type and triggers under `CONF_PREFIX` with `svc_sdk`, prints its ready line once
//! connected, and shuts the client down on SIGTERM or at the end of stdin.
//!
//! Both kinds of handler are used on purpose: sync ones (`RegisterFunction::new*`, run on the
//! blocking pool) and async ones (`new_async*`, run on the connection's runtime), so that the suite
//! covers both paths of the SDK.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use svc_sdk::{
    register_worker, ChannelItem, ChannelReader, ChannelWriter, ConnectionState, Error, HttpRequest, HttpResponse, InitOptions, InvocationError,
    ReconnectionConfig, RegisterFunction, RegisterTriggerInput, RegisterTriggerType, Svc, TriggerAction, TriggerCall, TriggerConfig, TriggerHandler,
    TriggerRequest, WorkerMetadata,
};

const SDK: &str = "rust";
/// The SDK's default timeout of a synchronous or enqueue call (`InitOptions::invocation_timeout_ms`).
const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// The one client of this process, for handlers that call out through it.
static CLIENT: OnceLock<Svc> = OnceLock::new();

fn client() -> &'static Svc {
    CLIENT.get().expect("the client is set before any handler is registered")
}

/// What `P::events` answers: everything recorded so far, in arrival order.
#[derive(Default, Serialize)]
struct Events {
    notes: Vec<Value>,
    state: Vec<Value>,
    ticks: Vec<Value>,
}

type Shared<T> = Arc<Mutex<T>>;

/// The `P-ticker` provider: keeps the bindings it holds by id, in the order they arrived.
struct Ticker(Shared<Vec<TriggerConfig>>);

impl TriggerHandler for Ticker {
    async fn register_trigger(&self, trigger: TriggerConfig) -> Result<(), Error> {
        let mut held = self.0.lock().unwrap();
        held.retain(|b| b.id != trigger.id);
        held.push(trigger);
        Ok(())
    }

    async fn unregister_trigger(&self, trigger: TriggerConfig) -> Result<(), Error> {
        self.0.lock().unwrap().retain(|b| b.id != trigger.id);
        Ok(())
    }
}

#[derive(Deserialize, JsonSchema)]
struct FailInput {
    code: String,
    message: String,
}

#[derive(Deserialize, JsonSchema)]
struct SleepInput {
    ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct CallInput {
    function_id: String,
    #[serde(default)]
    payload: Value,
    /// Absent or null (synchronous), `{"type":"void"}` or `{"type":"enqueue","queue":…}`.
    #[serde(default)]
    action: Option<Value>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    metadata: Option<Value>,
}

#[derive(Deserialize, JsonSchema)]
struct BindInput {
    trigger_type: String,
    #[serde(default)]
    config: Value,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

#[derive(Deserialize, JsonSchema)]
struct FireInput {
    #[serde(default)]
    payload: Value,
}

#[derive(Deserialize, JsonSchema)]
struct ReadInput {
    reader: ChannelReader,
}

#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum Item {
    Text { text: String },
    Binary { binary_hex: String },
}

#[derive(Deserialize, JsonSchema)]
struct WriteInput {
    writer: ChannelWriter,
    items: Vec<Item>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of a hex string; an error (never a panic) for odd lengths and non-hex characters,
/// multi-byte ones included.
fn unhex(text: &str) -> Result<Vec<u8>, Error> {
    fn nibble(c: u8) -> Result<u8, Error> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(Error::Handler(format!("bad hex: byte {c:#04x}"))),
        }
    }
    let bytes = text.as_bytes();
    if bytes.len() % 2 != 0 {
        return Err(Error::Handler(format!("odd-length hex: {} bytes", bytes.len())));
    }
    bytes.chunks_exact(2).map(|pair| Ok((nibble(pair[0])? << 4) | nibble(pair[1])?)).collect()
}

/// `P::call`'s action field as the SDK's `TriggerAction`.
fn action_of(action: Option<Value>) -> Result<Option<TriggerAction>, Error> {
    match action {
        None | Some(Value::Null) => Ok(None),
        Some(a) => serde_json::from_value(a).map(Some).map_err(Error::from),
    }
}

/// `P::call`: a call through `Svc::trigger` that never fails itself.
async fn call(input: CallInput) -> Result<Value, Error> {
    let timeout_ms = input.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    let outcome = match action_of(input.action) {
        Err(e) => Err(e),
        Ok(action) => {
            let request = TriggerRequest { function_id: input.function_id, payload: input.payload, action, timeout_ms: input.timeout_ms };
            let call: TriggerCall = match input.metadata {
                Some(metadata) if !metadata.is_null() => request.metadata(metadata),
                _ => request.into(),
            };
            client().trigger(call).await
        }
    };
    Ok(match outcome {
        Ok(result) => json!({ "ok": true, "result": result }),
        // `Error::Timeout` carries no duration, so its message lacks the `after <ms>ms` of
        // protocol.md §7.2: the worker adds the timeout it asked for.
        Err(Error::Timeout) => json!({ "ok": false, "code": "TIMEOUT", "message": format!("invocation timed out after {timeout_ms}ms"), "stacktrace": false }),
        Err(e) => {
            let e = InvocationError::from(e);
            json!({ "ok": false, "code": e.code, "message": e.message, "stacktrace": e.stacktrace.is_some_and(|s| !s.is_empty()) })
        }
    })
}

/// `P::fire`: a void call of every held binding's function, with its namespace and metadata.
async fn fire(bindings: Shared<Vec<TriggerConfig>>, input: FireInput) -> Result<Value, Error> {
    let held = bindings.lock().unwrap().clone();
    for b in &held {
        let request = TriggerRequest { function_id: b.function_id.clone(), payload: input.payload.clone(), action: Some(TriggerAction::Void), timeout_ms: None };
        let mut call: TriggerCall = request.into();
        if let Some(namespace) = &b.namespace {
            call = call.namespace(namespace.clone());
        }
        if let Some(metadata) = &b.metadata {
            call = call.metadata(metadata.clone());
        }
        client().trigger(call).await?;
    }
    Ok(json!({ "fired": held.len() }))
}

async fn channel_read(input: ReadInput) -> Result<Value, Error> {
    let mut items = Vec::new();
    while let Some(item) = input.reader.next().await? {
        items.push(match item {
            ChannelItem::Text(text) => json!({ "text": text }),
            ChannelItem::Binary(bytes) => json!({ "binary_hex": hex(&bytes) }),
        });
    }
    Ok(json!({ "items": items }))
}

async fn channel_write(input: WriteInput) -> Result<Value, Error> {
    for item in &input.items {
        match item {
            Item::Text { text } => input.writer.send_message(text).await?,
            Item::Binary { binary_hex } => input.writer.write(&unhex(binary_hex)?).await?,
        }
    }
    input.writer.close().await?;
    Ok(json!({ "written": input.items.len() }))
}

fn register(svc: &Svc, prefix: &str, worker: &str) {
    let p = |name: &str| format!("{prefix}::{name}");
    let events: Shared<Events> = Arc::default();
    let bindings: Shared<Vec<TriggerConfig>> = Arc::default();

    svc.register_function(p("echo"), RegisterFunction::new_with_metadata(|data: Value, metadata: Option<Value>| Ok::<_, Error>(json!({ "data": data, "metadata": metadata }))));
    svc.register_function(
        p("fail"),
        // A `Remote` error keeps its code on the wire; Rust errors carry no stack of their own, so
        // the handler captures the backtrace of where it failed.
        RegisterFunction::new(|input: FailInput| {
            let stacktrace = Some(std::backtrace::Backtrace::force_capture().to_string());
            Err::<(), _>(Error::Remote { code: input.code, message: input.message, stacktrace })
        }),
    );
    svc.register_function(
        p("sleep"),
        RegisterFunction::new_async(|input: SleepInput| async move {
            tokio::time::sleep(std::time::Duration::from_millis(input.ms)).await;
            Ok::<_, Error>(json!({ "slept": input.ms }))
        }),
    );
    let me = worker.to_string();
    svc.register_function(p("whoami"), RegisterFunction::new(move |_: Value| Ok::<_, Error>(json!({ "sdk": SDK, "worker": me }))));
    svc.register_function(p("call"), RegisterFunction::new_async(call));
    let e = events.clone();
    svc.register_function(
        p("note"),
        RegisterFunction::new(move |data: Value| {
            e.lock().unwrap().notes.push(data);
            Ok::<_, Error>(())
        }),
    );
    let e = events.clone();
    svc.register_function(p("events"), RegisterFunction::new(move |_: Value| Ok::<_, Error>(serde_json::to_value(&*e.lock().unwrap())?)));
    svc.register_function(
        p("http"),
        RegisterFunction::new(|req: HttpRequest| {
            let body = json!({ "method": req.method, "path_params": req.path_params, "query_params": req.query_params, "body": req.body, "sdk": SDK });
            Ok::<_, Error>(HttpResponse::json(200, body))
        }),
    );
    let e = events.clone();
    svc.register_function(
        p("state-event"),
        RegisterFunction::new(move |event: Value| {
            e.lock().unwrap().state.push(event);
            Ok::<_, Error>(())
        }),
    );
    let e = events.clone();
    svc.register_function(
        p("on-tick"),
        RegisterFunction::new_async_with_metadata(move |payload: Value, metadata: Option<Value>| {
            e.lock().unwrap().ticks.push(json!({ "payload": payload, "metadata": metadata }));
            async { Ok::<_, Error>(()) }
        }),
    );
    let target = p("on-tick");
    svc.register_function(
        p("bind"),
        RegisterFunction::new(move |input: BindInput| {
            let config = if input.config.is_null() { json!({}) } else { input.config };
            let trigger = client().register_trigger(RegisterTriggerInput { trigger_type: input.trigger_type, function_id: target.clone(), config, metadata: input.metadata })?;
            Ok::<_, Error>(json!({ "id": trigger.id }))
        }),
    );
    let b = bindings.clone();
    svc.register_function(
        p("bindings"),
        RegisterFunction::new(move |_: Value| {
            let held: Vec<Value> =
                b.lock().unwrap().iter().map(|b| json!({ "id": b.id, "function_id": b.function_id, "config": b.config, "metadata": b.metadata })).collect();
            Ok::<_, Error>(json!({ "bindings": held }))
        }),
    );
    let b = bindings.clone();
    svc.register_function(p("fire"), RegisterFunction::new_async(move |input: FireInput| fire(b.clone(), input)));
    svc.register_function(p("channel-read"), RegisterFunction::new_async(channel_read));
    svc.register_function(p("channel-write"), RegisterFunction::new_async(channel_write));

    svc.register_trigger_type(RegisterTriggerType::new(format!("{prefix}-ticker"), "conformance ticker", Ticker(bindings)));
    for method in ["GET", "POST"] {
        let config = json!({ "api_path": format!("conf/{SDK}/items/:id"), "http_method": method });
        svc.register_trigger(RegisterTriggerInput { trigger_type: "http".into(), function_id: p("http"), config, metadata: None }).expect("http trigger");
    }
    svc
        .register_trigger(RegisterTriggerInput { trigger_type: "state".into(), function_id: p("state-event"), config: json!({ "scope": prefix }), metadata: None })
        .expect("state trigger");
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let prefix = env("CONF_PREFIX").unwrap_or_else(|| "conf-rust".into());
    let worker = env("CONF_WORKER").unwrap_or_else(|| "a".into());
    let max_delay_ms: u64 = env("CONF_RECONNECT_MAX_MS").and_then(|v| v.parse().ok()).unwrap_or(1000);

    let options = InitOptions { metadata: Some(WorkerMetadata::detect().name(format!("{prefix}-{worker}"))), ..InitOptions::default() }
        .reconnection_config(ReconnectionConfig { initial_delay_ms: 100, max_delay_ms, ..ReconnectionConfig::default() });
    let client = register_worker("", options)?;
    CLIENT.set(client.clone()).expect("one client");
    register(&client, &prefix, &worker);

    let announced = AtomicBool::new(false);
    let ready = json!({ "ready": true, "sdk": SDK, "prefix": prefix, "capabilities": ["channels"] }).to_string();
    let _ready = client.add_connection_state_listener(move |state| {
        if state == ConnectionState::Connected && !announced.swap(true, Ordering::SeqCst) {
            println!("{ready}");
        }
    });

    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(Error::from)?;
    let stdin_closed = tokio::task::spawn_blocking(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
    });
    tokio::select! {
        _ = terminate.recv() => {}
        _ = stdin_closed => {}
    }
    client.shutdown_async().await;
    // The stdin reader may still be blocked in read(2): exit without waiting for it.
    std::process::exit(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(unhex(&hex(&bytes)).unwrap(), bytes);
        assert!(unhex("abc").is_err());
        assert!(unhex("zz").is_err());
    }

    proptest::proptest! {
        /// Hostile `binary_hex` items (any text, multi-byte characters at odd offsets) are errors,
        /// never panics; hex of any bytes decodes back to them.
        #[test]
        fn unhex_never_panics(text in ".{0,64}", bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            if let Ok(decoded) = unhex(&text) {
                proptest::prop_assert_eq!(hex(&decoded), text.to_ascii_lowercase());
            }
            proptest::prop_assert_eq!(unhex(&hex(&bytes)).unwrap(), bytes.clone());
            proptest::prop_assert_eq!(unhex(&hex(&bytes).to_uppercase()).unwrap(), bytes);
        }
    }

    #[test]
    fn multi_byte_characters_are_not_hex() {
        assert!(unhex("aéa").is_err());
        assert!(unhex("éé").is_err());
    }

    #[test]
    fn actions_map_to_the_sdk_s_trigger_action() {
        assert_eq!(action_of(None).unwrap(), None);
        assert_eq!(action_of(Some(Value::Null)).unwrap(), None);
        assert_eq!(action_of(Some(json!({"type": "void"}))).unwrap(), Some(TriggerAction::Void));
        assert_eq!(action_of(Some(json!({"type": "enqueue", "queue": "jobs"}))).unwrap(), Some(TriggerAction::Enqueue { queue: "jobs".into() }));
    }
}
