//! The session: one worker connection with the engine and its state machine (sdk.md §8;
//! `ClientSession` of the client core). It runs as one task on the client's connection thread and
//! owns the call table ([`CallTable`]), the provider bindings ([`ProviderBindings`]), the
//! keepalive ([`Heartbeat`]: pings every 20000 ms, reconnect after 60000 ms without any inbound frame) and the
//! reconnection with backoff; the registration store lives in [`Shared`] so that registering is
//! synchronous.
//!
//! On every open it sends, in the order of protocol.md §3.1: `reattach` (when it holds a worker
//! id), the announce, the replay (trigger types, functions, triggers), then calls queued while
//! disconnected. Every `invokefunction` is answered (protocol.md §5.8); handlers run as their own
//! tasks while the session keeps reading.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{FutureExt, SinkExt, StreamExt};
use opentelemetry::trace::FutureExt as _;
use serde_json::value::RawValue;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{sleep_until, Instant};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::addresses::AddressRotation;
use crate::bindings::ProviderBindings;
use crate::calls::{CallOutcome, CallTable};
use crate::client::{ConnectionState, RegistrationError, RegistrationKind, Shared};
use crate::codec::{self, EngineFrame, InboundBinding, InboundInvoke};
use crate::error::{codes, Error, ErrorBody};
use crate::function::{ErasedHandler, HandlerOutput};
use crate::handler_context::{cancelled_error, HandlerContext};
use crate::handler_span::{self, SpanSettings};
use crate::heartbeat::{Beat, Heartbeat};
use crate::trigger::TriggerConfig;

/// Fixed durations of sdk.md §8 / protocol.md §3.3.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timings {
    pub(crate) handshake: Duration,
    pub(crate) ping_interval: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) close_timeout: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Self {
            handshake: Duration::from_millis(10000),
            ping_interval: Duration::from_millis(20000),
            idle_timeout: Duration::from_millis(60000),
            close_timeout: Duration::from_millis(2000),
        }
    }
}

/// How a waiter of `shutdown` is told it finished.
pub(crate) enum Done {
    Blocking(std::sync::mpsc::Sender<()>),
    Async(oneshot::Sender<()>),
}

impl Done {
    fn send(self) {
        match self {
            Done::Blocking(tx) => {
                let _ = tx.send(());
            }
            Done::Async(tx) => {
                let _ = tx.send(());
            }
        }
    }
}

/// What the client handle asks of the session.
pub(crate) enum Command {
    /// A synchronous or enqueue call.
    Call { id: String, frame: String, timeout_ms: u64, reply: oneshot::Sender<CallOutcome> },
    /// A void call: sent now, or queued until the next open.
    Void(String),
    /// Cancel a synchronous or enqueue call of this client: it ends with `cancelled` now, and
    /// the engine is sent `cancelinvocation` when it has the call (issue 21).
    Cancel { id: String, reason: Option<String> },
    /// A registration frame: sent only when connected (the store replays it on every open).
    Send(String),
    /// Let go of the bindings of a trigger type registration (replaced or unregistered).
    ReleaseBindings { key: String, generation: u64 },
    /// Stop: reject pending calls with `SHUTDOWN`, close with 1000, flush telemetry.
    Shutdown(Done),
}

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

pub(crate) struct SessionConfig {
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) announce_frame: String,
    /// The announce carries `handler_spans` (docs/reference/protocol.md "Handler spans recorded by the engine").
    pub(crate) announces_spans: bool,
    pub(crate) timings: Timings,
    pub(crate) telemetry: bool,
}

pub(crate) struct Session {
    shared: Arc<Shared>,
    rx: mpsc::UnboundedReceiver<Command>,
    config: SessionConfig,
    calls: CallTable,
    bindings: ProviderBindings,
    retries: u32,
    /// Steps through `Shared::addresses` (issue 19 §3).
    rotation: AddressRotation,
    /// The address of the last connection that opened, for the failover log line.
    opened: Option<usize>,
    reattach: Option<(String, String)>,
    out: Option<mpsc::UnboundedSender<Message>>,
    /// Set by a fatal `registrationrejected`.
    fatal: Option<Error>,
    spans: SpanSettings,
    /// This connection's engine records the handler spans handed to it (set by `workerregistered`).
    engine_records_spans: bool,
    /// Handlers running, by the invocation id the engine sent (what its `cancelinvocation` names).
    running: Running,
}

