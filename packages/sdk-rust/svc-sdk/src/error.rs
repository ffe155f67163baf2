//! Errors (sdk.md §7, §14): the [`Error`] enum every fallible call returns, the
//! [`InvocationError`] a remote failure converts into, and the stable codes of protocol.md §7.2.

use serde::{Deserialize, Serialize};

/// Stable error codes a worker sees or produces (protocol.md §7.2; the catalogue is
/// `packages/protocol/src/errors.ts`). Codes are the contract; messages may change.
pub mod codes {
    /// No live replica for the id, or this worker does not hold the id it was asked to run.
    pub const FUNCTION_NOT_FOUND: &str = "function_not_found";
    /// The id is registered here as HTTP-invoked.
    pub const FUNCTION_NOT_INVOKABLE: &str = "function_not_invokable";
    /// A handler failed without a code of its own.
    pub const INVOCATION_FAILED: &str = "invocation_failed";
    /// The connection dropped after the call was sent (client side), or the callee left (engine).
    pub const INVOCATION_STOPPED: &str = "invocation_stopped";
    /// The invocation was cancelled (its caller, a timeout, `engine::invocations::cancel`); issue 21.
    pub const CANCELLED: &str = "cancelled";
    /// A synchronous or enqueue call exceeded its timeout.
    pub const TIMEOUT: &str = "TIMEOUT";
    /// A call made in state `failed` or after shutdown.
    pub const NOT_CONNECTED: &str = "NOT_CONNECTED";
    /// A pending call rejected by `shutdown()`.
    pub const SHUTDOWN: &str = "SHUTDOWN";
    /// A remote error value that was not an ErrorBody.
    pub const UNKNOWN: &str = "UNKNOWN";
    /// A malformed frame that owed a reply.
    pub const INVALID_MESSAGE: &str = "invalid_message";
    /// An argument the client refuses before sending (e.g. a payload JSON cannot encode).
    pub const INVALID_ARGUMENTS: &str = "INVALID_ARGUMENTS";
    /// An end of a channel was used after the channel ended (its writer ended abnormally, it was
    /// removed, or the end was claimed already).
    pub const CHANNEL_CLOSED: &str = "CHANNEL_CLOSED";
    /// An id that is not well-formed text (control character, over 1024 characters).
    pub const INVALID_ID: &str = "INVALID_ID";
    /// A blank or malformed namespace.
    pub const INVALID_NAMESPACE: &str = "INVALID_NAMESPACE";
    /// A provider's handler refused a binding.
    pub const TRIGGER_REGISTRATION_FAILED: &str = "trigger_registration_failed";
    /// A binding for a trigger type this worker does not provide.
    pub const TRIGGER_TYPE_NOT_FOUND: &str = "trigger_type_not_found";
    /// The code of every non-fatal `registrationrejected`.
    pub const FUNCTION_NAMESPACE_CONFLICT: &str = "FUNCTION_NAMESPACE_CONFLICT";
    /// Authentication failed (`error` frame before a close).
    pub const AUTH_ERROR: &str = "AUTH_ERROR";
}

/// What every fallible call of the SDK returns (sdk.md §14).
///
/// A handler returns it too: [`Error::Remote`] keeps its `code` (1–64 characters of
/// `[A-Za-z0-9_.:-]`, else `invocation_failed`) and `stacktrace` on the wire; every other variant
/// travels as `invocation_failed` with its message and a captured backtrace as `stacktrace`.
///
/// ```
/// use svc_sdk::{Error, InvocationError};
/// let err = Error::Remote { code: "function_not_found".into(), message: "Function x not found".into(), stacktrace: None };
/// assert_eq!(err.code(), "function_not_found");
/// let inv: InvocationError = err.into();
/// assert_eq!(inv.to_string(), "function_not_found: Function x not found");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// The client is `failed` or shut down (`NOT_CONNECTED`).
    #[error("not connected to the engine")]
    NotConnected,
    /// A synchronous or enqueue call got no answer within its timeout (`TIMEOUT`).
    #[error("invocation timed out")]
    Timeout,
    /// A local failure: the client could not do what was asked (bad options, runtime gone).
    #[error("{0}")]
    Runtime(String),
    /// An error body from the other side (or a client-side code such as `invocation_stopped`,
    /// `SHUTDOWN`, `INVALID_ID`): its code, message and, when sent, stacktrace.
    #[error("{code}: {message}")]
    Remote {
        /// Stable code (protocol.md §7.2) or the handler's own.
        code: String,
        /// Message as the remote side sent it.
        message: String,
        /// Remote stack trace, when sent.
        stacktrace: Option<String>,
    },
    /// A handler failed (sent as `invocation_failed`).
    #[error("{0}")]
    Handler(String),
    /// A payload or result could not be (de)serialized.
    #[error("serialization error: {0}")]
    Serde(String),
    /// The WebSocket failed (connect, channel end).
    #[error("websocket error: {0}")]
    WebSocket(String),
}

