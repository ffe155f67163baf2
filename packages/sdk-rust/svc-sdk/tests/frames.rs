//! Properties of decoding engine frames (protocol.md §3.5, §5.8): hostile frames never panic the
//! decoder, and every `invokefunction` that carries a string `invocation_id` is owed an answer,
//! whatever else it carries (wrong field types, nulls, duplicate keys, deep nesting).

use proptest::prelude::*;
use serde_json::{json, Value};
use svc_sdk::codec::{decode_engine_frame, EngineFrame};

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

const FIELDS: &[&str] = &["type", "invocation_id", "function_id", "data", "metadata", "result", "error", "traceparent", "baggage", "id", "config", "code"];

fn member() -> impl Strategy<Value = String> {
    (prop::sample::select(FIELDS), json_value()).prop_map(|(k, v)| format!("\"{k}\":{v}"))
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
}
