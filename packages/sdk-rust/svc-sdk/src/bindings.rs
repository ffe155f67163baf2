//! The provider side of trigger types (protocol.md §8.3, sdk.md §5; `ProviderBindings` of the
//! client core): the bindings the engine delivered for the trigger types this client provides,
//! each held by its type's handler from a `register_trigger` that succeeded until
//! `unregister_trigger`.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::error::{codes, ErrorBody};
use crate::trigger::{ErasedTriggerHandler, TriggerConfig};

struct Held {
    type_key: String,
    generation: u64,
    /// Dropped or fired: the handler lets go (after its registration settled, if it accepted).
    release: oneshot::Sender<()>,
}

#[derive(Default)]
pub(crate) struct ProviderBindings {
    held: HashMap<String, Held>,
}

impl ProviderBindings {
    /// Hands a delivered binding to `handler` on the current runtime; `answer` gets the outcome
    /// (no error, or `trigger_registration_failed` with the handler's message). A known id is a
    /// replacement (protocol.md §5.5): the old binding is let go first.
    pub(crate) fn deliver(
        &mut self,
        config: TriggerConfig,
        type_key: String,
        generation: u64,
        handler: Arc<dyn ErasedTriggerHandler>,
        answer: impl FnOnce(Option<ErrorBody>) + Send + 'static,
    ) {
        let (release, released) = oneshot::channel::<()>();
        if let Some(previous) = self.held.insert(config.id.clone(), Held { type_key, generation, release }) {
            let _ = previous.release.send(());
        }
        tokio::spawn(async move {
            match handler.register(config.clone()).await {
                Ok(()) => answer(None),
                Err(e) => {
                    answer(Some(ErrorBody { code: codes::TRIGGER_REGISTRATION_FAILED.into(), message: e.to_string(), stacktrace: None }));
                    return;
                }
            }
            let _ = released.await;
            let id = config.id.clone();
            if let Err(e) = handler.unregister(config).await {
                eprintln!("[svc] unregister_trigger of trigger '{id}' failed: {e}");
            }
        });
    }

    /// The engine removed binding `id` (§5.6).
    pub(crate) fn remove(&mut self, id: &str) {
        if let Some(held) = self.held.remove(id) {
            let _ = held.release.send(());
        }
    }

    /// Lets go of the bindings of one type registration, or of all of them (connection lost, shutdown).
    pub(crate) fn release_all(&mut self, only: Option<(&str, u64)>) {
        let ids: Vec<String> = self
            .held
            .iter()
            .filter(|(_, h)| only.is_none_or(|(key, generation)| h.type_key == key && h.generation == generation))
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            self.remove(&id);
        }
    }
}

