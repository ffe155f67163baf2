//! The client handle [`Svc`] (sdk.md §3, §14) and [`register_worker`]: a cheap-to-clone handle
//! over one connection task that runs on its own thread (a single-threaded tokio runtime).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use svc_helpers::observability as otel;
use svc_helpers::ReconnectionConfig;
use tokio::sync::{mpsc, oneshot};

use crate::error::{codes, Error};
use crate::addresses::IntoEngineAddresses;
use crate::function::RegisterFunction;
use crate::handler_context::HandlerContext;
use crate::options::{WorkerMetadata, WorkerOptions};
use crate::registrations::{check_namespace, request_problem, RegistrationStore};
use crate::session::{Command, Done, Session, SessionConfig, Timings};
use crate::trigger::{RegisterTriggerInput, RegisterTriggerType, TriggerAction, TriggerBinding, TriggerCall};

/// The engine's default worker address (protocol.md §2).
pub const DEFAULT_ENGINE_URL: &str = "ws://127.0.0.1:49134";

/// Connection state (sdk.md §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectionState {
    /// Before the first attempt, and after `shutdown()` (terminal then).
    Disconnected,
    /// Opening a connection.
    Connecting,
    /// Open: registrations sent, calls flowing.
    Connected,
    /// Waiting for the next attempt (backoff).
    Reconnecting,
    /// Gave up (`max_retries`) or was refused fatally. Terminal.
    Failed,
}

impl ConnectionState {
    /// The lower-case name of sdk.md §8 (`connected`, …).
    pub fn as_str(&self) -> &'static str {
        match self {
            ConnectionState::Disconnected => "disconnected",
            ConnectionState::Connecting => "connecting",
            ConnectionState::Connected => "connected",
            ConnectionState::Reconnecting => "reconnecting",
            ConnectionState::Failed => "failed",
        }
    }
}

/// What a registration error refers to (sdk.md §7.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistrationKind {
    /// A function.
    Function,
    /// A trigger type.
    TriggerType,
    /// A trigger (binding).
    Trigger,
}

/// A non-fatal refusal of one registration (sdk.md §7.3), delivered to registration error listeners.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrationError {
    /// What was refused.
    pub kind: RegistrationKind,
    /// Function id, trigger type id or trigger id.
    pub id: String,
    /// e.g. `FUNCTION_NAMESPACE_CONFLICT`, `FORBIDDEN`, `trigger_registration_failed`.
    pub code: String,
    /// `registrationrejected.reason`.
    pub reason: Option<String>,
    /// Explanation.
    pub message: String,
    /// Namespace it targeted.
    pub namespace: Option<String>,
    /// For triggers: the type.
    pub trigger_type: Option<String>,
    /// The function concerned.
    pub function_id: Option<String>,
}

type StateListener = Arc<dyn Fn(ConnectionState) + Send + Sync>;
type RegistrationListener = Arc<dyn Fn(&RegistrationError) + Send + Sync>;

/// The current state, its listeners by id, and the last listener id given out.
type StateCell = (ConnectionState, Vec<(u64, StateListener)>, u64);

/// State the handle and the session share.
pub(crate) struct Shared {
    /// Every engine address, in the order they are tried (issue 19 §3).
    pub(crate) addresses: Vec<String>,
    /// Index in `addresses` of the engine the session is connected to, or tries next.
    pub(crate) current: AtomicUsize,
    pub(crate) namespace: Option<String>,
    pub(crate) timeout_ms: u64,
    pub(crate) reconnection: ReconnectionConfig,
    pub(crate) registrations: Mutex<RegistrationStore>,
    pub(crate) worker_id: Mutex<Option<String>>,
    pub(crate) terminal: AtomicBool,
    pub(crate) telemetry: bool,
    /// Invocation ids are `<random UUID>-<counter>`: unique per client without a random draw per call
    /// (the engine takes any string as an id, protocol.md §3.5).
    id_prefix: String,
    id_counter: AtomicU64,
    last_error: Mutex<Option<Error>>,
    state: Mutex<StateCell>,
    registration_listeners: Mutex<Vec<(u64, RegistrationListener)>>,
    thread: Mutex<Option<(ThreadId, std::thread::JoinHandle<()>)>>,
}

impl Shared {
    /// The engine address the session is connected to, or tries next.
    pub(crate) fn address(&self) -> &str {
        &self.addresses[self.current.load(Ordering::SeqCst) % self.addresses.len()]
    }

