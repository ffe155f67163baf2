/**
 * The in-process side of a built-in worker: a {@link Peer} for the registries and the
 * {@link LocalWorker} handle the built-in programs against (runtime/engine/types.ts). Its functions
 * are replicas whose callee runs the handler in-process.
 */
import { randomUUID } from 'node:crypto'
import type { WorkerAnnounce } from 'svc-protocol'
import { LocalCallee } from './callees.ts'
import type { ChannelRegistry, LocalChannels } from './channels/index.ts'
import type { Replica } from './functions.ts'
import type { Peer } from './peer.ts'
import type {
  LocalFunctionOptions,
  LocalHandler,
  LocalInvokeRequest,
  LocalTriggerProvider,
  LocalTriggerRegistration,
  LocalTriggerTypeOptions,
  LocalWorker,
} from './types.ts'

/**
 * The registries as a built-in sees them (the engine's `Registrations`): what it registers is owned
 * by its peer and lives in namespace `default`.
 */
export interface LocalRegistrations {
  addReplica(namespace: string, id: string, replica: Replica): void
  removeReplica(peer: Peer, namespace: string, id: string): void
  registerLocalTriggerType(peer: Peer, options: LocalTriggerTypeOptions, provider: LocalTriggerProvider): void
  unregisterLocalTriggerType(peer: Peer, id: string): void
  reportLocalTriggerResult(peer: Peer, triggerId: string, error?: { code: string; message: string }): void
  hasFunction(namespace: string, id: string): boolean
  servedElsewhere(namespace: string, id: string): boolean
  registerLocalTrigger(peer: Peer, binding: LocalTriggerRegistration): void
  unregisterLocalTrigger(peer: Peer, id: string): void
}

/** What the engine core offers a built-in peer; implemented by `Engine`. */
export interface BuiltinHost {
  readonly registrations: LocalRegistrations
  /** An invocation made inside the engine process, under `caller`'s access rules (§6.5 timeouts). */
  invokeAs(caller: Peer | null, request: LocalInvokeRequest): Promise<unknown>
  readonly channels: ChannelRegistry
}

export class BuiltinPeer implements Peer, LocalWorker {
  readonly kind = 'builtin' as const
  readonly workerId = randomUUID()
  readonly connectedAtMs = Date.now()
  readonly namespace = 'default'
  readonly ipAddress = null
  readonly announce: WorkerAnnounce
  readonly name: string
  /** Internal peers (the engine's own functions) are not listed as workers. */
  readonly internal: boolean
  alive = true
  activeInvocations = 0
  listenUrls: string[] = []
  lastConfigError: string | undefined
  /** Channels with an end held in-process (protocol.md §9); removed when this worker stops. */
  readonly channels: LocalChannels
  private readonly host: BuiltinHost

  constructor(host: BuiltinHost, name: string, version: string, internal = false) {
    this.host = host
    this.name = name
    this.internal = internal
    this.announce = { name, runtime: 'builtin', version, pid: process.pid, description: '' }
    this.channels = host.channels.localFor(this)
  }

  registerFunction(id: string, handler: LocalHandler, options: LocalFunctionOptions = {}): void {
    const replica: Replica = { peer: this, callee: new LocalCallee(this, handler), wireId: id, wireIdJson: JSON.stringify(id) }
    if (options.description !== undefined) replica.description = options.description
    if (options.metadata !== undefined) replica.metadata = options.metadata
    if (options.request_format !== undefined) replica.request_format = options.request_format
    if (options.response_format !== undefined) replica.response_format = options.response_format
    if (options.ownSpan === true) replica.ownSpan = true
    this.host.registrations.addReplica('default', id, replica)
  }

  unregisterFunction(id: string): void {
    this.host.registrations.removeReplica(this, 'default', id)
  }

  registerTriggerType(options: LocalTriggerTypeOptions, provider: LocalTriggerProvider): void {
    this.host.registrations.registerLocalTriggerType(this, options, provider)
  }

  unregisterTriggerType(id: string): void {
    this.host.registrations.unregisterLocalTriggerType(this, id)
  }

  hasFunction(id: string, namespace = 'default'): boolean {
    return this.host.registrations.hasFunction(namespace, id)
  }

  servedElsewhere(id: string, namespace = 'default'): boolean {
    return this.host.registrations.servedElsewhere(namespace, id)
  }

  invoke(request: LocalInvokeRequest): Promise<unknown> {
    return this.host.invokeAs(this, request)
  }

  registerTrigger(binding: LocalTriggerRegistration): void {
    this.host.registrations.registerLocalTrigger(this, binding)
  }

  unregisterTrigger(id: string): void {
    this.host.registrations.unregisterLocalTrigger(this, id)
  }

  reportTriggerResult(triggerId: string, error?: { code: string; message: string }): void {
    this.host.registrations.reportLocalTriggerResult(this, triggerId, error)
  }

  setListenUrls(urls: string[]): void {
    this.listenUrls = [...urls]
  }

  setLastConfigError(message: string | undefined): void {
    this.lastConfigError = message
  }
}
