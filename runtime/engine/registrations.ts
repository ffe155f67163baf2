/**
 * Registrations (protocol.md §5, §8.1, §13.5): what a worker session or a built-in registers —
 * functions, trigger types and triggers — passes the session's gates and registration hooks, the
 * prefix and the reserved ids here before it reaches the registries. Refusals are answered as
 * `registrationrejected` (§5.11) or `triggerregistrationresult` (§8.1).
 *
 * The engine core hands each registration frame to {@link Registrations}; built-in workers reach
 * the same registries through its {@link LocalRegistrations} side. It sees the engine only
 * through {@link RegistrationHost}, so a registration from elsewhere (another engine of a fleet)
 * can plug in here without the session protocol.
 */
import {
  ENGINE_PREFIX,
  Errors,
  errorBodyOf,
  idProblem,
  RejectionMessages,
  RESERVED_FUNCTION_IDS,
  RESERVED_TRIGGER_TYPES,
  SvcError,
  encodeFrame,
  encodeTriggerResult,
  type RegisterFunctionMessage,
  type RegisterTriggerMessage,
  type RegisterTriggerTypeMessage,
  type RejectionReason,
  type UnregisterFunctionMessage,
  type UnregisterTriggerMessage,
  type UnregisterTriggerTypeMessage,
} from 'svc-protocol'
import type { AccessPolicy } from './access/policy.ts'
import type { LocalRegistrations } from './builtin-peer.ts'
import { HttpCallee } from './callees.ts'
import type { HttpFunctionsPolicy } from './config.ts'
import type { FunctionRegistry, Replica } from './functions.ts'
import type { Peer } from './peer.ts'
import { FrameTooLarge, sendErrorFrame } from './pipeline.ts'
import type { Session } from './session.ts'
import type { BindingInput, ProviderEntry, TriggerRegistry } from './triggers.ts'
import type { LocalTriggerProvider, LocalTriggerRegistration, LocalTriggerTypeOptions } from './types.ts'

/** What {@link Registrations} needs of the engine. */
export interface RegistrationHost {
  readonly functions: FunctionRegistry
  readonly triggers: TriggerRegistry
  /**
   * Calls a registration hook (§13.5) as the engine: namespace `default`, the internal timeout
   * (§6.5). Resolves with its result; rejects with the call's `SvcError`.
   */
  callHook(functionId: string, input: object): Promise<unknown>
  /** The set of registered `(namespace, function_id)` pairs changed (`engine::functions-available`, §11.6). */
  functionsChanged(): void
  /** A session's replica or trigger was added or removed (the fleet announces them, issue 19). */
  replicasChanged?(): void
  /** The `http_functions` policy (protocol.md §12.4), read on each call of an HTTP-invoked function. */
  httpFunctions(): HttpFunctionsPolicy | undefined
}

/** A refusal by a registration hook (§13.5). */
class HookDenied extends Error {
  readonly hook: string
  readonly detail: string
  constructor(hook: string, detail: string) {
    super(RejectionMessages.hookDenied(hook, detail))
    this.hook = hook
    this.detail = detail
  }
}

/** Where a session's registrations ended up, so that unregistering by the sent id finds them. */
interface SessionIds {
  /** Sent function id → stored id (prefix and hook mapping applied). */
  functions: Map<string, string>
  /** Sent trigger id → stored trigger id. */
  triggers: Map<string, string>
}

export class Registrations implements LocalRegistrations {
  private readonly host: RegistrationHost
  private readonly ids = new WeakMap<Session, SessionIds>()

  constructor(host: RegistrationHost) {
    this.host = host
  }

  // ---- sessions (§5, §8.1) ------------------------------------------------------------------

  /** Starts keeping the ids a session's registrations were stored under (on session open). */
  openSession(session: Session): void {
    this.ids.set(session, { functions: new Map(), triggers: new Map() })
  }

