/**
 * Functions served by the engine itself (protocol.md §11.1–§11.3): introspection, the worker
 * announce, the connection-less trigger helpers and channel creation. All live in namespace `default`; inputs must
 * be objects (§6.7).
 */
import { randomUUID } from 'node:crypto'
import {
  isInternalId,
  SvcError,
  Errors,
  type CreateChannelResult,
  type FunctionDetail,
  type FunctionsInfoBatchResult,
  type FunctionsListResult,
  type FleetListResult,
  type FunctionSummary,
  type RegisteredTriggerDetail,
  type RegisteredTriggersListResult,
  type RegisteredTriggerSummary,
  type RegisterTriggerResult,
  type TriggerTypeDetail,
  type TriggerTypesListResult,
  type TriggerTypeSummary,
  type UnregisterTriggerResult,
  type WorkerAnnounce,
  type WorkerDrainResult,
  type WorkerDetail,
  type WorkerInfoResult,
  type WorkersListResult,
  type WorkerSummary,
} from 'svc-protocol'
import type { AccessPolicy } from './access/policy.ts'
import { BuiltinPeer } from './builtin-peer.ts'
import { DEFAULT_BUFFER_SIZE, MAX_BUFFER_SIZE, MIN_BUFFER_SIZE } from './channels/index.ts'
import { ENGINE_FUNCTION_FORMATS } from './formats.ts'
import type { FunctionEntry, FunctionRegistry } from './functions.ts'
import type { Peer } from './peer.ts'
import type { FlightTable } from './flights.ts'
import type { Registrations } from './registrations.ts'
import type { Binding, ProviderEntry, TriggerRegistry } from './triggers.ts'
import type { InvocationContext } from './types.ts'

/** What the engine functions read and call; implemented by `Engine`. */
export interface EngineFunctionsHost {
  readonly functions: FunctionRegistry
  readonly triggers: TriggerRegistry
  /** `engine::register_trigger` applies the caller's session rules of §8.1 here. */
  readonly registrations: Pick<Registrations, 'prepareBinding'>
  readonly channels: { create(bufferSize: number): CreateChannelResult }
  /** Workers listed by `engine::workers::*`: open sessions and running built-ins (not the engine's own). */
  listedPeers(): Peer[]
  peerById(workerId: string): Peer | undefined
  /** `engine::workers::drain`: marks the open connection `workerId` draining; undefined when there is none. */
  drainSession(workerId: string): Peer | undefined
  /** This engine's name in its fleet; undefined when it is alone (issue 19). */
  readonly engineName: string | undefined
  /** `engine::fleet::list`: the fleet's engines and health (issue 19). */
  fleetList(): FleetListResult
  /** Invocations in flight (`engine::invocations::list` / `cancel`). */
  readonly flights: FlightTable
  /** `engine::workers::register` (§3.2) for the announcing peer. */
  announce(caller: Peer | undefined, payload: WorkerAnnounce): { success: true }
}

type Input = Record<string, unknown>

function objectInput(id: string, data: unknown): Input {
  if (data === null || data === undefined) return {}
  if (typeof data !== 'object' || Array.isArray(data)) throw Errors.invalidInput(id, 'input must be an object')
  return data as Input
}

function optionalString(id: string, input: Input, field: string): string | undefined {
  const v = input[field]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw Errors.invalidInput(id, `${field} must be a string`)
  return v
}

/** FunctionSummary of protocol.md §11.1. */
export function functionSummary(entry: FunctionEntry, engineName?: string): FunctionSummary {
  const latest = entry.latest
  const summary: FunctionSummary = {
    function_id: entry.id,
    namespace: entry.namespace,
    worker_name: latest.peer.name,
    replica_count: entry.replicas.length,
  }
  if (latest.description !== undefined) summary.description = latest.description
  if (latest.metadata !== undefined) summary.metadata = latest.metadata
  if (engineName !== undefined) summary.engines = [...new Set(entry.replicas.map((r) => r.peer.engine ?? engineName))].sort()
  return summary
}

function configSummary(config: unknown): string {
  const json = JSON.stringify(config) ?? 'null'
  return json.length > 80 ? `${json.slice(0, 80)}…` : json
}

