/**
 * The registration store of a client (sdk.md §3–§5, protocol.md §3.7): the functions, trigger
 * types and triggers registered through it, each with its frame, replayed on every open in the
 * order of protocol.md §3.1 (trigger types, functions, triggers). Registrations are replayed,
 * never queued as frames.
 *
 * The checks here are the ones the engine would make (protocol.md §3.5): a client refuses, before
 * sending anything, what the engine would refuse.
 */
import { encodeFrame } from '../codec.ts'
import { Errors, type SvcError } from '../errors.ts'
import { idProblem } from '../ids.ts'
import type { RegisterFunctionMessage, RegisterTriggerMessage, RegisterTriggerTypeMessage } from '../messages.ts'
import { invocationError } from './errors.ts'
import type {
  FunctionHandler,
  HttpInvocationConfig,
  RegisterFunctionOptions,
  RegisterTriggerInput,
  RegisterTriggerTypeInput,
  TriggerHandler,
} from './types.ts'

/** A function this client registered. */
export interface LocalFunction {
  readonly id: string
  /** Undefined for HTTP-invoked functions. */
  readonly handler: FunctionHandler | undefined
  readonly frame: string
}

/** A trigger type this client provides. */
export interface LocalTriggerType {
  readonly id: string
  /** The namespace given at registration (sent back in `unregistertriggertype`). */
  readonly namespace: string | undefined
  /** `<namespace>\0<id>`, the namespace being the one the engine places the provider in. */
  readonly key: string
  readonly handler: TriggerHandler<any>
  readonly frame: string
}

/** A binding this client registered as a consumer. */
export interface LocalTrigger {
  readonly id: string
  readonly triggerType: string
  readonly functionId: string
  readonly namespace: string | undefined
  readonly frame: string
}

/** The key of a trigger type provided in `namespace`. */
export function triggerTypeKey(namespace: string, id: string): string {
  return `${namespace}\u0000${id}`
}

/**
 * Refuses a namespace argument the engine would refuse, before anything is sent: blank (a
 * TypeError, sdk.md §5) or not well-formed text (protocol.md §3.5, the engine's own check).
 * @throws TypeError for a blank value; InvocationError `INVALID_NAMESPACE` naming the problem.
 */
export function requireNamespace(value: string | undefined, field: string): void {
  if (value === undefined) return
  if (typeof value !== 'string' || value.trim() === '') throw new TypeError(`${field} is empty: give it a name, or omit it`)
  const problem = idProblem(value)
  if (problem !== undefined) throw invocationError(Errors.namespaceNotText(`${field} ${problem}`))
}

/**
 * Refuses an id the engine would refuse (protocol.md §3.5): a lone UTF-16 surrogate, a control
 * character, more than 1024 characters. `what` names the argument (`function id`).
 * @throws InvocationError `INVALID_ID`: `Invalid id: <what> contains a lone UTF-16 surrogate at index <n>`.
 */
export function requireWellFormedId(id: string, what: string): void {
  const problem = idProblem(id)
  if (problem !== undefined) throw invocationError(Errors.idNotText(`${what} ${problem}`))
}

/** Why a call cannot be sent: an id or a namespace the engine would refuse; undefined when it can. */
export function requestProblem(functionId: string, namespace: string | undefined): SvcError | undefined {
  const problem = idProblem(functionId)
  if (problem !== undefined) return Errors.idNotText(`function_id ${problem}`)
  if (namespace === undefined) return undefined
  if (typeof namespace !== 'string' || namespace.trim() === '') return Errors.invalidNamespace()
  const nsProblem = idProblem(namespace)
  return nsProblem === undefined ? undefined : Errors.namespaceNotText(`namespace ${nsProblem}`)
}

export class RegistrationStore {
  readonly functions = new Map<string, LocalFunction>()
  /** By {@link triggerTypeKey}. */
  readonly triggerTypes = new Map<string, LocalTriggerType>()
  readonly triggers = new Map<string, LocalTrigger>()

  /**
   * Checks and stores a function (sdk.md §4).
   * @throws TypeError for an empty id, or neither a handler nor an HttpInvocationConfig with a url;
   *   Error `function id already registered: <id>`; InvocationError `INVALID_ID`.
   */
  addFunction(id: string, handlerOrInvocation: FunctionHandler | HttpInvocationConfig, options: RegisterFunctionOptions): LocalFunction {
    if (typeof id !== 'string' || id.trim() === '') throw new TypeError('function id is required')
    requireWellFormedId(id, 'function id')
    if (this.functions.has(id)) throw new Error(`function id already registered: ${id}`)
    const message: RegisterFunctionMessage = { type: 'registerfunction', id }
    if (options.description !== undefined) message.description = options.description
    if (options.request_format !== undefined) message.request_format = options.request_format
    if (options.response_format !== undefined) message.response_format = options.response_format
    if (options.metadata !== undefined) message.metadata = options.metadata
    let handler: FunctionHandler | undefined
    if (typeof handlerOrInvocation === 'function') {
      handler = handlerOrInvocation
    } else if (handlerOrInvocation !== null && typeof handlerOrInvocation === 'object' && typeof handlerOrInvocation.url === 'string') {
      message.invocation = handlerOrInvocation
    } else {
      throw new TypeError(`function ${id}: expected a handler function or an HttpInvocationConfig with a url`)
    }
    const entry: LocalFunction = { id, handler, frame: encodeFrame(message) }
    this.functions.set(id, entry)
    return entry
  }

