/**
 * A raw protocol client for tests over any transport: a real WebSocket ({@link RawWorker.connect})
 * or an in-memory pipe into an engine in the same process ({@link RawWorker.inProcess}). It records
 * every frame it receives and lets a test wait for the next frame matching a predicate.
 */
import type { Connector, Transport } from 'svc-protocol'
import { connectWebSocket } from 'svc-protocol/transport/ws'
import type { Engine } from '../../runtime/engine/engine.ts'
import type { ListenerConfig } from '../../runtime/engine/config.ts'

export type Frame = Record<string, any>

export interface RawWorkerOptions {
  announce?: Record<string, unknown>
  /** Upgrade headers (the auth function's input). */
  headers?: Record<string, string>
}

export class RawWorker {
  readonly transport: Transport
  readonly frames: Frame[] = []
  /** Settles when the connection ends, with the close code and reason. */
  readonly closed: Promise<{ code: number; reason: string }>
  workerId = ''
  reattachToken = ''
  private waiters: Array<{ match: (f: Frame) => boolean; resolve: (f: Frame) => void }> = []
  private consumed = new Set<Frame>()
  /** Handlers that answer inbound invocations automatically, keyed by function id. */
  private handlers = new Map<string, (data: any, frame: Frame) => unknown>()
  private listeners: Array<(frame: Frame) => void> = []
  private textListeners: Array<(text: string) => void> = []
  private opened!: Promise<void>
  private isClosed = false

  private constructor(transport: Transport) {
    this.transport = transport
    let onOpen!: () => void
    let onFail!: (error: Error) => void
    this.opened = new Promise<void>((resolve, reject) => {
      onOpen = resolve
      onFail = reject
    })
    this.opened.catch(() => {})
    let onClose!: (value: { code: number; reason: string }) => void
    this.closed = new Promise((resolve) => (onClose = resolve))
    transport.setHandlers({
      open: onOpen,
      error: onFail,
      close: (code, reason) => {
        this.isClosed = true
        onFail(new Error(`closed with ${code} ${reason}`))
        onClose({ code, reason })
      },
      message: (data) => this.receive(typeof data === 'string' ? data : Buffer.from(data).toString()),
    })
  }

  /** Connects over a real WebSocket and waits for `workerregistered`. */
  static connect(url: string, options: RawWorkerOptions = {}): Promise<RawWorker> {
    return RawWorker.open(connectWebSocket, url, options)
  }

  /**
   * Connects to `engine` through an in-memory transport (no socket), as if to `listener` (default
   * the first; its access rules apply), and waits for `workerregistered`.
   */
  static inProcess(engine: Engine, options: RawWorkerOptions = {}, listener?: ListenerConfig): Promise<RawWorker> {
    return RawWorker.open(engine.connector(listener), 'ws://in-process/', options)
  }

  private static async open(connector: Connector, url: string, options: RawWorkerOptions): Promise<RawWorker> {
    const worker = new RawWorker(connector(url, options.headers ? { headers: options.headers } : {}))
    const registered = worker.next((f) => f.type === 'workerregistered')
    await worker.opened
    await registered
    if (options.announce) worker.announce(options.announce)
    return worker
  }

  get isOpen(): boolean {
    return !this.isClosed && this.transport.isOpen
  }

  private receive(text: string): void {
    for (const listener of this.textListeners) listener(text)
    const frame = JSON.parse(text) as Frame
    if (frame.type === 'workerregistered') {
      this.workerId = frame.worker_id
      this.reattachToken = frame.reattach_token
    }
    for (const listener of this.listeners) listener(frame)
    if (frame.type === 'invokefunction' && this.handlers.has(frame.function_id)) {
      void this.answer(frame)
      return
    }
    this.frames.push(frame)
    const waiter = this.waiters.find((w) => w.match(frame))
    if (waiter) {
      this.waiters = this.waiters.filter((w) => w !== waiter)
      this.consumed.add(frame)
      waiter.resolve(frame)
    }
  }

  /** Calls `listener` with every frame received from now on (before it is recorded). */
  onFrame(listener: (frame: Frame) => void): void {
    this.listeners.push(listener)
  }

  /** Calls `listener` with the text of every frame received from now on, as it arrived (before it is decoded). */
  onText(listener: (text: string) => void): void {
    this.textListeners.push(listener)
  }

  send(frame: Frame | string): void {
    this.transport.send(typeof frame === 'string' ? frame : JSON.stringify(frame))
  }

  announce(payload: Record<string, unknown>): void {
    this.send({ type: 'invokefunction', function_id: 'engine::workers::register', data: payload, action: { type: 'void' } })
  }

  /** Registers a function and answers its invocations with `handler` (a thrown value becomes an error). */
  serve(id: string, handler: (data: any, frame: Frame) => unknown, extra: Frame = {}): void {
    this.handlers.set(id, handler)
    this.send({ type: 'registerfunction', id, ...extra })
  }

  private async answer(frame: Frame): Promise<void> {
    const handler = this.handlers.get(frame.function_id)!
    try {
      const result = await handler(frame.data, frame)
      this.send({ type: 'invocationresult', invocation_id: frame.invocation_id, function_id: frame.function_id, result })
    } catch (err: any) {
      this.send({
        type: 'invocationresult',
        invocation_id: frame.invocation_id,
        function_id: frame.function_id,
        error: { code: err.code ?? 'invocation_failed', message: err.message, ...(err.retry_after_ms !== undefined ? { retry_after_ms: err.retry_after_ms } : {}) },
      })
    }
  }

  /** Resolves with the first frame (already received and not yet consumed, or future) matching `match`. */
  next(match: (f: Frame) => boolean, timeoutMs = 5000): Promise<Frame> {
    const seen = this.frames.find((f) => !this.consumed.has(f) && match(f))
    if (seen) {
      this.consumed.add(seen)
      return Promise.resolve(seen)
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching frame within ${timeoutMs} ms; got ${JSON.stringify(this.frames.slice(-5))}`)), timeoutMs)
      this.waiters.push({ match, resolve: (f) => (clearTimeout(timer), resolve(f)) })
    })
  }

  /** Sends a synchronous invocation and resolves with its `invocationresult` frame. */
  async call(function_id: string, data: unknown, extra: Frame = {}): Promise<Frame> {
    const invocation_id = (extra.invocation_id as string | undefined) ?? `call-${Math.random().toString(16).slice(2)}`
    this.send({ type: 'invokefunction', function_id, data, ...extra, invocation_id })
    return this.next((f) => f.type === 'invocationresult' && f.invocation_id === invocation_id)
  }

  /** True if no frame matching `match` arrives within `ms`. */
  async silent(match: (f: Frame) => boolean, ms = 300): Promise<boolean> {
    try {
      await this.next(match, ms)
      return false
    } catch {
      return true
    }
  }

  /** Closes cleanly (1000) and waits for the close. */
  async close(): Promise<void> {
    if (!this.isClosed) this.transport.close(1000)
    await this.closed
  }
}