    pub(crate) fn next_invocation_id(&self) -> String {
        let n = self.id_counter.fetch_add(1, Ordering::Relaxed);
        let mut id = String::with_capacity(self.id_prefix.len() + 12);
        id.push_str(&self.id_prefix);
        id.push('-');
        id.push_str(&n.to_string());
        id
    }

    pub(crate) fn set_state(&self, state: ConnectionState) {
        let listeners = {
            let Ok(mut s) = self.state.lock() else { return };
            if s.0 == state {
                return;
            }
            s.0 = state;
            s.1.iter().map(|(_, l)| l.clone()).collect::<Vec<_>>()
        };
        for listener in listeners {
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| listener(state))).is_err() {
                eprintln!("[svc] connection state listener panicked");
            }
        }
    }

    pub(crate) fn set_last_error(&self, error: Error) {
        if let Ok(mut e) = self.last_error.lock() {
            // An AUTH_ERROR frame explains the close that follows better than the socket error does.
            if matches!(&*e, Some(Error::Remote { code, .. }) if code == codes::AUTH_ERROR) && matches!(error, Error::WebSocket(_)) {
                return;
            }
            *e = Some(error);
        }
    }

    pub(crate) fn report_registration_error(&self, error: RegistrationError) {
        eprintln!("[svc] registration of {:?} '{}' refused: {}: {}", error.kind, error.id, error.code, error.message);
        let listeners: Vec<RegistrationListener> = self.registration_listeners.lock().map(|l| l.iter().map(|(_, f)| f.clone()).collect()).unwrap_or_default();
        for listener in listeners {
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| listener(&error))).is_err() {
                eprintln!("[svc] registration error listener panicked");
            }
        }
    }
}

/// Owns the command sender: when the last [`Svc`] clone is dropped, the session ends.
struct Handle {
    tx: mpsc::UnboundedSender<Command>,
}

static LIVE_TELEMETRY_CLIENTS: AtomicUsize = AtomicUsize::new(0);

/// A client that stops: flush telemetry, and shut the pipeline down when no other client is alive.
pub(crate) fn release_telemetry() {
    if LIVE_TELEMETRY_CLIENTS.fetch_sub(1, Ordering::SeqCst) == 1 {
        otel::shutdown_otel();
    } else {
        otel::flush_otel();
    }
}

/// Cancels a call whose `trigger` future was dropped before its outcome arrived (a `select!`
/// that took another branch, a `tokio::time::timeout`, an aborted task), or whose handler was
/// cancelled: the session answers it `cancelled` and sends the engine `cancelinvocation`.
struct CancelOnDrop {
    tx: mpsc::UnboundedSender<Command>,
    /// The call while it awaits its outcome.
    id: Option<String>,
    /// The handler making the call: its reason goes along when it was cancelled.
    run: Option<HandlerContext>,
}

impl CancelOnDrop {
    fn fire(&mut self) {
        if let Some(id) = self.id.take() {
            let reason = self.run.as_ref().filter(|r| r.is_cancelled()).and_then(|r| r.reason().map(str::to_string));
            let _ = self.tx.send(Command::Cancel { id, reason });
        }
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.fire();
    }
}

thread_local! {
    /// The engine address channel refs deserialized on this thread connect to.
    pub(crate) static CHANNEL_BASE: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with channel refs deserialized inside it connecting to `address`.
pub(crate) fn with_channel_base<T>(address: &str, f: impl FnOnce() -> T) -> T {
    let previous = CHANNEL_BASE.with(|b| b.replace(Some(address.to_string())));
    let out = f();
    CHANNEL_BASE.with(|b| *b.borrow_mut() = previous);
    out
}

/// A connected worker (sdk.md §3, §14): register functions, triggers and trigger types, invoke
/// functions, watch the connection. Cheap to clone; every clone is the same connection. The
/// connection runs on its own thread until [`Svc::shutdown`] or until the last clone is dropped.
///
/// ```no_run
/// use svc_sdk::{register_worker, ConnectionState, Error, InitOptions, RegisterFunction};
///
/// let client = register_worker("ws://127.0.0.1:49134", InitOptions::default())?;
/// let echo = client.register_function("demo::echo", RegisterFunction::new(|v: serde_json::Value| Ok::<_, Error>(v)));
/// let watch = client.add_connection_state_listener(|state| {
///     if state == ConnectionState::Reconnecting { eprintln!("engine went away; retrying") }
/// });
/// // ...
/// echo.unregister();
/// watch.remove();
/// client.shutdown();
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone)]
pub struct Svc {
    shared: Arc<Shared>,
    handle: Arc<Handle>,
}

