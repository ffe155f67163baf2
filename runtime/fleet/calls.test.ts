/**
 * The framing of calls between engines (./calls.ts): a NATS message carries one frame or several
 * joined by U+001E, and never more than NATS's max_payload (fast-check).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import fc from 'fast-check'
import { waitFor } from '../../test/support/wait.ts'
import { Batcher, eachFrame } from './calls.ts'

const frames = fc.array(fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify({ type: 'invocationresult', invocation_id: 'x', result: v })), { minLength: 1, maxLength: 40 })

describe('fleet call framing', () => {
  it('eachFrame gives back every frame a message joined, in order, whatever JSON they hold', () => {
    fc.assert(
      fc.property(frames, (list) => {
        const seen: string[] = []
        eachFrame(Buffer.from(list.join('\x1e')), (frame) => seen.push(Buffer.from(frame).toString('utf8')))
        assert.deepEqual(seen, list)
      }),
    )
  })

  it('a Batcher publishes the frames of one turn per subject, in order, each message within max_payload, whichever callbacks of the turn added them', async () => {
    await fc.assert(
      // callbacks: how many I/O callbacks of one turn the frames are spread over (HTTP requests on
      // several connections, several WebSocket reads).
      fc.asyncProperty(frames, fc.integer({ min: 64, max: 4096 }), fc.integer({ min: 1, max: 8 }), async (list, maxPayload, callbacks) => {
        const published: Array<{ subject: string; payload: string }> = []
        const batcher = new Batcher({ publish: (subject, payload) => void published.push({ subject, payload }) }, { connected: true, maxPayload })
        const fitting = list.filter((f) => f.length * 3 <= maxPayload)
        const groups = Array.from({ length: callbacks }, (_, g) => fitting.filter((_f, i) => i % callbacks === g))
        const ordered = groups.flat()
        await new Promise<void>((resolve) => {
          for (const group of groups) setImmediate(() => group.forEach((frame) => batcher.add('svc.f.call.a.default.x', frame, 'svc.f.reply.b.a')))
          setImmediate(() => setImmediate(resolve))
        })
        const back: string[] = []
        for (const message of published) {
          assert.ok(Buffer.byteLength(message.payload) <= maxPayload, `${Buffer.byteLength(message.payload)} > ${maxPayload}`)
          eachFrame(Buffer.from(message.payload), (frame) => back.push(Buffer.from(frame).toString('utf8')))
        }
        assert.deepEqual(back, ordered)
        if (fitting.length > 0) assert.ok(published.length <= fitting.length)
        // All of a turn fits one message when it is small enough, however many callbacks added it.
        const chars = fitting.reduce((sum, f) => sum + f.length + 1, 0)
        if (fitting.length > 0 && chars * 3 <= maxPayload) assert.equal(published.length, 1)
      }),
    )
  })

  it('calls made by separate I/O callbacks of one event-loop turn (HTTP requests on several connections) share one NATS message', async () => {
    const published: string[] = []
    const batcher = new Batcher({ publish: (_subject, payload) => void published.push(payload) }, { connected: true, maxPayload: 1024 * 1024 })
    // The loop's turn each call was made in: a check-phase callback counts the turns.
    let turn = 0
    let counting = true
    const count = () => {
      turn++
      if (counting) setImmediate(count)
    }
    setImmediate(count)
    const turns = new Set<number>()
    const server = createServer((socket) =>
      socket.on('data', (chunk) => {
        turns.add(turn)
        batcher.add('svc.f.call.b.default.x', JSON.stringify({ type: 'invokefunction', function_id: chunk.toString() }), 'svc.f.reply.a.b')
      }),
    )
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const sockets = await Promise.all(Array.from({ length: 4 }, () => new Promise<Socket>((resolve) => { const s = connect(port, '127.0.0.1', () => resolve(s)) })))
    try {
      await waitFor(async () => (await connectionsOf(server)) === 4, 'four connections')
      // Four requests written at once: the server reads them as four callbacks, normally in one turn.
      for (const [i, s] of sockets.entries()) s.write(`f${i}`)
      await waitFor(() => published.join('\x1e').split('\x1e').length === 4, 'four calls published')
      assert.equal(published.length, turns.size, `${published.length} NATS messages for four calls made in ${turns.size} turn(s)`)
    } finally {
      counting = false
      for (const s of sockets) s.destroy()
      server.close()
    }
  })
})

function connectionsOf(server: Server): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))))
}