  /** `unregisterfunction` (§5.2): by the id the worker sent, whatever the prefix or a hook made of it. */
  unregisterFunction(session: Session, message: UnregisterFunctionMessage): void {
    const ids = this.idsOf(session)
    const stored = ids.functions.get(message.id) ?? session.access.stored(message.id)
    ids.functions.delete(message.id)
    if (this.host.functions.remove(session.namespace, stored, session)) this.host.functionsChanged()
    this.host.replicasChanged?.()
  }

  /** `unregistertriggertype` (§5.4). */
  unregisterTriggerType(session: Session, message: UnregisterTriggerTypeMessage): void {
    this.host.triggers.removeProvider(session, message.namespace ?? session.namespace, message.id)
  }

  /** `unregistertrigger` (§8.4): by the id the worker sent. */
  unregisterTrigger(session: Session, message: UnregisterTriggerMessage): void {
    const ids = this.idsOf(session)
    const stored = ids.triggers.get(message.id) ?? message.id
    ids.triggers.delete(message.id)
    this.host.triggers.removeBinding(stored)
    this.host.replicasChanged?.()
  }

  /** Removes every function a peer registered (disconnect, §3.6; a built-in's stop). */
  removeFunctionsOf(peer: Peer): void {
    if (this.host.functions.removePeer(peer)) this.host.functionsChanged()
    this.host.replicasChanged?.()
  }

  /** Removes the bindings a peer owns and the trigger types it provides (§3.6, §8.4). */
  removeTriggersOf(peer: Peer): void {
    this.host.triggers.removeBindingsOf(peer)
    this.host.replicasChanged?.()
    this.host.triggers.removeProviderPeer(peer)
  }

  /** The session's id maps; a session is only handed here once open, so they exist. */
  private idsOf(session: Session): SessionIds {
    return this.ids.get(session)!
  }

  reject(
    session: Session,
    reason: RejectionReason,
    message: string,
    namespace: string,
    ids: { function_id?: string; trigger_type_id?: string },
  ): void {
    const frame = (text: string) =>
      encodeFrame({ type: 'registrationrejected', code: 'FUNCTION_NAMESPACE_CONFLICT', reason, message: text, namespace, ...ids, owner_worker_id: '' })
    try {
      session.send(frame(message))
    } catch (err) {
      // A hook's message too large for the connection: its start is enough to read the reason.
      if (!(err instanceof FrameTooLarge)) throw err
      session.send(frame(`${message.slice(0, 1024)}… (cut to fit max_message_bytes ${err.limit})`))
    }
  }

  /** `registerfunction` (§5.1): gates and hook (§13.5), prefix, reserved ids, then the replica. */
  registerFunction(session: Session, message: RegisterFunctionMessage): Promise<void> | void {
    const access = session.access
    const sentId = message.id
    if (!access.allowFunctionRegistration) {
      return this.reject(session, 'forbidden', RejectionMessages.functionsForbidden(), session.namespace, { function_id: sentId })
    }
    const hook = access.listener?.rbac.on_function_registration_function_id
    if (hook === undefined) return this.addFunction(session, message, sentId)
    return this.callHook(hook, {
      function_id: sentId,
      description: message.description ?? null,
      metadata: message.metadata ?? null,
      namespace: session.namespace,
      context: access.context,
    }).then(
      (mapped) => {
        const id = mappedString(mapped, 'function_id', sentId)
        const next: RegisterFunctionMessage = { ...message, id }
        if (Object.hasOwn(mapped, 'description')) {
          if (typeof mapped.description === 'string') next.description = mapped.description
          else delete next.description
        }
        if (Object.hasOwn(mapped, 'metadata')) {
          if (isRecord(mapped.metadata)) next.metadata = mapped.metadata
          else delete next.metadata
        }
        if (session.state === 'open') this.addFunction(session, next, sentId)
      },
      (err: unknown) => this.reject(session, 'hook_denied', hookMessage(hook, err), session.namespace, { function_id: sentId }),
    )
  }

