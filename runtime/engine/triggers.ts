/**
 * Trigger types, their provider stacks and the bindings (triggers) that consumers register
 * (protocol.md §5.3–§5.7, §8). The registry decides which provider serves each binding; the
 * engine carries the messages through {@link TriggerDelivery}.
 */
import type { ErrorBody, FormatSchema } from 'svc-protocol'
import type { Peer } from './peer.ts'
import type { LocalTriggerProvider } from './types.ts'

export interface ProviderEntry {
  readonly peer: Peer
  readonly namespace: string
  readonly typeId: string
  description: string
  trigger_request_format?: FormatSchema
  call_request_format?: FormatSchema
  /** Set for providers inside the engine process. */
  readonly local?: LocalTriggerProvider
}

export type BindingStatus = 'active' | 'pending' | 'failed'

export interface Binding {
  readonly id: string
  trigger_type: string
  function_id: string
  config: unknown
  metadata?: unknown
  /** Target namespace of `function_id` (`default` when the registration omitted it). */
  namespace: string
  /** Explicit provider namespace, if the registration named one. */
  trigger_namespace?: string
  /** Registering connection; null for bindings made with `engine::register_trigger` (§11.2). */
  owner: Peer | null
  status: BindingStatus
  /** The provider that currently holds the binding, if any. */
  deliveredTo: ProviderEntry | null
  /** Registration order, for activating parked bindings in order (§8.2). */
  readonly seq: number
  /** The provider's latest refusal, while `status` is `failed`. */
  lastError?: ErrorBody
}

/** What a registration supplies; the registry fills in the rest. */
export type BindingInput = Omit<Binding, 'status' | 'deliveredTo' | 'seq' | 'lastError'>

/** How the registry's decisions reach providers and consumers. */
export interface TriggerDelivery {
  /** Hand a binding to a provider (E→W `registertrigger`, or the local provider's handler). */
  deliver(provider: ProviderEntry, binding: Binding): void
  /** Take a binding away from a provider (E→W `unregistertrigger`, or the local handler). */
  withdraw(provider: ProviderEntry, binding: Binding): void
  /** Tell the binding's owner that its provider refused it (E→W `triggerregistrationresult`). */
  reportFailure(binding: Binding, error: ErrorBody): void
}

const key = (namespace: string, typeId: string) => `${namespace}\u0000${typeId}`

export class TriggerRegistry {
  /** Provider stacks, most recent registrant last. */
  private readonly stacks = new Map<string, ProviderEntry[]>()
  private readonly bindings = new Map<string, Binding>()
  private seq = 0
  private readonly delivery: TriggerDelivery
  private readonly answerWaiters = new Map<string, Array<() => void>>()

  constructor(delivery: TriggerDelivery) {
    this.delivery = delivery
  }

  // ---- trigger types -------------------------------------------------------------------------

  /**
   * Makes `entry.peer` the active provider of `(namespace, typeId)`. A repeat from the active
   * provider only updates description and formats (§5.3).
   */
  addProvider(entry: ProviderEntry): void {
    const k = key(entry.namespace, entry.typeId)
    let stack = this.stacks.get(k)
    if (!stack) {
      stack = []
      this.stacks.set(k, stack)
    }
    const top = stack[stack.length - 1]
    if (top && top.peer === entry.peer) {
      top.description = entry.description
      top.trigger_request_format = entry.trigger_request_format
      top.call_request_format = entry.call_request_format
      return
    }
    const existing = stack.findIndex((p) => p.peer === entry.peer)
    if (existing >= 0) stack.splice(existing, 1)
    stack.push(entry)
    this.reconcileAll()
  }

  /**
   * Removes `peer` from the provider stack of `(namespace, typeId)`. Its bindings move to the next
   * provider or are parked; the leaving provider is not sent `unregistertrigger` (§5.4).
   */
  removeProvider(peer: Peer, namespace: string, typeId: string): void {
    const k = key(namespace, typeId)
    const stack = this.stacks.get(k)
    if (!stack) return
    const index = stack.findIndex((p) => p.peer === peer)
    if (index < 0) return
    const [removed] = stack.splice(index, 1)
    if (stack.length === 0) this.stacks.delete(k)
    for (const binding of this.bindings.values()) {
      if (binding.deliveredTo === removed) binding.deliveredTo = null
    }
    this.reconcileAll()
  }

  /** Removes `peer` from every stack (disconnect cleanup, §3.6 step 5). */
  removeProviderPeer(peer: Peer): void {
    for (const stack of [...this.stacks.values()]) {
      for (const entry of stack.filter((p) => p.peer === peer)) {
        this.removeProvider(peer, entry.namespace, entry.typeId)
      }
    }
  }

