//! The registration store (sdk.md §3–§5, protocol.md §3.7; `RegistrationStore` of the client
//! core): the functions, trigger types and triggers registered through a client, each with its
//! frame, replayed on every open in the order of protocol.md §3.1 (trigger types, functions,
//! triggers). Registrations are replayed, never queued as frames. The checks are the engine's:
//! the client refuses, before sending, what the engine would refuse.

use std::sync::Arc;

use indexmap_lite::IndexMap;
use serde_json::{json, Value};

use crate::error::{codes, Error};
use crate::function::{ErasedHandler, RegisterFunction};
use crate::ids::id_problem;
use crate::trigger::ErasedTriggerHandler;

/// Insertion-ordered map (replay keeps registration order).
pub(crate) mod indexmap_lite {
    /// A small insertion-ordered map over a `Vec` plus a `HashMap` index.
    pub(crate) struct IndexMap<V> {
        keys: Vec<Option<String>>,
        index: std::collections::HashMap<String, (usize, V)>,
    }

    impl<V> Default for IndexMap<V> {
        fn default() -> Self {
            Self { keys: Vec::new(), index: std::collections::HashMap::new() }
        }
    }

    impl<V> IndexMap<V> {
        pub(crate) fn get(&self, key: &str) -> Option<&V> {
            self.index.get(key).map(|(_, v)| v)
        }
        pub(crate) fn contains(&self, key: &str) -> bool {
            self.index.contains_key(key)
        }
        pub(crate) fn insert(&mut self, key: String, value: V) -> Option<V> {
            if let Some(slot) = self.index.get_mut(&key) {
                return Some(std::mem::replace(&mut slot.1, value));
            }
            self.keys.push(Some(key.clone()));
            self.index.insert(key, (self.keys.len() - 1, value));
            None
        }
        pub(crate) fn remove(&mut self, key: &str) -> Option<V> {
            let (at, value) = self.index.remove(key)?;
            self.keys[at] = None;
            if self.keys.len() > 64 && self.index.len() * 2 < self.keys.len() {
                self.compact();
            }
            Some(value)
        }
        pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
            self.keys.iter().flatten().filter_map(|k| self.index.get(k).map(|(_, v)| v))
        }
        fn compact(&mut self) {
            self.keys.retain(Option::is_some);
            for (i, key) in self.keys.iter().enumerate() {
                if let Some(slot) = key.as_ref().and_then(|k| self.index.get_mut(k)) {
                    slot.0 = i;
                }
            }
        }
    }
}

/// A function this client registered.
pub(crate) struct LocalFunction {
    /// `None` for HTTP-invoked functions.
    pub(crate) handler: Option<ErasedHandler>,
    pub(crate) frame: String,
}

/// A trigger type this client provides.
pub(crate) struct LocalTriggerType {
    pub(crate) id: String,
    pub(crate) namespace: Option<String>,
    /// `<namespace>\0<id>`, the namespace being the one the engine places the provider in.
    pub(crate) key: String,
    pub(crate) handler: Arc<dyn ErasedTriggerHandler>,
    pub(crate) frame: String,
    /// Distinguishes a re-registration of the same key.
    pub(crate) generation: u64,
}

/// A binding this client registered as a consumer.
pub(crate) struct LocalTrigger {
    pub(crate) trigger_type: String,
    pub(crate) namespace: Option<String>,
    pub(crate) frame: String,
}

/// The key of a trigger type provided in `namespace`.
pub(crate) fn trigger_type_key(namespace: &str, id: &str) -> String {
    format!("{namespace}\u{0}{id}")
}

fn invalid_id(what: &str, id: &str) -> Result<(), Error> {
    match id_problem(id) {
        Some(problem) => Err(Error::remote(codes::INVALID_ID, format!("Invalid id: {what} {problem}"))),
        None => Ok(()),
    }
}

/// Refuses a namespace the engine would refuse: blank or not well-formed.
pub(crate) fn check_namespace(value: Option<&str>, field: &str) -> Result<(), Error> {
    let Some(ns) = value else { return Ok(()) };
    if ns.trim().is_empty() {
        return Err(Error::remote(codes::INVALID_NAMESPACE, format!("{field} is empty: give it a name, or omit it")));
    }
    match id_problem(ns) {
        Some(problem) => Err(Error::remote(codes::INVALID_NAMESPACE, format!("Invalid namespace: {field} {problem}"))),
        None => Ok(()),
    }
}

/// Why a call cannot be sent: an id or a namespace the engine would refuse.
pub(crate) fn request_problem(function_id: &str, namespace: Option<&str>) -> Result<(), Error> {
    if function_id.is_empty() {
        return Err(Error::remote(codes::INVALID_ARGUMENTS, "function_id is required"));
    }
    invalid_id("function_id", function_id)?;
    if let Some(ns) = namespace {
        if ns.trim().is_empty() {
            return Err(Error::remote(codes::INVALID_NAMESPACE, "namespace is empty: give it a name, or omit it to use `default`"));
        }
        check_namespace(Some(ns), "namespace")?;
    }
    Ok(())
}

