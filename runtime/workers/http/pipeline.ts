/**
 * The request pipeline of the HTTP worker (builtins.md §3.4 to §3.9): routing, the concurrency
 * limit, the body read, global and route middleware, the condition, the handler and its two
 * channels, and every answer, errors included.
 *
 * A request costs one trie walk of the route table (./triggers.ts), the body read, and the
 * invocations. Each handler gets two channels (§3.4, §3.7): `request_body`, which carries the raw
 * request bytes, and `response`, from which a handler that returns no result streams its
 * response. Their mechanics are in ./streaming.ts; which answer wins is
 * {@link RequestPipeline}'s `runHandler`. A buffered route's handler that only another engine of a
 * fleet serves (issue 19) gets neither: its worker could not open them there.
 */
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import { Codes, errorBodyOf, Errors, httpStatusOf, type Code } from 'svc-protocol/errors'
import type { HttpRequest } from 'svc-protocol/payloads/http'
import type { ChannelRef, CreateChannelResult, LocalChannels } from '../../engine/channels/types.ts'
import type { BuiltinContext } from '../../engine/types.ts'
import type { CancelTimer, Clock } from '../shared/clock.ts'
import { collectHeaders, InvalidBody, parseBody, parseUrlEncoded } from './request.ts'
import { describeInvalidResult, errorEnvelope, JSON_CONTENT_TYPE, mapResponse, newErrorId, responseTraceparent, withTraceparent } from './response.ts'
import type { ActiveRoute, Router } from './router.ts'
import { HTTP_WORKER_NAME, type CompiledCors, type CompiledHttpSettings } from './settings.ts'
import { RequestBodyPump, ResponseStream, type PumpEnd } from './streaming.ts'
import type { RouteBinding } from './triggers.ts'

// ---- per-request state -------------------------------------------------------------------------

/** Rejection reasons of the request pipeline that are not function failures. */
const BODY_TOO_LARGE = { reason: 'body too large' }
const CLIENT_GONE = { reason: 'client went away' }
const BUDGET_EXCEEDED = { reason: 'default_timeout exceeded' }

const STAGE_MIDDLEWARE = 0
const STAGE_CONDITION = 1
const STAGE_HANDLER = 2

/** A failed invocation of one pipeline stage. */
class StageFailure {
  readonly stage: number
  readonly functionId: string
  readonly cause: unknown
  constructor(stage: number, functionId: string, cause: unknown) {
    this.stage = stage
    this.functionId = functionId
    this.cause = cause
  }
}

/** One routed request, from arrival to its answer. */
class Exchange {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  readonly compiled: CompiledHttpSettings
  readonly route: ActiveRoute<RouteBinding>
  readonly binding: RouteBinding
  readonly params: Record<string, string>
  readonly path: string
  readonly query: string
  readonly head: boolean
  readonly cors: string[] | null
  /** Clock reading at which `default_timeout` runs out. */
  readonly deadline: number
  timer: CancelTimer | null = null
  /** Holds a concurrency slot. */
  started = false
  /** Next exchange waiting for a slot. */
  next: Exchange | null = null
  /** The `traceparent` sent to the route's functions: the request span's, else the request header's. */
  traceparent: string | undefined
  /** The route's body limit for this request, bytes (`Infinity`: none). */
  limit = Number.POSITIVE_INFINITY
  /** The handler's two channels (§3.4), once it runs; removed when the exchange ends. */
  channelIds: readonly string[] = []
  /** Writes the request body into `request_body`. */
  pump: RequestBodyPump | null = null
  /** Reads the `response` channel (§3.7). */
  stream: ResponseStream | null = null
  /** The handler's invocation: pending, returned no result (`none`), or settled otherwise. */
  outcome: 'pending' | 'none' | 'settled' = 'pending'
  /** How the response channel's writer ended before the body started: undefined while open, null normally. */
  writerEnd: Error | null | undefined = undefined
  /** Something the handler sent on the response channel was ignored and logged (once per exchange). */
  warned = false
  /** Aborts when the client goes away before the response finished: the handler's invocation is cancelled. */
  gone: AbortController | null = null
  private isDone = false
  private onDone: (() => void) | null = null

  constructor(
    req: IncomingMessage,
    res: ServerResponse,
    compiled: CompiledHttpSettings,
    route: ActiveRoute<RouteBinding>,
    params: Record<string, string>,
    path: string,
    query: string,
    cors: string[] | null,
    now: number,
  ) {
    this.req = req
    this.res = res
    this.compiled = compiled
    this.route = route
    this.binding = route.serving
    this.params = params
    this.path = path
    this.query = query
    this.head = req.method === 'HEAD'
    this.cors = cors
    this.deadline = now + compiled.settings.default_timeout
  }

