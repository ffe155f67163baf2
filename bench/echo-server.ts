/**
 * Baseline peer: a plain WebSocket server that parses each JSON frame and answers it, the least
 * any worker does. Prints its port on stdout.
 *
 * It writes through the same `ws` transport as the engine (`wsServerTransport`), so its answers
 * are coalesced into TCP writes exactly as the engine's are; an echo that wrote one syscall per
 * frame would be a floor the engine could beat (issue 20: "a direct echo batches its writes as the
 * engine does").
 */
import type { Socket } from 'node:net'
import { wsServerTransport } from 'svc-protocol/transport/ws'
import { WebSocketServer } from 'ws'

const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false })
wss.on('connection', (ws, request) => {
  const transport = wsServerTransport(ws, request.socket as Socket)
  transport.setHandlers({
    message: (data) => {
      const frame = JSON.parse(typeof data === 'string' ? data : Buffer.from(data).toString()) as { id: unknown; data: unknown }
      transport.send(JSON.stringify({ id: frame.id, result: frame.data }))
    },
    close: () => {},
  })
})
wss.on('listening', () => console.log(JSON.stringify({ port: (wss.address() as { port: number }).port })))
