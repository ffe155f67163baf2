//! Channels (sdk.md §9, protocol.md §9): ordered text and binary items from one writer to one
//! reader through the engine. [`create_channel`] invokes `engine::channels::create`; refs are plain
//! JSON ([`StreamChannelRef`]) passed inside payloads and results; a handler's input deserializes
//! a ref into a live [`ChannelReader`] or [`ChannelWriter`]. Each end opens its WebSocket lazily,
//! on first use, so unused refs cost no socket. Binary writes are split into frames of at most
//! 64 KiB. Backpressure comes from the engine: while `buffer_size` items wait it stops reading
//! the writer's socket, so [`ChannelWriter::write`] waits.

use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use tokio::sync::Mutex;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

use crate::client::{Svc, CHANNEL_BASE, DEFAULT_ENGINE_URL};
use crate::error::{codes, Error};
use crate::session::connect_with;
use crate::trigger::TriggerRequest;

/// Largest binary frame a writer sends, bytes.
pub const MAX_FRAME_BYTES: usize = 64 * 1024;

/// Which end a ref opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChannelDirection {
    /// The reading end.
    Read,
    /// The writing end.
    Write,
}

impl ChannelDirection {
    fn as_str(&self) -> &'static str {
        match self {
            ChannelDirection::Read => "read",
            ChannelDirection::Write => "write",
        }
    }
}

/// One end of a channel as plain JSON: `{"channel_id","access_key","direction"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StreamChannelRef {
    /// Shared by both ends.
    pub channel_id: String,
    /// This end's secret key.
    pub access_key: String,
    /// `read` or `write`.
    pub direction: ChannelDirection,
}

/// One item of a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChannelItem {
    /// A text frame.
    Text(String),
    /// A binary frame.
    Binary(Vec<u8>),
}

/// True when `value` is a channel ref: string `channel_id` and `access_key`, `direction` `read` or `write`.
pub fn is_channel_ref(value: &serde_json::Value) -> bool {
    value.get("channel_id").is_some_and(|v| v.is_string())
        && value.get("access_key").is_some_and(|v| v.is_string())
        && matches!(value.get("direction").and_then(|d| d.as_str()), Some("read" | "write"))
}

/// Every channel ref inside `data`, with its JSON path (`$.a.b[0]`), depth-first.
pub fn extract_channel_refs(data: &serde_json::Value) -> Vec<(String, StreamChannelRef)> {
    fn walk(value: &serde_json::Value, path: String, out: &mut Vec<(String, StreamChannelRef)>, depth: usize) {
        if depth > 128 {
            return;
        }
        if is_channel_ref(value) {
            if let Ok(r) = serde_json::from_value(value.clone()) {
                out.push((path, r));
            }
            return;
        }
        match value {
            serde_json::Value::Object(map) => map.iter().for_each(|(k, v)| walk(v, format!("{path}.{k}"), out, depth + 1)),
            serde_json::Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| walk(v, format!("{path}[{i}]"), out, depth + 1)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(data, "$".into(), &mut out, 0);
    out
}

fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `<worker URL without query, trailing slash removed>/ws/channels/<id>?key=<key>&dir=<dir>` (protocol.md §9).
pub fn channel_url(address: &str, r: &StreamChannelRef) -> String {
    let base = address.split('?').next().unwrap_or(address).trim_end_matches('/');
    format!("{base}/ws/channels/{}?key={}&dir={}", encode_component(&r.channel_id), encode_component(&r.access_key), r.direction.as_str())
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

struct End {
    r: StreamChannelRef,
    address: String,
    ws: Mutex<Option<Ws>>,
    closed: std::sync::atomic::AtomicBool,
}

impl End {
    fn new(r: StreamChannelRef, address: String) -> Arc<Self> {
        Arc::new(Self { r, address, ws: Mutex::new(None), closed: std::sync::atomic::AtomicBool::new(false) })
    }

    async fn open<'a>(&self, guard: &'a mut Option<Ws>) -> Result<&'a mut Ws, Error> {
        if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Error::WebSocket("channel end is closed".into()));
        }
        if guard.is_none() {
            // A 404 (unknown channel, wrong key or end) or a refused claim: the end cannot be used.
            let ws = connect_with(&channel_url(&self.address, &self.r), &[], std::time::Duration::from_secs(10), 2 * MAX_FRAME_BYTES).await.map_err(|e| Error::Remote {
                code: codes::CHANNEL_CLOSED.into(),
                message: format!("channel {} is closed: {e}", self.r.channel_id),
                stacktrace: None,
            })?;
            *guard = Some(ws);
        }
        Ok(guard.as_mut().expect("opened above"))
    }
}