  /**
   * An answer was sent, a streamed response started, or the request was abandoned (the client
   * went away): later outcomes are discarded, and the request's concurrency slot is freed.
   */
  get done(): boolean {
    return this.isDone
  }

  markDone(): void {
    if (this.isDone) return
    this.isDone = true
    const onDone = this.onDone
    this.onDone = null
    onDone?.()
  }

  /** Settles once {@link done}. */
  whenDone(): Promise<void> {
    return this.isDone ? Promise.resolve() : new Promise((resolve) => (this.onDone = resolve))
  }
}

/** True when the request announces a body (`Content-Length` other than 0, or a transfer coding). */
function announcesBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length']
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined
}

/**
 * The request's body is still arriving: an answer now closes the connection instead of leaving
 * Node to read and discard the rest (a streamed upload may be gigabytes).
 */
function bodyPending(req: IncomingMessage): boolean {
  return !req.complete && announcesBody(req)
}

function onExchangeTimeout(pipeline: RequestPipeline, x: Exchange): void {
  pipeline.timedOut(x)
}

/** Reads a request body up to `limit` bytes; rejects with BODY_TOO_LARGE or CLIENT_GONE. */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const cleanup = () => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onGone)
      req.off('close', onGone)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        cleanup()
        reject(BODY_TOO_LARGE)
      } else {
        chunks.push(chunk)
      }
    }
    const onEnd = () => {
      cleanup()
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size))
    }
    const onGone = () => {
      cleanup()
      reject(CLIENT_GONE)
    }
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onGone)
    req.on('close', onGone)
  })
}

const EMPTY_BODY = Buffer.alloc(0)
const ERROR_HEADERS = ['content-type', JSON_CONTENT_TYPE] as const

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

/** Path and query of a request target; null for targets that are not paths (`*`). */
function splitTarget(url: string): [string, string] | null {
  let start = 0
  if (url.charCodeAt(0) !== 47 /* '/' */) {
    // absolute-form (`http://host/path`), sent to proxies but legal for origin servers too
    const scheme = url.indexOf('://')
    if (scheme === -1) return null
    start = url.indexOf('/', scheme + 3)
    if (start === -1) return ['/', '']
  }
  const q = url.indexOf('?', start)
  if (q === -1) return [start === 0 ? url : url.slice(start), '']
  return [url.slice(start, q), url.slice(q + 1)]
}

/**
 * Serves the requests of the worker's listeners: {@link RequestPipeline.createServer} gives each
 * listener its server. Reads the settings in effect from {@link RequestPipeline.compiled}, which
 * the worker replaces on every apply (and then calls {@link RequestPipeline.drain}).
 *
 * @example
 * const pipeline = new RequestPipeline(context, triggers.router, systemClock)
 * pipeline.compiled = compileHttpSettings(parseHttpSettings({ port: 0 }))
 * const server = pipeline.createServer({})
 */
export class RequestPipeline {
  /** The settings in effect; set before the first listener binds. */
  compiled: CompiledHttpSettings | null = null
  private readonly context: BuiltinContext
  private readonly router: Router<RouteBinding>
  private readonly clock: Clock
  /** Requests holding a concurrency slot. */
  private active = 0
  private waitHead: Exchange | null = null
  private waitTail: Exchange | null = null

  constructor(context: BuiltinContext, router: Router<RouteBinding>, clock: Clock) {
    this.context = context
    this.router = router
    this.clock = clock
  }

  /** A listener's server: the request handler, created with the kit's transport timeouts. */
  createServer(options: ServerOptions): Server {
    const server = createServer(options, this.onRequest)
    server.on('clientError', answerClientError)
    return server
  }

  /** The worker stops: waiting requests are abandoned (their timers cancelled). */
  stop(): void {
    for (let x = this.waitHead; x; x = x.next) {
      x.markDone()
      if (x.timer) x.timer()
    }
    this.waitHead = this.waitTail = null
  }

