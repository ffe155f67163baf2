//! Functions (sdk.md §4): [`RegisterFunction`] builds a registration from a typed handler (sync or
//! async, with or without the invocation metadata) or an [`HttpInvocationConfig`]; request and
//! response formats are derived from the handler's types with `schemars` unless overridden.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::{Error, ErrorBody};

/// What an erased handler returns: the result's JSON text (`None` for no result) or the error body.
pub(crate) type HandlerOutput = Result<Option<String>, ErrorBody>;
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Reads the payload and metadata (on the connection thread) into a future to await.
pub(crate) type AsyncEntry = Arc<dyn Fn(&RawValue, Option<Value>) -> Result<BoxFuture<HandlerOutput>, ErrorBody> + Send + Sync>;
/// Reads the payload and metadata into a job for the blocking pool.
pub(crate) type BlockingEntry = Arc<dyn Fn(&RawValue, Option<Value>) -> Result<Box<dyn FnOnce() -> HandlerOutput + Send>, ErrorBody> + Send + Sync>;

/// A handler after type erasure: reads the payload text and the metadata, returns the result text.
pub(crate) enum ErasedHandler {
    /// Runs on the connection's runtime.
    Async(AsyncEntry),
    /// Runs on the blocking pool (sdk.md §14: sync handlers never hold up the connection).
    Blocking(BlockingEntry),
}

impl Clone for ErasedHandler {
    fn clone(&self) -> Self {
        match self {
            ErasedHandler::Async(f) => ErasedHandler::Async(f.clone()),
            ErasedHandler::Blocking(f) => ErasedHandler::Blocking(f.clone()),
        }
    }
}

/// HTTP method of an HTTP-invoked function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    /// GET
    Get,
    /// POST (the default)
    #[default]
    Post,
    /// PUT
    Put,
    /// PATCH
    Patch,
    /// DELETE
    Delete,
}

/// How the engine authenticates to an HTTP-invoked function (protocol.md §6.8). Each `*_key`
/// names an environment variable of the engine process; secrets never travel inline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HttpAuthConfig {
    /// `x-svc-signature: sha256=<HMAC-SHA256(secret, "<timestamp>.<body>")>`.
    Hmac {
        /// Variable holding the secret.
        secret_key: String,
    },
    /// `authorization: Bearer <token>`.
    Bearer {
        /// Variable holding the token.
        token_key: String,
    },
    /// `<header>: <value>`.
    ApiKey {
        /// Header name.
        header: String,
        /// Variable holding the value.
        value_key: String,
    },
}

/// A function the engine executes by calling a URL (sdk.md §4, protocol.md §6.8).
///
/// ```
/// use svc_sdk::{HttpInvocationConfig, HttpMethod};
/// let config = HttpInvocationConfig { method: Some(HttpMethod::Get), ..HttpInvocationConfig::new("https://api.example.com/rates") };
/// assert_eq!(serde_json::to_value(&config).unwrap()["method"], "GET");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpInvocationConfig {
    /// The URL the engine calls.
    pub url: String,
    /// Default POST.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<HttpMethod>,
    /// Extra request headers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// Request timeout, ms; default 30000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Authentication.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<HttpAuthConfig>,
}

impl HttpInvocationConfig {
    /// A POST to `url` without headers or auth.
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into(), method: None, headers: None, timeout_ms: None, auth: None }
    }
}

/// The JSON Schema of `T` as a FormatSchema, or `None` when it says nothing (`serde_json::Value`).
pub fn format_of<T: JsonSchema>() -> Option<Value> {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    if schema.as_bool().is_some() {
        return None;
    }
    let mut value = schema.to_value();
    if let Some(object) = value.as_object_mut() {
        object.remove("$schema");
        // Only a title (`AnyValue` for serde_json::Value): nothing to tell the engine.
        if object.keys().all(|k| k == "title" || k == "description") {
            return None;
        }
    }
    Some(value)
}

fn read_input<I: DeserializeOwned>(data: &RawValue) -> Result<I, ErrorBody> {
    serde_json::from_str::<I>(data.get()).map_err(|e| ErrorBody {
        code: crate::error::codes::INVALID_ARGUMENTS.into(),
        message: format!("payload does not match the handler's input: {e}"),
        stacktrace: None,
    })
}

fn write_output<O: Serialize, E: Into<Error>>(out: Result<O, E>) -> HandlerOutput {
    match out {
        Ok(value) => match serde_json::to_string(&value) {
            Ok(text) if text == "null" => Ok(None),
            Ok(text) => Ok(Some(text)),
            Err(e) => Err(ErrorBody {
                code: crate::error::codes::INVOCATION_FAILED.into(),
                message: format!("result is not JSON-serialisable: {e}"),
                stacktrace: None,
            }),
        },
        Err(e) => Err(e.into().to_body()),
    }
}