  private addFunction(session: Session, message: RegisterFunctionMessage, sentId: string): void {
    const stored = session.access.stored(message.id)
    if (RESERVED_FUNCTION_IDS.has(stored)) {
      return this.reject(session, 'reserved_id', RejectionMessages.reservedId(stored), session.namespace, { function_id: sentId })
    }
    if (stored.startsWith(ENGINE_PREFIX) && session.namespace !== 'default') {
      return this.reject(session, 'reserved_id', RejectionMessages.engineIdOutsideDefault(), session.namespace, { function_id: sentId })
    }
    const callee = message.invocation ? new HttpCallee(session, message.invocation, () => this.host.httpFunctions()) : session.callee
    const replica: Replica = { peer: session, callee, wireId: sentId, wireIdJson: JSON.stringify(sentId) }
    if (message.description !== undefined) replica.description = message.description
    if (message.request_format !== undefined) replica.request_format = message.request_format
    if (message.response_format !== undefined) replica.response_format = message.response_format
    if (message.metadata !== undefined) replica.metadata = message.metadata
    if (message.invocation !== undefined) replica.invocation = message.invocation
    const ids = this.idsOf(session)
    const previous = ids.functions.get(sentId)
    if (previous !== undefined && previous !== stored && this.host.functions.remove(session.namespace, previous, session)) this.host.functionsChanged()
    ids.functions.set(sentId, stored)
    if (this.host.functions.add(session.namespace, stored, replica)) this.host.functionsChanged()
    this.host.replicasChanged?.()
  }

  /** `registertriggertype` (§5.3): namespace, gate and hook, engine-owned ids, then the provider. */
  registerTriggerType(session: Session, message: RegisterTriggerTypeMessage): Promise<void> | void {
    const namespace = message.namespace ?? session.namespace
    if (message.namespace !== undefined && message.namespace.trim() === '') {
      return this.reject(session, 'invalid', Errors.invalidNamespace().message, session.namespace, { trigger_type_id: message.id })
    }
    const access = session.access
    if (!access.allowTriggerTypeRegistration) {
      return this.reject(session, 'forbidden', RejectionMessages.triggerTypesForbidden(), namespace, { trigger_type_id: message.id })
    }
    const hook = access.listener?.rbac.on_trigger_type_registration_function_id
    if (hook === undefined) return this.addTriggerType(session, message, namespace)
    return this.callHook(hook, { trigger_type_id: message.id, description: message.description ?? '', context: access.context }).then(
      (mapped) => {
        const next: RegisterTriggerTypeMessage = {
          ...message,
          id: mappedString(mapped, 'trigger_type_id', message.id),
          description: typeof mapped.description === 'string' ? mapped.description : message.description,
        }
        if (session.state === 'open') this.addTriggerType(session, next, namespace)
      },
      (err: unknown) => this.reject(session, 'hook_denied', hookMessage(hook, err), namespace, { trigger_type_id: message.id }),
    )
  }

  private addTriggerType(session: Session, message: RegisterTriggerTypeMessage, namespace: string): void {
    if (RESERVED_TRIGGER_TYPES.has(message.id)) {
      return this.reject(session, 'reserved_id', RejectionMessages.reservedTriggerType(message.id), namespace, { trigger_type_id: message.id })
    }
    const entry: ProviderEntry = { peer: session, namespace, typeId: message.id, description: message.description ?? '' }
    if (message.trigger_request_format) entry.trigger_request_format = message.trigger_request_format
    if (message.call_request_format) entry.call_request_format = message.call_request_format
    this.host.triggers.addProvider(entry)
  }

