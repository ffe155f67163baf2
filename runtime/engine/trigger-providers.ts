/**
 * Trigger providers (protocol.md §8.2–§8.4): how the trigger registry's decisions reach the
 * provider that serves a binding and the worker that owns it. A provider inside the engine process
 * (a built-in's `LocalTriggerProvider`) is called in-process and its answer fed back at
 * once; a worker provider gets `registertrigger` / `unregistertrigger` frames on its session and
 * answers with `triggerregistrationresult`. A provider of another kind (another engine's, in a
 * fleet) is one more branch of {@link TriggerProviders}.
 */
import { encodeFrame, encodeRegisterTrigger, encodeTriggerResult, errorBody, errorBodyOf, Errors, type ErrorBody } from 'svc-protocol'
import type { Logger } from './config.ts'
import type { Peer } from './peer.ts'
import { FrameTooLarge, sendErrorFrame } from './pipeline.ts'
import { Session } from './session.ts'
import type { Binding, ProviderEntry, TriggerDelivery } from './triggers.ts'
import type { BindingInfo } from './types.ts'

/** Where a provider's answer goes: the trigger registry's `providerAnswer` (§8.3). */
export type ProviderAnswer = (from: Peer, id: string, error: ErrorBody | undefined) => void

/** The {@link TriggerDelivery} of the engine: local providers in-process, worker providers over their session. */
export class TriggerProviders implements TriggerDelivery {
  private readonly log: Logger
  private readonly answer: ProviderAnswer

  constructor(log: Logger, answer: ProviderAnswer) {
    this.log = log
    this.answer = answer
  }

  deliver(provider: ProviderEntry, binding: Binding): void {
    if (provider.local) {
      const local = provider.local
      const info = bindingInfo(binding)
      Promise.resolve()
        .then(() => local.registerTrigger(info))
        .then(
          () => this.answer(provider.peer, binding.id, undefined),
          (err: unknown) => this.answer(provider.peer, binding.id, errorBodyOf(err)),
        )
        .catch((err: unknown) => this.log.error(`delivering trigger ${binding.id} failed`, { error: String(err) }))
      return
    }
    if (!(provider.peer instanceof Session)) return
    const peer = provider.peer
    try {
      peer.send(encodeRegisterTrigger(binding))
    } catch (err) {
      if (!(err instanceof FrameTooLarge)) throw err
      // The binding fails like a provider's refusal, after the caller had the chance to wait for the answer.
      const error = errorBody(Errors.frameTooLarge, 'trigger config', err.bytes, err.limit)
      queueMicrotask(() => this.answer(peer, binding.id, error))
    }
  }

  withdraw(provider: ProviderEntry, binding: Binding): void {
    if (provider.local) {
      const local = provider.local
      Promise.resolve()
        .then(() => local.unregisterTrigger(bindingInfo(binding)))
        .catch((err: unknown) => this.log.warn(`unregisterTrigger failed for ${binding.id}`, { error: String(err) }))
      return
    }
    if (provider.peer instanceof Session) {
      provider.peer.send(encodeFrame({ type: 'unregistertrigger', id: binding.id, trigger_type: binding.trigger_type, function_id: binding.function_id }))
    }
  }

  reportFailure(binding: Binding, error: ErrorBody): void {
    const owner = binding.owner
    if (!(owner instanceof Session)) {
      this.log.warn(`trigger ${binding.id} (${binding.trigger_type}) refused: ${error.code}: ${error.message}`)
      return
    }
    sendErrorFrame(owner, (body) => encodeTriggerResult(binding.id, binding.trigger_type, binding.function_id, body), error)
  }
}

/** A binding as its provider sees it (§8.3). */
export function bindingInfo(binding: Binding): BindingInfo {
  const info: BindingInfo = {
    id: binding.id,
    trigger_type: binding.trigger_type,
    function_id: binding.function_id,
    config: binding.config,
    namespace: binding.namespace,
  }
  if (binding.metadata !== undefined) info.metadata = binding.metadata
  return info
}
