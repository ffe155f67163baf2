/**
 * A raw WebSocket server that plays the engine's side of specific frames, for tests of client
 * behaviour the real engine cannot be steered into (handshake, keepalive, fatal rejections, exact
 * frame order). Real sockets, real `ws`; only the engine logic is scripted by each test.
 */
import { randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import WebSocket, { WebSocketServer } from 'ws'

/** Frames as the client sent them, parsed. */
export type Frame = { type: string; [key: string]: any }

const WAIT_MS = 5000

export class PeerConnection {
  readonly ws: WebSocket
  readonly frames: Frame[] = []
  readonly workerId = randomUUID()
  readonly reattachToken = randomUUID()
  readonly closed: Promise<number>
  /** WebSocket pings received from the client. */
  pings = 0
  readonly upgradeHeaders: Record<string, string | string[] | undefined>
  #waiters: Array<{ match: (f: Frame) => boolean; resolve: (f: Frame) => void }> = []

  constructor(ws: WebSocket, headers: Record<string, string | string[] | undefined>) {
    this.ws = ws
    this.upgradeHeaders = headers
    this.closed = new Promise((resolve) => ws.once('close', (code) => resolve(code)))
    ws.on('ping', () => {
      this.pings++
    })
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data)) as Frame
      this.frames.push(frame)
      this.#waiters = this.#waiters.filter((w) => {
        if (!w.match(frame)) return true
        w.resolve(frame)
        return false
      })
    })
  }

  send(frame: object): void {
    this.ws.send(JSON.stringify(frame))
  }

  /** Sends `workerregistered` as the engine does first. */
  register(): void {
    this.send({ type: 'workerregistered', worker_id: this.workerId, reattach_token: this.reattachToken })
  }

  /** The first frame (already received or future) that matches. */
  waitFor(match: (frame: Frame) => boolean, what = 'frame'): Promise<Frame> {
    const found = this.frames.find(match)
    if (found !== undefined) return Promise.resolve(found)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`peer: no ${what} within ${WAIT_MS}ms`)), WAIT_MS)
      this.#waiters.push({
        match,
        resolve: (f) => {
          clearTimeout(timer)
          resolve(f)
        },
      })
    })
  }

  waitForType(type: string, extra: (frame: Frame) => boolean = () => true): Promise<Frame> {
    return this.waitFor((f) => f.type === type && extra(f), type)
  }

  /** Waits until the client sent `count` frames in total. */
  async waitForCount(count: number): Promise<Frame[]> {
    let seen = 0
    await this.waitFor(() => ++seen >= count, `${count} frames`)
    return this.frames.slice(0, count)
  }
}

export class EnginePeer {
  readonly server: WebSocketServer
  readonly url: string
  readonly connections: PeerConnection[] = []
  #waiters: Array<{ index: number; resolve: (c: PeerConnection) => void }> = []

  private constructor(server: WebSocketServer, autoRegister: boolean) {
    this.server = server
    this.url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`
    server.on('connection', (ws, req) => {
      const conn = new PeerConnection(ws, req.headers)
      if (autoRegister) conn.register()
      this.connections.push(conn)
      this.#waiters = this.#waiters.filter((w) => {
        const c = this.connections[w.index]
        if (c === undefined) return true
        w.resolve(c)
        return false
      })
    })
  }

  /**
   * `autoPong: false` makes the peer ignore the client's WebSocket pings; `autoRegister: false`
   * keeps it from sending `workerregistered` first.
   */
  static async start(options: { autoPong?: boolean; autoRegister?: boolean } = {}): Promise<EnginePeer> {
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0, autoPong: options.autoPong ?? true })
    await new Promise<void>((resolve) => server.once('listening', () => resolve()))
    return new EnginePeer(server, options.autoRegister ?? true)
  }

  /** Resolves with connection number `index` (0-based) once it has connected. */
  connection(index: number): Promise<PeerConnection> {
    const existing = this.connections[index]
    if (existing !== undefined) return Promise.resolve(existing)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`peer: connection ${index} not made within ${WAIT_MS}ms`)), WAIT_MS)
      this.#waiters.push({
        index,
        resolve: (c) => {
          clearTimeout(timer)
          resolve(c)
        },
      })
    })
  }

  async close(): Promise<void> {
    for (const c of this.server.clients) c.terminate()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
