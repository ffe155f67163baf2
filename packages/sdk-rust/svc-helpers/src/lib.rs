//! # svc-helpers
//!
//! Helpers shared by svc's Rust workers (sdk.md §12, §15): the OpenTelemetry pipeline that exports
//! spans and log records as OTLP/JSON over the engine's `/otel` socket (protocol.md §10.2), the
//! [`observability::Logger`], redaction of payloads, W3C trace-context helpers, and the
//! reconnection backoff both the telemetry socket and `svc-sdk` use (sdk.md §2).
//!
//! Most workers never use this crate directly: `svc_sdk::register_worker` initialises telemetry,
//! and `svc_sdk::telemetry` re-exports [`observability`].
//!
//! ```no_run
//! use svc_helpers::observability::{init_otel, Logger, OtelConfig};
//!
//! init_otel(OtelConfig { engine_ws_url: Some("ws://127.0.0.1:49134".into()), ..OtelConfig::default() });
//! Logger::new(None, None, None).info("started", Some(serde_json::json!({ "port": 8080 })));
//! ```
#![warn(missing_docs)]

pub mod observability;
pub mod reconnect;

pub use reconnect::{backoff_delay, ReconnectionConfig};