impl std::fmt::Debug for Svc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Credentials stay out of debug output as out of errors.
        f.debug_struct("Svc").field("address", &crate::display_address(self.shared.address())).field("state", &self.get_connection_state()).finish()
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Connects a worker to the engine (sdk.md §2, §14) and returns at once; connection failures never
/// fail this call, they are retried with backoff (sdk.md §8).
///
/// `address`: the argument, else env `SVC_URL` (when the argument is empty), else
/// [`DEFAULT_ENGINE_URL`]. Several engines of a fleet (issue 19 §3): a `&str` with addresses
/// separated by commas (as `SVC_URL`), or a slice, array or `Vec` of them ([`IntoEngineAddresses`]).
/// The first attempt goes to the first; a failed attempt or a lost connection moves on to the next
/// at once (registrations are replayed there), and the backoff waits only after a full round.
/// [`Svc::address`] is the engine the client is on; a failover is logged on stderr without
/// credentials. Telemetry starts unless disabled (`OTEL_ENABLED=false`).
///
/// # Errors
/// [`Error::Runtime`] for invalid options: an empty address list, an entry that is empty or not a
/// `ws:`/`wss:` URL (named by position, never shown with its credentials; `wss:` needs the `tls`
/// feature), a blank namespace, or a thread that cannot be started.
///
/// ```no_run
/// use svc_sdk::{register_worker, InitOptions};
///
/// let fleet = register_worker(["ws://10.0.0.1:49134", "ws://10.0.0.2:49134"], InitOptions::default())?;
/// eprintln!("on {}", svc_sdk::display_address(fleet.address()));
/// # Ok::<(), svc_sdk::Error>(())
/// ```
///
/// ```no_run
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
/// use svc_sdk::{register_worker, Error, InitOptions, RegisterFunction, TriggerRequest};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Add { a: f64, b: f64 }
/// #[derive(Serialize, JsonSchema)]
/// struct Sum { c: f64 }
///
/// async fn add(input: Add) -> Result<Sum, Error> { Ok(Sum { c: input.a + input.b }) }
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() -> Result<(), Error> {
///     let client = register_worker("ws://127.0.0.1:49134", InitOptions::default())?;
///     client.register_function("math::add", RegisterFunction::new_async(add).description("Add two numbers"));
///     let out = client
///         .trigger(TriggerRequest { function_id: "math::add".into(), payload: serde_json::json!({"a": 1, "b": 2}), action: None, timeout_ms: None })
///         .await?;
///     assert_eq!(out["c"], 3.0);
///     client.shutdown_async().await;
///     Ok(())
/// }
/// ```
pub fn register_worker(address: impl IntoEngineAddresses, options: impl Into<WorkerOptions>) -> Result<Svc, Error> {
    register_worker_with(address, options.into(), Timings::default())
}

/// The engine addresses: the argument, else env `SVC_URL` (a comma-separated list), else
/// [`DEFAULT_ENGINE_URL`]; every entry checked ([`crate::engine_addresses`]).
pub(crate) fn resolve_addresses(address: impl IntoEngineAddresses) -> Result<Vec<String>, Error> {
    match address.into_engine_addresses() {
        Some(list) => crate::engine_addresses(&list, "engine address"),
        None => match env("SVC_URL") {
            Some(value) => crate::engine_addresses(&crate::split_address_list(&value), "SVC_URL"),
            None => Ok(vec![DEFAULT_ENGINE_URL.to_string()]),
        },
    }
}

pub(crate) fn register_worker_with(address: impl IntoEngineAddresses, options: WorkerOptions, timings: Timings) -> Result<Svc, Error> {
    let addresses = resolve_addresses(address)?;
    let address = addresses[0].clone();
    let init = options.init;
    let namespace = init.namespace.clone().or_else(|| env("SVC_NAMESPACE"));
    check_namespace(namespace.as_deref(), "namespace").map_err(|e| Error::Runtime(e.to_string()))?;
    let headers: Vec<(String, String)> = init.headers.clone().map(|h| h.into_iter().collect()).unwrap_or_default();

    let metadata = init.metadata.clone().unwrap_or_else(WorkerMetadata::detect);
    let mut announce = serde_json::to_value(&metadata)?;
    if let Some(ns) = &namespace {
        announce["namespace"] = Value::String(ns.clone());
    }
    let mut otel_config = init.otel.clone().unwrap_or_default();
    if otel_config.engine_ws_url.is_none() {
        // The telemetry socket (svc-helpers) takes one address: the first engine's.
        otel_config.engine_ws_url = Some(address.clone());
    }
    if otel_config.headers.is_none() && !headers.is_empty() {
        otel_config.headers = Some(headers.clone());
    }
    if otel_config.reconnection_config.is_none() {
        otel_config.reconnection_config = options.reconnection_config;
    }
    if otel_config.service_name.is_none() && env("OTEL_SERVICE_NAME").is_none() {
        otel_config.service_name = Some(metadata.name.clone());
    }
    let telemetry = otel::init_otel(otel_config);
    if telemetry {
        LIVE_TELEMETRY_CLIENTS.fetch_add(1, Ordering::SeqCst);
    }
    // The engine records the handler spans this worker hands over with this resource.
    let handler_spans = if telemetry { crate::handler_span::announce(crate::handler_span::SpanSettings::from_env()) } else { None };
    let announces_spans = handler_spans.is_some();
    if let Some(spans) = handler_spans {
        announce["handler_spans"] = spans;
    }
    // The announce is a void call of engine::workers::register (protocol.md §3.2) in `default`.
    let announce_frame = crate::codec::encode_invoke(None, "engine::workers::register", &announce.to_string(), None, Some("{\"type\":\"void\"}"), None, None, None);

    let shared = Arc::new(Shared {
        addresses,
        current: AtomicUsize::new(0),
        namespace,
        timeout_ms: options.invocation_timeout_ms.unwrap_or(30000),
        reconnection: options.reconnection_config.unwrap_or_default(),
        registrations: Mutex::new(RegistrationStore::default()),
        worker_id: Mutex::new(None),
        terminal: AtomicBool::new(false),
        telemetry,
        id_prefix: uuid::Uuid::new_v4().to_string(),
        id_counter: AtomicU64::new(0),
        last_error: Mutex::new(None),
        state: Mutex::new((ConnectionState::Disconnected, Vec::new(), 0)),
        registration_listeners: Mutex::new(Vec::new()),
        thread: Mutex::new(None),
    });
    let (tx, rx) = mpsc::unbounded_channel();
    let session = Session::new(shared.clone(), rx, SessionConfig { headers, announce_frame, announces_spans, timings, telemetry });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| Error::Runtime(e.to_string()))?;
    let thread = std::thread::Builder::new()
        .name("svc-connection".into())
        .spawn(move || {
            CHANNEL_BASE.with(|b| *b.borrow_mut() = Some(address));
            runtime.block_on(session.run());
        })
        .map_err(|e| Error::Runtime(format!("cannot start the connection thread: {e}")))?;
    if let Ok(mut t) = shared.thread.lock() {
        *t = Some((thread.thread().id(), thread));
    }
    Ok(Svc { shared, handle: Arc::new(Handle { tx }) })
}

