/**
 * A participant of the protocol as the registries see it: a worker connection or a built-in worker
 * running inside the engine. Registry entries are owned by `(peer, id)` (protocol.md §3.6).
 */
import type { WorkerAnnounce } from 'svc-protocol'

export interface Peer {
  /** Worker id (UUID v4), unique per connection or built-in. */
  readonly workerId: string
  readonly kind: 'connection' | 'builtin'
  /** False once the peer started tearing down; such peers are never picked as replicas. */
  readonly alive: boolean
  /**
   * True while a replaced worker process finishes its calls (a reload, cli.md §5.4): replica
   * selection passes it over while another live replica of the function is there. Connections only.
   */
  readonly draining?: boolean
  /** Name from the announce (connections) or the built-in's name; null before any announce. */
  readonly name: string | null
  /** Namespace of the peer (`default` until resolved). */
  readonly namespace: string
  readonly connectedAtMs: number
  /** Invocations currently being executed by this peer. */
  readonly activeInvocations: number
  /** Metadata from the latest announce; built-ins fill runtime `builtin`. */
  readonly announce: WorkerAnnounce
  readonly ipAddress: string | null
  /** The engine of the fleet the worker is connected to, when it is another one (issue 19). */
  readonly engine?: string
}
