//! Properties of decoding engine frames (protocol.md §3.5, §5.8): hostile frames never panic the
//! decoder, and every `invokefunction` that carries a string `invocation_id` is owed an answer,
//! whatever else it carries (wrong field types, nulls, duplicate keys, deep nesting); a
//! `cancelinvocation` with a string id names that call, its reason bounded, and one the SDK
//! encodes reads back the same.

use proptest::prelude::*;
use serde_json::{json, Value};
use svc_sdk::codec::{decode_engine_frame, encode_cancel, EngineFrame};
use svc_sdk::MAX_CANCEL_REASON;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
        "\\PC{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const FIELDS: &[&str] = &["type", "invocation_id", "function_id", "data", "metadata", "result", "error", "traceparent", "baggage", "id", "config", "code", "reason", "worker_id", "reattach_token", "features"];

fn member() -> impl Strategy<Value = String> {
    (prop::sample::select(FIELDS), json_value()).prop_map(|(k, v)| format!("\"{k}\":{v}"))
}

/// Reasons a canceller may give: any text, far past the 1024 characters kept, multi-byte ones included.
fn reason() -> impl Strategy<Value = String> {
    prop_oneof!["\\PC{0,40}", "\\PC{1000,1100}", (1000usize..1100).prop_map(|n| "é".repeat(n)), (0usize..3).prop_map(|n| "😀".repeat(1020 + n))]
}

fn bounded(reason: &str) -> Option<String> {
    (!reason.is_empty()).then(|| reason.chars().take(MAX_CANCEL_REASON).collect())
}

fn nested(depth: usize) -> String {
    format!("{}0{}", "[".repeat(depth), "]".repeat(depth))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_engine_frame(&bytes);
    }

    #[test]
    fn arbitrary_objects_never_panic(members in prop::collection::vec(member(), 0..8)) {
        let _ = decode_engine_frame(format!("{{{}}}", members.join(",")).as_bytes());
    }

    #[test]
    fn a_call_with_a_string_invocation_id_is_always_owed_an_answer(
        id in "[A-Za-z0-9\\-]{1,36}",
        others in prop::collection::vec(member(), 0..6),
        deep in prop::option::of(100usize..3000),
        duplicate_type in any::<bool>(),
    ) {
        let mut members: Vec<String> = others
            .into_iter()
            .filter(|m| !m.starts_with("\"type\"") && !m.starts_with("\"invocation_id\""))
            .collect();
        if let Some(depth) = deep {
            members.push(format!("\"data\":{}", nested(depth)));
        }
        if duplicate_type {
            members.insert(0, "\"type\":\"invocationresult\"".into());
        }
        members.push("\"type\":\"invokefunction\"".into());
        members.push(format!("\"invocation_id\":\"{id}\""));
        let frame = format!("{{{}}}", members.join(","));
        let owed = match decode_engine_frame(frame.as_bytes()) {
            Some(EngineFrame::Invoke(call)) => call.invocation_id,
            Some(EngineFrame::MalformedInvoke { invocation_id, .. }) => Some(invocation_id),
            _ => None,
        };
        prop_assert_eq!(owed, Some(id), "frame: {}", frame);
    }

    #[test]
    fn a_cancelinvocation_names_its_call_with_its_reason_bounded(
        id in "\\PC{1,40}",
        reason in prop::option::of(reason()),
        others in prop::collection::vec(member(), 0..6),
    ) {
        let mut members: Vec<String> = others
            .into_iter()
            .filter(|m| !m.starts_with("\"type\"") && !m.starts_with("\"invocation_id\"") && !m.starts_with("\"reason\""))
            .collect();
        members.push("\"type\":\"cancelinvocation\"".into());
        members.push(format!("\"invocation_id\":{}", json!(id)));
        if let Some(r) = &reason {
            members.push(format!("\"reason\":{}", json!(r)));
        }
        let frame = format!("{{{}}}", members.join(","));
        match decode_engine_frame(frame.as_bytes()) {
            Some(EngineFrame::Cancel { invocation_id, reason: got }) => {
                prop_assert_eq!(invocation_id, id);
                prop_assert_eq!(got, reason.as_deref().and_then(bounded));
            }
            other => prop_assert!(false, "frame {} decoded as {:?}", frame, other),
        }
    }

    #[test]
    fn a_workerregistered_lists_the_string_entries_of_its_features(features in prop::option::of(json_value())) {
        let mut frame = json!({"type": "workerregistered", "worker_id": "w-1", "reattach_token": "t-1"});
        if let Some(f) = &features {
            frame["features"] = f.clone();
        }
        let want: Vec<String> = match &features {
            Some(Value::Array(list)) => list.iter().filter_map(|v| v.as_str().map(String::from)).collect(),
            _ => Vec::new(),
        };
        match decode_engine_frame(frame.to_string().as_bytes()) {
            Some(EngineFrame::WorkerRegistered { worker_id, features: got, .. }) => {
                prop_assert_eq!(worker_id, "w-1");
                prop_assert_eq!(got, want);
            }
            other => prop_assert!(false, "{} decoded as {:?}", frame, other),
        }
    }

    #[test]
    fn a_cancelinvocation_the_sdk_encodes_is_json_and_reads_back(id in "\\PC{1,40}", reason in prop::option::of(reason())) {
        let text = encode_cancel(&id, reason.as_deref());
        let value: Value = serde_json::from_str(&text).expect("JSON");
        prop_assert_eq!(&value["type"], "cancelinvocation");
        prop_assert!(value["reason"].as_str().is_none_or(|r| r.chars().count() <= MAX_CANCEL_REASON));
        match decode_engine_frame(text.as_bytes()) {
            Some(EngineFrame::Cancel { invocation_id, reason: got }) => {
                prop_assert_eq!(invocation_id, id);
                prop_assert_eq!(got, reason.as_deref().and_then(bounded));
            }
            other => prop_assert!(false, "{} decoded as {:?}", text, other),
        }
    }
}