/// A registered function; [`FunctionRef::unregister`] removes it.
#[derive(Debug, Clone)]
pub struct FunctionRef {
    /// The function id.
    pub id: String,
    client: Svc,
}

impl FunctionRef {
    /// Sends `unregisterfunction` and forgets the handler.
    pub fn unregister(&self) {
        let removed = self.client.shared.registrations.lock().map(|mut s| s.functions.remove(&self.id).is_some()).unwrap_or(false);
        if removed {
            self.client.send(Command::Send(serde_json::json!({ "type": "unregisterfunction", "id": self.id }).to_string()));
        }
    }
}

/// A registered binding; [`Trigger::unregister`] removes it.
#[derive(Debug, Clone)]
pub struct Trigger {
    /// The trigger id (a UUID generated by the SDK, kept across reconnects).
    pub id: String,
    client: Svc,
}

impl Trigger {
    /// Sends `unregistertrigger` and stops replaying the binding.
    pub fn unregister(&self) {
        let removed = self.client.shared.registrations.lock().ok().and_then(|mut s| s.triggers.remove(&self.id));
        if let Some(t) = removed {
            self.client.send(Command::Send(serde_json::json!({ "type": "unregistertrigger", "id": self.id, "trigger_type": t.trigger_type }).to_string()));
        }
    }
}

/// A trigger type this worker provides (sdk.md §5).
#[derive(Debug, Clone)]
pub struct TriggerTypeRef {
    /// The type id.
    pub id: String,
    namespace: Option<String>,
    key: String,
    generation: u64,
    client: Svc,
}