function bindingSummary(binding: Binding): RegisteredTriggerSummary {
  return {
    id: binding.id,
    trigger_type: binding.trigger_type,
    function_id: binding.function_id,
    namespace: binding.namespace,
    worker_name: binding.owner?.name ?? null,
    status: binding.status,
    config: binding.config,
    config_summary: configSummary(binding.config),
  }
}

function triggerTypeSummary(provider: ProviderEntry): TriggerTypeSummary {
  return { id: provider.typeId, namespace: provider.namespace, worker_name: provider.peer.name, description: provider.description }
}

function matchesSearch(search: string | undefined, ...texts: (string | undefined | null)[]): boolean {
  if (!search) return true
  const needle = search.toLowerCase()
  return texts.some((t) => typeof t === 'string' && t.toLowerCase().includes(needle))
}

/**
 * WorkerSummary of protocol.md §11.1; in a fleet with `engine`, the engine the worker is connected
 * to (`engineName` for this engine's own).
 */
export function workerSummary(p: Peer, functions: FunctionRegistry, engineName: string | undefined): WorkerSummary {
  const summary: WorkerSummary = {
    id: p.workerId,
    name: p.name,
    description: p.announce.description ?? null,
    version: p.announce.version ?? null,
    namespace: p.namespace,
    runtime: p.announce.runtime ?? null,
    os: p.announce.os ?? null,
    pid: p.announce.pid ?? null,
    isolation: p.announce.isolation ?? null,
    ip_address: p.ipAddress,
    status: p.kind === 'builtin' ? 'available' : 'connected',
    function_count: functions.countFor(p),
    connected_at_ms: p.connectedAtMs,
    active_invocations: p.activeInvocations,
  }
  const engine = p.engine ?? engineName
  if (engine !== undefined) summary.engine = engine
  if (p.draining === true) summary.draining = true
  return summary
}