fn current_base() -> String {
    CHANNEL_BASE
        .with(|b| b.borrow().clone())
        // SVC_URL may list several engines: the first, as a client of that list starts with it.
        .or_else(|| std::env::var("SVC_URL").ok().and_then(|v| crate::split_address_list(&v).into_iter().next()).filter(|v| !v.is_empty()))
        .unwrap_or_else(|| DEFAULT_ENGINE_URL.to_string())
}

/// The writing end of a channel (sdk.md §9). Clones share one socket.
#[derive(Clone)]
pub struct ChannelWriter {
    end: Arc<End>,
}

/// The reading end of a channel (sdk.md §9). Clones share one socket.
#[derive(Clone)]
pub struct ChannelReader {
    end: Arc<End>,
}

impl std::fmt::Debug for ChannelWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelWriter").field("channel_id", &self.end.r.channel_id).finish()
    }
}

impl std::fmt::Debug for ChannelReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelReader").field("channel_id", &self.end.r.channel_id).finish()
    }
}

impl ChannelWriter {
    /// A writer for `r` on the engine at `address` (the socket opens on first use).
    ///
    /// # Errors
    /// [`Error::Runtime`] when `r` is a read ref.
    pub fn open(address: &str, r: StreamChannelRef) -> Result<Self, Error> {
        if r.direction != ChannelDirection::Write {
            return Err(Error::Runtime("a ChannelWriter needs a ref with direction `write`".into()));
        }
        Ok(Self { end: End::new(r, address.to_string()) })
    }

    /// This end's ref.
    pub fn channel_ref(&self) -> &StreamChannelRef {
        &self.end.r
    }

    /// Sends `data` as binary items of at most 64 KiB; waits while the channel is full.
    pub async fn write(&self, data: &[u8]) -> Result<(), Error> {
        let mut guard = self.end.ws.lock().await;
        let ws = self.end.open(&mut guard).await?;
        for chunk in data.chunks(MAX_FRAME_BYTES) {
            ws.feed(Message::binary(chunk.to_vec())).await.map_err(|e| Error::WebSocket(e.to_string()))?;
        }
        ws.flush().await.map_err(|e| Error::WebSocket(e.to_string()))
    }

    /// Sends one text item.
    pub async fn send_message(&self, text: &str) -> Result<(), Error> {
        let mut guard = self.end.ws.lock().await;
        let ws = self.end.open(&mut guard).await?;
        ws.send(Message::text(text.to_string())).await.map_err(|e| Error::WebSocket(e.to_string()))
    }

    /// Closes with code 1000 after pending data: the reader gets every item, then the end.
    /// A writer never used opens its socket to close it, so the reader is not left waiting.
    pub async fn close(&self) -> Result<(), Error> {
        let mut guard = self.end.ws.lock().await;
        if self.end.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(());
        }
        let ws = self.end.open(&mut guard).await?;
        let _ = ws.close(Some(CloseFrame { code: CloseCode::Normal, reason: "".into() })).await;
        // Wait for the engine's close so that every item has left this process.
        while let Some(Ok(msg)) = ws.next().await {
            if matches!(msg, Message::Close(_)) {
                break;
            }
        }
        self.end.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        *guard = None;
        Ok(())
    }
}

impl ChannelReader {
    /// A reader for `r` on the engine at `address` (the socket opens on first use).
    ///
    /// # Errors
    /// [`Error::Runtime`] when `r` is a write ref.
    pub fn open(address: &str, r: StreamChannelRef) -> Result<Self, Error> {
        if r.direction != ChannelDirection::Read {
            return Err(Error::Runtime("a ChannelReader needs a ref with direction `read`".into()));
        }
        Ok(Self { end: End::new(r, address.to_string()) })
    }

    /// This end's ref.
    pub fn channel_ref(&self) -> &StreamChannelRef {
        &self.end.r
    }