#[derive(Default)]
pub(crate) struct RegistrationStore {
    pub(crate) functions: IndexMap<LocalFunction>,
    pub(crate) trigger_types: IndexMap<LocalTriggerType>,
    pub(crate) triggers: IndexMap<LocalTrigger>,
    generation: u64,
}

impl RegistrationStore {
    /// Checks and stores a function; returns its frame.
    pub(crate) fn add_function(&mut self, id: &str, f: RegisterFunction) -> Result<String, Error> {
        if id.trim().is_empty() {
            return Err(Error::Runtime("function id is required".into()));
        }
        invalid_id("function id", id)?;
        if self.functions.contains(id) {
            return Err(Error::Runtime(format!("function id already registered: {id}")));
        }
        let mut frame = json!({ "type": "registerfunction", "id": id });
        if let Some(d) = f.description {
            frame["description"] = Value::String(d);
        }
        if let Some(r) = f.request_format {
            frame["request_format"] = r;
        }
        if let Some(r) = f.response_format {
            frame["response_format"] = r;
        }
        if let Some(m) = f.metadata {
            frame["metadata"] = Value::Object(m);
        }
        if let Some(invocation) = &f.invocation {
            frame["invocation"] = serde_json::to_value(invocation)?;
        }
        let frame = frame.to_string();
        self.functions.insert(id.to_string(), LocalFunction { handler: f.handler, frame: frame.clone() });
        Ok(frame)
    }

    /// Checks and stores a binding under `id`; `namespace` is the target namespace after defaults.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add_trigger(
        &mut self,
        id: &str,
        trigger_type: &str,
        function_id: &str,
        config: Value,
        metadata: Option<Value>,
        namespace: Option<String>,
        trigger_namespace: Option<String>,
    ) -> Result<String, Error> {
        if trigger_type.trim().is_empty() {
            return Err(Error::Runtime("trigger type is required".into()));
        }
        if function_id.trim().is_empty() {
            return Err(Error::Runtime("function id is required".into()));
        }
        invalid_id("trigger type", trigger_type)?;
        invalid_id("function_id", function_id)?;
        check_namespace(namespace.as_deref(), "namespace")?;
        check_namespace(trigger_namespace.as_deref(), "trigger_namespace")?;
        let mut frame = json!({ "type": "registertrigger", "id": id, "trigger_type": trigger_type, "function_id": function_id,
            "config": if config.is_null() { json!({}) } else { config } });
        if let Some(m) = metadata {
            frame["metadata"] = m;
        }
        if let Some(ns) = &namespace {
            frame["namespace"] = json!(ns);
        }
        if let Some(ns) = &trigger_namespace {
            frame["trigger_namespace"] = json!(ns);
        }
        let frame = frame.to_string();
        self.triggers.insert(id.to_string(), LocalTrigger { trigger_type: trigger_type.to_string(), namespace, frame: frame.clone() });
        Ok(frame)
    }

    /// Checks and stores a trigger type, replacing one of the same key; returns its frame, key and generation.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add_trigger_type(
        &mut self,
        id: &str,
        description: &str,
        trigger_request_format: Option<Value>,
        call_request_format: Option<Value>,
        namespace: Option<String>,
        handler: Arc<dyn ErasedTriggerHandler>,
        worker_namespace: Option<&str>,
    ) -> Result<(String, String, u64), Error> {
        if id.trim().is_empty() {
            return Err(Error::Runtime("trigger type id is required".into()));
        }
        invalid_id("trigger type id", id)?;
        check_namespace(namespace.as_deref(), "namespace")?;
        let mut frame = json!({ "type": "registertriggertype", "id": id, "description": description });
        if let Some(f) = trigger_request_format {
            frame["trigger_request_format"] = f;
        }
        if let Some(f) = call_request_format {
            frame["call_request_format"] = f;
        }
        if let Some(ns) = &namespace {
            frame["namespace"] = json!(ns);
        }
        let frame = frame.to_string();
        let key = trigger_type_key(namespace.as_deref().or(worker_namespace).unwrap_or("default"), id);
        self.generation += 1;
        let generation = self.generation;
        self.trigger_types.insert(
            key.clone(),
            LocalTriggerType { id: id.to_string(), namespace, key: key.clone(), handler, frame: frame.clone(), generation },
        );
        Ok((frame, key, generation))
    }

    /// The provided type a delivered binding names: exact namespace first, else any of that id.
    pub(crate) fn find_trigger_type(&self, id: &str, namespace: Option<&str>) -> Option<&LocalTriggerType> {
        self.trigger_types
            .get(&trigger_type_key(namespace.unwrap_or("default"), id))
            .or_else(|| self.trigger_types.values().find(|t| t.id == id))
    }

    /// Every registration frame in the replay order of protocol.md §3.1.
    pub(crate) fn replay(&self) -> Vec<String> {
        let mut frames = Vec::new();
        frames.extend(self.trigger_types.values().map(|t| t.frame.clone()));
        frames.extend(self.functions.values().map(|f| f.frame.clone()));
        frames.extend(self.triggers.values().map(|t| t.frame.clone()));
        frames
    }
}
