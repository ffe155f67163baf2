//! The frame codec of the worker side (protocol.md §4–§5): [`decode_engine_frame`] reads what the
//! engine sends, the `encode_*` functions write what a worker sends. Mirrors `decodeEngineFrame`
//! and the worker encoders of `packages/protocol/src/codec.ts`.
//!
//! Decoding is lenient (protocol.md §3.5): `null` counts as omitted, unknown fields and types are
//! ignored, a field of the wrong type counts as absent. Payloads and results stay the JSON text
//! they arrived as ([`RawValue`]) until a handler's input type reads them. Never panics: a frame
//! that cannot be read carries nothing to act on, except an `invokefunction` whose
//! `invocation_id` can still be read, which is answered with `invalid_message` (a worker MUST
//! answer every call, protocol.md §5.8).

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::{codes, ErrorBody};

/// One engine → worker frame a worker acts on.
#[derive(Debug, Clone)]
pub enum EngineFrame {
    /// First frame of a connection (§5.10).
    WorkerRegistered {
        /// Worker id of this connection.
        worker_id: String,
        /// Secret proof for `reattach`.
        reattach_token: String,
        /// What the engine supports beyond the protocol (svc addition): `handler_spans` when it
        /// records the handler spans workers hand over. Non-string entries are left out.
        features: Vec<String>,
    },
    /// A call to execute (§5.8); `data` is the JSON text (`null` when absent).
    Invoke(InboundInvoke),
    /// A call that cannot be executed but is owed an answer (`invalid_message`).
    MalformedInvoke {
        /// The call to answer.
        invocation_id: String,
        /// The function id when one could be read, else empty.
        function_id: String,
        /// Why it was refused.
        reason: String,
    },
    /// The outcome of a call this worker made (§5.9).
    Result(InboundResult),
    /// A binding delivered to this worker as a provider (§5.5).
    RegisterTrigger(InboundBinding),
    /// A binding removed from this provider (§5.6).
    UnregisterTrigger {
        /// Trigger id.
        id: String,
    },
    /// A failure notice for a binding this worker registered (§5.7).
    TriggerFailed {
        /// Trigger id.
        id: String,
        /// Its type (`""` when absent).
        trigger_type: String,
        /// Its target (`""` when absent).
        function_id: String,
        /// The failure.
        error: ErrorBody,
    },
    /// One registration refused (§5.11).
    RegistrationRejected(Rejection),
    /// JSON keepalive (§5.14).
    Ping,
    /// JSON keepalive answer.
    Pong,
    /// Authentication failure before a close (§5.15).
    AuthError(ErrorBody),
    /// The engine cancelled a call this worker runs (svc addition, docs/reference/protocol.md
    /// "cancelinvocation"): stop it; no answer is owed.
    Cancel {
        /// The id of the leg the engine sent this worker.
        invocation_id: String,
        /// Why, cut to 1024 characters; `None` when absent or empty.
        reason: Option<String>,
    },
}

/// An `invokefunction` to execute.
#[derive(Debug, Clone)]
pub struct InboundInvoke {
    /// The leg's id; absent only from engines that send void calls without one.
    pub invocation_id: Option<String>,
    /// Function id as this worker registered it.
    pub function_id: String,
    /// Payload JSON text.
    pub data: Box<RawValue>,
    /// Metadata JSON text, when sent.
    pub metadata: Option<Box<RawValue>>,
    /// W3C trace context.
    pub traceparent: Option<String>,
    /// W3C baggage.
    pub baggage: Option<String>,
}

/// An `invocationresult` relayed to this worker as a caller.
#[derive(Debug, Clone)]
pub struct InboundResult {
    /// The caller's invocation id.
    pub invocation_id: String,
    /// The result JSON text (`None` when absent or `null`).
    pub result: Option<Box<RawValue>>,
    /// The failure, when present (wins over `result`).
    pub error: Option<ErrorBody>,
}

/// A binding delivered to a provider.
#[derive(Debug, Clone, PartialEq)]
pub struct InboundBinding {
    /// Trigger id.
    pub id: String,
    /// Trigger type id.
    pub trigger_type: String,
    /// Target function.
    pub function_id: String,
    /// Config (`{}` when absent).
    pub config: serde_json::Value,
    /// Binding metadata.
    pub metadata: Option<serde_json::Value>,
    /// Target namespace (absent: `default`).
    pub namespace: Option<String>,
    /// Provider namespace.
    pub trigger_namespace: Option<String>,
}