  /**
   * Checks and stores a binding (sdk.md §5) under the generated `id`; `namespace` is the target
   * namespace after defaults.
   * @throws TypeError for a blank `type`, `function_id`, `namespace` or `trigger_namespace`;
   *   InvocationError `INVALID_ID` / `INVALID_NAMESPACE`.
   */
  addTrigger(id: string, input: RegisterTriggerInput<unknown>, defaultNamespace: (functionId: string) => string | undefined): LocalTrigger {
    if (typeof input.type !== 'string' || input.type.trim() === '') throw new TypeError('trigger type is required')
    if (typeof input.function_id !== 'string' || input.function_id.trim() === '') throw new TypeError('function id is required')
    requireWellFormedId(input.type, 'trigger type')
    requireWellFormedId(input.function_id, 'function_id')
    requireNamespace(input.namespace, 'namespace')
    requireNamespace(input.trigger_namespace, 'trigger_namespace')
    const namespace = input.namespace ?? defaultNamespace(input.function_id)
    const message: RegisterTriggerMessage = {
      type: 'registertrigger',
      id,
      trigger_type: input.type,
      function_id: input.function_id,
      config: input.config === undefined ? {} : input.config,
    }
    if (input.metadata !== undefined) message.metadata = input.metadata
    if (namespace !== undefined) message.namespace = namespace
    if (input.trigger_namespace !== undefined) message.trigger_namespace = input.trigger_namespace
    const entry: LocalTrigger = { id, triggerType: input.type, functionId: input.function_id, namespace, frame: encodeFrame(message) }
    this.triggers.set(id, entry)
    return entry
  }

  /**
   * Checks and stores a trigger type (sdk.md §5), replacing one of the same key; returns the entry
   * and the one it replaced (whose bindings must be let go).
   * @throws TypeError for a blank `id` or `namespace`, or a handler without both methods;
   *   InvocationError `INVALID_ID` / `INVALID_NAMESPACE`.
   */
  addTriggerType(
    input: RegisterTriggerTypeInput,
    handler: TriggerHandler<any>,
    workerNamespace: string | undefined,
  ): { entry: LocalTriggerType; replaced: LocalTriggerType | undefined } {
    if (typeof input.id !== 'string' || input.id.trim() === '') throw new TypeError('trigger type id is required')
    requireWellFormedId(input.id, 'trigger type id')
    requireNamespace(input.namespace, 'namespace')
    if (
      handler === null ||
      typeof handler !== 'object' ||
      typeof handler.registerTrigger !== 'function' ||
      typeof handler.unregisterTrigger !== 'function'
    ) {
      throw new TypeError(`trigger type ${input.id}: handler needs registerTrigger and unregisterTrigger functions`)
    }
    const message: RegisterTriggerTypeMessage = { type: 'registertriggertype', id: input.id, description: input.description ?? '' }
    if (input.trigger_request_format !== undefined) message.trigger_request_format = input.trigger_request_format
    if (input.call_request_format !== undefined) message.call_request_format = input.call_request_format
    if (input.namespace !== undefined) message.namespace = input.namespace
    const key = triggerTypeKey(input.namespace ?? workerNamespace ?? 'default', input.id)
    const replaced = this.triggerTypes.get(key)
    const entry: LocalTriggerType = { id: input.id, namespace: input.namespace, key, handler, frame: encodeFrame(message) }
    this.triggerTypes.set(key, entry)
    return { entry, replaced }
  }

  /** The provided type a delivered binding names: exact namespace first, else any of that id. */
  findTriggerType(id: string, namespace: string | undefined): LocalTriggerType | undefined {
    const exact = this.triggerTypes.get(triggerTypeKey(namespace ?? 'default', id))
    if (exact !== undefined) return exact
    for (const type of this.triggerTypes.values()) if (type.id === id) return type
    return undefined
  }

  /** Sends every registration in the replay order of protocol.md §3.1. */
  replay(send: (frame: string) => void): void {
    for (const type of this.triggerTypes.values()) send(type.frame)
    for (const fn of this.functions.values()) send(fn.frame)
    for (const trigger of this.triggers.values()) send(trigger.frame)
  }
}
