/**
 * Test helpers of the stream worker: an engine with svc-stream, and a recording WebSocket client
 * of the stream listener.
 */
import type { IncomingMessage } from 'node:http'
import WebSocket from 'ws'
import { startTestEngine, type TestEngine } from '../../../../test/support/engine.ts'
import type { Logger } from '../../../engine/types.ts'
import { StreamWorker, type StreamWorkerOptions } from '../worker.ts'
import { waitFor } from '../../../../test/support/wait.ts'

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

  private constructor(socket: WebSocket) {
    this.socket = socket
    socket.on('message', (data) => {
      this.frames.push(JSON.parse(String(data)))
    })
    socket.on('close', (code, reason) => {
      this.closeCode = code
      this.closeReason = String(reason)
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
  next(predicate: (frame: Frame) => boolean, timeoutMs = 5000, from = 0): Promise<Frame> {
    return waitFor(() => this.frames.slice(from).find(predicate), () => `a matching frame; got ${JSON.stringify(this.frames).slice(0, 2000)}`, timeoutMs, 10)
  }

  /** Waits until the socket closed. */
  closed(timeoutMs = 10_000): Promise<number> {
    return waitFor(() => this.closeCode, 'the socket to close', timeoutMs, 20)
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
}