  activeProvider(namespace: string, typeId: string): ProviderEntry | undefined {
    const stack = this.stacks.get(key(namespace, typeId))
    return stack?.[stack.length - 1]
  }

  /** Active providers of every trigger type, for listings. */
  *providers(): IterableIterator<ProviderEntry> {
    for (const stack of this.stacks.values()) {
      const top = stack[stack.length - 1]
      if (top) yield top
    }
  }

  // ---- bindings ------------------------------------------------------------------------------

  /**
   * Stores a binding (replacing one with the same id and taking over its ownership, §5.5) and
   * resolves its provider: parked when none, delivered otherwise (§8.1).
   */
  addBinding(input: BindingInput): Binding {
    const previous = this.bindings.get(input.id)
    if (previous) this.removeBinding(input.id)
    const binding: Binding = {
      id: input.id,
      trigger_type: input.trigger_type,
      function_id: input.function_id,
      config: input.config,
      namespace: input.namespace,
      owner: input.owner,
      status: 'pending',
      deliveredTo: null,
      seq: this.seq++,
    }
    if (input.metadata !== undefined) binding.metadata = input.metadata
    if (input.trigger_namespace !== undefined) binding.trigger_namespace = input.trigger_namespace
    this.bindings.set(binding.id, binding)
    this.reconcile(binding)
    return binding
  }

  /** Removes a binding in any state; its provider is told (§5.6). Returns false for unknown ids. */
  removeBinding(id: string): boolean {
    const binding = this.bindings.get(id)
    if (!binding) return false
    this.bindings.delete(id)
    const provider = binding.deliveredTo
    binding.deliveredTo = null
    if (provider && provider.peer.alive) this.delivery.withdraw(provider, binding)
    return true
  }

  /** Removes every binding `owner` registered (§3.6 step 4). */
  removeBindingsOf(owner: Peer): void {
    for (const binding of [...this.bindings.values()]) {
      if (binding.owner === owner) this.removeBinding(binding.id)
    }
  }

  getBinding(id: string): Binding | undefined {
    return this.bindings.get(id)
  }

  allBindings(): Binding[] {
    return [...this.bindings.values()]
  }

  /**
   * A provider's answer for a binding it holds (§8.3). Answers from anyone but the current
   * provider, and for unknown ids, are ignored.
   */
  providerAnswer(from: Peer, id: string, error: ErrorBody | undefined): void {
    const binding = this.bindings.get(id)
    if (!binding || !binding.deliveredTo || binding.deliveredTo.peer !== from) return
    if (error) {
      binding.status = 'failed'
      binding.lastError = error
      this.delivery.reportFailure(binding, error)
    } else {
      binding.status = 'active'
      delete binding.lastError
    }
    const waiters = this.answerWaiters.get(id)
    this.answerWaiters.delete(id)
    for (const wake of waiters ?? []) wake()
  }

  /** Resolves true when the provider answers for binding `id`, false after `ms`. */
  waitForAnswer(id: string, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms)
      const waiters = this.answerWaiters.get(id) ?? []
      waiters.push(() => {
        clearTimeout(timer)
        resolve(true)
      })
      this.answerWaiters.set(id, waiters)
    })
  }

  /** Number of bindings the active provider of `(namespace, typeId)` holds. */
  instanceCount(namespace: string, typeId: string): number {
    let n = 0
    for (const b of this.bindings.values()) {
      if (b.deliveredTo && b.deliveredTo.namespace === namespace && b.deliveredTo.typeId === typeId) n++
    }
    return n
  }

  // ---- resolution ----------------------------------------------------------------------------

  /** The provider a binding resolves to now (§8.2), or undefined when it must be parked. */
  private resolve(binding: Binding): ProviderEntry | undefined {
    if (binding.trigger_namespace !== undefined) {
      return this.activeProvider(binding.trigger_namespace, binding.trigger_type)
    }
    const own = binding.owner?.namespace ?? 'default'
    return this.activeProvider(own, binding.trigger_type) ?? this.activeProvider('default', binding.trigger_type)
  }

  private reconcile(binding: Binding): void {
    const desired = this.resolve(binding)
    const current = binding.deliveredTo
    if (desired === current && desired !== null) return
    if (current && current !== desired && current.peer.alive) this.delivery.withdraw(current, binding)
    binding.deliveredTo = desired ?? null
    if (!desired) {
      binding.status = 'pending'
      return
    }
    binding.status = 'active'
    this.delivery.deliver(desired, binding)
  }

  /** Re-resolves every binding in registration order after a provider change. */
  reconcileAll(): void {
    const ordered = [...this.bindings.values()].sort((a, b) => a.seq - b.seq)
    for (const binding of ordered) {
      if (this.bindings.get(binding.id) === binding) this.reconcile(binding)
    }
  }
}
