/**
 * Structural baseline: the echo of bench/echo-server.ts reached through a relay process that
 * forwards each frame between two WebSockets without parsing it — three processes, like svc's
 * caller → engine → callee, doing the least a router can. `relay` prints the relay's port;
 * `echo <port>` is the echo peer, connected to the relay as a client.
 */
import WebSocket, { WebSocketServer } from 'ws'

const [mode, port] = process.argv.slice(2)

if (mode === 'relay') {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false })
  let echo: WebSocket | undefined
  let caller: WebSocket | undefined
  wss.on('connection', (ws, request) => {
    if (request.url === '/echo') {
      echo = ws
      ws.on('message', (data) => caller?.send(data, { binary: false }))
    } else {
      caller = ws
      ws.on('message', (data) => echo?.send(data, { binary: false }))
    }
  })
  wss.on('listening', () => console.log(JSON.stringify({ port: (wss.address() as { port: number }).port })))
} else {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/echo`, { perMessageDeflate: false })
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString())
    ws.send(JSON.stringify({ id: frame.id, result: frame.data }))
  })
  ws.on('open', () => console.log(JSON.stringify({ ready: true })))
}
