/**
 * Test doubles for the kit's unit tests: a recording logger and a LocalWorker whose `invoke`
 * runs in-process handlers and records each request.
 */
import { Errors } from 'svc-protocol/errors'
import type { LocalInvokeRequest, LocalWorker, Logger } from '../../../engine/types.ts'

export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error'
  message: string
  data: Record<string, unknown> | undefined
}

export function recordingLogger(): { log: Logger; entries: LogEntry[] } {
  const entries: LogEntry[] = []
  const at = (level: LogEntry['level']) => (message: string, data?: Record<string, unknown>) => void entries.push({ level, message, data })
  return { log: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, entries }
}

export type FakeHandler = (data: unknown, request: LocalInvokeRequest) => unknown

/** A worker whose functions are local closures; unknown ids fail with `function_not_found`. */
export function fakeWorker(handlers: Record<string, FakeHandler> = {}): Pick<LocalWorker, 'invoke'> & {
  calls: LocalInvokeRequest[]
  handlers: Record<string, FakeHandler>
} {
  const calls: LocalInvokeRequest[] = []
  return {
    calls,
    handlers,
    async invoke(request: LocalInvokeRequest): Promise<unknown> {
      calls.push(request)
      const handler = handlers[request.function_id]
      if (!handler) throw Errors.functionNotFound(request.function_id, request.namespace ?? 'default')
      return handler(request.data, request)
    },
  }
}

/** A promise with its resolver. */
export function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void
  const promise = new Promise<T>((resolve) => (open = resolve))
  return { promise, open }
}