/// The handlers running; a handler's task takes itself out when it ends.
type Running = Arc<Mutex<HashMap<String, HandlerContext>>>;

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(t) => sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Writes outbound frames in order, coalescing what is ready into one flush.
async fn write_loop(mut sink: futures_util::stream::SplitSink<Ws, Message>, mut rx: mpsc::UnboundedReceiver<Message>) {
    while let Some(msg) = rx.recv().await {
        let mut close = matches!(msg, Message::Close(_));
        if sink.feed(msg).await.is_err() {
            return;
        }
        while !close {
            match rx.try_recv() {
                Ok(msg) => {
                    close = matches!(msg, Message::Close(_));
                    if sink.feed(msg).await.is_err() {
                        return;
                    }
                }
                Err(_) => break,
            }
        }
        if sink.flush().await.is_err() || close {
            return;
        }
    }
}

/// Bytes tungstenite makes room for (and zeroes) before each socket read: calls and answers are
/// small, and a 128 KiB default costs a 128 KiB memset per read. Channel ends read 64 KiB frames.
pub(crate) const READ_BUFFER_BYTES: usize = 16 * 1024;

/// Largest message (and frame) taken from the engine: its default `max_message_bytes` (protocol.md
/// §2). tungstenite's own frame limit (16 MiB) would drop the connection on a larger result.
pub(crate) const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

fn socket_config(read_buffer: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(read_buffer)
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES))
}

pub(crate) async fn connect(address: &str, headers: &[(String, String)], handshake: Duration) -> Result<Ws, Error> {
    connect_with(address, headers, handshake, READ_BUFFER_BYTES).await
}

pub(crate) async fn connect_with(address: &str, headers: &[(String, String)], handshake: Duration, read_buffer: usize) -> Result<Ws, Error> {
    let mut request = address.into_client_request().map_err(|e| Error::WebSocket(e.to_string()))?;
    for (name, value) in headers {
        let name = HeaderName::try_from(name.as_str()).map_err(|e| Error::Runtime(format!("invalid header name {name:?}: {e}")))?;
        let value = HeaderValue::from_str(value).map_err(|e| Error::Runtime(format!("invalid header value: {e}")))?;
        request.headers_mut().insert(name, value);
    }
    // Nagle off, as Node's ws does: small frames (calls, answers) leave at once.
    match tokio::time::timeout(handshake, tokio_tungstenite::connect_async_with_config(request, Some(socket_config(read_buffer)), true)).await {
        Ok(Ok((ws, _))) => Ok(ws),
        Ok(Err(e)) => Err(Error::WebSocket(e.to_string())),
        Err(_) => Err(Error::Remote {
            code: codes::TIMEOUT.into(),
            message: format!("opening handshake did not complete within {}ms", handshake.as_millis()),
            stacktrace: None,
        }),
    }
}

fn shutdown_error() -> Error {
    Error::Remote { code: codes::SHUTDOWN.into(), message: "worker is shutting down".into(), stacktrace: None }
}

impl Session {
    pub(crate) fn new(shared: Arc<Shared>, rx: mpsc::UnboundedReceiver<Command>, config: SessionConfig) -> Self {
        let rotation = AddressRotation::new(shared.addresses.len());
        Self {
            shared,
            rx,
            config,
            calls: CallTable::default(),
            bindings: ProviderBindings::default(),
            retries: 0,
            rotation,
            opened: None,
            reattach: None,
            out: None,
            fatal: None,
            spans: SpanSettings::from_env(),
            engine_records_spans: false,
            running: Running::default(),
        }
    }

