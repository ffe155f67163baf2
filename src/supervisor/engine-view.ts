/**
 * The two engines the orchestrator launches workers for (`EngineView`): `svc`'s own, in-process
 * (registration read from its sessions and registries, reloads drained), and the one the compose
 * daemon reaches over its connection (registration read from `engine::workers::list`).
 */
import type { FunctionEntry, Logger, Session } from '../../runtime/index.ts'
import type { Engine } from '../../runtime/start.ts'
import { connectedSince } from './launch.ts'
import type { ListedConnection } from './launch.ts'
import type { EngineView, RegistrationProbe } from './types.ts'

/**
 * `svc`'s engine, in this process (cli.md §3): a worker counts as registered by
 * {@link hasRegistered}; reloads start the new process beside the old one and drain it
 * ({@link drainConnections}, issue 21).
 *
 * @param url the worker WebSocket URL exported as SVC_URL
 * @param log where a drain that runs out of time says so
 * @example
 * const orchestrator = new Orchestrator({ engine: inProcessEngine(engine, engine.workerUrls[0]!, log), log })
 */
export function inProcessEngine(engine: Engine, url: string, log: Logger): EngineView {
  return {
    url,
    isRegistered: (who, probe) => hasRegistered(engine, who.name, who.namespace, probe),
    drain: (who, previous, next, options) => drainConnections(engine, who.name, who.namespace, previous, next, { ...options, log }),
  }
}

/**
 * An engine reached over a connection (the compose daemon, cli.md §4.7): a worker counts as
 * registered once `list(namespace)` (`engine::workers::list`) shows a connection of its name in its
 * namespace opened since the process started, or announcing its pid (`Registrant.byPid`). A
 * failed listing counts as not yet. No drain: the daemon cannot mark another engine's connections,
 * so a reload stops the process first.
 *
 * @example
 * const view = listedEngine(url, async (namespace) => (await listWorkers({ namespace })).map(toListedConnection))
 */
export function listedEngine(url: string, list: (namespace: string) => Promise<ListedConnection[]>): EngineView {
  return {
    url,
    isRegistered: async (who, probe) => {
      let connections: ListedConnection[]
      try {
        connections = await list(who.namespace)
      } catch {
        return false
      }
      return connectedSince(who.byPid ? connections : connections.map((c) => ({ ...c, pid: undefined })), who.name, who.namespace, probe)
    },
  }
}

/**
 * How long a reload's new connection may lack a function the previous process registered before
 * it counts as registered anyway (ms): the new code may have dropped it. The SDKs send every
 * registration right after the connection opens, so a function still missing by then is not coming.
 */
export const REGISTRATION_SETTLE_MS = 3000

/**
 * True when the process `probe` describes has registered (cli.md §5.3, issue 21): a connection
 * announced as `name` in `namespace`, opened since `probe.startedAtMs`, that holds every function
 * the older connections of the same worker hold — the previous process a reload keeps serving until
 * then — or has been open {@link REGISTRATION_SETTLE_MS}. Without an older connection, the
 * announce is enough.
 */
export function hasRegistered(engine: Engine, name: string, namespace: string, probe: RegistrationProbe): boolean {
  const previous = new Set<FunctionEntry>()
  const fresh: Session[] = []
  for (const connection of engine.openSessions()) {
    if (!connection.namespaceResolved || !connection.alive || connection.name !== name || connection.namespace !== namespace) continue
    if (connection.connectedAtMs >= probe.startedAtMs) fresh.push(connection)
    else for (const entry of engine.functions.ofPeer(connection)) previous.add(entry)
  }
  if (fresh.length === 0) return false
  if (previous.size === 0) return true
  const now = Date.now()
  return fresh.some(
    (connection) => now - connection.connectedAtMs >= REGISTRATION_SETTLE_MS || [...previous].every((entry) => entry.replicas.some((r) => r.peer === connection)),
  )
}

/** How often draining connections are checked for calls still running (ms). */
const DRAIN_POLL_MS = 50

/**
 * `WorkerSpec.drain` of a local worker (issue 21): marks the connections of the replaced process
 * (`name` in `namespace`, opened between `previous.startedAtMs` and `next.startedAtMs`) draining,
 * so replica selection sends new calls to the new process (§6.1, `Peer.draining`), and resolves
 * once they execute no invocation, after `graceMs` (a warning names the calls left), or when
 * `signal` aborts.
 */
export async function drainConnections(
  engine: Engine,
  name: string,
  namespace: string,
  previous: RegistrationProbe,
  next: RegistrationProbe,
  options: { graceMs: number; signal: AbortSignal; log: Logger },
): Promise<void> {
  const connections = () =>
    engine
      .openSessions()
      .filter((c) => c.alive && c.name === name && c.namespace === namespace && c.connectedAtMs >= previous.startedAtMs && c.connectedAtMs < next.startedAtMs)
  for (const connection of connections()) connection.draining = true
  const deadline = Date.now() + options.graceMs
  for (;;) {
    const calls = connections().reduce((n, c) => n + c.activeInvocations, 0)
    if (calls === 0 || options.signal.aborted) return
    if (Date.now() >= deadline) {
      options.log.warn(`${name}: the previous process still runs ${calls} call${calls === 1 ? '' : 's'} after ${options.graceMs / 1000} s; stopping it`)
      return
    }
    await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS))
  }
}