  private readonly onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    // One line per request at debug (the svc terminal with --log-level debug; issue 11).
    const log = this.context.log
    if (log) {
      const started = performance.now()
      res.once('close', () => {
        const ms = performance.now() - started
        const status = res.writableFinished ? String(res.statusCode) : 'closed before the response finished'
        log.debug(`http ${req.method ?? 'GET'} ${req.url ?? '/'} ${status} ${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`)
      })
    }
    try {
      this.accept(req, res)
    } catch (err) {
      this.internalError(null, req, res, err)
    }
  }

  /** Routes a request; answers 404/405/OPTIONS at once, else queues it for a slot. */
  private accept(req: IncomingMessage, res: ServerResponse): void {
    const compiled = this.compiled!
    const method = req.method ?? 'GET'
    const head = method === 'HEAD'
    const cors = compiled.cors && this.corsHeaders(compiled.cors, req)
    const target = splitTarget(req.url ?? '/')
    if (target === null) {
      this.writeError(res, head, cors, Codes.NotFound, `No route matches ${method} ${req.url}`)
      return
    }
    const [path, query] = target
    const lookup = this.router.lookup(method, path)
    switch (lookup.status) {
      case 'found':
        break
      case 'not_found':
        this.writeError(res, head, cors, Codes.NotFound, `No route matches ${method} ${path}`)
        return
      case 'method_not_allowed':
        this.writeError(res, head, cors, Codes.MethodNotAllowed, `Method ${method} is not allowed on ${path}`, [
          'allow',
          lookup.allow,
        ])
        return
      case 'options':
        this.writeOptions(req, res, compiled.cors, cors, lookup.allow)
        return
    }
    const x = new Exchange(req, res, compiled, lookup.route, lookup.params, path, query, cors, this.clock.now())
    res.once('close', () => this.exchangeEnded(x))
    this.traceRequest(x, method)
    x.timer = this.clock.setTimeout(() => onExchangeTimeout(this, x), compiled.settings.default_timeout)
    if (this.active < compiled.settings.concurrency_request_limit) {
      this.active++
      x.started = true
      void this.process(x)
    } else if (this.waitTail) {
      this.waitTail.next = x
      this.waitTail = x
    } else {
      this.waitHead = this.waitTail = x
    }
  }

  /**
   * The request's server span `<METHOD> <route pattern>` (builtins.md §12.7), parent the request's
   * `traceparent`; the route's functions receive it as their parent. Ended with the response
   * status when the response finishes or the connection closes (5xx: error).
   */
  private traceRequest(x: Exchange, method: string): void {
    const header = firstHeader(x.req.headers.traceparent)
    x.traceparent = header
    const telemetry = this.context.telemetry
    if (telemetry?.sink === undefined) return
    const route = x.route.pattern
    const span = telemetry.startSpan({
      name: `${method} ${route}`,
      kind: 'server',
      parent: header,
      attributes: { 'http.request.method': method, 'http.route': route, 'url.path': x.path, 'svc.function.id': x.binding.functionId, 'svc.trigger.type': 'http', 'svc.trigger.id': x.binding.triggerId, 'svc.worker.name': HTTP_WORKER_NAME },
    })
    if (span === undefined) return
    x.traceparent = span.traceparent
    x.res.once('close', () => {
      const status = x.res.statusCode
      span.end(status >= 500 || !x.res.writableFinished ? 'error' : 'unset', status >= 500 ? `HTTP ${status}` : x.res.writableFinished ? undefined : 'connection closed', { 'http.response.status_code': status })
    })
  }

  /** Gives freed slots to waiting requests, oldest first. */
  drain(): void {
    const limit = this.compiled?.settings.concurrency_request_limit ?? 1
    while (this.waitHead && this.active < limit) {
      const x = this.waitHead
      this.waitHead = x.next
      if (!this.waitHead) this.waitTail = null
      x.next = null
      if (x.done) continue
      this.active++
      x.started = true
      void this.process(x)
    }
  }

  private async process(x: Exchange): Promise<void> {
    try {
      await this.serve(x)
    } catch (err) {
      try {
        this.failed(x, err)
      } catch (again) {
        this.internalError(x, x.req, x.res, again)
      }
    } finally {
      if (x.timer) x.timer()
      this.active--
      this.drain()
    }
  }

  /**
   * The pipeline of §3.8: body read, global middleware, condition, route middleware, handler.
   * A streamed route (`stream_request_body`) skips the body read: its body reaches the handler
   * through `request_body` only, read while the handler runs.
   */
  private async serve(x: Exchange): Promise<void> {
    const req = x.req
    const b = x.binding
    const own = b.maxBodyBytes ?? Number.POSITIVE_INFINITY
    x.limit = b.streamBody ? own : Math.min(own, x.compiled.settings.max_body_bytes)
    let raw: Buffer | null = b.streamBody ? null : EMPTY_BODY
    if (announcesBody(req)) {
      const length = req.headers['content-length']
      if (length !== undefined && Number(length) > x.limit) throw BODY_TOO_LARGE
      if (raw !== null) {
        raw = await readBody(req, x.limit)
        if (x.done) return
      }
    }
    const body = raw === null ? null : parseBody(raw, req.headers['content-type'])
    if (body instanceof InvalidBody) {
      this.answerError(x, httpStatusOf(Codes.InvalidBody), Codes.InvalidBody, body.message)
      return
    }
    const headers = collectHeaders(req.rawHeaders)
    const query = x.query === '' ? {} : parseUrlEncoded(x.query)
    const request: HttpRequest = {
      method: req.method!,
      path: x.path,
      route: b.route,
      path_params: x.params,
      query_params: query,
      headers,
      body,
      trigger: b.trigger,
    }

    const global = x.compiled.middleware
    if (global.length > 0 || b.middleware.length > 0) {
      const view = { method: request.method, path: x.path, route: b.route, path_params: x.params, query_params: query, headers }
      for (const id of global) {
        const answer = await this.call(x, STAGE_MIDDLEWARE, id, middlewarePayload(view), 'default', undefined)
        if (x.done || this.middlewareResponded(x, id, answer)) return
      }
      if (b.conditionFunctionId !== undefined && !(await this.conditionPasses(x, request))) return
      for (const id of b.middleware) {
        const answer = await this.call(x, STAGE_MIDDLEWARE, id, middlewarePayload(view), b.namespace, b.metadata)
        if (x.done || this.middlewareResponded(x, id, answer)) return
      }
    } else if (b.conditionFunctionId !== undefined && !(await this.conditionPasses(x, request))) {
      return
    }

    await this.runHandler(x, request, raw)
  }

  // ---- the handler and its channels (§3.4, §3.7) -----------------------------------------------

  /**
   * Invokes the handler with its `request_body` (read) and `response` (write) channel refs and
   * settles once the answer is decided: the handler's response descriptor, an error, or the
   * start of a streamed response — whose body then lasts until its writer closes or the client
   * goes away, outside `default_timeout` and the concurrency slot (§3.7).
   *
   * Which answer wins: the first binary item on `response` starts a streamed response and a later
   * result is ignored (logged); a non-null result before it is the response (§3.6). With no
   * result (`null`), the response is built from the channel once its writer ends: status and
   * headers with an empty body when it closes normally, 502 `CHANNEL_CLOSED` when it fails; a
   * writer that never ends before `default_timeout` gives 504 `TIMEOUT`.
   *
   * A buffered route whose handler only another engine of the fleet serves gets no channels (their
   * ends open only on this engine) and no `request_body`/`response` refs: its result is the
   * response, and no result is answered at once with 500 `INVALID_RESPONSE`.
   *
   * @param raw the body already read (a buffered route), or null to stream it from the request
   */
  private async runHandler(x: Exchange, request: HttpRequest, raw: Buffer | null): Promise<void> {
    if (x.done) return
    const b = x.binding
    const remaining = x.deadline - this.clock.now()
    if (remaining <= 0) throw BUDGET_EXCEEDED
    if (raw !== null && this.context.worker.servedElsewhere(b.functionId, b.namespace)) {
      // Served by another engine of the fleet (issue 19): no channels, since a channel's ends open
      // on the engine that created it and the handler's worker is connected to another. The body
      // already read travels in `body`, the response as the result; nothing is left to stream.
      this.invokeHandler(x, request, remaining)
      await x.whenDone()
      return
    }
    const channels = this.context.worker.channels
    const pair = createChannels(channels)
    if (!Array.isArray(pair)) {
      // TOO_MANY_CHANNELS (429): the engine holds its maximum of channels.
      this.answerError(x, httpStatusOf(pair.code as Code), pair.code, pair.message)
      return
    }
    const [body, response] = pair
    x.channelIds = [body.writer.channel_id, response.writer.channel_id]
    x.pump = new RequestBodyPump(channels.openWriter(body.writer), (end) => this.pumpEnded(x, end))
    if (raw === null) x.pump.fromRequest(x.req, x.limit)
    else x.pump.fromBuffer(raw)
    x.stream = new ResponseStream(x.res, {
      start: () => this.streamStarted(x),
      end: (_stream, error) => this.streamEnded(x, error),
      ignored: (reason) => this.ignoredOnStream(x, reason),
    })
    x.stream.attached(channels.attachReader(response.reader, x.stream))
    const payload: HandlerRequest = { ...request, request_body: body.reader, response: response.writer }
    this.invokeHandler(x, payload, remaining)
    await x.whenDone()
  }

  /** Invokes the route's handler with `payload` within `timeoutMs`; its outcome settles the exchange. */
  private invokeHandler(x: Exchange, payload: HttpRequest, timeoutMs: number): void {
    const b = x.binding
    x.gone = new AbortController()
    this.context.worker.invoke({
      signal: x.gone.signal,
      function_id: b.functionId,
      data: payload,
      namespace: b.namespace,
      metadata: b.metadata,
      timeoutMs,
      traceparent: x.traceparent,
      baggage: firstHeader(x.req.headers.baggage),
    }).then(
      (result) => this.guard(x, () => this.handlerReturned(x, result)),
      (err) => this.guard(x, () => this.handlerFailed(x, err, timeoutMs)),
    )
  }

  /** Runs a step of an exchange outside the request pipeline: a failure is answered, never thrown. */
  private guard(x: Exchange, step: () => void): void {
    try {
      step()
    } catch (err) {
      this.internalError(x, x.req, x.res, err)
    }
  }

  private handlerReturned(x: Exchange, result: unknown): void {
    if (result === undefined || result === null) {
      x.outcome = 'none'
      if (x.stream === null) {
        // A handler on another engine of the fleet had no response channel to stream on.
        x.outcome = 'settled'
        const message = `the handler returned no result, expected a response object: ${x.binding.functionId} runs on another engine of the fleet, where this request has no response channel to stream on`
        this.answerError(x, httpStatusOf(Codes.InvalidResponse), Codes.InvalidResponse, message)
        return
      }
      this.settleFromStream(x)
      return
    }
    x.outcome = 'settled'
    if (x.done) {
      if (x.stream?.started) this.warnOnce(x, 'svc-http ignored the result of a handler whose response was already streamed')
      return
    }
    if (typeof result !== 'object') {
      this.answerError(x, httpStatusOf(Codes.InvalidResponse), Codes.InvalidResponse, describeInvalidResult(result))
      return
    }
    this.answerDescriptor(x, result)
  }

  private handlerFailed(x: Exchange, err: unknown, timeoutMs: number): void {
    x.outcome = 'settled'
    if (x.stream?.started) {
      // §3.7: default_timeout ends at the head; the engine's timeout of the call changes nothing after it.
      if (isEngineTimeout(err, timeoutMs) || x.res.writableEnded) return
      const { code, message } = errorBodyOf(err)
      this.context.log.error(`svc-http aborted a streamed response: its handler failed with ${code}`, { ...this.where(x), message })
      x.res.destroy()
      return
    }
    this.failed(x, this.failure(x, STAGE_HANDLER, x.binding.functionId, err, timeoutMs, timeoutMs))
  }

  /** The first body item of the response channel: writes the head (status, headers) and frees the slot. */
  private streamStarted(x: Exchange): 'write' | 'discard' | false {
    if (x.done) return false
    x.markDone()
    const stream = x.stream!
    const res = x.res
    const headers = withTraceparent([...stream.headers], responseTraceparent(x.traceparent))
    if (x.cors) headers.push(...x.cors)
    if (bodyPending(x.req)) headers.push('connection', 'close')
    try {
      res.writeHead(stream.status, headers)
      // The head goes out now, not with the first bytes written: an empty first item, or a HEAD
      // request, still shows the client that the response started.
      res.flushHeaders()
    } catch (err) {
      this.internalError(x, x.req, res, err)
      return false
    }
    const status = stream.status
    return x.head || status < 200 || status === 204 || status === 304 ? 'discard' : 'write'
  }

  /** The response channel's writer ended, after every item was taken. */
  private streamEnded(x: Exchange, error: Error | undefined): void {
    if (x.stream!.started) {
      if (error === undefined) x.res.end()
      else {
        this.context.log.warn('svc-http aborted a streamed response: its writer ended abnormally', { ...this.where(x), message: error.message })
        x.res.destroy()
      }
      return
    }
    if (x.done) return
    x.writerEnd = error ?? null
    this.settleFromStream(x)
  }

  /** No result and no body item: once the writer has ended too, its status and headers are the response. */
  private settleFromStream(x: Exchange): void {
    if (x.done || x.outcome !== 'none' || x.writerEnd === undefined) return
    const stream = x.stream!
    if (x.writerEnd === null) {
      this.answer(x, stream.status, [...stream.headers], null)
      return
    }
    const message = `the response channel of ${x.binding.functionId} ended abnormally before the response started (${x.writerEnd.message})`
    this.answerError(x, httpStatusOf(Codes.ChannelClosed), Codes.ChannelClosed, message)
  }

  private pumpEnded(x: Exchange, end: PumpEnd): void {
    if (end !== 'too_large') return
    if (!x.done) this.failed(x, BODY_TOO_LARGE)
    // Already streaming a response: it cannot turn into a 413 any more, so it is aborted.
    else if (x.stream?.started && !x.res.writableEnded) x.res.destroy()
  }

  private ignoredOnStream(x: Exchange, reason: string): void {
    this.warnOnce(x, `svc-http ignored ${reason} on the response channel`)
  }

  private warnOnce(x: Exchange, message: string): void {
    if (x.warned) return
    x.warned = true
    this.context.log.warn(message, this.where(x))
  }

  private where(x: Exchange): Record<string, unknown> {
    return { method: x.req.method, path: x.path, route: x.route.pattern, function_id: x.binding.functionId, trigger_id: x.binding.triggerId }
  }

  /**
   * The response finished or the connection closed (builtins.md §3.7, protocol.md §9): both
   * channels are removed whether or not the handler used them. A response writer still open is
   * first closed with 1011 (the reader went away), a request body still being written ends
   * abnormally.
   */
  private exchangeEnded(x: Exchange): void {
    x.markDone()
    // The client disconnected before the response ended: nobody waits for the handler any more.
    if (!x.res.writableFinished) x.gone?.abort('the HTTP client disconnected')
    if (x.channelIds.length === 0) return
    x.stream?.cancel()
    x.pump?.stop()
    const channels = this.context.worker.channels
    if (channels) for (const id of x.channelIds) channels.remove(id)
  }

  /**
   * Runs the route's condition (§2.2) within the smaller of the remaining budget and
   * `internal_invocation_timeout_ms`; answers 422 and returns false when it returned `false`.
   * Rejects like {@link call} when it failed.
   */
  private async conditionPasses(x: Exchange, request: HttpRequest): Promise<boolean> {
    const b = x.binding
    const id = b.conditionFunctionId!
    const remaining = x.deadline - this.clock.now()
    if (remaining <= 0) throw BUDGET_EXCEEDED
    const cap = this.context.internalInvocationTimeoutMs
    const timeoutMs = cap < remaining ? cap : remaining
    const call: { timeoutMs: number; traceparent?: string; baggage?: string } = { timeoutMs }
    const traceparent = x.traceparent
    const baggage = firstHeader(x.req.headers.baggage)
    if (traceparent !== undefined) call.traceparent = traceparent
    if (baggage !== undefined) call.baggage = baggage
    const outcome = await b.condition!(request, call)
    if (outcome.run) return !x.done
    if (outcome.failed) throw this.failure(x, STAGE_CONDITION, id, outcome.error, timeoutMs, remaining)
    if (x.done) return false
    this.answerError(x, httpStatusOf(Codes.ConditionNotMet), Codes.ConditionNotMet, `condition ${id} returned false`, undefined, { skipped: true })
    return false
  }

  /** Handles a middleware answer; true when it ended the request (§3.8 `respond`). */
  private middlewareResponded(x: Exchange, id: string, answer: unknown): boolean {
    if (typeof answer !== 'object' || answer === null) return false
    const a = answer as { action?: unknown; response?: unknown }
    if (a.action !== 'respond') return false
    if (typeof a.response !== 'object' || a.response === null) {
      this.answerError(x, httpStatusOf(Codes.InvalidResponse), Codes.InvalidResponse, `middleware ${id} asked to respond without a response object`)
    } else {
      this.answerDescriptor(x, a.response)
    }
    return true
  }

  /**
   * Invokes one pipeline function within what is left of `default_timeout`.
   * Rejects with BUDGET_EXCEEDED when the request budget ran out, else with a StageFailure.
   */
  private async call(
    x: Exchange,
    stage: number,
    functionId: string,
    data: unknown,
    namespace: string,
    metadata: unknown,
  ): Promise<unknown> {
    const remaining = x.deadline - this.clock.now()
    if (remaining <= 0) throw BUDGET_EXCEEDED
    const timeoutMs = remaining
    try {
      return await this.context.worker.invoke({
        function_id: functionId,
        data,
        namespace,
        metadata,
        timeoutMs,
        traceparent: x.traceparent,
        baggage: firstHeader(x.req.headers.baggage),
      })
    } catch (err) {
      throw this.failure(x, stage, functionId, err, timeoutMs, remaining)
    }
  }

  /** What a failed stage call means: the request budget ran out, or the function failed. */
  private failure(x: Exchange, stage: number, functionId: string, err: unknown, timeoutMs: number, remaining: number): unknown {
    // The engine's own timeout of this call, set to the rest of the budget, is the request timeout.
    if (timeoutMs === remaining && isEngineTimeout(err, timeoutMs)) return BUDGET_EXCEEDED
    if (this.clock.now() >= x.deadline) return BUDGET_EXCEEDED
    return new StageFailure(stage, functionId, err)
  }

  /** @internal Called by the request timer: answers 504 unless an answer was already sent (§3.9). */
  timedOut(x: Exchange): void {
    x.timer = null
    try {
      // A request still waiting for a slot is answered here too; drain() then skips it.
      this.answerError(x, httpStatusOf(Codes.Timeout), Codes.Timeout, `request exceeded ${x.compiled.settings.default_timeout} ms`)
    } catch (err) {
      this.internalError(x, x.req, x.res, err)
    }
  }

  /** Maps a pipeline failure to its answer (§3.9). */
  private failed(x: Exchange, err: unknown): void {
    if (x.done) return
    if (err === CLIENT_GONE) {
      x.markDone()
      return
    }
    if (err === BODY_TOO_LARGE) {
      const limit = x.limit
      // Close the connection rather than drain a body we refused.
      this.answerError(x, httpStatusOf(Codes.PayloadTooLarge), Codes.PayloadTooLarge, Errors.payloadTooLarge(limit).message, undefined, undefined, true)
      return
    }
    if (err === BUDGET_EXCEEDED) {
      this.answerError(x, httpStatusOf(Codes.Timeout), Codes.Timeout, `request exceeded ${x.compiled.settings.default_timeout} ms`)
      return
    }
    if (err instanceof StageFailure) {
      const body = errorBodyOf(err.cause)
      if (err.stage === STAGE_HANDLER && body.code === 'function_not_found') {
        this.answerError(x, httpStatusOf(Codes.FunctionUnavailable), Codes.FunctionUnavailable, `No live worker serves function ${err.functionId}`, body.message)
      } else {
        // §3.9: a function's own error is a 500 whatever its code.
        this.answerError(x, 500, body.code, body.message, body.stacktrace)
      }
      return
    }
    this.internalError(x, x.req, x.res, err)
  }

  // ---- writing ---------------------------------------------------------------------------------

  private answerDescriptor(x: Exchange, descriptor: object): void {
    const mapped = mapResponse(descriptor)
    if ('invalid' in mapped) this.answerError(x, httpStatusOf(Codes.InvalidResponse), Codes.InvalidResponse, mapped.invalid)
    else this.answer(x, mapped.status, mapped.headers, mapped.body)
  }

  private answer(x: Exchange, status: number, headers: string[], body: string | null): void {
    if (x.done) return
    x.markDone()
    this.write(x.res, x.head, x.cors, status, withTraceparent(headers, responseTraceparent(x.traceparent)), body, bodyPending(x.req))
  }

  /**
   * Answers with the error envelope. 5xx answers get an `error_id` that is logged with `detail`
   * (the underlying message or stack).
   */
  private answerError(
    x: Exchange,
    status: number,
    code: string,
    message: string,
    detail?: string,
    extra?: Record<string, unknown>,
    close = false,
  ): void {
    if (x.done) return
    x.markDone()
    let errorId: string | undefined
    if (status >= 500) {
      errorId = newErrorId()
      this.context.log.error(`svc-http ${status} ${code}: ${message}`, {
        error_id: errorId,
        method: x.req.method,
        path: x.path,
        route: x.route.pattern,
        function_id: x.binding.functionId,
        trigger_id: x.binding.triggerId,
        ...(detail !== undefined ? { detail } : {}),
      })
    }
    const traceparent = responseTraceparent(x.traceparent)
    const headers: string[] = [...ERROR_HEADERS]
    if (traceparent !== undefined) headers.push('traceparent', traceparent)
    this.write(x.res, x.head, x.cors, status, headers, errorEnvelope(code, message, errorId, extra, traceparent?.slice(3, 35)), close || bodyPending(x.req))
  }

  /** An answer before any exchange exists (no route, wrong method); the status is the catalogue's. */
  private writeError(res: ServerResponse, head: boolean, cors: string[] | null, code: Code, message: string, extraHeaders?: string[]): void {
    const headers: string[] = [...ERROR_HEADERS]
    if (extraHeaders) headers.push(...extraHeaders)
    // No exchange, no span: the trace the client sent, if any.
    const traceparent = responseTraceparent(firstHeader(res.req.headers.traceparent))
    if (traceparent !== undefined) headers.push('traceparent', traceparent)
    this.write(res, head, cors, httpStatusOf(code), headers, errorEnvelope(code, message, undefined, undefined, traceparent?.slice(3, 35)), false)
  }

  /** An unexpected failure: 500 `internal_error`, logged with its error id; never thrown further. */
  private internalError(x: Exchange | null, req: IncomingMessage, res: ServerResponse, err: unknown): void {
    if (x) x.markDone()
    if (res.writableEnded) return
    if (res.headersSent) {
      // Too late for an answer: drop the connection so the client does not wait for the rest.
      res.destroy()
      return
    }
    const errorId = newErrorId()
    this.context.log.error(`svc-http internal error (${errorId})`, {
      error_id: errorId,
      method: req.method,
      url: req.url,
      error: err instanceof Error ? (err.stack ?? err.message) : String(err),
    })
    try {
      const internal = Errors.internal(errorId)
      const traceparent = responseTraceparent(x?.traceparent ?? firstHeader(req.headers.traceparent))
      const headers: string[] = [...ERROR_HEADERS]
      if (traceparent !== undefined) headers.push('traceparent', traceparent)
      this.write(res, req.method === 'HEAD', x?.cors ?? null, 500, headers, errorEnvelope(internal.code, internal.message, errorId, undefined, traceparent?.slice(3, 35)), true)
    } catch {
      res.destroy()
    }
  }

  /** OPTIONS on a routed path without an OPTIONS route: 204 + Allow, or the CORS preflight answer. */
  private writeOptions(
    req: IncomingMessage,
    res: ServerResponse,
    cors: CompiledCors | null,
    corsHeaders: string[] | null,
    allow: string,
  ): void {
    const headers = ['allow', allow]
    const traceparent = responseTraceparent(firstHeader(req.headers.traceparent))
    if (traceparent !== undefined) headers.push('traceparent', traceparent)
    if (cors && corsHeaders && req.headers['access-control-request-method'] !== undefined) {
      headers.push('access-control-allow-methods', cors.methods ?? allow)
      const requested = req.headers['access-control-request-headers']
      const allowHeaders = cors.headers ?? requested
      if (allowHeaders !== undefined && allowHeaders !== '') headers.push('access-control-allow-headers', allowHeaders)
      if (cors.headers === null && requested !== undefined) headers.push('vary', 'Access-Control-Request-Headers')
      headers.push('access-control-max-age', cors.maxAge)
    }
    this.write(res, false, corsHeaders, 204, headers, null, false)
  }

  /** CORS headers for a request from an allowed origin (§3.1); null when none apply. */
  private corsHeaders(cors: CompiledCors, req: IncomingMessage): string[] | null {
    const origin = req.headers.origin
    if (origin === undefined || (!cors.anyOrigin && !cors.origins.has(origin))) return null
    // With credentials the browser needs the exact origin, never '*'.
    if (cors.anyOrigin && !cors.credentials) return ['access-control-allow-origin', '*']
    const headers = ['access-control-allow-origin', origin, 'vary', 'Origin']
    if (cors.credentials) headers.push('access-control-allow-credentials', 'true')
    return headers
  }

  private write(
    res: ServerResponse,
    head: boolean,
    cors: string[] | null,
    status: number,
    headers: string[],
    body: string | null,
    close: boolean,
  ): void {
    if (res.headersSent || res.destroyed) return
    if (cors) for (let i = 0; i < cors.length; i++) headers.push(cors[i]!)
    if (status >= 200 && status !== 204 && status !== 304) {
      headers.push('content-length', body === null ? '0' : String(Buffer.byteLength(body)))
    }
    if (close) headers.push('connection', 'close')
    res.writeHead(status, headers)
    // HEAD answers keep the headers of the GET answer, including its Content-Length, but no body (§3.6 rule 1).
    if (head || body === null) res.end()
    else res.end(body)
  }
}

