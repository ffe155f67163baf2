/**
 * The engine's error catalogue (protocol.md §7.2): one place for every code and message template
 * the engine and its built-in workers produce. Codes are the contract shared with the SDK
 * (`svc-sdk/errors`) and the CLI.
 */
import type { ErrorBody } from 'svc-sdk/protocol'

export type { ErrorBody }

/**
 * An error with a stable `code`, thrown by engine code and built-in function handlers. The engine
 * turns it into the wire ErrorBody `{code, message}`; HTTP surfaces add a status.
 */
export class EngineError extends Error {
  readonly code: string
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.name = 'EngineError'
  }

  toErrorBody(): ErrorBody {
    return { code: this.code, message: this.message }
  }
}

/** Converts anything thrown into an ErrorBody; unexpected errors become `internal_error`. */
export function errorBodyOf(thrown: unknown): ErrorBody {
  if (thrown instanceof EngineError) return thrown.toErrorBody()
  if (typeof thrown === 'object' && thrown !== null) {
    const t = thrown as { code?: unknown; message?: unknown; stacktrace?: unknown; stack?: unknown }
    if (typeof t.code === 'string' && /^[A-Za-z0-9_.:-]{1,64}$/.test(t.code) && typeof t.message === 'string') {
      const body: ErrorBody = { code: t.code, message: t.message }
      if (typeof t.stacktrace === 'string') body.stacktrace = t.stacktrace
      return body
    }
    if (thrown instanceof Error) {
      const body: ErrorBody = { code: 'invocation_failed', message: thrown.message }
      if (thrown.stack) body.stacktrace = thrown.stack
      return body
    }
  }
  return { code: 'invocation_failed', message: String(thrown) }
}

/** Message templates of protocol.md §7.2, by code. */
export const Errors = {
  functionNotFound(id: string, namespace: string, elsewhere: string[] = []): EngineError {
    let message = namespace === 'default' ? `Function ${id} not found` : `Function ${id} not found in namespace ${namespace}`
    if (elsewhere.length > 0) message += `. It is registered in namespace(s): ${elsewhere.join(', ')}`
    return new EngineError('function_not_found', message)
  },
  invocationStopped(): EngineError {
    return new EngineError('invocation_stopped', 'Invocation stopped')
  },
  timeout(ms: number): EngineError {
    return new EngineError('TIMEOUT', `invocation timed out after ${ms}ms`)
  },
  invalidMessage(reason: string): EngineError {
    return new EngineError('invalid_message', `Invalid message: ${reason}`)
  },
  invalidNamespace(): EngineError {
    return new EngineError('INVALID_NAMESPACE', 'namespace is empty: give it a name, or omit it to use `default`')
  },
  invalidArguments(functionId: string, detail: string): EngineError {
    return new EngineError('INVALID_ARGUMENTS', `Invalid input for ${functionId}: ${detail}`)
  },
  notFound(message: string): EngineError {
    return new EngineError('NOT_FOUND', message)
  },
  enqueueNoProvider(): EngineError {
    return new EngineError(
      'enqueue_error',
      'No queue provider is installed; enable the queue worker (svc worker add queue)',
    )
  },
  enqueueFailed(providerCode: string, providerMessage: string): EngineError {
    return new EngineError('enqueue_error', `${providerCode}: ${providerMessage}`)
  },
  triggerRegistrationFailed(message: string): EngineError {
    return new EngineError('trigger_registration_failed', message)
  },
  invalidTriggerConfig(message: string): EngineError {
    return new EngineError('INVALID_TRIGGER_CONFIG', message)
  },
  internal(errorId: string): EngineError {
    return new EngineError('internal_error', `Internal engine error (${errorId})`)
  },
} as const

/** `registrationrejected` messages by reason (protocol.md §7.2, FUNCTION_NAMESPACE_CONFLICT). */
export const RejectionMessages = {
  reservedId: (id: string) => `function id '${id}' is reserved by the engine`,
  engineIdOutsideDefault: () => "'engine::' ids may only be registered in namespace `default`",
  reservedTriggerType: (id: string) => `trigger type id '${id}' is reserved by the engine`,
  invalid: () => 'registration has no id',
} as const
