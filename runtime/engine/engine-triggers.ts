/**
 * The engine's own trigger types (protocol.md §11.6): `engine::workers-available` fires on every
 * session start, announce and disconnect; `engine::functions-available` fires after the set of
 * registered `(namespace, function_id)` pairs changed, coalescing changes within 500 ms.
 * Deliveries are void invocations in the binding's namespace with the binding's metadata.
 */
import type { FunctionSummary } from 'svc-protocol'
import type { BuiltinPeer } from './builtin-peer.ts'
import { ENGINE_TRIGGER_FORMATS } from './formats.ts'
import type { BindingInfo, Logger } from './types.ts'

export type WorkerEvent = 'worker_connected' | 'worker_metadata_updated' | 'worker_disconnected'

/** Coalescing window of `engine::functions-available`, ms. */
export const FUNCTIONS_AVAILABLE_DEBOUNCE_MS = 500

export class EngineTriggers {
  private readonly peer: BuiltinPeer
  private readonly log: Logger
  private readonly workerBindings = new Map<string, BindingInfo>()
  private readonly functionBindings = new Map<string, BindingInfo>()
  private functionsTimer: NodeJS.Timeout | undefined
  private readonly listFunctions: (binding: BindingInfo) => FunctionSummary[]

  /**
   * `listFunctions` returns the FunctionSummary list a fire carries to one binding: every function
   * its owner's session may see, in every namespace, internal ones included (§11.6).
   */
  constructor(peer: BuiltinPeer, log: Logger, listFunctions: (binding: BindingInfo) => FunctionSummary[]) {
    this.peer = peer
    this.log = log
    this.listFunctions = listFunctions
    const provider = (bindings: Map<string, BindingInfo>) => ({
      registerTrigger: (binding: BindingInfo) => void bindings.set(binding.id, binding),
      unregisterTrigger: (binding: BindingInfo) => void bindings.delete(binding.id),
    })
    peer.registerTriggerType(
      { id: 'engine::workers-available', description: 'Fires when a worker connects, announces itself or disconnects', ...ENGINE_TRIGGER_FORMATS['engine::workers-available'] },
      provider(this.workerBindings),
    )
    peer.registerTriggerType(
      { id: 'engine::functions-available', description: 'Fires when the set of registered functions changes', ...ENGINE_TRIGGER_FORMATS['engine::functions-available'] },
      provider(this.functionBindings),
    )
  }

  workerEvent(event: WorkerEvent, workerId: string): void {
    if (this.workerBindings.size > 0) this.fire(this.workerBindings, () => ({ event, worker_id: workerId }))
  }

  /** Call after any change of the registered function set; fires once per 500 ms window. */
  functionsChanged(): void {
    if (this.functionBindings.size === 0 || this.functionsTimer) return
    this.functionsTimer = setTimeout(() => {
      this.functionsTimer = undefined
      this.fire(this.functionBindings, (binding) => ({ event: 'functions_changed', functions: this.listFunctions(binding) }))
    }, FUNCTIONS_AVAILABLE_DEBOUNCE_MS)
    this.functionsTimer.unref()
  }

  stop(): void {
    if (this.functionsTimer) clearTimeout(this.functionsTimer)
    this.functionsTimer = undefined
  }

  private fire(bindings: Map<string, BindingInfo>, payload: (binding: BindingInfo) => unknown): void {
    for (const binding of bindings.values()) {
      const request: Parameters<BuiltinPeer['invoke']>[0] = {
        function_id: binding.function_id,
        data: payload(binding),
        namespace: binding.namespace,
        action: { type: 'void' },
      }
      if (binding.metadata !== undefined) request.metadata = binding.metadata
      this.peer.invoke(request).catch((err: unknown) => this.log.debug(`${binding.trigger_type} delivery failed`, { error: String(err) }))
    }
  }
}
