/**
 * The framing of calls between engines (./calls.ts): a NATS message carries one frame or several
 * joined by U+001E, and never more than NATS's max_payload (fast-check).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
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

  it('a Batcher publishes the frames of one turn per subject, in order, each message within max_payload', async () => {
    await fc.assert(
      fc.asyncProperty(frames, fc.integer({ min: 64, max: 4096 }), async (list, maxPayload) => {
        const published: Array<{ subject: string; payload: string }> = []
        const batcher = new Batcher({ publish: (subject, payload) => void published.push({ subject, payload }) }, { connected: true, maxPayload })
        const fitting = list.filter((f) => f.length * 3 <= maxPayload)
        for (const frame of fitting) batcher.add('svc.f.call.a.default.x', frame, 'svc.f.reply.b.a')
        await new Promise<void>((resolve) => queueMicrotask(resolve))
        const back: string[] = []
        for (const message of published) {
          assert.ok(Buffer.byteLength(message.payload) <= maxPayload, `${Buffer.byteLength(message.payload)} > ${maxPayload}`)
          eachFrame(Buffer.from(message.payload), (frame) => back.push(Buffer.from(frame).toString('utf8')))
        }
        assert.deepEqual(back, fitting)
        if (fitting.length > 0) assert.ok(published.length <= fitting.length)
      }),
    )
  })
})
