/**
 * Baseline peer: a plain WebSocket server that parses each JSON frame and answers it, the least
 * any worker does. Prints its port on stdout.
 */
import { WebSocketServer } from 'ws'

const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false })
wss.on('connection', (ws) => {
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString())
    ws.send(JSON.stringify({ id: frame.id, result: frame.data }))
  })
})
wss.on('listening', () => console.log(JSON.stringify({ port: (wss.address() as { port: number }).port })))
