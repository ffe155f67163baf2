/**
 * `svc-sdk/telemetry`: the telemetry API of sdk.md §12, re-exported from `svc-helpers/observability`.
 *
 * @example
 * import { getLogger, withSpan } from 'svc-sdk/telemetry'
 * await withSpan('work', {}, async () => getLogger().info('working'))
 */
export * from 'svc-helpers/observability'