    /// Runs until shutdown, or until every client handle is dropped.
    pub(crate) async fn run(mut self) {
        loop {
            self.set_state(ConnectionState::Connecting);
            let index = self.shared.current.load(Ordering::SeqCst);
            let address = self.shared.address().to_string();
            // Channel refs deserialized on this thread connect to the engine the session is on.
            crate::client::CHANNEL_BASE.with(|b| *b.borrow_mut() = Some(address.clone()));
            let headers = self.config.headers.clone();
            let handshake = self.config.timings.handshake;
            let target = address.clone();
            let connecting = async move { connect(&target, &headers, handshake).await };
            tokio::pin!(connecting);
            let opened = loop {
                tokio::select! {
                    r = &mut connecting => break Some(r),
                    cmd = self.rx.recv() => if !self.offline_command(cmd) { break None },
                    _ = sleep_until_opt(self.calls.next_deadline()) => self.expire(),
                }
            };
            match opened {
                None => return,
                Some(Ok(ws)) => {
                    self.retries = 0;
                    let count = self.shared.addresses.len();
                    if count > 1 && self.opened != Some(index) && (self.opened.is_some() || index != 0) {
                        eprintln!("[svc] connected to {} (engine address {} of {count})", crate::display_address(&address), index + 1);
                    }
                    self.opened = Some(index);
                    if !self.online(ws).await {
                        return;
                    }
                }
                Some(Err(e)) => self.shared.set_last_error(e),
            }
            if self.fatal.take().is_some() {
                return self.serve_failed().await;
            }
            // The next attempt goes to the next address: at once, or after the backoff once every
            // address had its turn (every attempt with one address, sdk.md §2).
            let (next, round) = self.rotation.advance(index);
            self.shared.current.store(next, Ordering::SeqCst);
            if !round {
                self.set_state(ConnectionState::Reconnecting);
                continue;
            }
            let reconnection = self.shared.reconnection;
            if reconnection.max_retries >= 0 && i64::from(self.retries) >= reconnection.max_retries {
                self.fail(Error::NotConnected);
                return self.serve_failed().await;
            }
            let delay = svc_helpers::backoff_delay(self.retries, &reconnection, svc_helpers::reconnect::random_unit());
            self.retries = self.retries.saturating_add(1);
            self.set_state(ConnectionState::Reconnecting);
            let wake = Instant::now() + Duration::from_millis(delay);
            loop {
                tokio::select! {
                    _ = sleep_until(wake) => break,
                    cmd = self.rx.recv() => if !self.offline_command(cmd) { return },
                    _ = sleep_until_opt(self.calls.next_deadline()) => self.expire(),
                }
            }
        }
    }

    /// Enters the terminal `failed` state (sdk.md §8).
    fn fail(&mut self, error: Error) {
        self.shared.terminal.store(true, Ordering::SeqCst);
        match &error {
            Error::NotConnected => self.calls.fail_all(|| Error::NotConnected),
            other => {
                self.shared.set_last_error(other.clone());
                let e = other.clone();
                self.calls.fail_all(move || e.clone());
            }
        }
        self.bindings.release_all(None);
        self.set_state(ConnectionState::Failed);
    }

    /// After `failed`: answer every command until shutdown or until the handles are gone.
    async fn serve_failed(&mut self) {
        while let Some(cmd) = self.rx.recv().await {
            match cmd {
                Command::Call { reply, .. } => {
                    let _ = reply.send(Err(Error::NotConnected));
                }
                Command::Shutdown(done) => {
                    self.finish_shutdown();
                    done.send();
                    return;
                }
                _ => {}
            }
        }
        // Every handle is gone.
        self.finish_shutdown();
    }

    fn finish_shutdown(&mut self) {
        self.shared.terminal.store(true, Ordering::SeqCst);
        self.calls.fail_all(shutdown_error);
        self.bindings.release_all(None);
        self.set_state(ConnectionState::Disconnected);
        if self.config.telemetry {
            crate::client::release_telemetry();
        }
    }

    /// A command while not connected; false when the session ends.
    fn offline_command(&mut self, cmd: Option<Command>) -> bool {
        match cmd {
            None => {
                self.finish_shutdown();
                false
            }
            Some(Command::Call { id, frame, timeout_ms, reply }) => {
                self.calls.open(id, frame, Instant::now(), timeout_ms, reply, false);
                true
            }
            Some(Command::Void(frame)) => {
                self.calls.queue_void(frame);
                true
            }
            Some(Command::Cancel { id, reason }) => {
                self.cancel_call(&id, reason.as_deref());
                true
            }
            Some(Command::Send(_)) => true,
            Some(Command::ReleaseBindings { key, generation }) => {
                self.bindings.release_all(Some((&key, generation)));
                true
            }
            Some(Command::Shutdown(done)) => {
                self.finish_shutdown();
                done.send();
                false
            }
        }
    }

