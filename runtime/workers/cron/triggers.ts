/**
 * The `cron` trigger type (builtins.md §9.1) and the execution of schedules (§9.3).
 *
 * - A schedule is identified by (namespace, function_id, normalised expression, timezone,
 *   condition_function_id). Identical triggers (replicas) join one schedule; each slot runs on
 *   behalf of the oldest live trigger, whose id is `job_id` and whose metadata is passed.
 * - One loop per schedule: wait for the next slot, claim it in the store, evaluate the condition,
 *   invoke and wait (bounded by `timeout_ms`), then plan the first slot after the current time.
 *   Runs therefore never overlap, and slots that pass during a run are skipped, not caught up.
 * - Slots are claimed in a {@link CronSlotStore} keyed by a digest of the identity, so a slot never
 *   runs twice, not even after a restart on the same store.
 * - Time: wall-clock ms from `now()`, timers from the kit's {@link Clock}; a timer that fires early
 *   (capped delays, clock adjustments) is re-armed for the rest of the wait.
 */
import { createHash } from 'node:crypto'
import type { CronTriggerPayload } from 'svc-protocol'
import { errorBodyOf } from 'svc-protocol/errors'
import type { CronSlotStore } from '../../adapters/cron/types.ts'
import type { ActiveSpan, TelemetryHub } from '../../engine/telemetry.ts'
import type { BindingInfo, LocalInvokeRequest, LocalTriggerProvider, LocalTriggerTypeOptions, LocalWorker, Logger } from '../../engine/types.ts'
import type { AdapterSlot, AdapterSlots } from '../shared/adapter-slots.ts'
import type { CancelTimer, Clock } from '../shared/clock.ts'
import { createCondition } from '../shared/conditions.ts'
import { errorText, quoted } from '../shared/failure-text.ts'
import { parseCronTriggerConfig, type CronExpression, type CronTriggerConfig } from './expression.ts'

/** Longest single timer, ms; longer waits are re-armed (setTimeout overflows past 2^31 - 1 ms). */
export const MAX_TIMER_MS = 60 * 60 * 1000

/** The payload of one run (§9.3): svc-protocol's `CronTriggerPayload`. */
export type CronRunPayload = CronTriggerPayload

interface CronTrigger {
  readonly binding: BindingInfo
  readonly config: CronTriggerConfig
  /** Registration order; the lowest live one owns the schedule's runs. */
  readonly seq: number
  schedule: Schedule
}

class Schedule {
  readonly key: string
  /** Digest of {@link key}, the store's schedule id. */
  readonly id: string
  readonly compiled: CronExpression
  readonly triggers: CronTrigger[] = []
  cancel: CancelTimer | null = null
  running = false
  removed = false

  constructor(key: string, compiled: CronExpression) {
    this.key = key
    this.id = createHash('sha256').update(key).digest('hex').slice(0, 32)
    this.compiled = compiled
  }
}

/** The `cron` trigger type as the worker registers it (§9.1). */
export const CRON_TRIGGER_TYPE: LocalTriggerTypeOptions = {
  id: 'cron',
  description: 'Runs its function on a cron schedule (six or seven fields, seconds first), once per slot',
  trigger_request_format: {
    type: 'object',
    required: ['expression'],
    properties: {
      expression: { type: 'string', description: 'second minute hour day-of-month month day-of-week [year]' },
      timezone: { type: 'string', description: 'IANA zone; default: default_timezone' },
      timeout_ms: { type: 'integer', minimum: 1, default: 3_600_000 },
      condition_function_id: { type: 'string' },
    },
  },
  call_request_format: {
    type: 'object',
    required: ['trigger', 'job_id', 'scheduled_time', 'actual_time'],
    properties: {
      trigger: { const: 'cron' },
      job_id: { type: 'string' },
      scheduled_time: { type: 'string', format: 'date-time' },
      actual_time: { type: 'string', format: 'date-time' },
    },
  },
}

export interface CronSchedulerDeps {
  worker: Pick<LocalWorker, 'invoke'>
  log: Logger
  clock: Clock
  /** Wall-clock time, epoch ms. */
  now(): number
  /**
   * The worker's slot stores (the kit's {@link AdapterSlots}): each run holds the store current
   * when it starts until its run lock is released, so a store switch applies from the next slot
   * and a run in progress finishes on its store.
   */
  stores: AdapterSlots<CronSlotStore>
  /** `default_timezone` of the worker's settings. */
  defaultTimezone: string
  /** Where the `cron <function_id>` span of each run goes (builtins.md §12.7). */
  telemetry?: TelemetryHub
}