/// A function registration (sdk.md §4, §14): a handler or an HTTP invocation, a description,
/// metadata and the request and response formats.
///
/// Handlers take any `Deserialize` input and return `Result<O, E>` with `O: Serialize` and
/// `E: Into<svc_sdk::Error>`; formats come from their [`JsonSchema`]s. Channel refs in the
/// input deserialize into live [`crate::ChannelReader`]s and [`crate::ChannelWriter`]s.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
/// use svc_sdk::{Error, RegisterFunction};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Add { a: f64, b: f64 }
/// #[derive(Serialize, JsonSchema)]
/// struct Sum { c: f64 }
///
/// async fn add(input: Add) -> Result<Sum, Error> {
///     Ok(Sum { c: input.a + input.b })
/// }
///
/// let f = RegisterFunction::new_async(add).description("Add two numbers");
/// assert_eq!(f.request_format_value().unwrap()["required"], serde_json::json!(["a", "b"]));
/// ```
pub struct RegisterFunction {
    pub(crate) handler: Option<ErasedHandler>,
    pub(crate) invocation: Option<HttpInvocationConfig>,
    pub(crate) description: Option<String>,
    pub(crate) metadata: Option<serde_json::Map<String, Value>>,
    pub(crate) request_format: Option<Value>,
    pub(crate) response_format: Option<Value>,
}

impl std::fmt::Debug for RegisterFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisterFunction")
            .field("http", &self.invocation)
            .field("description", &self.description)
            .field("request_format", &self.request_format)
            .field("response_format", &self.response_format)
            .finish_non_exhaustive()
    }
}

impl RegisterFunction {
    fn with_handler(handler: ErasedHandler, request: Option<Value>, response: Option<Value>) -> Self {
        Self { handler: Some(handler), invocation: None, description: None, metadata: None, request_format: request, response_format: response }
    }

    /// A synchronous handler. It runs on tokio's blocking pool, so it may block.
    pub fn new<I, O, E, F>(handler: F) -> Self
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + JsonSchema + 'static,
        E: Into<Error> + 'static,
        F: Fn(I) -> Result<O, E> + Send + Sync + 'static,
    {
        Self::new_with_metadata(move |input, _metadata| handler(input))
    }

    /// A synchronous handler that also receives the invocation `metadata` (`None` when the caller sent none).
    pub fn new_with_metadata<I, O, E, F>(handler: F) -> Self
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + JsonSchema + 'static,
        E: Into<Error> + 'static,
        F: Fn(I, Option<Value>) -> Result<O, E> + Send + Sync + 'static,
    {
        let handler = Arc::new(handler);
        let erased = ErasedHandler::Blocking(Arc::new(move |data: &RawValue, metadata: Option<Value>| {
            let input = read_input::<I>(data)?;
            let handler = handler.clone();
            Ok(Box::new(move || write_output(handler(input, metadata))) as Box<dyn FnOnce() -> HandlerOutput + Send>)
        }));
        Self::with_handler(erased, format_of::<I>(), format_of::<O>())
    }

    /// An asynchronous handler, run on the connection's runtime (it must not block the thread).
    pub fn new_async<I, O, E, F, Fut>(handler: F) -> Self
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + JsonSchema + 'static,
        E: Into<Error> + 'static,
        F: Fn(I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, E>> + Send + 'static,
    {
        Self::new_async_with_metadata(move |input, _metadata| handler(input))
    }

    /// An asynchronous handler that also receives the invocation `metadata`.
    pub fn new_async_with_metadata<I, O, E, F, Fut>(handler: F) -> Self
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + JsonSchema + 'static,
        E: Into<Error> + 'static,
        F: Fn(I, Option<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, E>> + Send + 'static,
    {
        let erased = ErasedHandler::Async(Arc::new(move |data: &RawValue, metadata: Option<Value>| {
            let input = read_input::<I>(data)?;
            let fut = handler(input, metadata);
            Ok(Box::pin(async move { write_output(fut.await) }) as BoxFuture<HandlerOutput>)
        }));
        Self::with_handler(erased, format_of::<I>(), format_of::<O>())
    }

    /// A function the engine executes by calling a URL (protocol.md §6.8); no local handler runs.
    pub fn http(config: HttpInvocationConfig) -> Self {
        Self { handler: None, invocation: Some(config), description: None, metadata: None, request_format: None, response_format: None }
    }

    /// One-line description shown by `engine::functions::list`.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Registration metadata (free JSON object; `internal: true` hides the function from listings).
    pub fn metadata(mut self, metadata: serde_json::Map<String, Value>) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Overrides the request format (any FormatSchema or JSON Schema document).
    pub fn request_format(mut self, format: Value) -> Self {
        self.request_format = Some(format);
        self
    }

    /// Overrides the response format.
    pub fn response_format(mut self, format: Value) -> Self {
        self.response_format = Some(format);
        self
    }

    /// The request format that will be sent (derived or overridden).
    pub fn request_format_value(&self) -> Option<&Value> {
        self.request_format.as_ref()
    }

    /// The response format that will be sent.
    pub fn response_format_value(&self) -> Option<&Value> {
        self.response_format.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct In {
        a: u32,
    }

    #[test]
    fn formats_come_from_the_types_unless_overridden() {
        let derived = RegisterFunction::new(|i: In| Ok::<_, Error>(i.a));
        assert_eq!(derived.request_format_value().unwrap()["properties"]["a"]["type"], "integer");
        assert_eq!(derived.response_format_value().unwrap()["type"], "integer");
        let overridden = RegisterFunction::new(|i: In| Ok::<_, Error>(i.a)).request_format(json!({"type": "object", "description": "mine"}));
        assert_eq!(overridden.request_format_value(), Some(&json!({"type": "object", "description": "mine"})));
        // serde_json::Value says nothing: no format is sent.
        assert!(RegisterFunction::new(|v: Value| Ok::<_, Error>(v)).request_format_value().is_none());
    }
}