impl TriggerTypeRef {
    /// Binds `function_id` to this type (namespace: the worker's).
    pub fn register_trigger(&self, function_id: &str, config: Value, metadata: Option<serde_json::Map<String, Value>>) -> Result<Trigger, Error> {
        let input = RegisterTriggerInput { trigger_type: self.id.clone(), function_id: function_id.to_string(), config, metadata };
        let binding = match &self.namespace {
            Some(ns) => input.trigger_namespace(ns.clone()),
            None => TriggerBinding::from(input),
        };
        self.client.register_trigger(binding)
    }

    /// Registers `function_id` with `function` and binds it to this type.
    pub fn register_function(&self, function_id: &str, function: RegisterFunction, config: Value, metadata: Option<serde_json::Map<String, Value>>) -> Result<(FunctionRef, Trigger), Error> {
        let f = self.client.try_register_function(function_id, function)?;
        match self.register_trigger(function_id, config, metadata) {
            Ok(t) => Ok((f, t)),
            Err(e) => {
                f.unregister();
                Err(e)
            }
        }
    }

    /// Sends `unregistertriggertype`; the bindings this worker held are let go.
    pub fn unregister(&self) {
        self.client.unregister_trigger_type_entry(&self.key, self.generation);
    }
}

/// Removes a listener when [`ListenerGuard::remove`] is called (dropping it keeps the listener).
pub struct ListenerGuard {
    remove: Option<Box<dyn FnOnce() + Send>>,
}

impl std::fmt::Debug for ListenerGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ListenerGuard")
    }
}

impl ListenerGuard {
    /// Stops the listener.
    pub fn remove(mut self) {
        if let Some(f) = self.remove.take() {
            f();
        }
    }
}

impl Svc {
    fn send(&self, command: Command) {
        let _ = self.handle.tx.send(command);
    }

    fn default_namespace(&self, function_id: &str) -> Option<String> {
        if function_id.starts_with("engine::") {
            None
        } else {
            self.shared.namespace.clone()
        }
    }

    /// Registers a function (sdk.md §4): sent now when connected and replayed on every open.
    ///
    /// # Panics
    /// On an empty or malformed id, or an id this client already registered (programming errors);
    /// [`Svc::try_register_function`] returns them as errors instead.
    pub fn register_function(&self, id: impl Into<String>, function: RegisterFunction) -> FunctionRef {
        let id = id.into();
        match self.try_register_function(&id, function) {
            Ok(f) => f,
            Err(e) => panic!("register_function({id:?}): {e}"),
        }
    }

    /// [`Svc::register_function`], returning [`Error::Runtime`] (`function id is required`,
    /// `function id already registered: <id>`) or `INVALID_ID` instead of panicking.
    pub fn try_register_function(&self, id: impl Into<String>, function: RegisterFunction) -> Result<FunctionRef, Error> {
        let id = id.into();
        let frame = self.shared.registrations.lock().map_err(|_| Error::Runtime("registration store poisoned".into()))?.add_function(&id, function)?;
        self.send(Command::Send(frame));
        Ok(FunctionRef { id, client: self.clone() })
    }

    /// Binds a function to a trigger type (sdk.md §5) under a generated id, replayed with that id
    /// on every open. Refusals by the engine arrive later through registration error listeners.
    ///
    /// # Errors
    /// [`Error::Runtime`] for a blank type or function id; `INVALID_ID` / `INVALID_NAMESPACE`.
    pub fn register_trigger(&self, input: impl Into<TriggerBinding>) -> Result<Trigger, Error> {
        let binding = input.into();
        let id = uuid::Uuid::new_v4().to_string();
        let namespace = binding.namespace.clone().or_else(|| self.default_namespace(&binding.input.function_id));
        let frame = self.shared.registrations.lock().map_err(|_| Error::Runtime("registration store poisoned".into()))?.add_trigger(
            &id,
            &binding.input.trigger_type,
            &binding.input.function_id,
            binding.input.config,
            binding.input.metadata.map(Value::Object),
            namespace,
            binding.trigger_namespace,
        )?;
        self.send(Command::Send(frame));
        Ok(Trigger { id, client: self.clone() })
    }

