/**
 * The framing of calls between engines (./calls.ts): a NATS message carries one frame or several
 * joined by U+001E, and never more than NATS's max_payload (fast-check); a call's objects die
 * young once it is answered.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import fc from 'fast-check'
import { RawJson } from 'svc-protocol'
import { waitFor } from '../../test/support/wait.ts'
import { Flight, FlightTable } from '../engine/flights.ts'
import type { FunctionEntry, Replica } from '../engine/functions.ts'
import type { Invocation } from '../engine/invocation.ts'
import { Batcher, eachFrame, FleetCalls } from './calls.ts'
import { Member } from './members.ts'
import { FleetSubjects } from './subjects.ts'
import { oldGenerationGrowth } from '../../test/support/old-generation.ts'

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

  it('eachFrame gives back every frame of a message that is not all valid UTF-8 (fast-check: stray bytes, cut sequences, lone surrogates), each frame\'s bytes as sent', () => {
    // Frames of any bytes but the separator, and text with characters of every width.
    const bytes = fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b.filter((x) => x !== 0x1e)))
    const text = fc.string({ unit: 'binary', maxLength: 32 }).map((t) => Buffer.from(t.replaceAll('\x1e', ''), 'utf8'))
    const cut = fc.constantFrom(Buffer.from([0xe2, 0x82]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xff]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xf4, 0x90, 0x80, 0x80]))
    fc.assert(
      fc.property(fc.array(fc.oneof(bytes, text, cut), { minLength: 1, maxLength: 20 }), (list) => {
        const seen: Buffer[] = []
        eachFrame(Buffer.concat(list.flatMap((f, i) => (i === 0 ? [f] : [Buffer.from([0x1e]), f]))), (frame) => seen.push(typeof frame === 'string' ? Buffer.from(frame, 'utf8') : Buffer.from(frame)))
        assert.deepEqual(seen.map((b) => b.toString('hex')), list.map((b) => b.toString('hex')))
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

describe('FleetCalls', () => {
  it('settles each call once: by its own answer, by its member leaving (invocation_stopped), never by an answer with a guessed id (fast-check)', () => {
    const hostileId = fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', '0', '1', '-1', ''))
    const op = fc.oneof(
      fc.record({ kind: fc.constant('call' as const), member: fc.integer({ min: 0, max: 2 }), void: fc.boolean() }),
      fc.record({ kind: fc.constant('answer' as const), pick: fc.nat(), viaMember: fc.integer({ min: 0, max: 2 }) }),
      fc.record({ kind: fc.constant('forged' as const), id: hostileId, viaMember: fc.integer({ min: 0, max: 2 }) }),
      fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('leave' as const), member: fc.integer({ min: 0, max: 2 }) }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), fc.boolean(), (ops, stopAtEnd) => {
        const subjects = new FleetSubjects('f', 'aaaa')
        let lastFrame = ''
        const batcher = { add: (_subject: string, frame: string) => void (lastFrame = frame) } as unknown as Batcher
        const log = { debug() {}, info() {}, warn() {}, error() {} }
        const calls = new FleetCalls(batcher, { connected: true, maxPayload: 1024 * 1024 }, subjects, log as never, () => {})
        const members = ['m0', 'm1', 'm2'].map((instance) => new Member({ engine: instance, instance, version: 1, urls: [], started_at_ms: 0 }, 0))
        const target = { id: 'x::y', namespace: 'default' } as unknown as FunctionEntry
        const flights = new FlightTable()
        // Every sync call made, with what settled it.
        const made: Array<{ id: string; member: number; outcomes: string[]; flight: Flight }> = []
        const open = () => made.filter((c) => c.outcomes.length === 0)
        const answer = (id: string, member: number) => {
          const m = members[member]!
          m.replySubject ??= subjects.replyPrefix + m.instance
          calls.reply(m.replySubject, Buffer.from(JSON.stringify({ type: 'invocationresult', invocation_id: id, result: { id } })), undefined, () => m)
        }
        for (const o of ops) {
          if (o.kind === 'call') {
            const outcomes: string[] = []
            const flight = new Flight(flights, 'x::y', 'default', null, { result: (v) => void outcomes.push(`result ${v instanceof RawJson ? v.text : JSON.stringify(v)}`), error: (e) => void outcomes.push(e.code) })
            const invocation = { requestedId: 'x::y', functionId: 'x::y', namespace: 'default', data: new RawJson('{}'), caller: null, reply: flight, flight, ...(o.void && { action: { type: 'void' } }) } as unknown as Invocation
            calls.send(members[o.member]!, invocation, target, undefined as unknown as Replica)
            if (!o.void) made.push({ id: (JSON.parse(lastFrame) as { invocation_id: string }).invocation_id, member: o.member, outcomes, flight })
          } else if (o.kind === 'answer') {
            const list = open()
            if (list.length === 0) continue
            const c = list[o.pick % list.length]!
            answer(c.id, o.viaMember)
            // Only through its own member's reply subject.
            assert.deepEqual(c.outcomes, o.viaMember === c.member ? [`result ${JSON.stringify({ id: c.id })}`] : [])
          } else if (o.kind === 'forged') {
            const before = made.map((c) => c.outcomes.length)
            answer(o.id, o.viaMember)
            // A guessed id settles nothing, unless it is a real open call's id on its own member's subject.
            for (const [i, c] of made.entries()) if (c.id !== o.id || c.member !== o.viaMember) assert.equal(c.outcomes.length, before[i])
          } else if (o.kind === 'cancel') {
            const list = open()
            if (list.length === 0) continue
            const c = list[o.pick % list.length]!
            c.flight.cancel('enough')
            assert.deepEqual(c.outcomes, ['cancelled'])
          } else {
            const before = made.map((c) => c.outcomes.length)
            calls.memberGone(members[o.member]!)
            for (const [i, c] of made.entries()) {
              if (c.member === o.member && before[i] === 0) assert.deepEqual(c.outcomes, ['invocation_stopped'])
              else assert.equal(c.outcomes.length, before[i])
            }
          }
        }
        if (stopAtEnd) {
          calls.stopAll()
          assert.equal(open().length, 0)
        }
        for (const c of made) assert.ok(c.outcomes.length <= 1, `${c.id} settled ${c.outcomes.length} times`)
        assert.equal(calls.size, open().length)
      }),
      { numRuns: 300 },
    )
  })

  it("lets an answered call's objects die young: calls to another engine do not fill the old generation", () => {
    // Scavenges only (`gc({ type: 'minor' })`), 64 calls open at a time like the benchmark's
    // 64 in flight. With a Map of open legs (and a Set per member), the hash tables V8 replaced
    // under the churn kept the calls they held reachable from the old generation: every call was
    // promoted with its payload (~40 MiB here).
    const subjects = new FleetSubjects('f', 'aaaa')
    let lastFrame = ''
    const batcher = { add: (_subject: string, frame: string) => void (lastFrame = frame) } as unknown as Batcher
    const log = { debug() {}, info() {}, warn() {}, error() {} }
    const calls = new FleetCalls(batcher, { connected: true, maxPayload: 1024 * 1024 }, subjects, log as never, () => {})
    const member = new Member({ engine: 'b', instance: 'bbbb', version: 1, urls: [], started_at_ms: 0 }, 0)
    const target = { id: 'bench::echo', namespace: 'default' } as unknown as FunctionEntry
    const flights = new FlightTable()
    const data = new RawJson('{"n":1}')
    const open: Array<{ id: string; answer: Uint8Array }> = []
    const memberOf = () => member
    let answered = 0
    const call = () => {
      // A call's own objects: a payload of about 1 KB that its reply holds.
      const payload = { data: new Array<number>(120).fill(open.length) }
      const flight = new Flight(flights, 'bench::echo', 'default', null, { result: () => void (answered += payload.data.length > 0 ? 1 : 0), error: () => void payload })
      const invocation = { requestedId: 'bench::echo', functionId: 'bench::echo', namespace: 'default', data, caller: null, reply: flight, flight, timeoutMs: 30_000 } as unknown as Invocation
      calls.send(member, invocation, target, undefined as unknown as Replica)
      const id = (JSON.parse(lastFrame) as { invocation_id: string }).invocation_id
      open.push({ id, answer: Buffer.from(`{"type":"invocationresult","invocation_id":${JSON.stringify(id)},"result":{}}`) })
      if (open.length > 64) calls.reply(member.replySubject!, open.shift()!.answer, undefined, memberOf)
    }
    const grown = oldGenerationGrowth(call)
    while (open.length > 0) calls.reply(member.replySubject!, open.shift()!.answer, undefined, memberOf)
    assert.equal(calls.size, 0)
    assert.equal(flights.size, 0)
    assert.equal(answered, 42_000)
    assert.ok(grown < 8 * 1024 * 1024, `old generation grew by ${(grown / 1048576).toFixed(1)} MiB over 40,000 calls to another engine`)
  })
})

function connectionsOf(server: Server): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))))
}