/**
 * Provider of the `cron` trigger type.
 *
 * @example
 * const scheduler = new CronScheduler({ worker, log, clock: systemClock, now: Date.now, stores, defaultTimezone: 'UTC' })
 * worker.registerTriggerType({ id: 'cron', description: '…' }, scheduler)
 */
export class CronScheduler implements LocalTriggerProvider {
  private readonly deps: CronSchedulerDeps
  private readonly triggers = new Map<string, CronTrigger>()
  private readonly schedules = new Map<string, Schedule>()
  private defaultTimezone: string
  private seq = 0
  private stopped = false

  constructor(deps: CronSchedulerDeps) {
    this.deps = deps
    this.defaultTimezone = deps.defaultTimezone
  }

  /** Number of live schedules (replicas counted once). */
  get size(): number {
    return this.schedules.size
  }

  registerTrigger(binding: BindingInfo): void {
    const { config, compiled } = parseCronTriggerConfig(binding.config, this.defaultTimezone, this.deps.now())
    const existing = this.triggers.get(binding.id)
    // A replacement (protocol.md §5.5) keeps the trigger's age.
    const seq = existing?.seq ?? this.seq++
    if (existing) this.detach(existing)
    this.attach(binding, config, compiled, seq)
  }

  unregisterTrigger(binding: BindingInfo): void {
    const trigger = this.triggers.get(binding.id)
    if (!trigger) return
    this.triggers.delete(binding.id)
    this.detach(trigger)
  }

  /**
   * Changes `default_timezone`: triggers without a timezone of their own move to the schedules of
   * the new zone (their slots are planned again).
   * @throws SvcError `INVALID_TRIGGER_CONFIG` when an expression has no future slot in `zone`; nothing changed then.
   */
  setDefaultTimezone(zone: string): void {
    if (zone === this.defaultTimezone) return
    const moving = [...this.triggers.values()].filter((t) => t.config.timezone === undefined).sort((a, b) => a.seq - b.seq)
    // Everything is parsed before anything moves, so a failure leaves the schedules as they were.
    const parsed = moving.map((trigger) => ({ trigger, ...parseCronTriggerConfig(trigger.binding.config, zone, this.deps.now()) }))
    this.defaultTimezone = zone
    for (const { trigger, config, compiled } of parsed) {
      this.detach(trigger)
      this.attach(trigger.binding, config, compiled, trigger.seq)
    }
  }

  /** Cancels every timer; runs in progress finish, nothing else starts. */
  stop(): void {
    this.stopped = true
    for (const schedule of this.schedules.values()) {
      schedule.cancel?.()
      schedule.cancel = null
    }
  }

  private attach(binding: BindingInfo, config: CronTriggerConfig, compiled: CronExpression, seq: number): void {
    const key = JSON.stringify([binding.namespace, binding.function_id, compiled.expression, compiled.timezone, config.condition_function_id ?? null])
    let schedule = this.schedules.get(key)
    const fresh = schedule === undefined
    if (!schedule) this.schedules.set(key, (schedule = new Schedule(key, compiled)))
    const trigger: CronTrigger = { binding, config, seq, schedule }
    schedule.triggers.push(trigger)
    schedule.triggers.sort((a, b) => a.seq - b.seq)
    this.triggers.set(binding.id, trigger)
    if (fresh) this.plan(schedule)
  }

  private detach(trigger: CronTrigger): void {
    const schedule = trigger.schedule
    const at = schedule.triggers.indexOf(trigger)
    if (at >= 0) schedule.triggers.splice(at, 1)
    if (schedule.triggers.length > 0) return
    schedule.removed = true
    schedule.cancel?.()
    schedule.cancel = null
    if (this.schedules.get(schedule.key) === schedule) this.schedules.delete(schedule.key)
  }

  /** Arms the timer of the first slot after the current time. */
  private plan(schedule: Schedule): void {
    if (this.stopped || schedule.removed || schedule.running) return
    const slot = schedule.compiled.next(this.deps.now())
    if (slot === undefined) {
      this.deps.log.info(`cron schedule ${schedule.compiled.expression} (${schedule.compiled.timezone}) has no further slot`, {
        schedule: schedule.id,
      })
      return
    }
    this.arm(schedule, slot)
  }