    fn send(&self, msg: Message) {
        if let Some(out) = &self.out {
            let _ = out.send(msg);
        }
    }

    /// Ends the calls whose deadline passed with `TIMEOUT`; those the engine has are cancelled
    /// there too (their worker need not run on for nobody).
    fn expire(&mut self) {
        for (id, timeout_ms) in self.calls.expire(Instant::now()) {
            self.send(Message::text(codec::encode_cancel(&id, Some(&format!("timed out after {timeout_ms}ms")))));
        }
    }

    /// Cancels a call of this client (a dropped `trigger` future, a cancelled handler's call).
    fn cancel_call(&mut self, id: &str, reason: Option<&str>) {
        let reason = crate::handler_context::bound_reason(reason);
        if self.calls.cancel(id, cancelled_error(reason.as_deref())) == Some(true) {
            self.send(Message::text(codec::encode_cancel(id, reason.as_deref())));
        }
    }

    /// The engine cancelled a call this worker runs: its handler is told (an async one is
    /// dropped), and its answer is not sent.
    fn cancel_running(&mut self, invocation_id: &str, reason: Option<&str>) {
        let run = self.running.lock().ok().and_then(|mut running| running.remove(invocation_id));
        if let Some(run) = run {
            run.cancel(reason);
        }
    }

    /// Serves one open connection; false when the session ends (shutdown).
    async fn online(&mut self, ws: Ws) -> bool {
        let (sink, mut stream) = ws.split();
        let (out_tx, out_rx) = mpsc::unbounded_channel::<Message>();
        let writer = tokio::spawn(write_loop(sink, out_rx));
        self.out = Some(out_tx);
        self.engine_records_spans = false;
        if let Some((worker_id, token)) = &self.reattach {
            let frame = serde_json::json!({ "type": "reattach", "previous_worker_id": worker_id, "reattach_token": token });
            self.send(Message::text(frame.to_string()));
        }
        self.send(Message::text(self.config.announce_frame.clone()));
        let replay = self.shared.registrations.lock().map(|store| store.replay()).unwrap_or_default();
        for frame in replay {
            self.send(Message::text(frame));
        }
        for frame in self.calls.drain_queue() {
            self.send(Message::text(frame));
        }
        self.set_state(ConnectionState::Connected);

        let timings = self.config.timings;
        let mut heartbeat = Heartbeat::track(timings.ping_interval, timings.idle_timeout);
        let mut keep_running = true;
        loop {
            tokio::select! {
                msg = stream.next() => match msg {
                    Some(Ok(Message::Text(text))) => {
                        heartbeat.heard();
                        self.on_frame(text.as_bytes());
                        if self.fatal.is_some() { break }
                    }
                    Some(Ok(Message::Binary(data))) => {
                        heartbeat.heard();
                        self.on_frame(&data);
                        if self.fatal.is_some() { break }
                    }
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => heartbeat.heard(),
                },
                cmd = self.rx.recv() => match cmd {
                    Some(Command::Call { id, frame, timeout_ms, reply }) => {
                        if let Some(frame) = self.calls.open(id, frame, Instant::now(), timeout_ms, reply, true) {
                            self.send(Message::text(frame));
                        }
                    }
                    Some(Command::Cancel { id, reason }) => self.cancel_call(&id, reason.as_deref()),
                    Some(Command::Void(frame)) | Some(Command::Send(frame)) => self.send(Message::text(frame)),
                    Some(Command::ReleaseBindings { key, generation }) => self.bindings.release_all(Some((&key, generation))),
                    Some(Command::Shutdown(done)) => {
                        self.close(&mut stream).await;
                        self.finish_shutdown();
                        done.send();
                        keep_running = false;
                        break;
                    }
                    None => {
                        self.close(&mut stream).await;
                        self.finish_shutdown();
                        keep_running = false;
                        break;
                    }
                },
                _ = sleep_until_opt(self.calls.next_deadline()) => self.expire(),
                beat = heartbeat.next() => match beat {
                    Beat::Ping => self.send(Message::Ping(Vec::new().into())),
                    Beat::Idle => {
                        self.shared.set_last_error(Error::Remote {
                            code: codes::TIMEOUT.into(),
                            message: format!("no frame from the engine for {}ms; reconnecting", timings.idle_timeout.as_millis()),
                            stacktrace: None,
                        });
                        break;
                    }
                },
            }
        }
        if let Some(error) = self.fatal.clone() {
            // Fatal refusal (protocol.md §5.11): every pending call fails with it; no reconnecting.
            self.close(&mut stream).await;
            self.fail(error);
        }
        self.out = None;
        writer.abort();
        self.calls.fail_sent();
        // Handlers of that connection cannot answer any more (the engine ended their calls).
        let runs: Vec<HandlerContext> = self.running.lock().map(|mut running| running.drain().map(|(_, run)| run).collect()).unwrap_or_default();
        for run in runs {
            run.cancel(Some("connection to the engine was lost"));
        }
        // The engine moved our bindings elsewhere or parked them (protocol.md §3.6 step 5).
        self.bindings.release_all(None);
        keep_running
    }

