//! # svc-sdk
//!
//! The Rust SDK for svc workers (sdk.md §14): connect to the engine with [`register_worker`],
//! register functions ([`RegisterFunction`]: sync, async or HTTP-invoked, formats derived with
//! `schemars`), triggers and trigger types, invoke functions with [`Svc::trigger`] (synchronous,
//! void or enqueue, with timeouts; dropping the call's future or its timeout cancels it in the
//! engine, and a handler learns of its own cancellation from its [`HandlerContext`]), pass
//! [channels](create_channel), and watch the connection.
//! Telemetry (OpenTelemetry spans and the [`telemetry::Logger`]) goes to the engine's `/otel`
//! socket.
//!
//! The client mirrors the parts of svc's client core by name (docs/architecture.md "Client core"):
//! the session (state machine, reconnection with backoff, `reattach`), the heartbeat, the call
//! table, the registration store replayed on every open, and the provider bindings.
//!
//! ```no_run
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use svc_sdk::{register_worker, Error, InitOptions, RegisterFunction};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Greet { name: String }
//! #[derive(Serialize, JsonSchema)]
//! struct Greeting { text: String }
//!
//! fn main() -> Result<(), Error> {
//!     let client = register_worker("", InitOptions::default())?; // SVC_URL, else ws://127.0.0.1:49134
//!     client.register_function("hello::greet", RegisterFunction::new(|g: Greet| Ok::<_, Error>(Greeting { text: format!("hello {}", g.name) })));
//!     std::thread::park(); // serve until the process is stopped
//!     Ok(())
//! }
//! ```
#![warn(missing_docs)]

mod addresses;
mod bindings;
mod calls;
mod channels;
mod client;
#[doc(hidden)]
pub mod codec;
mod error;
mod function;
mod handler_context;
mod handler_span;
mod heartbeat;
mod http;
mod ids;
mod options;
mod registrations;
mod session;
mod trigger;

pub use addresses::{display_address, engine_addresses, split_address_list, IntoEngineAddresses, MAX_ENGINE_ADDRESSES};
pub use channels::{
    channel_url, create_channel, extract_channel_refs, is_channel_ref, Channel, ChannelDirection, ChannelItem, ChannelReader, ChannelWriter,
    StreamChannelRef, MAX_FRAME_BYTES,
};
pub use client::{
    register_worker, ConnectionState, FunctionRef, ListenerGuard, RegistrationError, RegistrationKind, Svc, Trigger, TriggerTypeRef,
    DEFAULT_ENGINE_URL,
};
pub use error::{codes, is_own_code, Error, ErrorBody, InvocationError};
pub use function::{format_of, HttpAuthConfig, HttpInvocationConfig, HttpMethod, RegisterFunction};
pub use handler_context::{HandlerContext, MAX_CANCEL_REASON};
/// The cancellation token of [`HandlerContext::cancellation_token`] (`tokio-util`).
pub use tokio_util::sync::CancellationToken;
pub use http::{HttpRequest, HttpResponse, OneOrMany};
pub use ids::{id_problem, MAX_ID_LENGTH};
pub use options::{InitOptions, TelemetryOptions, WorkerMetadata, WorkerOptions};
pub use svc_helpers::observability::OtelConfig;
pub use svc_helpers::ReconnectionConfig;
pub use trigger::{
    EnqueueResult, RegisterTriggerInput, RegisterTriggerType, TriggerAction, TriggerBinding, TriggerCall, TriggerConfig, TriggerHandler,
    TriggerRequest,
};

/// Telemetry (sdk.md §12): re-export of `svc_helpers::observability`.
pub mod telemetry {
    pub use svc_helpers::observability::*;
}

/// Internals for svc's own tests (timings of the keepalive and the handshake).
#[doc(hidden)]
pub mod internal {
    use std::time::Duration;

    /// [`crate::register_worker`] with the keepalive and handshake durations of a test.
    pub fn register_worker_with_timings(
        address: impl crate::IntoEngineAddresses,
        options: impl Into<crate::WorkerOptions>,
        ping_interval: Duration,
        idle_timeout: Duration,
    ) -> Result<crate::Svc, crate::Error> {
        let timings = crate::session::Timings { ping_interval, idle_timeout, ..Default::default() };
        crate::client::register_worker_with(address, options.into(), timings)
    }
}
