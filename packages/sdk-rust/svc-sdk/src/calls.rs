//! The call table (sdk.md §6; `CallTable` and `Deadlines` of the client core): synchronous and
//! enqueue calls awaiting their `invocationresult`, each with its deadline, and the frames of calls
//! made while not connected, sent in order after the next open. A call can be cancelled
//! ([`CallTable::cancel`]); the calls that time out after they were sent are returned by
//! [`CallTable::expire`] so the session cancels them in the engine (issue 21).

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::error::{codes, Error};

/// How a call ends: the result's JSON text (`None` when there was none) or the error.
pub(crate) type CallOutcome = Result<Option<Box<RawValue>>, Error>;

struct PendingCall {
    reply: oneshot::Sender<CallOutcome>,
    deadline: (Instant, u64),
    timeout_ms: u64,
    /// Sent on the current connection: it may have run if that connection drops.
    sent: bool,
    /// The frame while the call waits in the outbound queue.
    frame: Option<String>,
}

enum Queued {
    Void(String),
    Call(String),
}

/// Pending calls by invocation id, their deadlines in order, and the outbound queue.
#[derive(Default)]
pub(crate) struct CallTable {
    pending: HashMap<String, PendingCall>,
    deadlines: BTreeMap<(Instant, u64), String>,
    queue: VecDeque<Queued>,
    seq: u64,
}

impl CallTable {
    /// Calls awaiting an answer.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.pending.len()
    }

    /// Opens a call that ends with `TIMEOUT` unless settled within `timeout_ms` of `now`.
    /// Returns the frame to send now when `connected`, else queues it.
    pub(crate) fn open(&mut self, id: String, frame: String, now: Instant, timeout_ms: u64, reply: oneshot::Sender<CallOutcome>, connected: bool) -> Option<String> {
        self.seq += 1;
        let key = (now + std::time::Duration::from_millis(timeout_ms), self.seq);
        self.deadlines.insert(key, id.clone());
        if connected {
            self.pending.insert(id, PendingCall { reply, deadline: key, timeout_ms, sent: true, frame: None });
            Some(frame)
        } else {
            self.pending.insert(id.clone(), PendingCall { reply, deadline: key, timeout_ms, sent: false, frame: Some(frame) });
            self.queue.push_back(Queued::Call(id));
            None
        }
    }

    /// Queues the frame of a void call until the next open.
    pub(crate) fn queue_void(&mut self, frame: String) {
        self.queue.push_back(Queued::Void(frame));
    }

    /// Settles call `id` with `outcome`; false for a late or foreign answer.
    pub(crate) fn settle(&mut self, id: &str, outcome: CallOutcome) -> bool {
        match self.pending.remove(id) {
            Some(call) => {
                self.deadlines.remove(&call.deadline);
                let _ = call.reply.send(outcome);
                true
            }
            None => false,
        }
    }

    /// Cancels call `id`: it ends with `error` now and a late answer is ignored; a call still
    /// queued is dropped unsent. `Some(sent)` when it was pending (`sent`: the engine has it and
    /// must be told), `None` for a call that already ended.
    pub(crate) fn cancel(&mut self, id: &str, error: Error) -> Option<bool> {
        let call = self.pending.remove(id)?;
        self.deadlines.remove(&call.deadline);
        let _ = call.reply.send(Err(error));
        Some(call.sent)
    }

    /// The earliest deadline, if any call is pending.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.keys().next().map(|(at, _)| *at)
    }

    /// Ends every call whose deadline is not after `now` with `TIMEOUT` (a queued one is dropped
    /// from the queue). Returns the ids and timeouts (ms) of those that had been sent.
    pub(crate) fn expire(&mut self, now: Instant) -> Vec<(String, u64)> {
        let mut sent = Vec::new();
        while let Some(entry) = self.deadlines.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let id = entry.remove();
            if let Some(call) = self.pending.remove(&id) {
                let _ = call.reply.send(Err(Error::Timeout));
                if call.sent {
                    sent.push((id, call.timeout_ms));
                }
            }
        }
        sent
    }

    /// The queued frames in order (calls that expired meanwhile skipped), marking calls sent.
    pub(crate) fn drain_queue(&mut self) -> Vec<String> {
        let mut frames = Vec::with_capacity(self.queue.len());
        while let Some(item) = self.queue.pop_front() {
            match item {
                Queued::Void(frame) => frames.push(frame),
                Queued::Call(id) => {
                    if let Some(call) = self.pending.get_mut(&id) {
                        if let Some(frame) = call.frame.take() {
                            call.sent = true;
                            frames.push(frame);
                        }
                    }
                }
            }
        }
        frames
    }

    /// Ends the calls sent on a connection that was lost with `invocation_stopped` (sdk.md §6).
    pub(crate) fn fail_sent(&mut self) {
        let sent: Vec<String> = self.pending.iter().filter(|(_, c)| c.sent).map(|(id, _)| id.clone()).collect();
        for id in sent {
            if let Some(call) = self.pending.remove(&id) {
                self.deadlines.remove(&call.deadline);
                let _ = call.reply.send(Err(Error::Remote {
                    code: codes::INVOCATION_STOPPED.into(),
                    message: "Invocation stopped: connection to the engine was lost".into(),
                    stacktrace: None,
                }));
            }
        }
    }

    /// Ends every pending and queued call with `make()`; queued void calls are dropped.
    pub(crate) fn fail_all(&mut self, make: impl Fn() -> Error) {
        self.queue.clear();
        self.deadlines.clear();
        for (_, call) in self.pending.drain() {
            let _ = call.reply.send(Err(make()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(flavor = "current_thread")]
    async fn queued_calls_keep_their_timers_and_expired_ones_are_not_sent() {
        let mut table = CallTable::default();
        let now = Instant::now();
        let (tx1, rx1) = oneshot::channel();
        let (tx2, _rx2) = oneshot::channel();
        assert!(table.open("a".into(), "A".into(), now, 10, tx1, false).is_none());
        table.queue_void("V".into());
        table.open("b".into(), "B".into(), now, 60_000, tx2, false);
        // Not sent: nothing to cancel in the engine.
        assert!(table.expire(now + Duration::from_millis(10)).is_empty());
        assert!(matches!(rx1.await.unwrap(), Err(Error::Timeout)));
        assert_eq!(table.drain_queue(), vec!["V".to_string(), "B".to_string()]);
        table.fail_sent();
        assert_eq!(table.len(), 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_cancelled_call_ends_at_once_and_a_sent_one_that_times_out_is_reported() {
        let mut table = CallTable::default();
        let now = Instant::now();
        let (tx1, rx1) = oneshot::channel();
        let (tx2, rx2) = oneshot::channel();
        let (tx3, _rx3) = oneshot::channel();
        table.open("a".into(), "A".into(), now, 60_000, tx1, true);
        table.open("q".into(), "Q".into(), now, 60_000, tx2, false);
        table.open("t".into(), "T".into(), now, 25, tx3, true);
        assert_eq!(table.cancel("a", crate::handler_context::cancelled_error(Some("bye"))), Some(true));
        assert_eq!(table.cancel("a", Error::Timeout), None);
        assert_eq!(rx1.await.unwrap().unwrap_err().to_string(), "cancelled: Invocation cancelled: bye");
        // Queued: dropped unsent.
        assert_eq!(table.cancel("q", crate::handler_context::cancelled_error(None)), Some(false));
        assert!(rx2.await.unwrap().is_err());
        assert!(table.drain_queue().is_empty());
        assert_eq!(table.expire(now + Duration::from_millis(25)), vec![("t".to_string(), 25)]);
        assert_eq!(table.len(), 0);
    }
}