    /// Provides a trigger type (sdk.md §5, protocol.md §8.3): bindings the engine delivers go to
    /// its handler. Registering the same type again replaces the handler.
    ///
    /// # Panics
    /// On a blank or malformed id or namespace; [`Svc::try_register_trigger_type`] returns errors instead.
    pub fn register_trigger_type(&self, trigger_type: RegisterTriggerType) -> TriggerTypeRef {
        let id = trigger_type.id.clone();
        match self.try_register_trigger_type(trigger_type) {
            Ok(t) => t,
            Err(e) => panic!("register_trigger_type({id:?}): {e}"),
        }
    }

    /// [`Svc::register_trigger_type`] returning errors instead of panicking.
    pub fn try_register_trigger_type(&self, t: RegisterTriggerType) -> Result<TriggerTypeRef, Error> {
        let mut store = self.shared.registrations.lock().map_err(|_| Error::Runtime("registration store poisoned".into()))?;
        let key = crate::registrations::trigger_type_key(t.namespace.as_deref().or(self.shared.namespace.as_deref()).unwrap_or("default"), &t.id);
        let replaced = store.trigger_types.get(&key).map(|old| old.generation);
        let (frame, key, generation) = store.add_trigger_type(
            &t.id,
            &t.description,
            t.trigger_request_format,
            t.call_request_format,
            t.namespace.clone(),
            t.handler,
            self.shared.namespace.as_deref(),
        )?;
        drop(store);
        if let Some(old) = replaced {
            self.send(Command::ReleaseBindings { key: key.clone(), generation: old });
        }
        self.send(Command::Send(frame));
        Ok(TriggerTypeRef { id: t.id, namespace: t.namespace, key, generation, client: self.clone() })
    }

    /// Stops providing trigger type `id` in `namespace` (default: the worker's).
    pub fn unregister_trigger_type(&self, id: &str, namespace: Option<&str>) {
        let key = crate::registrations::trigger_type_key(namespace.or(self.shared.namespace.as_deref()).unwrap_or("default"), id);
        let generation = self.shared.registrations.lock().ok().and_then(|s| s.trigger_types.get(&key).map(|t| t.generation));
        if let Some(generation) = generation {
            self.unregister_trigger_type_entry(&key, generation);
        }
    }

    fn unregister_trigger_type_entry(&self, key: &str, generation: u64) {
        let removed = {
            let Ok(mut store) = self.shared.registrations.lock() else { return };
            match store.trigger_types.get(key) {
                Some(t) if t.generation == generation => store.trigger_types.remove(key),
                _ => None,
            }
        };
        if let Some(t) = removed {
            self.send(Command::ReleaseBindings { key: key.to_string(), generation });
            let mut frame = serde_json::json!({ "type": "unregistertriggertype", "id": t.id });
            if let Some(ns) = t.namespace {
                frame["namespace"] = Value::String(ns);
            }
            self.send(Command::Send(frame.to_string()));
        }
    }

    /// Invokes a function (sdk.md §6) and returns its result as JSON (`null` when it returned
    /// nothing). Void calls resolve at once with `null`; enqueue calls with
    /// `{"messageReceiptId": …}` (see [`crate::EnqueueResult`]).
    ///
    /// While the client is not connected, calls are queued and sent after the next open (their
    /// timeouts keep running). The caller's active OpenTelemetry context is injected.
    ///
    /// Cancellation (docs/reference/protocol.md "cancelinvocation"): dropping the returned future
    /// before it completes (a `select!` that took another branch, `tokio::time::timeout`, an
    /// aborted task) cancels the call: the engine is sent `cancelinvocation` so the worker running
    /// it is told to stop, and its late answer is dropped (a call still queued is dropped unsent).
    /// The call's own timeout cancels it the same way and ends with [`Error::Timeout`]. Inside a
    /// handler, the call is cancelled with the handler's own invocation ([`HandlerContext`]): it
    /// ends with `cancelled` then, and fails so at once, unsent, when the handler already is.
    ///
    /// ```no_run
    /// # async fn run(client: svc_sdk::Svc) -> Result<(), svc_sdk::Error> {
    /// use std::time::Duration;
    /// use svc_sdk::TriggerRequest;
    /// let request = TriggerRequest { function_id: "report::build".into(), payload: serde_json::json!({}), action: None, timeout_ms: None };
    /// // Gives up after 5 s: the worker building the report is told to stop.
    /// if tokio::time::timeout(Duration::from_secs(5), client.trigger(request)).await.is_err() {
    ///     eprintln!("no report within 5 s");
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// ```no_run
    /// # async fn run(client: svc_sdk::Svc) -> Result<(), svc_sdk::Error> {
    /// use svc_sdk::{Error, TriggerRequest};
    /// let request = TriggerRequest { function_id: "math::add".into(), payload: serde_json::json!({"a": 1, "b": 2}), action: None, timeout_ms: Some(2000) };
    /// match client.trigger(request).await {
    ///     Ok(sum) => println!("{sum}"),
    ///     Err(Error::Timeout) => eprintln!("no answer within 2 s"),
    ///     Err(e) if e.code() == "function_not_found" => eprintln!("nobody serves math::add"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Timeout`]; [`Error::NotConnected`] in state `failed` or after shutdown;
    /// [`Error::Remote`] with the remote code, or `cancelled` (`Invocation cancelled: <reason>`,
    /// the handler making the call was cancelled), `invocation_stopped` (the connection dropped
    /// after the call was sent), `SHUTDOWN`, `INVALID_ID`, `INVALID_NAMESPACE`,
    /// `INVALID_ARGUMENTS`; [`Error::Serde`] for a payload JSON cannot encode.
    pub async fn trigger<P: Serialize>(&self, request: impl Into<TriggerCall<P>>) -> Result<Value, Error> {
        match self.call_and_wait(request.into()).await? {
            Some(raw) => Ok(serde_json::from_str(raw.get())?),
            None => Ok(Value::Null),
        }
    }

