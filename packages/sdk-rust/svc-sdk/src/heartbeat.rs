//! The keepalive of a connection (protocol.md §3.3, sdk.md §8; `Heartbeat` of the client core):
//! a WebSocket ping every `ping_interval`, and the connection counts as dead after `idle_timeout`
//! without any inbound frame (message, ping or pong).

use std::time::Duration;

use tokio::time::{interval_at, sleep_until, Instant, Interval, MissedTickBehavior};

/// What the heartbeat asks of the session.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Beat {
    /// Send a ping now.
    Ping,
    /// Nothing arrived for `idle_timeout`: drop the connection and reconnect.
    Idle,
}

pub(crate) struct Heartbeat {
    idle_timeout: Duration,
    heard: Instant,
    ticker: Interval,
}

impl Heartbeat {
    /// Starts tracking a connection that opened now.
    pub(crate) fn track(ping_interval: Duration, idle_timeout: Duration) -> Self {
        let mut ticker = interval_at(Instant::now() + ping_interval, ping_interval);
        // A late tick (a busy runtime) sends one ping, not a burst.
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Self { idle_timeout, heard: Instant::now(), ticker }
    }

    /// Proof of life: a frame arrived.
    pub(crate) fn heard(&mut self) {
        self.heard = Instant::now();
    }

    /// The next thing to do: ping, or give up on a silent connection.
    pub(crate) async fn next(&mut self) -> Beat {
        tokio::select! {
            _ = self.ticker.tick() => Beat::Ping,
            _ = sleep_until(self.heard + self.idle_timeout) => Beat::Idle,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn pings_on_time_and_gives_up_after_silence() {
        let mut beat = Heartbeat::track(Duration::from_millis(20000), Duration::from_millis(60000));
        assert_eq!(beat.next().await, Beat::Ping);
        tokio::time::advance(Duration::from_millis(15000)).await;
        beat.heard(); // at 35 s
        assert_eq!(beat.next().await, Beat::Ping); // 40 s
        assert_eq!(beat.next().await, Beat::Ping); // 60 s
        assert_eq!(beat.next().await, Beat::Ping); // 80 s
        assert_eq!(beat.next().await, Beat::Idle); // 95 s: 60 s after the last frame
    }
}