    /// Closes with 1000 and waits (at most `close_timeout`) for the engine's close.
    async fn close(&mut self, stream: &mut futures_util::stream::SplitStream<Ws>) {
        self.send(Message::Close(Some(CloseFrame { code: CloseCode::Normal, reason: "".into() })));
        let _ = tokio::time::timeout(self.config.timings.close_timeout, async {
            while let Some(Ok(msg)) = stream.next().await {
                if matches!(msg, Message::Close(_)) {
                    break;
                }
            }
        })
        .await;
    }

    fn set_state(&self, state: ConnectionState) {
        self.shared.set_state(state);
    }

    // ------------------------------------------------------------ inbound frames

    fn on_frame(&mut self, data: &[u8]) {
        let Some(frame) = codec::decode_engine_frame(data) else { return };
        match frame {
            EngineFrame::Invoke(call) => self.on_invoke(call),
            EngineFrame::MalformedInvoke { invocation_id, function_id, reason } => {
                let body = ErrorBody { code: codes::INVALID_MESSAGE.into(), message: format!("Invalid message: {reason}"), stacktrace: None };
                self.send(Message::text(codec::encode_result(&invocation_id, &function_id, None, Some(&body), None, None, None)));
            }
            EngineFrame::Result(result) => {
                let outcome = match result.error {
                    Some(body) => Err(Error::from_body(body)),
                    None => Ok(result.result),
                };
                self.calls.settle(&result.invocation_id, outcome);
            }
            EngineFrame::WorkerRegistered { worker_id, reattach_token, features } => {
                self.rotation.settle();
                self.engine_records_spans = self.config.announces_spans && features.iter().any(|f| f == "handler_spans");
                if let Ok(mut id) = self.shared.worker_id.lock() {
                    *id = Some(worker_id.clone());
                }
                self.reattach = Some((worker_id, reattach_token));
            }
            EngineFrame::RegisterTrigger(binding) => self.on_deliver_binding(binding),
            EngineFrame::UnregisterTrigger { id } => self.bindings.remove(&id),
            EngineFrame::TriggerFailed { id, trigger_type, function_id, error } => {
                let namespace = self.shared.registrations.lock().ok().and_then(|s| s.triggers.get(&id).and_then(|t| t.namespace.clone()));
                self.shared.report_registration_error(RegistrationError {
                    kind: RegistrationKind::Trigger,
                    id,
                    code: error.code,
                    reason: None,
                    message: error.message,
                    namespace,
                    trigger_type: Some(trigger_type),
                    function_id: Some(function_id),
                });
            }
            EngineFrame::RegistrationRejected(r) => {
                if r.code != codes::FUNCTION_NAMESPACE_CONFLICT {
                    // Any other code is fatal (protocol.md §5.11); svc engines never send one.
                    self.fatal = Some(Error::Remote { code: r.code, message: r.message, stacktrace: None });
                    return;
                }
                let is_type = r.function_id.is_none() && r.trigger_type_id.is_some();
                self.shared.report_registration_error(RegistrationError {
                    kind: if is_type { RegistrationKind::TriggerType } else { RegistrationKind::Function },
                    id: if is_type { r.trigger_type_id.clone() } else { r.function_id.clone() }.unwrap_or_default(),
                    code: r.code,
                    reason: r.reason,
                    message: r.message,
                    namespace: r.namespace,
                    trigger_type: None,
                    function_id: r.function_id,
                });
            }
            EngineFrame::Ping => self.send(Message::text("{\"type\":\"pong\"}")),
            EngineFrame::Pong => {}
            EngineFrame::AuthError(body) => {
                self.shared.set_last_error(Error::Remote { code: body.code, message: body.message, stacktrace: None });
            }
            EngineFrame::Cancel { invocation_id, reason } => self.cancel_running(&invocation_id, reason.as_deref()),
        }
    }

