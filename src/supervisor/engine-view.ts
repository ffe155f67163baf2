/**
 * The two engines the orchestrator launches workers for (`EngineView`): `svc`'s own, in-process
 * (registration read from its sessions and registries, reloads drained), and the one the compose
 * daemon reaches over its connection (registration read from `engine::workers::list` and
 * `engine::workers::info`, reloads drained with `engine::workers::drain`).
 */
import type { FunctionEntry, Logger, Session } from '../../runtime/index.ts'
import type { Engine } from '../../runtime/start.ts'
import type { ListedConnection } from './launch.ts'
import type { EngineView, Registrant, RegistrationProbe } from './types.ts'

/**
 * `svc`'s engine, in this process (cli.md §3): a worker counts as registered by
 * {@link hasRegistered}, checked whenever the engine reports a registration change
 * (`Engine.watchRegistrations`: an announce, a function added or removed, a disconnect); reloads start the new process beside the old one and drain it
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
    watchRegistrations: (onChange) => engine.watchRegistrations(onChange),
    drain: (who, previous, next, options) => drainConnections(engine, who.name, who.namespace, previous, next, { ...options, log }),
  }
}

/**
 * What {@link listedEngine} asks an engine it reaches over a connection (protocol.md §11.1).
 * `functionsOf` and `drain` are optional: without `drain` a reload stops the process first.
 */
export interface ListedEngineCalls {
  /** The connections in `namespace` (`engine::workers::list {namespace}`). */
  list(namespace: string): Promise<ListedConnection[]>
  /**
   * The functions the connection `id` holds, as `<namespace>/<function id>` (`engine::workers::info
   * {id}`). Rejects when the engine cannot tell (the connection closed, the engine is unreachable).
   */
  functionsOf?(id: string): Promise<string[]>
  /**
   * `engine::workers::drain {id}`: marks the connection draining and resolves with the calls it still
   * executes. Rejects with `code: 'NOT_FOUND'` once the connection is gone.
   */
  drain?(id: string): Promise<number>
  /** Where a drain that runs out of time says so. */
  log?: Logger
}

/**
 * An engine reached over a connection (the compose daemon, cli.md §4.7): a worker counts as
 * registered once `list(namespace)` (`engine::workers::list`) shows a connection of its name in its
 * namespace opened since the process started, or announcing its pid (`Registrant.byPid`), that —
 * while an older connection of the same worker is there (the process a reload replaces) — holds
 * every function the older one holds (`functionsOf`) or has been open
 * {@link REGISTRATION_SETTLE_MS}. A failed listing counts as not yet. With `calls.drain`, reloads
 * overlap as `svc`'s do (issue 21): {@link drainListedConnections}.
 *
 * @example
 * const view = listedEngine(url, { list: async (namespace) => (await listWorkers({ namespace })).map(toListedConnection),
 *   functionsOf, drain: async (id) => (await call('engine::workers::drain', { id })).active_invocations, log })
 */
export function listedEngine(url: string, calls: ListedEngineCalls): EngineView {
  const view: EngineView = {
    url,
    isRegistered: async (who, probe) => {
      try {
        return await listedRegistered(calls, who, probe)
      } catch {
        return false
      }
    },
  }
  const drain = calls.drain
  if (drain) view.drain = (who, previous, next, options) => drainListedConnections({ ...calls, drain }, who, previous, next, options)
  return view
}

/** True when the connection belongs to the process `probe` describes (`connectedSince`). */
function ofProcess(c: ListedConnection, probe: RegistrationProbe): boolean {
  return c.connectedAtMs >= probe.startedAtMs || (probe.pid !== undefined && c.pid === probe.pid)
}

/** {@link listedEngine}'s registration check; throws when the engine cannot tell. */
async function listedRegistered(calls: ListedEngineCalls, who: Registrant, probe: RegistrationProbe): Promise<boolean> {
  const connections = (await calls.list(who.namespace))
    .filter((c) => c.name === who.name && c.namespace === who.namespace)
    .map((c) => (who.byPid ? c : { ...c, pid: undefined }))
  const fresh = connections.filter((c) => ofProcess(c, probe))
  if (fresh.length === 0) return false
  const previous = connections.filter((c) => !ofProcess(c, probe))
  if (previous.length === 0 || !calls.functionsOf) return true
  const now = Date.now()
  if (fresh.some((c) => now - c.connectedAtMs >= REGISTRATION_SETTLE_MS)) return true
  const wanted = new Set<string>()
  for (const c of previous) if (c.id !== undefined) for (const f of await calls.functionsOf(c.id)) wanted.add(f)
  for (const c of fresh) {
    if (c.id === undefined) continue
    const held = new Set(await calls.functionsOf(c.id))
    if ([...wanted].every((f) => held.has(f))) return true
  }
  return false
}

/** How often a draining connection over `engine::workers::drain` is asked for its calls (ms). */
const LISTED_DRAIN_POLL_MS = 100

/**
 * `WorkerSpec.drain` over a connection (issue 21): marks the connections of the replaced process
 * (`who`, opened since `previous.startedAtMs` and before `next.startedAtMs`, or announcing
 * `previous.pid`; never one of `next`'s) draining with `engine::workers::drain`, and resolves once
 * they execute no invocation (a closed one counts as none), after `graceMs` (ms; a warning names the
 * calls left), when `signal` aborts, or when the engine cannot be asked (the process is then
 * stopped, as without a drain). Never rejects.
 */
export async function drainListedConnections(
  calls: ListedEngineCalls & { drain: (id: string) => Promise<number> },
  who: Registrant,
  previous: RegistrationProbe,
  next: RegistrationProbe,
  options: { graceMs: number; signal: AbortSignal },
): Promise<void> {
  const byPid = (pid: number | undefined) => (who.byPid ? pid : undefined)
  let ids: string[]
  try {
    ids = (await calls.list(who.namespace))
      .filter((c) => c.name === who.name && c.namespace === who.namespace && c.id !== undefined)
      .filter((c) => !ofProcess({ ...c, pid: byPid(c.pid) }, next))
      .filter((c) => c.connectedAtMs >= previous.startedAtMs || (previous.pid !== undefined && byPid(c.pid) === previous.pid))
      .map((c) => c.id!)
  } catch (err) {
    calls.log?.debug(`${who.name}: listing the previous process's connections failed: ${(err as Error).message}`)
    return
  }
  const deadline = Date.now() + options.graceMs
  for (;;) {
    let running = 0
    try {
      const counts = await Promise.all(ids.map((id) => calls.drain(id).catch((err: { code?: unknown }) => (err?.code === 'NOT_FOUND' ? 0 : Promise.reject(err)))))
      running = counts.reduce((n, c) => n + c, 0)
    } catch (err) {
      calls.log?.debug(`${who.name}: draining the previous process failed: ${(err as Error).message}`)
      return
    }
    if (running === 0 || options.signal.aborted) return
    if (Date.now() >= deadline) {
      calls.log?.warn(`${who.name}: the previous process still runs ${running} call${running === 1 ? '' : 's'} after ${options.graceMs / 1000} s; stopping it`)
      return
    }
    await new Promise((resolve) => setTimeout(resolve, LISTED_DRAIN_POLL_MS))
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
  // The one way a connection is marked, the same as `engine::workers::drain` over a connection.
  for (const connection of connections()) engine.drainSession(connection.workerId)
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