/** The request object as the handler receives it (§3.4), with its two channel refs. */
type HandlerRequest = HttpRequest & { request_body: ChannelRef; response: ChannelRef }

/** The `request_body` and `response` channels of one request, or the error that refused them. */
function createChannels(channels: LocalChannels): [CreateChannelResult, CreateChannelResult] | { code: string; message: string } {
  let body: CreateChannelResult | undefined
  try {
    body = channels.create()
    return [body, channels.create()]
  } catch (err) {
    if (body !== undefined) channels.remove(body.writer.channel_id)
    return errorBodyOf(err)
  }
}

function middlewarePayload(view: object): { phase: 'preHandler'; request: object; context: object } {
  return { phase: 'preHandler', request: view, context: {} }
}

/** True for the engine's timeout of an engine-originated call made with `timeoutMs` (protocol.md §6.5, §7.2). */
function isEngineTimeout(err: unknown, timeoutMs: number): boolean {
  const body = errorBodyOf(err)
  return body.code === 'TIMEOUT' && body.message === `invocation timed out after ${timeoutMs}ms`
}

/** How long the answer to a client error may take to flush before the connection is destroyed anyway, ms. */
const CLIENT_ERROR_FLUSH_MS = 1000

/**
 * A request that is not valid HTTP never reaches a handler: Node reports it as `clientError`, with
 * only the socket to answer on. It gets the error envelope of §3.9 like every other answer: 431
 * for a head over the size limit, 408 for a head or body that did not arrive in time, 400
 * otherwise. The connection is then destroyed, not half-closed: a slow client that never closes
 * its own side would otherwise be read from forever (slowloris).
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  // The response of a request whose head arrived (Node's own default handler looks at it too).
  const response = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage
  if (error.code === 'ECONNRESET' || !socket.writable || response?.headersSent === true) {
    socket.destroy()
    return
  }
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : httpStatusOf(Codes.InvalidRequest)
  const detail =
    status === 431
      ? 'request head is too large'
      : status === 408
        ? `request ${response ? 'body' : 'head'} did not arrive in time`
        : `malformed HTTP request (${error.code ?? 'parse error'})`
  const body = JSON.stringify({ error: Errors.invalidRequest(detail).toErrorBody() })
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  )
  // A client that does not read either never lets the answer flush.
  setTimeout(() => socket.destroy(), CLIENT_ERROR_FLUSH_MS).unref()
}
