/**
 * The `http` trigger type of the HTTP worker (builtins.md §3.2, §3.3): every binding is validated
 * and compiled once, at registration, into the route table ({@link Router}) together with
 * everything a request needs (trigger object, condition, middleware ids, metadata), so a request
 * costs one trie walk (./pipeline.ts).
 */
import type { FormatSchema } from 'svc-protocol'
import { Errors, type SvcError } from 'svc-protocol/errors'
import type { HttpTriggerInfo } from 'svc-protocol/payloads/http'
import type { BindingInfo, LocalTriggerProvider, LocalTriggerTypeOptions, LocalWorker } from '../../engine/types.ts'
import { createCondition, type Condition } from '../shared/conditions.ts'
import { CHANNEL_REF } from '../shared/formats.ts'
import { HTTP_METHODS, parsePattern, Router, type HttpMethod } from './router.ts'

/** What a binding compiles to at registration (everything a request needs from its trigger). */
export interface RouteBinding {
  readonly triggerId: string
  readonly functionId: string
  readonly namespace: string
  readonly metadata: unknown
  readonly conditionFunctionId: string | undefined
  /** The compiled condition (§2.2), null without one. */
  readonly condition: Condition | null
  readonly middleware: readonly string[]
  readonly route: string
  readonly trigger: HttpTriggerInfo
  /** `stream_request_body` of the trigger. */
  readonly streamBody: boolean
  /** `max_body_bytes` of the trigger, undefined without one. */
  readonly maxBodyBytes: number | undefined
}

/**
 * A validated `http` trigger config (§3.2), with two svc additions for request bodies (§3.4, §3.5;
 * docs/decisions.md): `stream_request_body` and a route's own `max_body_bytes`.
 */
export interface HttpTriggerConfig {
  api_path: string
  http_method: HttpMethod
  condition_function_id?: string
  middleware_function_ids: string[]
  /**
   * True: the body is not read before the handler runs; `body` is `null` and the bytes reach the
   * handler only through `request_body`, as they arrive (see `RequestBodyPump` in ./streaming.ts). Default false.
   */
  stream_request_body: boolean
  /**
   * The route's own body limit, bytes (≥ 1). Buffered routes take the smaller of it and the
   * worker's `max_body_bytes`; streamed routes take it alone, and have no limit without it.
   */
  max_body_bytes?: number
}

function invalidConfig(message: string): SvcError {
  return Errors.invalidTriggerConfig(message)
}

/**
 * Validates an `http` trigger config (builtins.md §3.2).
 *
 * @throws SvcError `INVALID_TRIGGER_CONFIG` naming the field, e.g. `api_path is required for http triggers`.
 */
export function parseHttpTriggerConfig(config: unknown): HttpTriggerConfig {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw invalidConfig('config must be an object with api_path for http triggers')
  }
  const c = config as Record<string, unknown>
  if (c.api_path === undefined || c.api_path === null) throw invalidConfig('api_path is required for http triggers')
  if (typeof c.api_path !== 'string') throw invalidConfig('api_path must be a string')
  let method: HttpMethod = 'GET'
  if (c.http_method !== undefined && c.http_method !== null) {
    const upper = typeof c.http_method === 'string' ? c.http_method.toUpperCase() : undefined
    if (upper === undefined || !(HTTP_METHODS as readonly string[]).includes(upper)) {
      throw invalidConfig(`http_method must be one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS, got ${JSON.stringify(c.http_method)}`)
    }
    method = upper as HttpMethod
  }
  const result: HttpTriggerConfig = { api_path: c.api_path, http_method: method, middleware_function_ids: [], stream_request_body: false }
  const condition = c.condition_function_id
  if (condition !== undefined && condition !== null) {
    if (typeof condition !== 'string' || condition === '') throw invalidConfig('condition_function_id must be a non-empty string')
    result.condition_function_id = condition
  }
  const middleware = c.middleware_function_ids
  if (middleware !== undefined && middleware !== null) {
    if (!Array.isArray(middleware) || !middleware.every((m) => typeof m === 'string' && m !== '')) {
      throw invalidConfig('middleware_function_ids must be an array of non-empty strings')
    }
    result.middleware_function_ids = [...(middleware as string[])]
  }
  const stream = c.stream_request_body
  if (stream !== undefined && stream !== null) {
    if (typeof stream !== 'boolean') throw invalidConfig('stream_request_body must be a boolean')
    result.stream_request_body = stream
  }
  const limit = c.max_body_bytes
  if (limit !== undefined && limit !== null) {
    if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
      throw invalidConfig(`max_body_bytes must be an integer >= 1, got ${JSON.stringify(limit) ?? typeof limit}`)
    }
    result.max_body_bytes = limit
  }
  return result
}

const STRING_OR_STRINGS = { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] } as const