    fn on_deliver_binding(&mut self, binding: InboundBinding) {
        let out = self.out.clone();
        let (id, trigger_type, function_id) = (binding.id.clone(), binding.trigger_type.clone(), binding.function_id.clone());
        let answer = move |error: Option<ErrorBody>| {
            if let Some(out) = out {
                let _ = out.send(Message::text(codec::encode_trigger_result(&id, &trigger_type, &function_id, error.as_ref())));
            }
        };
        let found = self.shared.registrations.lock().ok().and_then(|store| {
            store.find_trigger_type(&binding.trigger_type, binding.trigger_namespace.as_deref()).map(|t| (t.key.clone(), t.generation, t.handler.clone()))
        });
        let Some((key, generation, handler)) = found else {
            answer(Some(ErrorBody { code: codes::TRIGGER_TYPE_NOT_FOUND.into(), message: "Trigger type not found".into(), stacktrace: None }));
            return;
        };
        let config = TriggerConfig {
            id: binding.id,
            function_id: binding.function_id,
            config: binding.config,
            metadata: binding.metadata,
            // Explicit `default` so the provider's `trigger` does not fill in its own namespace instead.
            namespace: Some(binding.namespace.unwrap_or_else(|| "default".into())),
        };
        self.bindings.deliver(config, key, generation, handler, answer);
    }

    fn on_invoke(&mut self, call: InboundInvoke) {
        let found = self.shared.registrations.lock().ok().map(|store| store.functions.get(&call.function_id).map(|f| f.handler.clone()));
        let handler = match found.flatten() {
            Some(Some(handler)) => handler,
            Some(None) => {
                let message = format!("Function {} is HTTP-invoked and cannot be invoked locally", call.function_id);
                return self.answer_now(&call, ErrorBody { code: codes::FUNCTION_NOT_INVOKABLE.into(), message, stacktrace: None });
            }
            None => {
                let message = format!("Function {} not found", call.function_id);
                return self.answer_now(&call, ErrorBody { code: codes::FUNCTION_NOT_FOUND.into(), message, stacktrace: None });
            }
        };
        let scope = if self.config.telemetry {
            handler_span::start(&call.function_id, &call.data, call.traceparent.as_deref(), call.baggage.as_deref(), self.spans, self.engine_records_spans)
        } else {
            None
        };
        let metadata: Option<serde_json::Value> = call.metadata.as_deref().and_then(|m| serde_json::from_str(m.get()).ok());
        // A void call from an engine that sends no id cannot be cancelled; its run is not listed.
        let run = HandlerContext::new(call.invocation_id.clone().unwrap_or_default(), call.function_id.clone());
        if let (Some(id), Ok(mut running)) = (&call.invocation_id, self.running.lock()) {
            running.insert(id.clone(), run.clone());
        }
        let reply = Reply {
            out: self.out.clone(),
            invocation_id: call.invocation_id,
            function_id: call.function_id,
            spans: self.spans,
            engine_records_spans: self.engine_records_spans,
            run: run.clone(),
            running: self.running.clone(),
        };
        let cx = scope.as_ref().map(|s| s.cx.clone());
        let prepared = {
            let _guard = cx.clone().map(|c| c.attach());
            run.enter(|| prepare(&handler, &call.data, metadata))
        };
        match prepared {
            Prepared::Failed(body) => reply.send(Err(body), scope),
            Prepared::Async(fut) => {
                let task = AssertUnwindSafe(fut).catch_unwind().map(|r| r.unwrap_or_else(|panic| Err(panic_body(panic))));
                // Cancelled: the handler's future is dropped where it waits (its calls' drop
                // guards cancel them); the handler's context stays current for the calls it makes.
                let cancelled = run.clone();
                let task = run.scope(async move {
                    tokio::select! {
                        biased;
                        _ = cancelled.cancelled() => Err(cancelled_error(cancelled.reason()).to_body()),
                        out = task => out,
                    }
                });
                match cx {
                    Some(cx) => {
                        tokio::spawn(async move {
                            let out = task.with_context(cx).await;
                            reply.send(out, scope);
                        });
                    }
                    None => {
                        tokio::spawn(async move { reply.send(task.await, None) });
                    }
                }
            }
            Prepared::Blocking(job) => {
                tokio::task::spawn_blocking(move || {
                    let out = {
                        let _guard = cx.clone().map(|c| c.attach());
                        // A blocking handler runs on when cancelled; its context tells it to stop.
                        run.enter(|| std::panic::catch_unwind(AssertUnwindSafe(job)).unwrap_or_else(|panic| Err(panic_body(panic))))
                    };
                    reply.send(out, scope);
                });
            }
        }
    }