/** Registers the engine's own functions on its internal peer. */
export function registerEngineFunctions(engine: EngineFunctionsHost, peer: BuiltinPeer): void {
  const fn = (id: string, description: string, handler: (input: Input, context: InvocationContext) => unknown) =>
    peer.registerFunction(id, (data, context) => handler(objectInput(id, data), context), { description, ...ENGINE_FUNCTION_FORMATS[id] })

  const visible = (access: AccessPolicy, entry: FunctionEntry) => access.canSee(entry.id, entry.namespace, entry.latest.metadata)
  const bindingVisible = (access: AccessPolicy, b: Binding) => access.canSee(b.function_id, b.namespace, engine.functions.resolve(b.namespace, b.function_id)?.latest.metadata)

  const functionDetail = (entry: FunctionEntry): FunctionDetail => {
    const latest = entry.latest
    // Fields in the order of §11.1's FunctionDetail (the CLI prints them as they come).
    return {
      ...functionSummary(entry, engine.engineName),
      ...(latest.request_format !== undefined && { request_schema: latest.request_format }),
      ...(latest.response_format !== undefined && { response_schema: latest.response_format }),
      ...(latest.invocation && { invocation: { url: latest.invocation.url, method: latest.invocation.method ?? 'POST' } }),
      replicas: entry.replicas.map((r) => {
        const engineOf = r.peer.engine ?? engine.engineName
        return engineOf === undefined ? { worker_id: r.peer.workerId, worker_name: r.peer.name } : { worker_id: r.peer.workerId, worker_name: r.peer.name, engine: engineOf }
      }),
      registered_triggers: engine.triggers
        .allBindings()
        .filter((b) => b.function_id === entry.id && b.namespace === entry.namespace)
        .map((b) => ({ id: b.id, trigger_type: b.trigger_type, config: b.config, status: b.status })),
    }
  }

  const triggerTypeDetail = (provider: ProviderEntry): TriggerTypeDetail => {
    return {
      ...triggerTypeSummary(provider),
      ...(provider.trigger_request_format && { configuration_schema: provider.trigger_request_format }),
      ...(provider.call_request_format && { request_schema: provider.call_request_format }),
      instance_count: engine.triggers.instanceCount(provider.namespace, provider.typeId),
    }
  }

  const workerSummaryOf = (p: Peer): WorkerSummary => workerSummary(p, engine.functions, engine.engineName)

  /** `engine::functions::info` lookup (§11.1): strict with a namespace, else `default`, else a unique other one. */
  const lookupFunction = (functionId: string, namespace: string | undefined, access: AccessPolicy): FunctionEntry => {
    const entry = findFunction(functionId, namespace)
    if (!visible(access, entry)) throw Errors.notVisible(functionId)
    return entry
  }

  const findFunction = (functionId: string, namespace: string | undefined): FunctionEntry => {
    if (namespace !== undefined) {
      const entry = engine.functions.get(namespace, functionId)
      if (!entry) throw Errors.notFound(`Function '${functionId}' is not registered.`)
      return entry
    }
    const inDefault = engine.functions.get('default', functionId)
    if (inDefault) return inDefault
    const others = engine.functions.namespacesOf(functionId, 'default')
    if (others.length === 1) return engine.functions.get(others[0]!, functionId)!
    if (others.length > 1) {
      throw Errors.notFound(`Function '${functionId}' is ambiguous: it is registered in namespace(s): ${others.join(', ')}. Pass namespace.`)
    }
    throw Errors.notFound(`Function '${functionId}' is not registered.`)
  }

  fn('engine::functions::list', 'List registered functions', (input, context): FunctionsListResult => {
    const id = 'engine::functions::list'
    const search = optionalString(id, input, 'search')
    const prefix = optionalString(id, input, 'prefix')
    const worker = optionalString(id, input, 'worker')
    const namespace = optionalString(id, input, 'namespace')
    const workers = Array.isArray(input.workers) ? (input.workers as unknown[]).filter((w) => typeof w === 'string') : undefined
    const includeInternal = input.include_internal === true
    const functions = engine.functions
      .list()
      .filter((e) => includeInternal || (!isInternalId(e.id) && e.latest.metadata?.internal !== true))
      .filter((e) => visible(context.access, e))
      .filter((e) => namespace === undefined || e.namespace === namespace)
      .filter((e) => prefix === undefined || e.id.startsWith(prefix))
      .filter((e) => matchesSearch(search, e.id, e.latest.description))
      .filter((e) => worker === undefined || e.replicas.some((r) => r.peer.name === worker))
      .filter((e) => workers === undefined || e.replicas.some((r) => r.peer.name !== null && workers.includes(r.peer.name)))
      .map((entry) => functionSummary(entry, engine.engineName))
    return { functions }
  })

  fn('engine::functions::info', 'Describe one or more functions', (input, context): FunctionDetail | FunctionsInfoBatchResult => {
    const id = 'engine::functions::info'
    const namespace = optionalString(id, input, 'namespace')
    const single = optionalString(id, input, 'function_id')
    const batch = input.function_ids
    if ((single === undefined) === (batch === undefined || batch === null)) {
      throw Errors.invalidInput(id, 'give exactly one of function_id or function_ids')
    }
    if (single !== undefined) return functionDetail(lookupFunction(single, namespace, context.access))
    if (!Array.isArray(batch) || batch.length === 0 || batch.length > 32 || batch.some((b) => typeof b !== 'string')) {
      throw Errors.invalidInput(id, 'function_ids must be an array of 1 to 32 strings')
    }
    return {
      functions: (batch as string[]).map((functionId) => {
        try {
          return functionDetail(lookupFunction(functionId, namespace, context.access))
        } catch (err) {
          return { function_id: functionId, error: (err as SvcError).code === 'FORBIDDEN' ? 'forbidden' : 'not_found' }
        }
      }),
    }
  })

  fn('engine::triggers::list', 'List trigger types', (input): TriggerTypesListResult => {
    const id = 'engine::triggers::list'
    const search = optionalString(id, input, 'search')
    const prefix = optionalString(id, input, 'prefix')
    const worker = optionalString(id, input, 'worker')
    const includeInternal = input.include_internal === true
    const triggers = [...engine.triggers.providers()]
      .filter((p) => includeInternal || !p.typeId.startsWith('engine::'))
      .filter((p) => prefix === undefined || p.typeId.startsWith(prefix))
      .filter((p) => matchesSearch(search, p.typeId, p.description))
      .filter((p) => worker === undefined || p.peer.name === worker)
      .sort((a, b) => (a.typeId < b.typeId ? -1 : a.typeId > b.typeId ? 1 : a.namespace < b.namespace ? -1 : 1))
      .map(triggerTypeSummary)
    return { triggers }
  })

  fn('engine::triggers::info', 'Describe a trigger type', (input): TriggerTypeDetail => {
    const id = 'engine::triggers::info'
    const typeId = optionalString(id, input, 'id')
    if (typeId === undefined) throw Errors.invalidInput(id, 'id is required')
    const namespace = optionalString(id, input, 'namespace') ?? 'default'
    const provider = engine.triggers.activeProvider(namespace, typeId)
    if (!provider) throw Errors.notFound(`Trigger type '${typeId}' is not registered in namespace '${namespace}'.`)
    return triggerTypeDetail(provider)
  })

  fn('engine::registered-triggers::list', 'List registered triggers', (input, context): RegisteredTriggersListResult => {
    const id = 'engine::registered-triggers::list'
    const search = optionalString(id, input, 'search')
    const triggerType = optionalString(id, input, 'trigger_type')
    const functionId = optionalString(id, input, 'function_id')
    const worker = optionalString(id, input, 'worker')
    const status = optionalString(id, input, 'status')
    const includeInternal = input.include_internal === true
    const registered_triggers = engine.triggers
      .allBindings()
      // As engine::functions::list: a trigger of an internal function (engine::…, or marked
      // `metadata.internal` — the built-ins', the console's) shows only with include_internal.
      .filter((b) => includeInternal || (!b.function_id.startsWith('engine::') && engine.functions.get(b.namespace, b.function_id)?.latest.metadata?.internal !== true))
      .filter((b) => bindingVisible(context.access, b))
      .filter((b) => triggerType === undefined || b.trigger_type === triggerType)
      .filter((b) => functionId === undefined || b.function_id === functionId)
      .filter((b) => worker === undefined || b.owner?.name === worker)
      .filter((b) => status === undefined || b.status === status)
      .filter((b) => matchesSearch(search, b.id, b.function_id, b.trigger_type))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map(bindingSummary)
    return { registered_triggers }
  })

  fn('engine::registered-triggers::info', 'Describe a registered trigger', (input, context): RegisteredTriggerDetail => {
    const id = 'engine::registered-triggers::info'
    const triggerId = optionalString(id, input, 'id')
    if (triggerId === undefined) throw Errors.invalidInput(id, 'id is required')
    const binding = engine.triggers.getBinding(triggerId)
    if (!binding || !bindingVisible(context.access, binding)) throw Errors.notFound(`Registered trigger '${triggerId}' was not found.`)
    const fnEntry = engine.functions.resolve(binding.namespace, binding.function_id)
    return {
      ...bindingSummary(binding),
      ...(binding.metadata !== undefined && { metadata: binding.metadata }),
      trigger: binding.deliveredTo ? triggerTypeDetail(binding.deliveredTo) : null,
      function: fnEntry && visible(context.access, fnEntry) ? functionDetail(fnEntry) : null,
    }
  })

  fn('engine::workers::list', 'List connected and built-in workers', (input): WorkersListResult => {
    const id = 'engine::workers::list'
    const search = optionalString(id, input, 'search')
    const runtime = optionalString(id, input, 'runtime')
    const status = optionalString(id, input, 'status')
    const namespace = optionalString(id, input, 'namespace')
    const workers = engine
      .listedPeers()
      .map(workerSummaryOf)
      .filter((w) => runtime === undefined || w.runtime === runtime)
      .filter((w) => status === undefined || w.status === status)
      .filter((w) => namespace === undefined || w.namespace === namespace)
      .filter((w) => matchesSearch(search, w.name, w.description))
      .sort((a, b) => {
        const an = a.name ?? '\uffff'
        const bn = b.name ?? '\uffff'
        return an < bn ? -1 : an > bn ? 1 : a.id < b.id ? -1 : 1
      })
    return { workers }
  })

  /** A flight this session may see: one of its own calls, or a call of a function it may invoke. */
  const flightVisible = (access: AccessPolicy, caller: Peer | undefined, flight: { caller: Peer | null; functionId: string; namespace: string }) =>
    !access.restricted || (caller !== undefined && flight.caller === caller) || access.canSee(flight.functionId, flight.namespace, engine.functions.get(flight.namespace, flight.functionId)?.latest.metadata)

  fn('engine::invocations::list', 'List the invocations in flight, oldest first', (input, context) => {
    const id = 'engine::invocations::list'
    const functionId = optionalString(id, input, 'function_id')
    const limit = input.limit ?? 100
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0) throw Errors.invalidInput(id, 'limit must be an integer ≥ 0')
    // engine:: calls (this listing among them) only on request, as in the other listings (§11.1).
    const internal = input.include_internal === true || (functionId !== undefined && isInternalId(functionId))
    return engine.flights.list(
      limit,
      (f) => (functionId === undefined ? internal || !isInternalId(f.functionId) : f.functionId === functionId) && flightVisible(context.access, context.caller, f),
    )
  })

  fn('engine::invocations::cancel', 'Cancel an invocation in flight: its caller gets the error cancelled, its handler is told to stop', (input, context) => {
    const id = 'engine::invocations::cancel'
    const invocationId = optionalString(id, input, 'invocation_id')
    if (invocationId === undefined) throw Errors.invalidInput(id, 'invocation_id is required')
    const reason = optionalString(id, input, 'reason')
    const flight = engine.flights.get(invocationId)
    if (flight === undefined || !flightVisible(context.access, context.caller, flight)) return { cancelled: false }
    return { cancelled: flight.cancel(reason ?? `cancelled by ${context.caller?.name ?? 'the engine'} (engine::invocations::cancel)`) }
  })

  fn('engine::fleet::list', 'List the engines of the fleet this engine belongs to, with their health', (): FleetListResult => engine.fleetList())

  fn('engine::workers::info', 'Describe a worker', (input, context): WorkerInfoResult => {
    const id = 'engine::workers::info'
    const workerId = optionalString(id, input, 'id')
    const name = optionalString(id, input, 'name')
    const namespace = optionalString(id, input, 'namespace')
    let matches: Peer[]
    if (workerId !== undefined) {
      const p = engine.peerById(workerId)
      matches = p ? [p] : []
    } else if (name !== undefined) {
      matches = engine.listedPeers().filter((p) => p.name === name && (namespace === undefined || p.namespace === namespace))
    } else {
      throw Errors.invalidInput(id, 'id or name is required')
    }
    matches.sort((a, b) => b.connectedAtMs - a.connectedAtMs)
    const peer = matches[0]
    if (!peer) throw Errors.notFound(`Worker '${name ?? workerId}' is not connected.`)
    const worker: WorkerDetail = { ...workerSummaryOf(peer), internal: false }
    if (isBuiltin(peer)) {
      worker.listen_urls = peer.listenUrls
      if (peer.lastConfigError !== undefined) worker.last_config_error = peer.lastConfigError
    }
    return {
      worker,
      functions: engine.functions.ofPeer(peer).filter((e) => visible(context.access, e)).map((entry) => functionSummary(entry, engine.engineName)),
      trigger_types: [...engine.triggers.providers()].filter((p) => p.peer === peer).map(triggerTypeSummary),
      registered_triggers: engine.triggers.allBindings().filter((b) => b.owner === peer && bindingVisible(context.access, b)).map(bindingSummary),
      matching_ids: matches.map((p) => p.workerId),
    }
  })

  fn('engine::workers::drain', 'Send new calls away from a worker connection and tell how many it still runs', (input): WorkerDrainResult => {
    const id = 'engine::workers::drain'
    const workerId = optionalString(id, input, 'id')
    if (workerId === undefined) throw Errors.invalidInput(id, 'id is required')
    const session = engine.drainSession(workerId)
    if (session === undefined) {
      // A session that is closing counts as gone; a remote worker carries its engine (issue 19).
      const other = engine.peerById(workerId)
      if (other?.kind === 'builtin') throw Errors.invalidInput(id, 'id names a built-in worker; only connections drain')
      if (other?.engine !== undefined) throw Errors.invalidInput(id, 'id names a worker of another engine of the fleet; drain it there')
      throw Errors.notFound(`Worker '${workerId}' is not connected.`)
    }
    return { id: session.workerId, draining: true, active_invocations: session.activeInvocations }
  })

  fn('engine::workers::register', 'Worker announce', (input, context) => engine.announce(context.caller, input as WorkerAnnounce))

  fn('engine::register_trigger', 'Register a trigger owned by no connection', async (input, context): Promise<RegisterTriggerResult> => {
    const id = 'engine::register_trigger'
    const triggerType = optionalString(id, input, 'trigger_type')
    const functionId = optionalString(id, input, 'function_id')
    if (triggerType === undefined) throw Errors.invalidInput(id, 'trigger_type is required')
    if (functionId === undefined) throw Errors.invalidInput(id, 'function_id is required')
    const namespace = optionalString(id, input, 'namespace')
    const triggerNamespace = optionalString(id, input, 'trigger_namespace')
    const prepared = await engine.registrations.prepareBinding(context.access, {
      id: randomUUID(),
      trigger_type: triggerType,
      function_id: functionId,
      config: input.config ?? {},
      metadata: input.metadata,
      namespace,
      trigger_namespace: triggerNamespace,
    })
    if (prepared instanceof SvcError) throw prepared
    return awaitProviderAnswer(engine, engine.triggers.addBinding(prepared))
  })

  fn('engine::channels::create', 'Create a channel: a writer and a reader ref', (input): CreateChannelResult => {
    const id = 'engine::channels::create'
    const size = input.buffer_size ?? DEFAULT_BUFFER_SIZE
    if (typeof size !== 'number' || !Number.isInteger(size) || size < MIN_BUFFER_SIZE || size > MAX_BUFFER_SIZE) {
      throw Errors.invalidInput(id, `buffer_size must be an integer from ${MIN_BUFFER_SIZE} to ${MAX_BUFFER_SIZE}`)
    }
    // No worker owns a channel (§9): it outlives the caller's connection.
    return engine.channels.create(size)
  })

  fn('engine::unregister_trigger', 'Remove a trigger', (input): UnregisterTriggerResult => {
    const id = 'engine::unregister_trigger'
    const triggerId = optionalString(id, input, 'id')
    if (triggerId === undefined) throw Errors.invalidInput(id, 'id is required')
    return { removed: engine.triggers.removeBinding(triggerId) }
  })
}