/** The request object an `http` trigger delivers to its function (builtins.md §3.4). */
const HTTP_REQUEST_FORMAT = {
  type: 'object',
  // request_body and response: absent when the handler runs on another engine of a fleet (issue 19).
  required: ['method', 'path', 'route', 'path_params', 'query_params', 'headers', 'body', 'trigger'],
  properties: {
    method: { type: 'string', description: 'request method, upper case' },
    path: { type: 'string', description: 'the concrete request path, without the query string' },
    route: { type: 'string', description: 'the registered pattern that matched' },
    path_params: { type: 'object', additionalProperties: { type: 'string' }, description: 'decoded; the wildcard under *' },
    query_params: { type: 'object', additionalProperties: STRING_OR_STRINGS, description: 'decoded; a repeated key gives an array; a key without = gives ""' },
    headers: { type: 'object', additionalProperties: STRING_OR_STRINGS, description: 'names lower case; a repeated header gives an array' },
    body: { description: 'the parsed body (§3.5)' },
    trigger: {
      type: 'object',
      required: ['type', 'path', 'method'],
      properties: { type: { const: 'http' }, path: { type: 'string', description: 'the route' }, method: { type: 'string' } },
    },
    request_body: { ...CHANNEL_REF, description: 'channel from which the raw request bytes can be read; absent when the handler runs on another engine of the fleet than the listener that took the request (a route without stream_request_body)' },
    response: { ...CHANNEL_REF, description: 'channel for a streamed response (§3.7); absent, like request_body, on another engine of the fleet: the result is then the response' },
  },
} satisfies FormatSchema

/** The `http` trigger type as the worker registers it (§3.2). */
export const HTTP_TRIGGER_TYPE: LocalTriggerTypeOptions = {
  id: 'http',
  description: 'Serves a function as an HTTP route',
  trigger_request_format: {
    type: 'object',
    required: ['api_path'],
    properties: {
      api_path: { type: 'string', description: 'route pattern: static, :name and a trailing * segments' },
      http_method: { type: 'string', enum: [...HTTP_METHODS], description: 'default GET, any case' },
      condition_function_id: { type: 'string' },
      middleware_function_ids: { type: 'array', items: { type: 'string' } },
      stream_request_body: {
        type: 'boolean',
        default: false,
        description: 'true: body is null and the raw bytes reach the handler only through request_body, as they arrive, of any size up to max_body_bytes',
      },
      max_body_bytes: {
        type: 'integer',
        minimum: 1,
        description: "the route's body limit, bytes: for a buffered route the smaller of this and svc-http's max_body_bytes; for a streamed route this alone (none when absent)",
      },
    },
  },
  call_request_format: HTTP_REQUEST_FORMAT,
}

/**
 * Provider of the `http` trigger type: the route table of every binding, which the request
 * pipeline looks requests up in.
 * @example
 * const triggers = new HttpTriggers(context.worker)
 * context.worker.registerTriggerType(HTTP_TRIGGER_TYPE, triggers)
 * triggers.router.lookup('GET', '/orders/7')
 */
export class HttpTriggers implements LocalTriggerProvider {
  readonly router = new Router<RouteBinding>({ onPromote: (id) => this.promoted(id) })
  private readonly worker: LocalWorker

  /** `worker`: the worker conditions run on and promotions are reported to. */
  constructor(worker: LocalWorker) {
    this.worker = worker
  }

  /**
   * Compiles a binding into the route table (§3.3); a known trigger id replaces its binding.
   * @throws SvcError `INVALID_TRIGGER_CONFIG` naming the field or a malformed `api_path`;
   *   `ROUTE_CONFLICT` when another function holds the route (the binding is kept as refused and
   *   reported once it takes the route over).
   */
  registerTrigger(binding: BindingInfo): void {
    const config = parseHttpTriggerConfig(binding.config)
    const pattern = parsePattern(config.api_path)
    const data: RouteBinding = {
      triggerId: binding.id,
      functionId: binding.function_id,
      namespace: binding.namespace,
      metadata: binding.metadata,
      conditionFunctionId: config.condition_function_id,
      condition: createCondition(this.worker, {
        condition_function_id: config.condition_function_id,
        namespace: binding.namespace,
        metadata: binding.metadata,
      }),
      middleware: Object.freeze(config.middleware_function_ids),
      route: pattern.text,
      // Shared by every request of the route; frozen because handlers in the engine process get it by reference.
      trigger: Object.freeze({ type: 'http', path: pattern.text, method: config.http_method }),
      streamBody: config.stream_request_body,
      maxBodyBytes: config.max_body_bytes,
    }
    this.router.add(
      binding.id,
      { method: config.http_method, pattern, functionId: binding.function_id, namespace: binding.namespace },
      data,
    )
  }

  /** A refused binding took over its route (§3.3): tell the engine, outside the router's call stack. */
  private promoted(triggerId: string): void {
    queueMicrotask(() => {
      if (this.router.isActive(triggerId)) this.worker.reportTriggerResult(triggerId)
    })
  }

  unregisterTrigger(binding: BindingInfo): void {
    this.router.remove(binding.id)
  }
}
