//! Triggers, trigger types and invocation requests (sdk.md §5, §6).

use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::Error;
use crate::function::{format_of, BoxFuture};

/// The action of an invocation (sdk.md §6). `None` in a [`TriggerRequest`] means synchronous.
///
/// ```
/// use svc_sdk::TriggerAction;
/// let a = TriggerAction::Enqueue { queue: "payments".into() };
/// assert_eq!(serde_json::to_value(&a).unwrap(), serde_json::json!({"type": "enqueue", "queue": "payments"}));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum TriggerAction {
    /// Fire and forget: resolves as soon as the frame is sent or queued; errors are never reported.
    Void,
    /// Hand the call to the queue worker's `queue`; resolves with an [`EnqueueResult`] once persisted.
    Enqueue {
        /// A queue declared in the queue worker's `queue_configs`.
        queue: String,
    },
}

/// What an enqueue call resolves with: the receipt of the persisted message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EnqueueResult {
    /// Receipt id, serialized as `messageReceiptId`.
    #[serde(rename = "messageReceiptId")]
    pub message_receipt_id: String,
}

/// An invocation (sdk.md §6, §14). `payload` is any `Serialize` value (`()` sends `null`).
/// Add metadata or a namespace with [`TriggerRequest::metadata`] / [`TriggerRequest::namespace`].
///
/// ```no_run
/// # async fn run(client: svc_sdk::Svc) -> Result<(), svc_sdk::Error> {
/// use svc_sdk::{TriggerAction, TriggerRequest};
/// let sum = client
///     .trigger(TriggerRequest { function_id: "math::add".into(), payload: serde_json::json!({"a": 1, "b": 2}), action: None, timeout_ms: Some(5000) })
///     .await?;
/// client
///     .trigger(TriggerRequest { function_id: "audit::log".into(), payload: "added", action: Some(TriggerAction::Void), timeout_ms: None }.metadata(serde_json::json!({"by": "me"})))
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TriggerRequest<P = Value> {
    /// The function to invoke.
    pub function_id: String,
    /// The payload.
    pub payload: P,
    /// `None` (synchronous), [`TriggerAction::Void`] or [`TriggerAction::Enqueue`].
    pub action: Option<TriggerAction>,
    /// Timeout of a synchronous or enqueue call, ms; default the client's `invocation_timeout_ms` (30000).
    pub timeout_ms: Option<u64>,
}

/// A [`TriggerRequest`] with its optional parts: invocation metadata and target namespace.
#[derive(Debug, Clone)]
pub struct TriggerCall<P = Value> {
    pub(crate) request: TriggerRequest<P>,
    pub(crate) metadata: Option<Value>,
    pub(crate) namespace: Option<String>,
}

impl<P> TriggerRequest<P> {
    /// Sends `metadata` along; the handler receives it as its metadata argument.
    pub fn metadata(self, metadata: Value) -> TriggerCall<P> {
        TriggerCall { request: self, metadata: Some(metadata), namespace: None }
    }

    /// Resolves `function_id` in `namespace` (default: the worker's; omitted for `engine::` ids).
    pub fn namespace(self, namespace: impl Into<String>) -> TriggerCall<P> {
        TriggerCall { request: self, metadata: None, namespace: Some(namespace.into()) }
    }
}

impl<P> TriggerCall<P> {
    /// Sends `metadata` along.
    pub fn metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Resolves `function_id` in `namespace`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }
}

impl<P> From<TriggerRequest<P>> for TriggerCall<P> {
    fn from(request: TriggerRequest<P>) -> Self {
        TriggerCall { request, metadata: None, namespace: None }
    }
}

/// A binding of a function to a trigger type (sdk.md §5). Add a target or provider namespace with
/// [`RegisterTriggerInput::namespace`] / [`RegisterTriggerInput::trigger_namespace`].
///
/// ```no_run
/// # fn run(client: svc_sdk::Svc) -> Result<(), svc_sdk::Error> {
/// use svc_sdk::RegisterTriggerInput;
/// let trigger = client.register_trigger(RegisterTriggerInput {
///     trigger_type: "http".into(),
///     function_id: "math::add".into(),
///     config: serde_json::json!({ "api_path": "/math/add", "http_method": "POST" }),
///     metadata: None,
/// })?;
/// trigger.unregister();
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RegisterTriggerInput {
    /// Trigger type id (sent as `trigger_type`).
    pub trigger_type: String,
    /// Target function.
    pub function_id: String,
    /// Type-specific configuration (`null` sends `{}`).
    pub config: Value,
    /// Delivered to the target as the invocation metadata each time it fires.
    pub metadata: Option<Map<String, Value>>,
}

/// A [`RegisterTriggerInput`] with its optional namespaces.
#[derive(Debug, Clone)]
pub struct TriggerBinding {
    pub(crate) input: RegisterTriggerInput,
    pub(crate) namespace: Option<String>,
    pub(crate) trigger_namespace: Option<String>,
}

impl RegisterTriggerInput {
    /// Target namespace (default: the worker's).
    pub fn namespace(self, namespace: impl Into<String>) -> TriggerBinding {
        TriggerBinding { input: self, namespace: Some(namespace.into()), trigger_namespace: None }
    }

    /// Provider namespace (default: engine rules, protocol.md §8.2).
    pub fn trigger_namespace(self, namespace: impl Into<String>) -> TriggerBinding {
        TriggerBinding { input: self, namespace: None, trigger_namespace: Some(namespace.into()) }
    }
}

