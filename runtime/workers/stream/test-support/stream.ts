/**
 * Test helpers of the stream worker: an engine with svc-stream, and a recording WebSocket client
 * of the stream listener.
 */
import type { IncomingMessage } from 'node:http'
import WebSocket from 'ws'
import { startTestEngine, type TestEngine } from '../../../../test/support/engine.ts'
import type { Logger } from '../../../engine/types.ts'
import { StreamWorker, type StreamWorkerOptions } from '../worker.ts'

export type Frame = Record<string, any>

export async function startStreamEngine(
  options: { settings?: Record<string, unknown>; timeoutMs?: number; log?: Logger; worker?: StreamWorkerOptions; dataDir?: string } = {},
): Promise<{ test: TestEngine; worker: StreamWorker }> {
  const worker = new StreamWorker(options.worker)
  const engineOptions: Parameters<typeof startTestEngine>[0] = {
    builtins: [worker],
    settings: { 'svc-stream': { port: 0, adapter: { name: 'memory' }, ...options.settings } },
  }
  if (options.timeoutMs !== undefined) engineOptions.config = { internal_invocation_timeout_ms: options.timeoutMs }
  if (options.log !== undefined) engineOptions.log = options.log
  if (options.dataDir !== undefined) engineOptions.dataDir = options.dataDir
  return { test: await startTestEngine(engineOptions), worker }
}

/** A WebSocket client of the stream listener that records every frame. */
export class StreamSocket {
  readonly socket: WebSocket
  readonly frames: Frame[] = []
  closeCode: number | undefined
  closeReason = ''
  private waiters: Array<() => void> = []

  private constructor(socket: WebSocket) {
    this.socket = socket
    socket.on('message', (data) => {
      this.frames.push(JSON.parse(String(data)))
      this.wake()
    })
    socket.on('close', (code, reason) => {
      this.closeCode = code
      this.closeReason = String(reason)
      this.wake()
    })
  }

  /** Opens a client; rejects with `{status}` when the upgrade is refused. */
  static open(url: string, options: WebSocket.ClientOptions = {}): Promise<StreamSocket> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, options)
      socket.once('open', () => resolve(new StreamSocket(socket)))
      socket.once('unexpected-response', (_req, res: IncomingMessage) => {
        reject(Object.assign(new Error(`upgrade refused with ${res.statusCode}`), { status: res.statusCode }))
        socket.terminate()
      })
      socket.once('error', reject)
    })
  }

  join(subscriptionId: string, streamName: string, groupId: string, id?: string): void {
    this.socket.send(JSON.stringify({ type: 'join', data: { subscriptionId, streamName, groupId, ...(id ? { id } : {}) } }))
  }

  leave(subscriptionId: string, streamName: string, groupId: string): void {
    this.socket.send(JSON.stringify({ type: 'leave', data: { subscriptionId, streamName, groupId } }))
  }

  /** Waits for the first recorded frame (from `from` on) matching `predicate`. */
  async next(predicate: (frame: Frame) => boolean, timeoutMs = 5000, from = 0): Promise<Frame> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const found = this.frames.slice(from).find(predicate)
      if (found) return found
      if (Date.now() > deadline) throw new Error(`no matching frame within ${timeoutMs} ms; got ${JSON.stringify(this.frames).slice(0, 2000)}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50)
        this.waiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
  }

  /** Waits until the socket closed. */
  async closed(timeoutMs = 10_000): Promise<number> {
    const deadline = Date.now() + timeoutMs
    while (this.closeCode === undefined) {
      if (Date.now() > deadline) throw new Error('socket did not close')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    return this.closeCode
  }

  close(): void {
    this.socket.close()
  }

  /** Stops reading the socket (the server's frames pile up in the kernel, then on the server). */
  pause(): void {
    ;(this.socket as unknown as { _socket: { pause(): void } })._socket.pause()
  }

  /** Reads the socket again. */
  resume(): void {
    ;(this.socket as unknown as { _socket: { resume(): void } })._socket.resume()
  }

  private wake(): void {
    const waiters = this.waiters
    this.waiters = []
    for (const wake of waiters) wake()
  }
}
