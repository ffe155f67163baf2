//! The context a handler runs with: its invocation id and its cancellation (svc addition,
//! docs/reference/protocol.md "cancelinvocation"; `HandlerRun` of the client core's
//! `handler-context.ts`). The session keeps one per running invocation, by the id the engine sent,
//! so that a `cancelinvocation` frame finds it; it is current while the handler runs (a task-local
//! for an async handler, a thread-local for a blocking one), so the calls the handler makes with
//! [`crate::Svc::trigger`] are cancelled with it.

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

/// Longest `reason` a `cancelinvocation` carries, in characters (the engine keeps no more).
pub const MAX_CANCEL_REASON: usize = 1024;

/// `reason` cut to [`MAX_CANCEL_REASON`] characters; an empty one counts as none.
pub(crate) fn bound_reason(reason: Option<&str>) -> Option<String> {
    match reason {
        None | Some("") => None,
        Some(r) => Some(match r.char_indices().nth(MAX_CANCEL_REASON) {
            Some((cut, _)) => r[..cut].to_string(),
            None => r.to_string(),
        }),
    }
}

/// The catalogue's error of a cancelled call: code `cancelled`, message `Invocation cancelled`
/// or `Invocation cancelled: <reason>`.
pub(crate) fn cancelled_error(reason: Option<&str>) -> crate::Error {
    let message = match reason {
        None | Some("") => "Invocation cancelled".to_string(),
        Some(r) => format!("Invocation cancelled: {r}"),
    };
    crate::Error::Remote { code: crate::codes::CANCELLED.into(), message, stacktrace: None }
}

struct Run {
    invocation_id: String,
    function_id: String,
    token: CancellationToken,
    reason: OnceLock<Option<String>>,
}

/// What a running handler may ask about its invocation (the Node SDK's `HandlerContext`): its id
/// and whether it was cancelled. Get it with [`HandlerContext::current`] inside a handler. Cheap
/// to clone; every clone is the same invocation.
///
/// An invocation is cancelled when its caller cancelled it (a dropped `trigger` future, its
/// timeout, a handler of its own that was cancelled), the engine's timeout passed, its caller or
/// HTTP client went away, or `engine::invocations::cancel` named it. Nobody waits for the answer
/// any more: an async handler's future is dropped at its next `.await` (write cleanup as `Drop`
/// guards); a blocking handler runs on and should check [`HandlerContext::is_cancelled`] and stop.
/// Either way its result is dropped, and the calls it made with [`crate::Svc::trigger`] are
/// cancelled with it (the engine is sent `cancelinvocation` for each).
///
/// ```
/// use svc_sdk::{Error, HandlerContext, RegisterFunction};
///
/// let f = RegisterFunction::new(|pages: Vec<String>| {
///     let cx = HandlerContext::current().expect("inside a handler");
///     for page in &pages {
///         if cx.is_cancelled() {
///             break; // the result is dropped anyway
///         }
///         let _ = page; // render it
///     }
///     Ok::<_, Error>(pages.len())
/// });
/// # let _ = f;
/// ```
#[derive(Clone)]
pub struct HandlerContext {
    run: Arc<Run>,
}

impl std::fmt::Debug for HandlerContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerContext")
            .field("invocation_id", &self.run.invocation_id)
            .field("function_id", &self.run.function_id)
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

tokio::task_local! {
    static TASK_CONTEXT: HandlerContext;
}

thread_local! {
    static THREAD_CONTEXT: RefCell<Option<HandlerContext>> = const { RefCell::new(None) };
}

impl HandlerContext {
    pub(crate) fn new(invocation_id: String, function_id: String) -> Self {
        Self { run: Arc::new(Run { invocation_id, function_id, token: CancellationToken::new(), reason: OnceLock::new() }) }
    }

    /// The context of the invocation the calling handler serves: inside an async handler's
    /// future, or on a blocking handler's thread while it runs. `None` elsewhere, including in
    /// tasks and threads the handler spawns (pass the context along to those).
    pub fn current() -> Option<HandlerContext> {
        TASK_CONTEXT.try_with(|cx| cx.clone()).ok().or_else(|| THREAD_CONTEXT.with(|cx| cx.borrow().clone()))
    }

    /// The id the engine gave this invocation (protocol.md §5.8).
    pub fn invocation_id(&self) -> &str {
        &self.run.invocation_id
    }

    /// The function being run.
    pub fn function_id(&self) -> &str {
        &self.run.function_id
    }

    /// True once the invocation is cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.run.token.is_cancelled()
    }

    /// The canceller's reason (at most 1024 characters); `None` without one or before a cancel.
    pub fn reason(&self) -> Option<&str> {
        self.run.reason.get().and_then(|r| r.as_deref())
    }

    /// Completes when the invocation is cancelled (at once if it already is).
    pub async fn cancelled(&self) {
        self.run.token.cancelled().await
    }

    /// The invocation's cancellation token (a clone: cancelled with it), for APIs that take one.
    /// Cancelling it yourself does not cancel the invocation in the engine.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.run.token.child_token()
    }

    /// Cancels the run with `reason` (cut to 1024 characters); false when it already was.
    pub(crate) fn cancel(&self, reason: Option<&str>) -> bool {
        if self.run.reason.set(bound_reason(reason)).is_err() {
            return false;
        }
        self.run.token.cancel();
        true
    }

    /// Whether `other` is this same invocation run.
    pub(crate) fn same(&self, other: &HandlerContext) -> bool {
        Arc::ptr_eq(&self.run, &other.run)
    }

    /// Runs `fut` with this context current (task-local).
    pub(crate) async fn scope<F: std::future::Future>(self, fut: F) -> F::Output {
        TASK_CONTEXT.scope(self, fut).await
    }

    /// Runs `f` on this thread with this context current (thread-local), then restores the previous one.
    pub(crate) fn enter<T>(&self, f: impl FnOnce() -> T) -> T {
        struct Restore(Option<HandlerContext>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                THREAD_CONTEXT.with(|cx| *cx.borrow_mut() = previous);
            }
        }
        let _restore = Restore(THREAD_CONTEXT.with(|cx| cx.borrow_mut().replace(self.clone())));
        f()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_cut_to_1024_characters_not_bytes() {
        assert_eq!(bound_reason(None), None);
        assert_eq!(bound_reason(Some("")), None);
        assert_eq!(bound_reason(Some("stop")).as_deref(), Some("stop"));
        let long = "é".repeat(1500);
        assert_eq!(bound_reason(Some(&long)).unwrap().chars().count(), MAX_CANCEL_REASON);
    }

    #[test]
    fn a_run_is_cancelled_once_with_its_first_reason() {
        let cx = HandlerContext::new("i".into(), "f::g".into());
        assert!(!cx.is_cancelled() && cx.reason().is_none());
        assert!(cx.cancel(Some("first")));
        assert!(!cx.cancel(Some("second")));
        assert!(cx.is_cancelled() && cx.cancellation_token().is_cancelled());
        assert_eq!(cx.reason(), Some("first"));
        assert!(HandlerContext::current().is_none());
        cx.enter(|| assert!(HandlerContext::current().is_some_and(|c| c.same(&cx))));
        assert!(HandlerContext::current().is_none());
    }
}
