//! Redaction of recorded payloads (sdk.md §12.2): secrets never reach span events.

use serde_json::Value;

/// What replaces a redacted value.
pub const REDACTED_PLACEHOLDER: &str = "[REDACTED]";

const SENSITIVE: &[&str] = &[
    "api_key", "apikey", "api-key", "password", "secret", "credential", "authorization", "auth_token", "access_token",
    "refresh_token", "bearer", "private_key", "client_secret", "access_key",
];

/// True for a key whose value is redacted: one containing api_key, apikey, api-key, password,
/// secret, credential, authorization, auth_token, access_token, refresh_token, bearer, private_key,
/// client_secret or access_key (a channel ref's key opens its channel, protocol.md §9), exactly `token`, or ending in `_token`/`-token` (case-insensitive).
pub fn is_sensitive_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k == "token" || k.ends_with("_token") || k.ends_with("-token") || SENSITIVE.iter().any(|s| k.contains(s))
}

/// `value` with the value of every sensitive key (see [`is_sensitive_key`]) replaced by
/// [`REDACTED_PLACEHOLDER`], at any depth.
///
/// ```
/// use serde_json::json;
/// use svc_helpers::observability::redact;
/// assert_eq!(redact(&json!({"user": "a", "password": "p", "nested": [{"api_key": 1}]})),
///            json!({"user": "a", "password": "[REDACTED]", "nested": [{"api_key": "[REDACTED]"}]}));
/// ```
pub fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), if is_sensitive_key(k) { Value::String(REDACTED_PLACEHOLDER.into()) } else { redact(v) }))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}

/// The redacted JSON text of `value`, cut to at most `max_bytes` bytes on a UTF-8 boundary with
/// `..."[TRUNCATED]"` appended (sdk.md §12.2); returns the text and whether it was cut.
///
/// ```
/// use serde_json::json;
/// use svc_helpers::observability::redact_and_truncate;
/// let (text, cut) = redact_and_truncate(&json!({"k": "0123456789"}), Some(8));
/// assert!(cut && text.ends_with("...\"[TRUNCATED]\""));
/// ```
pub fn redact_and_truncate(value: &Value, max_bytes: Option<usize>) -> (String, bool) {
    let text = redact(value).to_string();
    match max_bytes {
        Some(max) if text.len() > max => {
            let mut end = max;
            while end > 0 && !text.is_char_boundary(end) {
                end -= 1;
            }
            (format!("{}...\"[TRUNCATED]\"", &text[..end]), true)
        }
        _ => (text, false),
    }
}

/// `SVC_TRACE_PAYLOAD_MAX_BYTES` as a byte cap; unset or unreadable means uncapped.
pub fn resolve_max_bytes_from_env() -> Option<usize> {
    std::env::var("SVC_TRACE_PAYLOAD_MAX_BYTES").ok().and_then(|v| v.trim().parse().ok())
}

/// True unless `SVC_DISABLE_TRACE_PAYLOADS` is `1` or `true` (protocol.md §10.1).
pub fn trace_payloads_enabled() -> bool {
    !matches!(std::env::var("SVC_DISABLE_TRACE_PAYLOADS").as_deref(), Ok("1") | Ok("true"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn keys_of_sdk_md_12_2() {
        for key in ["token", "X_TOKEN", "refresh-token", "Authorization", "my_client_secret", "apiKey", "access_key"] {
            assert!(is_sensitive_key(key), "{key}");
        }
        for key in ["tokens", "tokenizer", "user", "monkey"] {
            assert!(!is_sensitive_key(key), "{key}");
        }
    }

    proptest! {
        #[test]
        fn truncation_never_splits_a_character(s in "\\PC{0,40}", max in 0usize..60) {
            let (text, cut) = redact_and_truncate(&Value::String(s.clone()), Some(max));
            if cut {
                prop_assert!(text.len() <= max + "...\"[TRUNCATED]\"".len());
            } else {
                prop_assert_eq!(text, Value::String(s).to_string());
            }
        }
    }
}