    /// [`Svc::trigger`] whose result is read as `O` (channel refs in it become live ends).
    pub async fn trigger_as<O: DeserializeOwned, P: Serialize>(&self, request: impl Into<TriggerCall<P>>) -> Result<O, Error> {
        let outcome = self.call_and_wait(request.into()).await?;
        let text = outcome.as_deref().map(|r| r.get()).unwrap_or("null");
        with_channel_base(self.shared.address(), || serde_json::from_str(text).map_err(Error::from))
    }

    /// Makes the call and waits for its outcome, cancelling it when this future is dropped first
    /// or when the handler that makes it is cancelled (issue 21).
    async fn call_and_wait<P: Serialize>(&self, call: TriggerCall<P>) -> Result<Option<Box<serde_json::value::RawValue>>, Error> {
        let run = HandlerContext::current();
        let Some((id, rx)) = self.call(call, run.as_ref())? else { return Ok(None) };
        let mut guard = CancelOnDrop { tx: self.handle.tx.clone(), id: Some(id), run: run.clone() };
        let outcome = match &run {
            None => rx.await,
            Some(run) => {
                let mut rx = rx;
                tokio::select! {
                    biased;
                    outcome = &mut rx => outcome,
                    _ = run.cancelled() => {
                        // The handler was cancelled: so is its call (the session answers it `cancelled`).
                        guard.fire();
                        rx.await
                    }
                }
            }
        };
        guard.id = None;
        match outcome {
            Ok(outcome) => outcome,
            Err(_) => Err(Error::NotConnected),
        }
    }

    fn call<P: Serialize>(&self, call: TriggerCall<P>, run: Option<&HandlerContext>) -> Result<Option<(String, oneshot::Receiver<crate::calls::CallOutcome>)>, Error> {
        let request = call.request;
        if self.shared.terminal.load(Ordering::SeqCst) {
            return Err(Error::NotConnected);
        }
        let void = matches!(request.action, Some(TriggerAction::Void));
        if let (false, Some(run)) = (void, run) {
            if run.is_cancelled() {
                // Made by a handler already cancelled: it fails at once, unsent.
                return Err(crate::handler_context::cancelled_error(run.reason()));
            }
        }
        let namespace = call.namespace.or_else(|| self.default_namespace(&request.function_id));
        request_problem(&request.function_id, namespace.as_deref())?;
        let data = serde_json::to_string(&request.payload)?;
        let metadata = call.metadata.map(|m| m.to_string());
        let (traceparent, baggage) = if self.shared.telemetry { (otel::inject_traceparent(), otel::inject_baggage()) } else { (None, None) };
        let action = request.action.as_ref().map(serde_json::to_string).transpose()?;
        let id = if void { None } else { Some(self.shared.next_invocation_id()) };
        let frame = crate::codec::encode_invoke(
            id.as_deref(),
            &request.function_id,
            &data,
            metadata.as_deref(),
            action.as_deref(),
            namespace.as_deref(),
            traceparent.as_deref(),
            baggage.as_deref(),
        );
        match id {
            None => {
                self.send(Command::Void(frame));
                Ok(None)
            }
            Some(id) => {
                let (reply, rx) = oneshot::channel();
                let timeout_ms = request.timeout_ms.unwrap_or(self.shared.timeout_ms);
                if self.handle.tx.send(Command::Call { id: id.clone(), frame, timeout_ms, reply }).is_err() {
                    return Err(Error::NotConnected);
                }
                Ok(Some((id, rx)))
            }
        }
    }