  private arm(schedule: Schedule, slot: number): void {
    const wait = Math.min(Math.max(0, slot - this.deps.now()), MAX_TIMER_MS)
    schedule.cancel = this.deps.clock.setTimeout(() => {
      schedule.cancel = null
      if (this.stopped || schedule.removed) return
      if (this.deps.now() < slot) return this.arm(schedule, slot)
      void this.run(schedule, slot)
    }, wait)
  }

  /** One slot (§9.3): run lock, claim, condition, invoke and wait; then plan the next slot. */
  private async run(schedule: Schedule, slot: number): Promise<void> {
    schedule.running = true
    let held: AdapterSlot<CronSlotStore> | null = null
    try {
      const owner = schedule.triggers[0]
      if (!owner) return
      held = this.deps.stores.hold()
      if (!held) return
      const store = held.adapter
      const storeFailed = (error: unknown) =>
        this.failed(owner, slot, 'slot not claimed (store failed); slot skipped', owner.binding.function_id, error)
      let release: (() => Promise<void>) | null
      try {
        release = await store.lockRun(schedule.id)
      } catch (error) {
        return storeFailed(error)
      }
      // Another engine is still running this schedule: the slot passes during its run (§9.3).
      if (!release) return
      try {
        let claimed: boolean
        try {
          claimed = await store.claim(schedule.id, slot)
        } catch (error) {
          return storeFailed(error)
        }
        if (claimed) await this.execute(owner, slot)
      } finally {
        await release()
      }
    } finally {
      this.deps.stores.release(held)
      schedule.running = false
      this.plan(schedule)
    }
  }

  private async execute(owner: CronTrigger, slot: number): Promise<void> {
    const { binding, config } = owner
    const payload: CronRunPayload = {
      trigger: 'cron',
      job_id: binding.id,
      scheduled_time: new Date(slot).toISOString(),
      actual_time: new Date(this.deps.now()).toISOString(),
    }
    const started = this.deps.clock.now()
    // `cron <function_id>` (§12.7): the root span of the run, parent of the condition and handler calls.
    const hub = this.deps.telemetry
    const span =
      hub?.recording() === true
        ? hub.startSpan({ name: `cron ${binding.function_id}`, kind: 'internal', attributes: { ...hub.deliveryAttributes(binding.function_id, binding.namespace, { worker: 'svc-cron', triggerType: 'cron', triggerId: binding.id }), 'svc.cron.scheduled_time': payload.scheduled_time } })
        : undefined
    const condition = createCondition(this.deps.worker, {
      condition_function_id: config.condition_function_id,
      namespace: binding.namespace,
      metadata: binding.metadata,
    })
    if (condition) {
      const outcome = await condition(payload, span !== undefined ? { timeoutMs: config.timeout_ms, traceparent: span.traceparent } : { timeoutMs: config.timeout_ms })
      if (!outcome.run) {
        if (outcome.failed) this.failed(owner, slot, 'condition failed; slot skipped', config.condition_function_id!, outcome.error, span)
        else span?.end('ok')
        return
      }
    }
    const remaining = Math.floor(config.timeout_ms - (this.deps.clock.now() - started))
    const request: LocalInvokeRequest = { function_id: binding.function_id, data: payload, namespace: binding.namespace, timeoutMs: Math.max(1, remaining) }
    if (binding.metadata !== undefined && binding.metadata !== null) request.metadata = binding.metadata
    if (span !== undefined) request.traceparent = span.traceparent
    try {
      await this.deps.worker.invoke(request)
      span?.end('ok')
    } catch (error) {
      const what = errorBodyOf(error).code === 'TIMEOUT' ? `run timed out after ${config.timeout_ms}ms` : 'run failed'
      this.failed(owner, slot, what, binding.function_id, error, span)
    }
  }

  private failed(owner: CronTrigger, slot: number, what: string, functionId: string, error: unknown, span?: ActiveSpan): void {
    if (span !== undefined) {
      const body = errorBodyOf(error)
      span.end('error', body.message, { 'svc.error.code': body.code })
    }
    if (this.stopped) return
    // One line at the default level (issue 21): the trigger, its schedule, the function, the error
    // (bounded and escaped: the message comes from the handler).
    const body = errorBodyOf(error)
    const { binding, config } = owner
    this.deps.log.error(`cron trigger ${quoted(binding.id)} (${quoted(config.expression)}): ${quoted(functionId)} ${what}: ${errorText(body)}`, {
      trigger_id: binding.id,
      function_id: functionId,
      scheduled_time: new Date(slot).toISOString(),
      code: body.code,
    })
  }
}
