//! HTTP types (sdk.md §11, builtins.md §3.4–§3.6): what a function bound to an `http` trigger
//! receives and returns.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::channels::{ChannelReader, ChannelWriter};

/// A query parameter or header value: a string when received once, an array when repeated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany {
    /// Received once.
    One(String),
    /// Repeated.
    Many(Vec<String>),
}

impl OneOrMany {
    /// The first (or only) value.
    pub fn first(&self) -> Option<&str> {
        match self {
            OneOrMany::One(v) => Some(v),
            OneOrMany::Many(v) => v.first().map(String::as_str),
        }
    }
}

/// The request an HTTP-triggered function receives (builtins.md §3.4). `B` is the parsed body
/// (JSON, text, a form object, or `null`).
///
/// ```
/// use svc_sdk::{Error, HttpRequest, HttpResponse, RegisterFunction};
/// let f = RegisterFunction::new(|req: HttpRequest| {
///     let name = req.query_params.get("name").and_then(|v| v.first()).unwrap_or("world").to_string();
///     Ok::<_, Error>(HttpResponse::json(200, serde_json::json!({ "hello": name })))
/// });
/// # let _ = f;
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct HttpRequest<B = Value> {
    /// Upper case.
    pub method: String,
    /// The concrete request path, without the query string.
    pub path: String,
    /// The registered pattern that matched, e.g. `/s/:code`.
    #[serde(default)]
    pub route: String,
    /// Percent-decoded path parameters.
    #[serde(default)]
    pub path_params: BTreeMap<String, String>,
    /// Decoded query parameters.
    #[serde(default)]
    pub query_params: BTreeMap<String, OneOrMany>,
    /// Lower-case header names.
    #[serde(default)]
    pub headers: BTreeMap<String, OneOrMany>,
    /// The parsed body.
    pub body: B,
    /// Raw request bytes (opens on first use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_body: Option<ChannelReader>,
    /// Streaming response channel (opens on first use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<ChannelWriter>,
}

/// What an HTTP-triggered function returns (builtins.md §3.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HttpResponse<B = Value> {
    /// 100–599.
    pub status_code: u16,
    /// Response headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// Any JSON value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<B>,
}

impl<B> HttpResponse<B> {
    /// A response with `status_code` and `body`.
    pub fn json(status_code: u16, body: B) -> Self {
        Self { status_code, headers: None, body: Some(body) }
    }

    /// A response with only a status.
    pub fn status(status_code: u16) -> Self {
        Self { status_code, headers: None, body: None }
    }

    /// Adds a header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.get_or_insert_with(BTreeMap::new).insert(name.into(), value.into());
        self
    }
}
