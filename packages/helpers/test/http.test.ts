/** The streaming HTTP helper (sdk.md §11) over a fake response channel. */
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { describe, it } from 'node:test'
import { http, type ResponseChannel, type StreamRequest } from 'svc-helpers/http'

function fakeChannel(): ResponseChannel & { items: Array<string | Buffer>; closed: number } {
  const items: Array<string | Buffer> = []
  const channel = {
    items,
    closed: 0,
    stream: new Writable({
      write(chunk: Buffer, _enc, done) {
        items.push(Buffer.from(chunk))
        done()
      },
    }),
    sendMessage(text: string) {
      items.push(text)
    },
    async close() {
      channel.closed++
    },
  }
  return channel
}

function request(response?: ResponseChannel): StreamRequest {
  return { method: 'GET', path: '/f', route: '/f', path_params: {}, query_params: {}, headers: {}, body: null, request_body: { readAll: async () => Buffer.alloc(0), async *[Symbol.asyncIterator]() {} }, ...(response ? { response } : {}) } as unknown as StreamRequest
}

describe('http()', () => {
  it('sends status and headers as text items, body bytes as binary items, and closes', async () => {
    const ch = fakeChannel()
    const handler = http(async (_req, res) => {
      res.status(201).headers({ 'content-type': 'text/plain' })
      res.stream.write('hi')
      assert.throws(() => res.status(500), /before the first body byte/)
    })
    assert.equal(await handler(request(ch)), undefined)
    assert.deepEqual(ch.items.slice(0, 2), ['{"type":"set_status","status_code":201}', '{"type":"set_headers","headers":{"content-type":"text/plain"}}'])
    assert.equal(String(ch.items[2]), 'hi')
    assert.equal(ch.closed, 1)
  })
  it('returns a buffered response unchanged and leaves the channel unused', async () => {
    const ch = fakeChannel()
    const res = await http(async () => ({ status_code: 302, headers: { Location: '/x' } }))(request(ch))
    assert.deepEqual(res, { status_code: 302, headers: { Location: '/x' } })
    assert.deepEqual([ch.items.length, ch.closed], [0, 0])
  })
  it('without a response channel only a buffered response works', async () => {
    await assert.rejects(http(async (_req, res) => void res.status(200))(request()), TypeError)
    assert.deepEqual(await http(async () => ({ status_code: 204 }))(request()), { status_code: 204 })
  })
})
