/**
 * `GET /ws/streams` (cli.md §7.1): a browser WebSocket relayed frame by frame to svc-stream's
 * client listener, so the browser never talks to the engine's ports directly.
 */
import { WebSocket, type RawData } from 'ws'

/** Frames a browser may send before the stream listener answers; more close the relay (1013). */
const MAX_EARLY_FRAMES = 256
/** Unsent bytes either side may hold before the relay is closed as too slow (1013). */
export const STREAM_PROXY_MAX_BUFFERED_BYTES = 8 * 1024 * 1024
/** Largest frame relayed in either direction, bytes. */
export const STREAM_PROXY_MAX_FRAME_BYTES = 4 * 1024 * 1024

/** Close codes that may be sent on the wire (RFC 6455 §7.4); others become 1011 or 1000. */
function sendableCode(code: number): number {
  if (code === 1000 || (code >= 1001 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999)) return code
  return code === 1005 ? 1000 : 1011
}

/**
 * Relays `browser` to `target` (`ws://host:port/<suffix>?<query>`): frames both ways with their
 * binary/text kind, closes each side when the other closes. The browser socket is already open.
 */
export function relayStream(browser: WebSocket, target: string): void {
  const upstream = new WebSocket(target, { maxPayload: STREAM_PROXY_MAX_FRAME_BYTES })
  const early: [RawData, boolean][] = []
  let done = false
  const finish = (code: number, reason: string) => {
    if (done) return
    done = true
    const safeReason = Buffer.byteLength(reason) > 120 ? reason.slice(0, 40) : reason
    for (const socket of [browser, upstream]) {
      if (socket.readyState === WebSocket.OPEN) socket.close(sendableCode(code), safeReason)
      else if (socket.readyState === WebSocket.CONNECTING) socket.terminate()
      setTimeout(() => socket.terminate(), 2000).unref()
    }
  }
  const forward = (to: WebSocket, data: RawData, isBinary: boolean) => {
    if (to.bufferedAmount > STREAM_PROXY_MAX_BUFFERED_BYTES) return finish(1013, 'too slow')
    to.send(data, { binary: isBinary })
  }
  browser.on('message', (data, isBinary) => {
    if (upstream.readyState === WebSocket.OPEN) return forward(upstream, data, isBinary)
    if (early.length >= MAX_EARLY_FRAMES) return finish(1013, 'stream listener not ready')
    early.push([data, isBinary])
  })
  upstream.on('open', () => {
    for (const [data, isBinary] of early.splice(0)) forward(upstream, data, isBinary)
  })
  upstream.on('message', (data, isBinary) => forward(browser, data, isBinary))
  browser.on('close', (code, reason) => finish(code, reason.toString()))
  upstream.on('close', (code, reason) => finish(code, reason.toString()))
  browser.on('error', () => finish(1011, 'browser socket error'))
  upstream.on('error', (err) => finish(1011, `stream listener: ${(err as { code?: string }).code ?? err.message}`))
}