  /** A W→E `registertrigger` (§8.1): failures are answered with `triggerregistrationresult`. */
  registerTrigger(session: Session, message: RegisterTriggerMessage): Promise<void> | void {
    const fail = (error: SvcError) =>
      sendErrorFrame(session, (body) => encodeTriggerResult(message.id, message.trigger_type, message.function_id, body), error.toErrorBody())
    const prepared = this.prepareBinding(session.access, {
      id: message.id,
      trigger_type: message.trigger_type,
      function_id: message.function_id,
      config: message.config,
      metadata: message.metadata,
      namespace: message.namespace,
      trigger_namespace: message.trigger_namespace,
    })
    const store = (input: BindingInput | SvcError) => {
      if (input instanceof SvcError) return fail(input)
      if (session.state !== 'open') return
      input.owner = session
      this.idsOf(session).triggers.set(message.id, input.id)
      this.host.triggers.addBinding(input)
      this.host.replicasChanged?.()
    }
    if (prepared instanceof Promise) return prepared.then(store)
    store(prepared)
  }

  /**
   * The session rules of §8.1 for a new binding, shared by `registertrigger` and
   * `engine::register_trigger`: blank namespaces, `allowed_trigger_types`, the trigger hook (which
   * may map id, type, target and config), the prefix, and whether the session may invoke the target.
   * @returns the binding to store (owner unset), or the error to report.
   */
  prepareBinding(
    access: AccessPolicy,
    request: { id: string; trigger_type: string; function_id: string; config: unknown; metadata?: unknown; namespace?: string | undefined; trigger_namespace?: string | undefined },
  ): BindingInput | SvcError | Promise<BindingInput | SvcError> {
    const blank = (v: string | undefined) => v !== undefined && v.trim() === ''
    if (blank(request.namespace) || blank(request.trigger_namespace)) return Errors.invalidNamespace()
    // Frames were checked by the codec; engine::register_trigger's input is checked here.
    for (const field of ['namespace', 'trigger_namespace'] as const) {
      const value = request[field]
      const problem = value === undefined ? undefined : idProblem(value)
      if (problem !== undefined) return Errors.namespaceNotText(`${field} ${problem}`)
    }
    for (const field of ['id', 'trigger_type', 'function_id'] as const) {
      const problem = idProblem(request[field])
      if (problem !== undefined) return Errors.idNotText(`${field} ${problem}`)
    }
    const typeDenied = access.checkTriggerType(request.trigger_type)
    if (typeDenied !== undefined) return typeDenied
    const finish = (id: string, type: string, functionId: string, config: unknown): BindingInput | SvcError => {
      const namespace = request.namespace ?? 'default'
      const stored = access.stored(functionId)
      if (access.restricted) {
        const target = this.host.functions.resolve(namespace, stored)
        const denial = access.checkInvoke(target?.id ?? stored, target?.namespace ?? namespace, target?.latest.metadata)
        if (denial !== undefined) return denial
      }
      const input: BindingInput = { id, trigger_type: type, function_id: stored, config, namespace, owner: null }
      if (request.metadata !== undefined && request.metadata !== null) input.metadata = request.metadata
      if (request.trigger_namespace !== undefined) input.trigger_namespace = request.trigger_namespace
      return input
    }
    const hook = access.listener?.rbac.on_trigger_registration_function_id
    if (hook === undefined) return finish(request.id, request.trigger_type, request.function_id, request.config)
    return this.callHook(hook, {
      trigger_id: request.id,
      trigger_type: request.trigger_type,
      function_id: request.function_id,
      config: request.config,
      metadata: request.metadata ?? null,
      namespace: request.namespace ?? 'default',
      context: access.context,
    }).then(
      (mapped) => {
        const type = mappedString(mapped, 'trigger_type', request.trigger_type)
        const denied = type === request.trigger_type ? undefined : access.checkTriggerType(type)
        if (denied !== undefined) return denied
        return finish(
          mappedString(mapped, 'trigger_id', request.id),
          type,
          mappedString(mapped, 'function_id', request.function_id),
          Object.hasOwn(mapped, 'config') ? mapped.config : request.config,
        )
      },
      (err: unknown) => Errors.forbiddenByHook(hook, hookDetail(err)),
    )
  }