/** Waits (at most 10 s) for the provider's answer to a binding made by `engine::register_trigger` (§8.3). */
async function awaitProviderAnswer(engine: EngineFunctionsHost, binding: Binding): Promise<RegisterTriggerResult> {
  // Parked bindings succeed at once; delivered ones wait for the provider (10 s, then accepted).
  if (binding.deliveredTo) await engine.triggers.waitForAnswer(binding.id, 10000)
  if (binding.status === 'failed') {
    const error = binding.lastError
    engine.triggers.removeBinding(binding.id)
    throw Errors.triggerRegistrationFailed(`${error?.code ?? 'error'}: ${error?.message ?? 'refused'}`)
  }
  return { id: binding.id }
}

function isBuiltin(peer: Peer): peer is BuiltinPeer {
  return peer instanceof BuiltinPeer
}

/**
 * `functions` of an `engine::functions-available` fire (§11.6): every function, in every
 * namespace and internal ones included, that `access` (the binding owner's rules) may see.
 */
export function visibleFunctionSummaries(functions: FunctionRegistry, access: AccessPolicy, engineName?: string): FunctionSummary[] {
  return functions
    .list()
    .filter((e) => access.canSee(e.id, e.namespace, e.latest.metadata))
    .map((entry) => functionSummary(entry, engineName))
}
