/**
 * The provider side of trigger types (protocol.md §8.3, sdk.md §5): the bindings the engine
 * delivered to this client for the trigger types it provides, each held by its type's handler
 * from a `registerTrigger` that succeeded until `unregisterTrigger`.
 */
import { Errors, type ErrorBody } from '../errors.ts'
import type { JsonValue, RegisterTriggerMessage } from '../messages.ts'
import { errorMessage } from './errors.ts'
import type { ClientLog } from './hooks.ts'
import type { LocalTriggerType } from './registrations.ts'
import type { TriggerConfig } from './types.ts'

/** A binding the engine delivered to this client as a provider. */
interface ProviderBinding {
  readonly type: LocalTriggerType
  readonly config: TriggerConfig<unknown>
  /** Settles with whether the handler accepted the binding. */
  ready: Promise<boolean>
}

const ACCEPTED: Promise<boolean> = Promise.resolve(true)

export class ProviderBindings {
  readonly #bindings = new Map<string, ProviderBinding>()
  readonly #log: ClientLog

  constructor(log: ClientLog) {
    this.#log = log
  }

  /** Bindings held now (accepted or being registered). */
  get size(): number {
    return this.#bindings.size
  }

  /**
   * Hands the delivered binding `message` to `type`'s handler and calls `answer` once it settled:
   * with no error when `registerTrigger` resolved, `trigger_registration_failed` with the thrown
   * message when it threw. A known id is a replacement (protocol.md §5.5): a handler of another
   * type lets go of the old binding first.
   */
  deliver(message: RegisterTriggerMessage, type: LocalTriggerType, answer: (error: ErrorBody | undefined) => void): void {
    const config: TriggerConfig<unknown> = {
      id: message.id,
      function_id: message.function_id,
      config: message.config,
      // Explicit `default` so the provider's `trigger` does not fill in its own namespace instead.
      namespace: message.namespace ?? 'default',
    }
    if (message.metadata !== undefined) config.metadata = message.metadata as Record<string, JsonValue>
    const previous = this.#bindings.get(message.id)
    if (previous !== undefined && previous.type !== type) this.#release(previous)
    const binding: ProviderBinding = { type, config, ready: ACCEPTED }
    this.#bindings.set(message.id, binding)
    binding.ready = (async () => {
      try {
        await type.handler.registerTrigger(config)
      } catch (err) {
        if (this.#bindings.get(message.id) === binding) this.#bindings.delete(message.id)
        answer(Errors.triggerRegistrationFailed(errorMessage(err)).toErrorBody())
        return false
      }
      answer(undefined)
      return true
    })()
  }

  /** The engine removed binding `id` (§5.6): its handler's `unregisterTrigger` gets the stored binding. */
  remove(id: string): void {
    const binding = this.#bindings.get(id)
    if (binding === undefined) return
    this.#bindings.delete(id)
    this.#release(binding)
  }

  /** Lets go of the bindings of `type`, or of all of them (connection lost, shutdown). */
  releaseAll(type?: LocalTriggerType): void {
    if (this.#bindings.size === 0) return
    for (const [id, binding] of this.#bindings) {
      if (type !== undefined && binding.type !== type) continue
      this.#bindings.delete(id)
      this.#release(binding)
    }
  }

  /** Calls the handler's `unregisterTrigger` once its registration settled and if it accepted; errors are logged. */
  #release(binding: ProviderBinding): void {
    binding.ready
      .then((accepted) => (accepted ? binding.type.handler.unregisterTrigger(binding.config) : undefined))
      .catch((err: unknown) => {
        this.#log.warn(`unregisterTrigger of trigger type '${binding.type.id}' threw: ${errorMessage(err)}`)
      })
  }
}