impl Error {
    /// The stable code of this error: `NOT_CONNECTED`, `TIMEOUT`, a remote error's own code,
    /// `invocation_failed` for `Runtime`/`Handler`, `INVALID_ARGUMENTS` for `Serde`,
    /// `NOT_CONNECTED` for `WebSocket` (codes of the catalogue, protocol.md §7.2).
    pub fn code(&self) -> &str {
        match self {
            Error::NotConnected => codes::NOT_CONNECTED,
            Error::Timeout => codes::TIMEOUT,
            Error::Remote { code, .. } => code,
            Error::Runtime(_) | Error::Handler(_) => codes::INVOCATION_FAILED,
            Error::Serde(_) => codes::INVALID_ARGUMENTS,
            Error::WebSocket(_) => codes::NOT_CONNECTED,
        }
    }

    /// A [`Error::Remote`] with `code` and `message`, no stacktrace.
    pub fn remote(code: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Remote { code: code.into(), message: message.into(), stacktrace: None }
    }

    pub(crate) fn from_body(body: ErrorBody) -> Self {
        match body.code.as_str() {
            codes::TIMEOUT if body.stacktrace.is_none() && body.message.starts_with("invocation timed out") => Error::Timeout,
            codes::NOT_CONNECTED => Error::NotConnected,
            _ => Error::Remote { code: body.code, message: body.message, stacktrace: body.stacktrace },
        }
    }

    /// The wire body of this error when a handler returns it (sdk.md §4).
    pub(crate) fn to_body(&self) -> ErrorBody {
        match self {
            Error::Remote { code, message, stacktrace } => ErrorBody {
                code: if is_own_code(code) { code.clone() } else { codes::INVOCATION_FAILED.into() },
                message: message.clone(),
                stacktrace: stacktrace.clone(),
            },
            Error::Timeout => ErrorBody { code: codes::TIMEOUT.into(), message: "invocation timed out".into(), stacktrace: None },
            Error::NotConnected => ErrorBody { code: codes::NOT_CONNECTED.into(), message: self.to_string(), stacktrace: None },
            other => ErrorBody {
                code: codes::INVOCATION_FAILED.into(),
                message: other.to_string(),
                stacktrace: Some(std::backtrace::Backtrace::force_capture().to_string()),
            },
        }
    }
}

/// True for a code a handler may send as its own: 1–64 characters of `[A-Za-z0-9_.:-]` (sdk.md §4).
pub fn is_own_code(code: &str) -> bool {
    (1..=64).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Serde(e.to_string())
    }
}

impl From<String> for Error {
    fn from(message: String) -> Self {
        Error::Handler(message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Self {
        Error::Handler(message.to_string())
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Handler(e.to_string())
    }
}

impl From<InvocationError> for Error {
    fn from(e: InvocationError) -> Self {
        Error::Remote { code: e.code, message: e.message, stacktrace: e.stacktrace }
    }
}

/// An error body on the wire (protocol.md §4): `{"code","message","stacktrace"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// Stable code.
    pub code: String,
    /// Human-readable message.
    pub message: String,
    /// Stack trace of the failure, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stacktrace: Option<String>,
}

/// A failed invocation (sdk.md §7.1): the code, the message as the remote side sent it, the
/// function the caller invoked (when known) and the remote stack trace. `Display` is
/// `<code>: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct InvocationError {
    /// Stable code.
    pub code: String,
    /// Message as sent.
    pub message: String,
    /// The function the caller invoked.
    pub function_id: Option<String>,
    /// Remote stack trace, when sent.
    pub stacktrace: Option<String>,
}

impl From<Error> for InvocationError {
    fn from(e: Error) -> Self {
        match e {
            Error::Remote { code, message, stacktrace } => InvocationError { code, message, function_id: None, stacktrace },
            Error::Timeout => InvocationError { code: codes::TIMEOUT.into(), message: "invocation timed out".into(), function_id: None, stacktrace: None },
            other => InvocationError { code: other.code().to_string(), message: other.to_string(), function_id: None, stacktrace: None },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_error_keeps_its_code_on_the_wire_unless_it_is_not_a_code() {
        let keep = Error::Remote { code: "payment.declined".into(), message: "no".into(), stacktrace: Some("s".into()) }.to_body();
        assert_eq!((keep.code.as_str(), keep.stacktrace.as_deref()), ("payment.declined", Some("s")));
        let bad = Error::remote("has space", "no").to_body();
        assert_eq!(bad.code, "invocation_failed");
        let handler = Error::Handler("boom".into()).to_body();
        assert_eq!((handler.code.as_str(), handler.message.as_str()), ("invocation_failed", "boom"));
        assert!(handler.stacktrace.is_some());
    }
}
