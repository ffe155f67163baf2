/**
 * Reconnection backoff with jitter (sdk.md §2, protocol.md §3.7).
 */
import type { ReconnectionConfig } from './types.ts'

/** Defaults of sdk.md §2: 1000 ms, ×2, 30000 ms cap, jitter 0.3, unlimited retries. */
export const DEFAULT_RECONNECTION_CONFIG: Readonly<ReconnectionConfig> = Object.freeze({
  initialDelayMs: 1000,
  maxDelayMs: 30000,
  backoffMultiplier: 2,
  jitterFactor: 0.3,
  maxRetries: -1,
})

/**
 * Delay before reconnect attempt `attempt` (0-based), ms (sdk.md §2):
 * `d = min(initial × multiplier^attempt, max)`, then `floor(d + d × jitter × (2·random − 1))`,
 * never below 0. `random` gives values in [0, 1).
 */
export function backoffDelay(attempt: number, config: ReconnectionConfig, random: () => number = Math.random): number {
  const d = Math.min(config.initialDelayMs * config.backoffMultiplier ** attempt, config.maxDelayMs)
  return Math.max(0, Math.floor(d + d * config.jitterFactor * (2 * random() - 1)))
}