  /**
   * Calls a registration hook (§13.5) in `default` with the internal timeout. Resolves with the
   * returned object; rejects with a {@link HookDenied} when it throws or returns a non-object.
   */
  private async callHook(hook: string, input: object): Promise<Record<string, unknown>> {
    let result: unknown
    try {
      result = await this.host.callHook(hook, input)
    } catch (err) {
      throw new HookDenied(hook, errorBodyOf(err).message)
    }
    if (result === undefined || result === null) throw new HookDenied(hook, 'the hook returned no result')
    if (!isRecord(result)) throw new HookDenied(hook, 'the hook returned a value that is not an object')
    for (const field of ['function_id', 'trigger_id', 'trigger_type', 'trigger_type_id']) {
      const value = result[field]
      if (value === undefined) continue
      if (typeof value !== 'string' || value === '' || idProblem(value) !== undefined) {
        throw new HookDenied(hook, `the hook returned an invalid ${field}`)
      }
    }
    return result
  }

  // ---- in-process registrations (LocalRegistrations, for BuiltinPeer) -------------------------

  addReplica(namespace: string, id: string, replica: Replica): void {
    if (this.host.functions.add(namespace, id, replica)) this.host.functionsChanged()
  }

  removeReplica(peer: Peer, namespace: string, id: string): void {
    if (this.host.functions.remove(namespace, id, peer)) this.host.functionsChanged()
  }

  registerLocalTriggerType(peer: Peer, options: LocalTriggerTypeOptions, provider: LocalTriggerProvider): void {
    const entry: ProviderEntry = { peer, namespace: 'default', typeId: options.id, description: options.description, local: provider }
    if (options.trigger_request_format) entry.trigger_request_format = options.trigger_request_format
    if (options.call_request_format) entry.call_request_format = options.call_request_format
    this.host.triggers.addProvider(entry)
  }

  unregisterLocalTriggerType(peer: Peer, id: string): void {
    this.host.triggers.removeProvider(peer, 'default', id)
  }

  reportLocalTriggerResult(peer: Peer, triggerId: string, error?: { code: string; message: string }): void {
    this.host.triggers.providerAnswer(peer, triggerId, error)
  }

  hasFunction(namespace: string, id: string): boolean {
    return this.host.functions.resolve(namespace, id) !== undefined
  }

  /** See `LocalWorker.servedElsewhere`: resolves, with no live replica of this engine's own. */
  servedElsewhere(namespace: string, id: string): boolean {
    const entry = this.host.functions.resolve(namespace, id)
    if (entry === undefined) return false
    const replicas = entry.replicas
    let remote = false
    for (let i = 0; i < replicas.length; i++) {
      const replica = replicas[i]!
      if (!replica.peer.alive) continue
      if (replica.callee.remote !== true) return false
      remote = true
    }
    return remote
  }

  registerLocalTrigger(peer: Peer, binding: LocalTriggerRegistration): void {
    const input: BindingInput = {
      id: binding.id,
      trigger_type: binding.trigger_type,
      function_id: binding.function_id,
      config: binding.config,
      namespace: 'default',
      owner: peer,
    }
    if (binding.metadata !== undefined && binding.metadata !== null) input.metadata = binding.metadata
    this.host.triggers.addBinding(input)
  }

  unregisterLocalTrigger(peer: Peer, id: string): void {
    if (this.host.triggers.getBinding(id)?.owner === peer) this.host.triggers.removeBinding(id)
  }
}

// ---- helpers ---------------------------------------------------------------------------------

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A string field a hook returned, or the original when the hook left it out. */
function mappedString(mapped: Record<string, unknown>, field: string, original: string): string {
  const value = mapped[field]
  return typeof value === 'string' ? value : original
}

function hookDetail(err: unknown): string {
  return err instanceof HookDenied ? err.detail : errorBodyOf(err).message
}

function hookMessage(hook: string, err: unknown): string {
  return RejectionMessages.hookDenied(hook, hookDetail(err))
}
