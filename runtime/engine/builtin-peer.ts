/**
 * The in-process side of a built-in worker: a {@link Peer} for the registries and the
 * {@link LocalWorker} handle the built-in programs against (runtime/engine/types.ts).
 */
import { randomUUID } from 'node:crypto'
import type { WorkerAnnounce } from 'svc-protocol'
import type { Peer } from './peer.ts'
import type {
  LocalFunctionOptions,
  LocalHandler,
  LocalInvokeRequest,
  LocalTriggerProvider,
  LocalTriggerTypeOptions,
  LocalWorker,
} from './types.ts'

/** What the engine core offers a built-in peer; implemented by `Engine`. */
export interface BuiltinHost {
  registerLocalFunction(peer: BuiltinPeer, id: string, handler: LocalHandler, options: LocalFunctionOptions): void
  unregisterLocalFunction(peer: BuiltinPeer, id: string): void
  registerLocalTriggerType(peer: BuiltinPeer, options: LocalTriggerTypeOptions, provider: LocalTriggerProvider): void
  unregisterLocalTriggerType(peer: BuiltinPeer, id: string): void
  invokeLocal(request: LocalInvokeRequest, caller: Peer | null): Promise<unknown>
  reportLocalTriggerResult(peer: BuiltinPeer, triggerId: string, error?: { code: string; message: string }): void
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
  private readonly host: BuiltinHost

  constructor(host: BuiltinHost, name: string, version: string, internal = false) {
    this.host = host
    this.name = name
    this.internal = internal
    this.announce = { name, runtime: 'builtin', version, pid: process.pid, description: '' }
  }

  registerFunction(id: string, handler: LocalHandler, options: LocalFunctionOptions = {}): void {
    this.host.registerLocalFunction(this, id, handler, options)
  }

  unregisterFunction(id: string): void {
    this.host.unregisterLocalFunction(this, id)
  }

  registerTriggerType(options: LocalTriggerTypeOptions, provider: LocalTriggerProvider): void {
    this.host.registerLocalTriggerType(this, options, provider)
  }

  unregisterTriggerType(id: string): void {
    this.host.unregisterLocalTriggerType(this, id)
  }

  invoke(request: LocalInvokeRequest): Promise<unknown> {
    return this.host.invokeLocal(request, this)
  }

  reportTriggerResult(triggerId: string, error?: { code: string; message: string }): void {
    this.host.reportLocalTriggerResult(this, triggerId, error)
  }

  setListenUrls(urls: string[]): void {
    this.listenUrls = [...urls]
  }
}