    /// The current connection state.
    pub fn get_connection_state(&self) -> ConnectionState {
        self.shared.state.lock().map(|s| s.0).unwrap_or(ConnectionState::Failed)
    }

    /// Calls `listener` now with the current state, then on every change, until the guard's
    /// `remove()`. Listeners run on the connection thread: keep them short.
    pub fn add_connection_state_listener(&self, listener: impl Fn(ConnectionState) + Send + Sync + 'static) -> ListenerGuard {
        let listener: StateListener = Arc::new(listener);
        let (id, current) = {
            let Ok(mut s) = self.shared.state.lock() else { return ListenerGuard { remove: None } };
            s.2 += 1;
            let id = s.2;
            s.1.push((id, listener.clone()));
            (id, s.0)
        };
        listener(current);
        let shared = self.shared.clone();
        ListenerGuard {
            remove: Some(Box::new(move || {
                if let Ok(mut s) = shared.state.lock() {
                    s.1.retain(|(i, _)| *i != id);
                }
            })),
        }
    }

    /// Calls `listener` with every non-fatal registration refusal (sdk.md §7.3).
    pub fn add_registration_error_listener(&self, listener: impl Fn(&RegistrationError) + Send + Sync + 'static) -> ListenerGuard {
        let id = uuid::Uuid::new_v4().as_u128() as u64;
        if let Ok(mut l) = self.shared.registration_listeners.lock() {
            l.push((id, Arc::new(listener)));
        }
        let shared = self.shared.clone();
        ListenerGuard {
            remove: Some(Box::new(move || {
                if let Ok(mut l) = shared.registration_listeners.lock() {
                    l.retain(|(i, _)| *i != id);
                }
            })),
        }
    }

    /// The worker id from the latest `workerregistered`.
    pub fn get_worker_id(&self) -> Option<String> {
        self.shared.worker_id.lock().ok().and_then(|w| w.clone())
    }

    /// The engine address the client is connected to; while it is not, the one it tries next (one
    /// of [`Svc::addresses`], issue 19 §3). As given, credentials included: show it through
    /// [`crate::display_address`].
    pub fn address(&self) -> &str {
        self.shared.address()
    }

    /// Every engine address of the client, in the order they are tried.
    pub fn addresses(&self) -> &[String] {
        &self.shared.addresses
    }

    /// The worker's namespace.
    pub fn namespace(&self) -> Option<&str> {
        self.shared.namespace.as_deref()
    }

    /// The fatal error in `failed`, else the last connection-level error.
    pub fn get_last_error(&self) -> Option<Error> {
        self.shared.last_error.lock().ok().and_then(|e| e.clone())
    }

    /// Stops reconnecting, rejects pending calls with `SHUTDOWN`, closes with code 1000, flushes
    /// telemetry inside the connection thread (and shuts the pipeline down when no other client
    /// is alive), then returns. Idempotent. Blocks the calling thread (at most a few seconds);
    /// from async code use [`Svc::shutdown_async`].
    ///
    /// # Panics
    /// Never; called from a handler (on the connection thread itself) it only asks the session to
    /// stop and returns without waiting.
    pub fn shutdown(&self) {
        let (done, wait) = std::sync::mpsc::channel();
        if self.handle.tx.send(Command::Shutdown(Done::Blocking(done))).is_err() {
            return;
        }
        let own_thread = self.shared.thread.lock().ok().and_then(|t| t.as_ref().map(|(id, _)| *id)) == Some(std::thread::current().id());
        if own_thread {
            return;
        }
        let _ = wait.recv();
        let thread = self.shared.thread.lock().ok().and_then(|mut t| t.take());
        if let Some((_, handle)) = thread {
            let _ = handle.join();
        }
    }

    /// [`Svc::shutdown`] for async code: resolves when the connection is closed and telemetry flushed.
    pub async fn shutdown_async(&self) {
        let (done, wait) = oneshot::channel();
        if self.handle.tx.send(Command::Shutdown(Done::Async(done))).is_ok() {
            let _ = wait.await;
        }
    }
}