impl TriggerBinding {
    /// Target namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Provider namespace.
    pub fn trigger_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.trigger_namespace = Some(namespace.into());
        self
    }
}

impl From<RegisterTriggerInput> for TriggerBinding {
    fn from(input: RegisterTriggerInput) -> Self {
        TriggerBinding { input, namespace: None, trigger_namespace: None }
    }
}

/// A binding delivered to a provider (sdk.md §5): key your tables by `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriggerConfig {
    /// Trigger id.
    pub id: String,
    /// Target function.
    pub function_id: String,
    /// The binding's config.
    pub config: Value,
    /// The binding's metadata; pass it on when firing.
    pub metadata: Option<Value>,
    /// Namespace to invoke `function_id` in (explicit `default` when the engine sent none).
    pub namespace: Option<String>,
}

/// The provider side of a trigger type (sdk.md §5, protocol.md §8.3).
///
/// `register_trigger` accepting (`Ok`) answers the engine with success; an `Err` answers
/// `trigger_registration_failed` with its message. `unregister_trigger` gets the binding as it
/// was delivered; its errors are logged.
///
/// ```
/// use svc_sdk::{Error, TriggerConfig, TriggerHandler};
/// struct Webhooks;
/// impl TriggerHandler for Webhooks {
///     async fn register_trigger(&self, trigger: TriggerConfig) -> Result<(), Error> {
///         if trigger.config.get("path").is_none() { return Err(Error::Handler("path is required".into())) }
///         Ok(())
///     }
///     async fn unregister_trigger(&self, _trigger: TriggerConfig) -> Result<(), Error> { Ok(()) }
/// }
/// ```
pub trait TriggerHandler: Send + Sync + 'static {
    /// A binding was delivered (or replaced: same id).
    fn register_trigger(&self, trigger: TriggerConfig) -> impl Future<Output = Result<(), Error>> + Send;
    /// A binding was removed, or this provider let go of it (disconnect, shutdown, unregister).
    fn unregister_trigger(&self, trigger: TriggerConfig) -> impl Future<Output = Result<(), Error>> + Send;
}

/// [`TriggerHandler`] behind a pointer.
pub(crate) trait ErasedTriggerHandler: Send + Sync {
    fn register(&self, trigger: TriggerConfig) -> BoxFuture<Result<(), Error>>;
    fn unregister(&self, trigger: TriggerConfig) -> BoxFuture<Result<(), Error>>;
}

struct Erased<H>(Arc<H>);

impl<H: TriggerHandler> ErasedTriggerHandler for Erased<H> {
    fn register(&self, trigger: TriggerConfig) -> BoxFuture<Result<(), Error>> {
        let handler = self.0.clone();
        Box::pin(async move { handler.register_trigger(trigger).await })
    }

    fn unregister(&self, trigger: TriggerConfig) -> BoxFuture<Result<(), Error>> {
        let handler = self.0.clone();
        Box::pin(async move { handler.unregister_trigger(trigger).await })
    }
}

/// A trigger type this worker provides (sdk.md §5, §14), built with formats derived from types.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use svc_sdk::{Error, RegisterTriggerType, TriggerConfig, TriggerHandler};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct WebhookConfig { path: String }
/// struct Webhooks;
/// impl TriggerHandler for Webhooks {
///     async fn register_trigger(&self, _t: TriggerConfig) -> Result<(), Error> { Ok(()) }
///     async fn unregister_trigger(&self, _t: TriggerConfig) -> Result<(), Error> { Ok(()) }
/// }
/// let t = RegisterTriggerType::new("webhook", "Incoming webhooks", Webhooks).trigger_request_format::<WebhookConfig>();
/// assert_eq!(t.id(), "webhook");
/// ```
pub struct RegisterTriggerType {
    pub(crate) id: String,
    pub(crate) description: String,
    pub(crate) handler: Arc<dyn ErasedTriggerHandler>,
    pub(crate) trigger_request_format: Option<Value>,
    pub(crate) call_request_format: Option<Value>,
    pub(crate) namespace: Option<String>,
}

impl std::fmt::Debug for RegisterTriggerType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisterTriggerType").field("id", &self.id).field("description", &self.description).finish_non_exhaustive()
    }
}

impl RegisterTriggerType {
    /// A trigger type `id` whose bindings go to `handler`.
    pub fn new(id: impl Into<String>, description: impl Into<String>, handler: impl TriggerHandler) -> Self {
        Self {
            id: id.into(),
            description: description.into(),
            handler: Arc::new(Erased(Arc::new(handler))),
            trigger_request_format: None,
            call_request_format: None,
            namespace: None,
        }
    }

    /// The type id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The shape of a binding's config, from `T`'s JSON Schema.
    pub fn trigger_request_format<T: JsonSchema>(mut self) -> Self {
        self.trigger_request_format = format_of::<T>();
        self
    }

    /// The shape of the payload it delivers, from `T`'s JSON Schema.
    pub fn call_request_format<T: JsonSchema>(mut self) -> Self {
        self.call_request_format = format_of::<T>();
        self
    }

    /// Overrides the binding config format with any FormatSchema.
    pub fn trigger_request_format_value(mut self, format: Value) -> Self {
        self.trigger_request_format = Some(format);
        self
    }

    /// Overrides the payload format with any FormatSchema.
    pub fn call_request_format_value(mut self, format: Value) -> Self {
        self.call_request_format = Some(format);
        self
    }

    /// Namespace the provider serves (default: the worker's).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }
}
