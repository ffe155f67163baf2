/**
 * The development terminal's record of invocations (issue 11): one line per invocation at
 * `--log-level debug` (or `--verbose`), from an {@link Interceptor} on the engine's invocation
 * pipeline, so every caller — workers, HTTP triggers, cron, queues, `svc trigger` — is covered
 * without touching a call site.
 */
import type { Interceptor, Logger } from '../../runtime/index.ts'

export interface InvocationLogOptions {
  /** Where the lines go: a console-only logger (never the log store, whose `log` triggers are invocations themselves). */
  log: Logger
  /** Also engine-internal calls (`engine::…`, functions marked internal): only at `--log-level trace`. */
  internal: boolean
  /** Whether a function is internal (`TelemetryHub.isInternal`). */
  isInternal: (functionId: string, namespace: string) => boolean
}

/**
 * An interceptor that logs `math::add ok 3.1 ms (from caller-worker)` or
 * `math::add error function_not_found 0.2 ms …` when the invocation's outcome arrives.
 *
 * @example engine.telemetry.addInterceptor(invocationLogger({ log, internal: false, isInternal: (id, ns) => engine.telemetry.isInternal(id, ns) }))
 */
export function invocationLogger(options: InvocationLogOptions): Interceptor {
  const { log, internal, isInternal } = options
  return {
    name: 'dev-log',
    intercept(invocation, target) {
      if (!internal && (target.id.startsWith('engine::') || isInternal(target.id, target.namespace))) return
      const started = performance.now()
      const reply = invocation.reply
      const namespace = target.namespace === 'default' ? '' : ` [${target.namespace}]`
      const caller = invocation.caller?.name ? ` from ${invocation.caller.name}` : ''
      const line = (outcome: string) => `invoke ${target.id}${namespace} ${outcome} ${formatMs(performance.now() - started)}${caller}`
      invocation.reply = {
        result(value) {
          log.debug(line('ok'))
          reply.result(value)
        },
        error(error) {
          log.debug(line(`error ${error.code}: ${error.message}`))
          reply.error(error)
        },
      }
    },
  }
}

/** `0.4 ms`, `12 ms`, `1.2 s`. */
export function formatMs(ms: number): string {
  if (ms < 10) return `${ms.toFixed(1)} ms`
  if (ms < 1000) return `${Math.round(ms)} ms`
  return `${(ms / 1000).toFixed(1)} s`
}
