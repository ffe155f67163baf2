/**
 * Raw channel ends for tests (protocol.md §9): a plain `ws` socket on
 * `/ws/channels/<channel_id>?key=…&dir=…` that records what it receives, and the HTTP answer of a
 * refused upgrade.
 */
import { connect as connectTcp, type Socket } from 'node:net'
import WebSocket from 'ws'
import type { ChannelRef } from 'svc-protocol'

/** The end's URL on a worker listener `base` (`ws://host:port`), as SDKs build it (§9). */
export function channelUrl(base: string, ref: ChannelRef): string {
  return `${base.replace(/\/+$/, '')}/ws/channels/${encodeURIComponent(ref.channel_id)}?key=${encodeURIComponent(ref.access_key)}&dir=${ref.direction}`
}

/** One received item: text as a string, binary as a Buffer. */
export type ReceivedItem = string | Buffer

export class ChannelSocket {
  readonly ws: WebSocket
  readonly items: ReceivedItem[] = []
  /** Settles with the close code and reason once the socket closed. */
  readonly closed: Promise<{ code: number; reason: string }>
  readonly opened: Promise<void>
  pings = 0
  private isClosed = false

  constructor(url: string) {
    this.ws = new WebSocket(url, { perMessageDeflate: false })
    this.ws.on('message', (data: Buffer, isBinary: boolean) => this.items.push(isBinary ? data : data.toString('utf8')))
    this.ws.on('ping', () => this.pings++)
    this.ws.on('error', () => {})
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve())
      this.ws.once('close', (code) => reject(new Error(`closed with ${code} before opening`)))
    })
    this.opened.catch(() => {})
    this.closed = new Promise((resolve) =>
      this.ws.once('close', (code: number, reason: Buffer) => {
        this.isClosed = true
        resolve({ code, reason: reason.toString() })
      }),
    )
  }

  /** Opens the end `ref` names on the listener `base`; resolves once the upgrade completed. */
  static async open(base: string, ref: ChannelRef): Promise<ChannelSocket> {
    const socket = new ChannelSocket(channelUrl(base, ref))
    await socket.opened
    return socket
  }

  get isOpen(): boolean {
    return !this.isClosed && this.ws.readyState === WebSocket.OPEN
  }

  /** The TCP socket under the WebSocket (to pause it: a reader that stops reading). */
  get tcp(): Socket {
    return (this.ws as unknown as { _socket: Socket })._socket
  }

  send(item: string | Uint8Array): void {
    this.ws.send(item, { binary: typeof item !== 'string' })
  }

  /** Sends and resolves once the frame is written to the socket. */
  sendWritten(item: string | Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => this.ws.send(item, { binary: typeof item !== 'string' }, (err) => (err ? reject(err) : resolve())))
  }
}

/**
 * Sends a WebSocket upgrade request for `path` (raw bytes, nothing escaped) to `base` and resolves
 * with the status code and body of the answer (101 when the upgrade was accepted; the socket is
 * then closed).
 */
export function upgradeAnswer(base: string, path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base)
  return new Promise((resolve, reject) => {
    const socket = connectTcp({ host: hostname, port: Number(port) })
    const chunks: Buffer[] = []
    const finish = () => {
      const text = Buffer.concat(chunks).toString('latin1')
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)
      const split = text.indexOf('\r\n\r\n')
      resolve({ status, body: split < 0 ? '' : text.slice(split + 4) })
    }
    socket.on('data', (chunk) => {
      chunks.push(chunk)
      if (Buffer.concat(chunks).toString('latin1').startsWith('HTTP/1.1 101')) {
        socket.destroy()
        finish()
      }
    })
    socket.on('end', finish)
    socket.on('close', finish)
    socket.on('error', reject)
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      'latin1',
    )
  })
}
