/**
 * Node `ws` transport — placeholder server side (replaced by the full implementation with write
 * coalescing and the client connector).
 */
import type { Duplex } from 'node:stream'
import type { WebSocket } from 'ws'
import type { Transport, TransportHandlers } from './types.ts'

export function wsServerTransport(ws: WebSocket, _tcp: Duplex): Transport {
  let handlers: TransportHandlers | undefined
  let open = true
  ws.on('message', (data, isBinary) => handlers?.message(isBinary ? (data as Buffer) : (data as Buffer).toString(), isBinary))
  ws.on('ping', () => handlers?.alive?.())
  ws.on('pong', () => handlers?.alive?.())
  ws.on('error', (err) => handlers?.error?.(err))
  ws.on('close', (code, reason) => {
    open = false
    handlers?.close(code, reason.toString())
  })
  return {
    send: (text) => {
      if (open) ws.send(text)
    },
    get bufferedAmount() {
      return ws.bufferedAmount
    },
    get isOpen() {
      return open
    },
    close: (code, reason) => {
      open = false
      ws.close(code, reason)
    },
    terminate: () => {
      open = false
      ws.terminate()
    },
    ping: () => ws.ping(),
    setHandlers: (h) => {
      handlers = h
    },
  }
}
