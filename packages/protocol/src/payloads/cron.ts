/**
 * Trigger payloads of the cron worker (`svc-cron`, builtins.md §9); it registers no functions.
 * Types only.
 *
 * @example
 * client.registerTrigger<CronTriggerConfig>({
 *   type: 'cron', function_id: 'reports::daily', config: { expression: '0 0 2 * * *', timezone: 'Europe/Berlin' },
 * })
 */

/**
 * `config` of a `cron` trigger (§9.1). Refusals come back as `INVALID_TRIGGER_CONFIG` (`Cron
 * expression is required`, `Invalid cron expression '<expr>': <reason>`, `Unknown timezone '<tz>'`).
 */
export interface CronTriggerConfig {
  /** `second minute hour day-of-month month day-of-week [year]` (six or seven fields, §9.2). */
  expression: string
  /** IANA zone name; default the worker's `default_timezone` (`UTC`). */
  timezone?: string
  /** Bound of one run in ms; default 3 600 000. A timed-out run counts as finished and is logged. */
  timeout_ms?: number
  /** Function deciding per slot; `false` or a failure skips the slot (builtins.md §2.2). */
  condition_function_id?: string
}

/** Payload a `cron` trigger delivers (§9.3); times are RFC 3339 UTC with milliseconds. */
export interface CronTriggerPayload {
  trigger: 'cron'
  /** Id of the trigger the run is made for (the oldest of identical replicas). */
  job_id: string
  scheduled_time: string
  actual_time: string
}