    /// The next item in order, or `None` once the writer closed normally.
    ///
    /// # Errors
    /// `Remote { code: "CHANNEL_CLOSED" }` when the writer ended abnormally (close 1011), the
    /// channel was removed or the end cannot be claimed; [`Error::WebSocket`] when the socket fails.
    pub async fn next(&self) -> Result<Option<ChannelItem>, Error> {
        let mut guard = self.end.ws.lock().await;
        if self.end.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(None);
        }
        let ws = self.end.open(&mut guard).await?;
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) => return Ok(Some(ChannelItem::Text(t.to_string()))),
                Some(Ok(Message::Binary(b))) => return Ok(Some(ChannelItem::Binary(b.to_vec()))),
                Some(Ok(Message::Close(frame))) => {
                    self.end.closed.store(true, std::sync::atomic::Ordering::SeqCst);
                    *guard = None;
                    return match frame {
                        None => Ok(None),
                        Some(f) if f.code == CloseCode::Normal => Ok(None),
                        Some(f) => Err(Error::Remote {
                            code: codes::CHANNEL_CLOSED.into(),
                            message: format!(
                                "channel {} is closed: the writer ended abnormally (close code {}{})",
                                self.end.r.channel_id,
                                u16::from(f.code),
                                if f.reason.is_empty() { String::new() } else { format!(": {}", f.reason) }
                            ),
                            stacktrace: None,
                        }),
                    };
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => {
                    self.end.closed.store(true, std::sync::atomic::Ordering::SeqCst);
                    *guard = None;
                    return Err(Error::WebSocket(e.to_string()));
                }
                None => {
                    self.end.closed.store(true, std::sync::atomic::Ordering::SeqCst);
                    *guard = None;
                    return Err(Error::WebSocket("channel socket ended without a close frame".into()));
                }
            }
        }
    }

    /// Every binary item until the writer closes, concatenated (text items are skipped).
    pub async fn read_all(&self) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        while let Some(item) = self.next().await? {
            if let ChannelItem::Binary(b) = item {
                out.extend_from_slice(&b);
            }
        }
        Ok(out)
    }

    /// Closes this end (the writer's socket is then closed by the engine with 1011).
    pub async fn close(&self) {
        let mut guard = self.end.ws.lock().await;
        if let Some(ws) = guard.as_mut() {
            let _ = ws.close(None).await;
        }
        self.end.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        *guard = None;
    }
}

impl Serialize for ChannelWriter {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.end.r.serialize(s)
    }
}

impl Serialize for ChannelReader {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.end.r.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ChannelWriter {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = StreamChannelRef::deserialize(d)?;
        ChannelWriter::open(&current_base(), r).map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for ChannelReader {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = StreamChannelRef::deserialize(d)?;
        ChannelReader::open(&current_base(), r).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for ChannelWriter {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ChannelWriter".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        StreamChannelRef::json_schema(generator)
    }
}

impl JsonSchema for ChannelReader {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ChannelReader".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        StreamChannelRef::json_schema(generator)
    }
}

/// Both ends of a new channel and their refs.
#[derive(Debug, Clone)]
pub struct Channel {
    /// The writing end (opens on first use).
    pub writer: ChannelWriter,
    /// The reading end (opens on first use).
    pub reader: ChannelReader,
    /// Pass this in a payload to let another worker write.
    pub writer_ref: StreamChannelRef,
    /// Pass this in a payload to let another worker read.
    pub reader_ref: StreamChannelRef,
}

/// Creates a channel (`engine::channels::create {buffer_size}`, default 64 items; 1–1024).
///
/// ```no_run
/// # async fn run(client: svc_sdk::Svc) -> Result<(), svc_sdk::Error> {
/// use svc_sdk::{create_channel, TriggerRequest};
/// let channel = create_channel(&client, None).await?;
/// client.trigger(TriggerRequest { function_id: "files::upload".into(), payload: serde_json::json!({ "body": channel.reader_ref }), action: None, timeout_ms: None });
/// channel.writer.write(b"hello").await?;
/// channel.writer.close().await?;
/// # Ok(()) }
/// ```
pub async fn create_channel(client: &Svc, buffer_size: Option<u32>) -> Result<Channel, Error> {
    #[derive(Deserialize)]
    struct Created {
        writer: StreamChannelRef,
        reader: StreamChannelRef,
    }
    let payload = match buffer_size {
        Some(n) => serde_json::json!({ "buffer_size": n }),
        None => serde_json::json!({}),
    };
    let created: Created = serde_json::from_value(
        client.trigger(TriggerRequest { function_id: "engine::channels::create".into(), payload, action: None, timeout_ms: None }).await?,
    )
    .map_err(|e| Error::Remote { code: codes::INVALID_MESSAGE.into(), message: format!("engine::channels::create answered {e}"), stacktrace: None })?;
    Ok(Channel {
        writer: ChannelWriter::open(client.address(), created.writer.clone())?,
        reader: ChannelReader::open(client.address(), created.reader.clone())?,
        writer_ref: created.writer,
        reader_ref: created.reader,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn channel_urls_follow_protocol_md_9() {
        let r = StreamChannelRef { channel_id: "c1".into(), access_key: "a/b+c".into(), direction: ChannelDirection::Read };
        assert_eq!(channel_url("ws://127.0.0.1:9/?token=x", &r), "ws://127.0.0.1:9/ws/channels/c1?key=a%2Fb%2Bc&dir=read");
    }

    #[test]
    fn refs_are_found_anywhere_in_a_payload() {
        let data = json!({ "a": [1, { "channel_id": "c", "access_key": "k", "direction": "write" }], "b": { "channel_id": "c" } });
        let refs = extract_channel_refs(&data);
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].0, "$.a[1]");
    }
}