/// A `registrationrejected`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// `FUNCTION_NAMESPACE_CONFLICT` (non-fatal) or another (fatal) code.
    pub code: String,
    /// `reserved_id`, `forbidden`, `hook_denied`, `invalid`.
    pub reason: Option<String>,
    /// Explanation.
    pub message: String,
    /// Namespace the registration targeted.
    pub namespace: Option<String>,
    /// Set for a refused function.
    pub function_id: Option<String>,
    /// Set for a refused trigger type.
    pub trigger_type_id: Option<String>,
    /// Never set by svc.
    pub worker_name: Option<String>,
    /// Always `""` from svc.
    pub owner_worker_id: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Fields<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    invocation_id: Option<&'a RawValue>,
    #[serde(borrow)]
    function_id: Option<&'a RawValue>,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
    #[serde(borrow)]
    metadata: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow)]
    traceparent: Option<&'a RawValue>,
    #[serde(borrow)]
    baggage: Option<&'a RawValue>,
    #[serde(borrow)]
    worker_id: Option<&'a RawValue>,
    #[serde(borrow)]
    reattach_token: Option<&'a RawValue>,
    #[serde(borrow)]
    features: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    trigger_type: Option<&'a RawValue>,
    #[serde(borrow)]
    config: Option<&'a RawValue>,
    #[serde(borrow)]
    namespace: Option<&'a RawValue>,
    #[serde(borrow)]
    trigger_namespace: Option<&'a RawValue>,
    #[serde(borrow)]
    code: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow)]
    reason: Option<&'a RawValue>,
    #[serde(borrow)]
    owner_worker_id: Option<&'a RawValue>,
    #[serde(borrow)]
    trigger_type_id: Option<&'a RawValue>,
    #[serde(borrow)]
    worker_name: Option<&'a RawValue>,
}

/// A string field, else `None` (absent, `null` and other types count as omitted).
fn text(raw: Option<&RawValue>) -> Option<String> {
    let raw = raw?;
    if !raw.get().starts_with('"') {
        return None;
    }
    serde_json::from_str::<String>(raw.get()).ok()
}

fn value(raw: Option<&RawValue>) -> Option<serde_json::Value> {
    serde_json::from_str(raw?.get()).ok()
}

/// An ErrorBody from a wire `error` value; anything else becomes `UNKNOWN` with its JSON text.
pub(crate) fn wire_error_body(raw: &RawValue) -> ErrorBody {
    #[derive(Deserialize)]
    struct Body {
        code: String,
        message: String,
        #[serde(default)]
        stacktrace: Option<String>,
    }
    match serde_json::from_str::<Body>(raw.get()) {
        Ok(b) => ErrorBody { code: b.code, message: b.message, stacktrace: b.stacktrace },
        Err(_) => ErrorBody { code: codes::UNKNOWN.into(), message: raw.get().to_string(), stacktrace: None },
    }
}

fn is_error_body(raw: &RawValue) -> bool {
    #[derive(Deserialize)]
    struct Body {
        #[allow(dead_code)]
        code: String,
        #[allow(dead_code)]
        message: String,
        #[serde(default)]
        #[allow(dead_code)]
        stacktrace: Option<String>,
    }
    serde_json::from_str::<Body>(raw.get()).is_ok()
}

fn null() -> Box<RawValue> {
    RawValue::from_string("null".into()).expect("null is JSON")
}

/// Decodes one frame a worker received (text, or a binary frame read as UTF-8 JSON). Returns
/// `None` for what carries nothing to act on (§3.5). Never panics.
pub fn decode_engine_frame(data: &[u8]) -> Option<EngineFrame> {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();
    match serde_json::from_str::<Fields>(text) {
        Ok(f) => decode_fields(&f),
        // Duplicate keys or a broken frame: a call whose id can still be read is owed an answer,
        // and a cancel whose id can be read still cancels.
        Err(_) => owed_answer(text),
    }
}

fn owed_answer(text: &str) -> Option<EngineFrame> {
    let top = top_level_strings(text, &["type", "invocation_id", "function_id", "reason"])?;
    if top[0].as_deref() == Some("cancelinvocation") {
        // Read as the engine's parser reads it (the last of a duplicate key wins): a cancel is not lost.
        let reason = crate::handler_context::bound_reason(top[3].as_deref());
        return top[1].clone().map(|invocation_id| EngineFrame::Cancel { invocation_id, reason });
    }
    if top[0].as_deref() != Some("invokefunction") {
        return None;
    }
    let invocation_id = top[1].clone()?;
    let function_id = top[2].clone().unwrap_or_default();
    Some(EngineFrame::MalformedInvoke { invocation_id, function_id, reason: "frame could not be read".into() })
}

