//! Reconnection backoff with jitter (sdk.md §2, protocol.md §3.7), the one formula the worker
//! connection and the telemetry socket use.

/// How a client reconnects (sdk.md §2). Defaults: 1000 ms, ×2, 30000 ms cap, jitter 0.3, unlimited
/// retries.
///
/// ```
/// use svc_helpers::ReconnectionConfig;
/// let quick = ReconnectionConfig { initial_delay_ms: 100, max_retries: 5, ..ReconnectionConfig::default() };
/// assert_eq!(quick.max_delay_ms, 30000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReconnectionConfig {
    /// Delay before the first reconnect attempt, ms.
    pub initial_delay_ms: u64,
    /// Longest delay between attempts, ms.
    pub max_delay_ms: u64,
    /// Factor applied to the delay after each failed attempt.
    pub backoff_multiplier: f64,
    /// Random spread of each delay, 0–1 (0.3 = ±30 %).
    pub jitter_factor: f64,
    /// Consecutive failed attempts before the client gives up (state `failed`); -1 = unlimited.
    pub max_retries: i64,
}

impl Default for ReconnectionConfig {
    fn default() -> Self {
        Self { initial_delay_ms: 1000, max_delay_ms: 30000, backoff_multiplier: 2.0, jitter_factor: 0.3, max_retries: -1 }
    }
}

/// Delay before reconnect attempt `attempt` (0-based), ms (sdk.md §2):
/// `d = min(initial × multiplier^attempt, max)`, then `floor(d + d × jitter × (2·random − 1))`,
/// never below 0. `random` is a value in [0, 1).
///
/// ```
/// use svc_helpers::{backoff_delay, ReconnectionConfig};
/// let c = ReconnectionConfig::default();
/// assert_eq!(backoff_delay(0, &c, 0.5), 1000);
/// assert_eq!(backoff_delay(10, &c, 0.5), 30000);
/// ```
pub fn backoff_delay(attempt: u32, config: &ReconnectionConfig, random: f64) -> u64 {
    let initial = config.initial_delay_ms as f64;
    let d = (initial * config.backoff_multiplier.powi(attempt.min(1024) as i32)).min(config.max_delay_ms as f64);
    let d = if d.is_finite() { d } else { config.max_delay_ms as f64 };
    let jittered = (d + d * config.jitter_factor * (2.0 * random - 1.0)).floor();
    if jittered.is_finite() && jittered > 0.0 { jittered as u64 } else { 0 }
}

/// A random value in [0, 1) from the operating system's generator (for the jitter).
pub fn random_unit() -> f64 {
    let bits = uuid::Uuid::new_v4().as_u128() as u64 >> 11;
    bits as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_formula_of_sdk_md_section_2() {
        let c = ReconnectionConfig::default();
        assert_eq!(backoff_delay(0, &c, 0.0), 700);
        assert_eq!(backoff_delay(1, &c, 0.5), 2000);
        assert_eq!(backoff_delay(4, &c, 0.5), 16000);
        assert_eq!(backoff_delay(5, &c, 0.5), 30000);
        assert_eq!(backoff_delay(u32::MAX, &c, 0.999_999), 38999);
    }

    #[test]
    fn random_unit_stays_in_range() {
        for _ in 0..1000 {
            let r = random_unit();
            assert!((0.0..1.0).contains(&r));
        }
    }
}