    fn answer_now(&self, call: &InboundInvoke, body: ErrorBody) {
        if let Some(id) = &call.invocation_id {
            self.send(Message::text(codec::encode_result(id, &call.function_id, None, Some(&body), None, None, None)));
        }
    }
}

enum Prepared {
    Failed(ErrorBody),
    Async(crate::function::BoxFuture<HandlerOutput>),
    Blocking(Box<dyn FnOnce() -> HandlerOutput + Send>),
}

fn prepare(handler: &ErasedHandler, data: &RawValue, metadata: Option<serde_json::Value>) -> Prepared {
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| match handler {
        ErasedHandler::Async(f) => f(data, metadata).map(Prepared::Async),
        ErasedHandler::Blocking(f) => f(data, metadata).map(Prepared::Blocking),
    }));
    match result {
        Ok(Ok(prepared)) => prepared,
        Ok(Err(body)) => Prepared::Failed(body),
        Err(panic) => Prepared::Failed(panic_body(panic)),
    }
}

fn panic_body(panic: Box<dyn std::any::Any + Send>) -> ErrorBody {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "handler panicked".into());
    ErrorBody {
        code: codes::INVOCATION_FAILED.into(),
        message: format!("handler panicked: {message}"),
        stacktrace: Some(std::backtrace::Backtrace::force_capture().to_string()),
    }
}

/// Where one invocation's answer goes: the connection it arrived on (dropped if that one closed,
/// and when the invocation was cancelled: the engine answered its caller already).
struct Reply {
    out: Option<mpsc::UnboundedSender<Message>>,
    invocation_id: Option<String>,
    function_id: String,
    spans: SpanSettings,
    /// The connection's engine records handler spans (when the call came).
    engine_records_spans: bool,
    run: HandlerContext,
    running: Running,
}

impl Reply {
    fn send(self, out: HandlerOutput, mut scope: Option<handler_span::HandlerScope>) {
        if let (Some(id), Ok(mut running)) = (&self.invocation_id, self.running.lock()) {
            if running.get(id).is_some_and(|r| r.same(&self.run)) {
                running.remove(id);
            }
        }
        let cancelled = self.run.is_cancelled();
        if let (Some(sender), Some(id), false) = (&self.out, &self.invocation_id, cancelled) {
            let (traceparent, baggage) = scope.as_ref().map(handler_span::result_context).unwrap_or((None, None));
            let times = match (&mut scope, self.engine_records_spans && traceparent.is_some()) {
                (Some(scope), true) => handler_span::hand_over(scope),
                _ => None,
            };
            let span = times.as_ref().map(|(start, end)| (start.as_str(), end.as_str()));
            let frame = match &out {
                Ok(result) => codec::encode_result(id, &self.function_id, result.as_deref(), None, traceparent.as_deref(), baggage.as_deref(), span),
                Err(body) => codec::encode_result(id, &self.function_id, None, Some(body), traceparent.as_deref(), baggage.as_deref(), span),
            };
            let _ = sender.send(Message::text(frame));
        }
        if let Some(scope) = &scope {
            handler_span::end(scope, &out, self.spans);
        }
    }
}

