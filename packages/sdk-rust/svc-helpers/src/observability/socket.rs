//! The telemetry socket (protocol.md §10.2): one WebSocket per process to `<worker URL>/otel`,
//! carrying binary frames `OTLP`/`MTRC`/`LOGS` + OTLP/JSON. It runs on its own thread (a
//! single-threaded tokio runtime), reconnects with the backoff of sdk.md §2 and queues at most
//! [`MAX_QUEUED_FRAMES`] frames while disconnected (the oldest are dropped first).

use std::collections::VecDeque;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::Message;

use crate::reconnect::{backoff_delay, random_unit, ReconnectionConfig};

/// Frames kept while the socket is not connected (protocol.md §10.2).
pub const MAX_QUEUED_FRAMES: usize = 1000;

enum Command {
    Frame(Vec<u8>),
    Flush(std_mpsc::Sender<()>),
    Stop(std_mpsc::Sender<()>),
}

/// Handle of the telemetry socket thread. Cheap to clone; sending never blocks.
#[derive(Clone, Debug)]
pub(crate) struct TelemetrySocket {
    tx: mpsc::UnboundedSender<Command>,
}

/// `<worker URL>/otel`, the query string kept (protocol.md §10.2).
pub(crate) fn otel_url(worker_url: &str) -> String {
    let (base, query) = match worker_url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (worker_url, None),
    };
    let mut url = format!("{}/otel", base.trim_end_matches('/'));
    if let Some(q) = query {
        url.push('?');
        url.push_str(q);
    }
    url
}

impl TelemetrySocket {
    /// Starts the socket thread for `worker_url`; `headers` go on the upgrade (for the auth function).
    pub(crate) fn start(worker_url: &str, headers: Vec<(String, String)>, reconnection: ReconnectionConfig) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::unbounded_channel();
        let url = otel_url(worker_url);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        std::thread::Builder::new()
            .name("svc-otel".into())
            .spawn(move || runtime.block_on(run(url, headers, reconnection, rx)))?;
        Ok(Self { tx })
    }

    /// Queues a frame (`prefix` is `OTLP`, `MTRC` or `LOGS`).
    pub(crate) fn send(&self, prefix: &[u8; 4], json: &[u8]) {
        let mut frame = Vec::with_capacity(4 + json.len());
        frame.extend_from_slice(prefix);
        frame.extend_from_slice(json);
        let _ = self.tx.send(Command::Frame(frame));
    }

    /// Waits (at most `timeout`) until every frame queued so far was written, when connected.
    pub(crate) fn flush(&self, timeout: Duration) {
        let (done, wait) = std_mpsc::channel();
        if self.tx.send(Command::Flush(done)).is_ok() {
            let _ = wait.recv_timeout(timeout);
        }
    }

    /// Writes what is queued (when connected), closes the socket and ends the thread (waits at most `timeout`).
    pub(crate) fn stop(&self, timeout: Duration) {
        let (done, wait) = std_mpsc::channel();
        if self.tx.send(Command::Stop(done)).is_ok() {
            let _ = wait.recv_timeout(timeout);
        }
    }
}

fn push_bounded(queue: &mut VecDeque<Vec<u8>>, frame: Vec<u8>) {
    if queue.len() >= MAX_QUEUED_FRAMES {
        queue.pop_front();
    }
    queue.push_back(frame);
}

async fn run(url: String, headers: Vec<(String, String)>, reconnection: ReconnectionConfig, mut rx: mpsc::UnboundedReceiver<Command>) {
    let mut queue: VecDeque<Vec<u8>> = VecDeque::new();
    let mut attempt: u32 = 0;
    loop {
        let request = match url.as_str().into_client_request() {
            Ok(mut request) => {
                for (name, value) in &headers {
                    if let (Ok(n), Ok(v)) = (HeaderName::try_from(name.as_str()), HeaderValue::from_str(value)) {
                        request.headers_mut().insert(n, v);
                    }
                }
                Some(request)
            }
            Err(_) => None,
        };
        let connected = match request {
            Some(request) => tokio::time::timeout(Duration::from_secs(10), tokio_tungstenite::connect_async_with_config(request, None, true)).await.ok().and_then(|r| r.ok()),
            None => None,
        };
        if let Some((ws, _)) = connected {
            attempt = 0;
            let (mut sink, mut stream) = ws.split();
            let mut broken = false;
            while let Some(frame) = queue.pop_front() {
                if sink.send(Message::binary(frame)).await.is_err() {
                    broken = true;
                    break;
                }
            }
            while !broken {
                tokio::select! {
                    cmd = rx.recv() => match cmd {
                        Some(Command::Frame(frame)) => {
                            if sink.send(Message::binary(frame)).await.is_err() {
                                broken = true;
                            }
                        }
                        Some(Command::Flush(done)) => {
                            let _ = sink.flush().await;
                            let _ = done.send(());
                        }
                        Some(Command::Stop(done)) => {
                            let _ = sink.flush().await;
                            let _ = sink.close().await;
                            let _ = done.send(());
                            return;
                        }
                        None => {
                            let _ = sink.close().await;
                            return;
                        }
                    },
                    msg = stream.next() => match msg {
                        Some(Ok(Message::Close(_))) | Some(Err(_)) | None => broken = true,
                        _ => {}
                    },
                }
            }
        }
        // Disconnected: keep queueing (bounded) until the next attempt.
        let delay = backoff_delay(attempt, &reconnection, random_unit());
        attempt = attempt.saturating_add(1);
        if reconnection.max_retries >= 0 && i64::from(attempt) > reconnection.max_retries {
            // Given up: drain commands until stopped so that flushes never hang.
            while let Some(cmd) = rx.recv().await {
                match cmd {
                    Command::Frame(_) => {}
                    Command::Flush(done) => { let _ = done.send(()); }
                    Command::Stop(done) => { let _ = done.send(()); return; }
                }
            }
            return;
        }
        let sleep = tokio::time::sleep(Duration::from_millis(delay));
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                _ = &mut sleep => break,
                cmd = rx.recv() => match cmd {
                    Some(Command::Frame(frame)) => push_bounded(&mut queue, frame),
                    Some(Command::Flush(done)) => { let _ = done.send(()); }
                    Some(Command::Stop(done)) => { let _ = done.send(()); return; }
                    None => return,
                },
            }
        }
    }
}