/// The string values of `keys` among the top-level members of a JSON object, read without
/// recursion (a frame nested deeper than the parser's limit still names the call it owes); the
/// last occurrence of a key wins, as in the engine's parser. `None` when `text` is not an object.
fn top_level_strings(text: &str, keys: &[&str]) -> Option<Vec<Option<String>>> {
    let bytes = text.as_bytes();
    let mut out = vec![None; keys.len()];
    let mut i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = skip_ws(bytes, i);
        match bytes.get(i)? {
            b'}' => return Some(out),
            b',' => {
                i += 1;
                continue;
            }
            b'"' => {}
            _ => return None,
        }
        let key_end = string_end(bytes, i)?;
        let key: String = serde_json::from_str(&text[i..key_end]).ok()?;
        i = skip_ws(bytes, key_end);
        if bytes.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(bytes, i + 1);
        let value_end = value_end(bytes, i)?;
        if let Some(slot) = keys.iter().position(|k| *k == key) {
            out[slot] = if bytes[i] == b'"' { serde_json::from_str(&text[i..value_end]).ok() } else { None };
        }
        i = value_end;
    }
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while matches!(bytes.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Index just past the string starting at `i` (which is `"`).
fn string_end(bytes: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match bytes.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// Index just past the value starting at `i`, nesting counted, not recursed.
fn value_end(bytes: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match bytes.get(i) {
            None => return None,
            Some(b'"') => {
                i = string_end(bytes, i)?;
                if depth == 0 {
                    return Some(i);
                }
                continue;
            }
            Some(b'{' | b'[') => depth += 1,
            Some(b'}' | b']') => {
                if depth == 0 {
                    return Some(i);
                }
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            Some(b',') if depth == 0 => return Some(i),
            _ => {}
        }
        i += 1;
    }
}

fn decode_fields(f: &Fields) -> Option<EngineFrame> {
    let kind = text(f.kind)?;
    match kind.as_str() {
        "invokefunction" => {
            let invocation_id = text(f.invocation_id);
            let Some(function_id) = text(f.function_id) else {
                return invocation_id.map(|invocation_id| EngineFrame::MalformedInvoke {
                    invocation_id,
                    function_id: String::new(),
                    reason: "function_id must be a string".into(),
                });
            };
            Some(EngineFrame::Invoke(InboundInvoke {
                invocation_id,
                function_id,
                data: f.data.map(|d| d.to_owned()).unwrap_or_else(null),
                metadata: f.metadata.map(|m| m.to_owned()),
                traceparent: text(f.traceparent),
                baggage: text(f.baggage),
            }))
        }
        "invocationresult" => {
            let invocation_id = text(f.invocation_id)?;
            let error = f.error.map(wire_error_body);
            let result = if error.is_some() { None } else { f.result.map(|r| r.to_owned()) };
            Some(EngineFrame::Result(InboundResult { invocation_id, result, error }))
        }
        "workerregistered" => Some(EngineFrame::WorkerRegistered {
            worker_id: text(f.worker_id)?,
            reattach_token: text(f.reattach_token)?,
            features: match value(f.features) {
                Some(serde_json::Value::Array(list)) => list.into_iter().filter_map(|v| if let serde_json::Value::String(s) = v { Some(s) } else { None }).collect(),
                _ => Vec::new(),
            },
        }),
        "registertrigger" => Some(EngineFrame::RegisterTrigger(InboundBinding {
            id: text(f.id)?,
            trigger_type: text(f.trigger_type)?,
            function_id: text(f.function_id)?,
            config: value(f.config).unwrap_or_else(|| serde_json::json!({})),
            metadata: value(f.metadata),
            namespace: text(f.namespace),
            trigger_namespace: text(f.trigger_namespace),
        })),
        "unregistertrigger" => Some(EngineFrame::UnregisterTrigger { id: text(f.id)? }),
        "triggerregistrationresult" => {
            let id = text(f.id)?;
            let error = f.error.map(wire_error_body)?;
            Some(EngineFrame::TriggerFailed {
                id,
                trigger_type: text(f.trigger_type).unwrap_or_default(),
                function_id: text(f.function_id).unwrap_or_default(),
                error,
            })
        }
        "registrationrejected" => {
            let code = text(f.code).unwrap_or_else(|| codes::UNKNOWN.to_string());
            Some(EngineFrame::RegistrationRejected(Rejection {
                message: text(f.message).unwrap_or_else(|| format!("registration rejected: {code}")),
                code,
                reason: text(f.reason),
                namespace: text(f.namespace),
                function_id: text(f.function_id),
                trigger_type_id: text(f.trigger_type_id),
                worker_name: text(f.worker_name),
                owner_worker_id: text(f.owner_worker_id).unwrap_or_default(),
            }))
        }
        "cancelinvocation" => Some(EngineFrame::Cancel {
            invocation_id: text(f.invocation_id)?,
            reason: crate::handler_context::bound_reason(text(f.reason).as_deref()),
        }),
        "ping" => Some(EngineFrame::Ping),
        "pong" => Some(EngineFrame::Pong),
        "error" => {
            let raw = f.error?;
            is_error_body(raw).then(|| EngineFrame::AuthError(wire_error_body(raw)))
        }
        _ => None,
    }
}

// ---------------------------------------------------------------- encoding (W→E)

fn push_str(out: &mut String, s: &str) {
    // Writing a `String` into a `String` cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into()));
}

/// `{"type":"cancelinvocation","invocation_id":…,"reason":…}` (W→E, svc addition): the caller
/// cancels a call it made. `reason` is cut to 1024 characters; `None` or empty sends none.
pub fn encode_cancel(invocation_id: &str, reason: Option<&str>) -> String {
    let mut out = String::with_capacity(72 + invocation_id.len());
    out.push_str("{\"type\":\"cancelinvocation\",\"invocation_id\":");
    push_str(&mut out, invocation_id);
    if let Some(reason) = crate::handler_context::bound_reason(reason) {
        out.push_str(",\"reason\":");
        push_str(&mut out, &reason);
    }
    out.push('}');
    out
}

/// `{"type":"invokefunction",...}`; `data` and `metadata` are JSON texts.
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode_invoke(
    invocation_id: Option<&str>,
    function_id: &str,
    data: &str,
    metadata: Option<&str>,
    action: Option<&str>,
    namespace: Option<&str>,
    traceparent: Option<&str>,
    baggage: Option<&str>,
) -> String {
    let mut out = String::with_capacity(96 + data.len());
    out.push_str("{\"type\":\"invokefunction\"");
    if let Some(id) = invocation_id {
        out.push_str(",\"invocation_id\":");
        push_str(&mut out, id);
    }
    out.push_str(",\"function_id\":");
    push_str(&mut out, function_id);
    out.push_str(",\"data\":");
    out.push_str(data);
    if let Some(m) = metadata {
        out.push_str(",\"metadata\":");
        out.push_str(m);
    }
    if let Some(a) = action {
        out.push_str(",\"action\":");
        out.push_str(a);
    }
    if let Some(ns) = namespace {
        out.push_str(",\"namespace\":");
        push_str(&mut out, ns);
    }
    if let Some(tp) = traceparent {
        out.push_str(",\"traceparent\":");
        push_str(&mut out, tp);
    }
    if let Some(b) = baggage {
        out.push_str(",\"baggage\":");
        push_str(&mut out, b);
    }
    out.push('}');
    out
}

/// `{"type":"invocationresult",...}`; `result` is JSON text; `error` wins over `result`.
pub(crate) fn encode_result(
    invocation_id: &str,
    function_id: &str,
    result: Option<&str>,
    error: Option<&ErrorBody>,
    traceparent: Option<&str>,
    baggage: Option<&str>,
    span: Option<(&str, &str)>,
) -> String {
    let mut out = String::with_capacity(96 + result.map_or(0, str::len));
    out.push_str("{\"type\":\"invocationresult\",\"invocation_id\":");
    push_str(&mut out, invocation_id);
    out.push_str(",\"function_id\":");
    push_str(&mut out, function_id);
    match (error, result) {
        (Some(e), _) => {
            out.push_str(",\"error\":");
            out.push_str(&serde_json::to_string(e).unwrap_or_else(|_| "{\"code\":\"invocation_failed\",\"message\":\"\"}".into()));
        }
        (None, Some(r)) => {
            out.push_str(",\"result\":");
            out.push_str(r);
        }
        (None, None) => {}
    }
    if let Some(tp) = traceparent {
        out.push_str(",\"traceparent\":");
        push_str(&mut out, tp);
    }
    if let Some(b) = baggage {
        out.push_str(",\"baggage\":");
        push_str(&mut out, b);
    }
    // The handler span's times when the engine records it (svc addition, docs/reference/protocol.md
    // "Handler spans recorded by the engine"); its `traceparent` names the span.
    if let (Some((start, end)), Some(_)) = (span, traceparent) {
        out.push_str(",\"span_start\":");
        push_str(&mut out, start);
        out.push_str(",\"span_end\":");
        push_str(&mut out, end);
    }
    out.push('}');
    out
}

/// `{"type":"triggerregistrationresult",...}` (the provider's answer, §5.7).
pub(crate) fn encode_trigger_result(id: &str, trigger_type: &str, function_id: &str, error: Option<&ErrorBody>) -> String {
    let mut frame = serde_json::json!({ "type": "triggerregistrationresult", "id": id, "trigger_type": trigger_type, "function_id": function_id });
    if let Some(e) = error {
        frame["error"] = serde_json::to_value(e).unwrap_or_default();
    }
    frame.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_well_formed_call_keeps_its_payload_text() {
        let frame = br#"{"type":"invokefunction","invocation_id":"i1","function_id":"math::add","data":{"a":1, "b":2},"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}"#;
        match decode_engine_frame(frame) {
            Some(EngineFrame::Invoke(call)) => {
                assert_eq!(call.invocation_id.as_deref(), Some("i1"));
                assert_eq!(call.data.get(), r#"{"a":1, "b":2}"#);
                assert!(call.traceparent.is_some());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_data_reads_as_null_and_null_fields_as_omitted() {
        match decode_engine_frame(br#"{"type":"invokefunction","invocation_id":"i","function_id":"f","metadata":null,"baggage":null}"#) {
            Some(EngineFrame::Invoke(call)) => {
                assert_eq!(call.data.get(), "null");
                assert!(call.metadata.is_none() && call.baggage.is_none());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_call_without_a_readable_function_id_is_still_answered() {
        assert!(matches!(
            decode_engine_frame(br#"{"type":"invokefunction","invocation_id":"i","function_id":7}"#),
            Some(EngineFrame::MalformedInvoke { .. })
        ));
        assert!(matches!(
            decode_engine_frame(br#"{"type":"invokefunction","invocation_id":"i","invocation_id":"j","function_id":"f"}"#),
            Some(EngineFrame::MalformedInvoke { invocation_id, .. }) if invocation_id == "j"
        ));
    }

    #[test]
    fn a_call_nested_past_the_parser_limit_is_still_answered() {
        let deep = format!(r#"{{"type":"invokefunction","data":{}1{},"invocation_id":"i\u0031","function_id":"f"}}"#, "[".repeat(5000), "]".repeat(5000));
        let owed = match decode_engine_frame(deep.as_bytes()) {
            Some(EngineFrame::Invoke(call)) => call.invocation_id,
            Some(EngineFrame::MalformedInvoke { invocation_id, .. }) => Some(invocation_id),
            _ => None,
        };
        assert_eq!(owed.as_deref(), Some("i1"));
        // Duplicate keys send the frame to the scanner, which reads past any nesting.
        let dup = format!(r#"{{"type":"invokefunction","function_id":"f","function_id":{}1{},"invocation_id":"j"}}"#, "{\"a\":".repeat(3000), "}".repeat(3000));
        assert!(matches!(decode_engine_frame(dup.as_bytes()), Some(EngineFrame::MalformedInvoke { invocation_id, .. }) if invocation_id == "j"));
    }

    #[test]
    fn an_error_that_is_not_an_error_body_becomes_unknown() {
        match decode_engine_frame(br#"{"type":"invocationresult","invocation_id":"i","error":{"oops":1},"result":5}"#) {
            Some(EngineFrame::Result(r)) => {
                assert_eq!(r.error.unwrap().code, "UNKNOWN");
                assert!(r.result.is_none());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknown_and_broken_frames_carry_nothing() {
        for frame in [&b""[..], b"[]", b"{}", b"{\"type\":\"nope\"}", b"{\"type\":5}", b"\xff\xfe", b"{\"type\":\"registerfunction\",\"id\":\"x\"}"] {
            assert!(decode_engine_frame(frame).is_none());
        }
    }

    #[test]
    fn encoders_write_what_the_engine_reads() {
        let call = encode_invoke(Some("i"), "a::\"b", "{\"x\":1}", None, Some("{\"type\":\"void\"}"), Some("ns"), None, None);
        let v: serde_json::Value = serde_json::from_str(&call).unwrap();
        assert_eq!(v["function_id"], "a::\"b");
        assert_eq!(v["action"]["type"], "void");
        let err = ErrorBody { code: "c".into(), message: "m".into(), stacktrace: None };
        let result: serde_json::Value = serde_json::from_str(&encode_result("i", "f", Some("1"), Some(&err), None, None, None)).unwrap();
        assert_eq!(result["error"]["code"], "c");
        assert!(result.get("result").is_none());
    }
}
