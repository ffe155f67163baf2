/**
 * A raw protocol client for tests: a real WebSocket that records every frame it receives and
 * lets a test wait for the next frame matching a predicate.
 */
import WebSocket from 'ws'

export type Frame = Record<string, any>

export class RawWorker {
  readonly socket: WebSocket
  readonly frames: Frame[] = []
  workerId = ''
  reattachToken = ''
  private waiters: Array<{ match: (f: Frame) => boolean; resolve: (f: Frame) => void }> = []
  private consumed = new Set<Frame>()
  /** Handlers that answer inbound invocations automatically, keyed by function id. */
  private handlers = new Map<string, (data: any, frame: Frame) => unknown>()

  private constructor(socket: WebSocket) {
    this.socket = socket
    socket.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as Frame
      if (frame.type === 'workerregistered') {
        this.workerId = frame.worker_id
        this.reattachToken = frame.reattach_token
      }
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
    })
  }

  /** Connects and waits for `workerregistered`. */
  static async connect(url: string, options: { announce?: Record<string, unknown>; headers?: Record<string, string> } = {}): Promise<RawWorker> {
    const socket = new WebSocket(url, options.headers ? { headers: options.headers } : {})
    const worker = new RawWorker(socket)
    const registered = worker.next((f) => f.type === 'workerregistered')
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve())
      socket.once('error', reject)
    })
    await registered
    if (options.announce) worker.announce(options.announce)
    return worker
  }

  send(frame: Frame | string): void {
    this.socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame))
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
        error: { code: err.code ?? 'invocation_failed', message: err.message },
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

  close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return Promise.resolve()
    return new Promise((resolve) => {
      this.socket.once('close', () => resolve())
      this.socket.close()
    })
  }
}

/** Waits until `check` returns true (polling every 10 ms), failing after `timeoutMs`. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 10))
  }
}
