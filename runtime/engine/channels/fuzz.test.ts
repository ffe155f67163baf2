/**
 * Property-based tests of channel frame handling (fast-check; protocol.md §9): random sequences
 * of text and binary items of random sizes, random buffer sizes, random ends (close codes,
 * terminate, abort, a reader leaving early) and random moments at which the reader connects.
 * Whatever the interleaving: items arrive in order, nothing is lost on a normal end, the writer
 * is never read past its bound, and the registry is empty afterwards.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { ChannelSocket, type ReceivedItem } from '../../../test/support/channel-client.ts'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { ChannelRegistry, type ChannelItem, type LocalChannelReader } from './index.ts'
import { waitFor } from '../../../test/support/wait.ts'

/** An item as generated: text, or binary bytes (small random ones, or large filled ones). */
type Generated = { text: string } | { bytes: Buffer }

const text = fc.string({ unit: 'grapheme', maxLength: 24 }).map((t): Generated => ({ text: t }))
const smallBinary = fc.uint8Array({ maxLength: 48 }).map((b): Generated => ({ bytes: Buffer.from(b) }))
const largeBinary = fc.tuple(fc.integer({ min: 1024, max: 192 * 1024 }), fc.integer({ min: 0, max: 255 })).map(([size, fill]): Generated => ({ bytes: Buffer.alloc(size, fill) }))
const generatedItem = fc.oneof({ weight: 3, arbitrary: text }, { weight: 3, arbitrary: smallBinary }, { weight: 1, arbitrary: largeBinary })

function asReceived(item: Generated): ReceivedItem {
  return 'text' in item ? item.text : item.bytes
}

function fromLocal(item: ChannelItem): ReceivedItem {
  return item.type === 'text' ? item.text : Buffer.from(item.data)
}

function isPrefix(prefix: readonly ReceivedItem[], of: readonly ReceivedItem[]): boolean {
  return prefix.length <= of.length && prefix.every((item, i) => sameItem(item, of[i]!))
}

function sameItem(a: ReceivedItem, b: ReceivedItem): boolean {
  return typeof a === 'string' ? a === b : typeof b !== 'string' && a.equals(b)
}

describe('channel core with in-process ends (fast-check)', () => {
  type Op =
    | { kind: 'write'; item: Generated }
    | { kind: 'take'; count: number }
    | { kind: 'attachReader' }
    | { kind: 'close' }
    | { kind: 'abort' }
    | { kind: 'cancel' }
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 6, arbitrary: generatedItem.map((item): Op => ({ kind: 'write', item })) },
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 4 }).map((count): Op => ({ kind: 'take', count })) },
    { weight: 1, arbitrary: fc.constant<Op>({ kind: 'attachReader' }) },
    { weight: 1, arbitrary: fc.constant<Op>({ kind: 'close' }) },
    { weight: 1, arbitrary: fc.constant<Op>({ kind: 'abort' }) },
    { weight: 1, arbitrary: fc.constant<Op>({ kind: 'cancel' }) },
  )

  it('items arrive in the order their writes resolved, held items never exceed buffer_size, a normal end loses nothing, the registry empties', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 8 }), fc.array(op, { maxLength: 40 }), async (bufferSize, ops) => {
        const registry = new ChannelRegistry()
        const refs = registry.create(bufferSize)
        const channel = registry.get(refs.writer.channel_id)!
        const writer = registry.openWriter(refs.writer)
        let reader: LocalChannelReader | undefined
        const accepted: ReceivedItem[] = []
        const writes: Array<Promise<unknown>> = []
        const received: ReceivedItem[] = []
        let closed = false
        let aborted = false
        let cancelled = false
        /** Writes made before the writer was closed or aborted: a normal end accepts every one. */
        let writesBeforeEnd = 0
        let ending: 'normal' | 'error' | undefined
        const take = async (count: number) => {
          for (let i = 0; i < count && reader !== undefined && ending === undefined; i++) {
            const next = reader.next()
            // A take that has to wait for a write is not awaited: the writes that follow feed it.
            const settled = await Promise.race([next.then((item) => ({ item }), () => ({ error: true })), new Promise<undefined>((resolve) => setImmediate(() => resolve(undefined)))])
            if (settled === undefined) {
              void next.then((item) => (item === undefined ? (ending = 'normal') : received.push(fromLocal(item))), () => (ending = 'error'))
              return
            }
            if ('error' in settled) ending = 'error'
            else if (settled.item === undefined) ending = 'normal'
            else received.push(fromLocal(settled.item))
          }
        }
        for (const step of ops) {
          switch (step.kind) {
            case 'write': {
              const item = step.item
              const write = 'text' in item ? writer.sendMessage(item.text) : writer.write(item.bytes)
              writes.push(write.then(() => accepted.push(asReceived(item)), () => {}))
              if (!closed && !aborted) writesBeforeEnd++
              break
            }
            case 'take':
              await take(step.count)
              break
            case 'attachReader':
              reader ??= registry.openReader(refs.reader)
              break
            case 'close':
              closed = true
              writer.close()
              break
            case 'abort':
              aborted = true
              writer.abort()
              break
            case 'cancel':
              if (reader !== undefined) {
                cancelled = true
                reader.cancel()
              }
              break
          }
          await new Promise((resolve) => setImmediate(resolve))
          assert.ok(channel.isRemoved || channel.heldItems <= bufferSize, `held ${channel.heldItems} > ${bufferSize}`)
        }
        // The end: close the writer (a no-op after close or abort), read what is left.
        writer.close()
        closed = true
        reader ??= registry.openReader(refs.reader)
        for (let turns = 0; ending === undefined && !cancelled; turns++) {
          if (turns > 10_000) assert.fail('the reader never saw the end of the channel')
          await take(1)
        }
        await Promise.all(writes)
        if (cancelled) {
          assert.ok(isPrefix(received, accepted), 'a cancelled reader got a prefix')
        } else {
          assert.deepEqual(received, accepted, 'every accepted item, in order')
          if (ending === 'normal') assert.equal(accepted.length, writesBeforeEnd, 'a normal end: every write made before close() was accepted')
        }
        await waitFor(() => registry.size === 0, 'registry.size === 0', 2000)
      }),
      { numRuns: 300 },
    )
  })
})

describe('channel core with an in-process sink (attachReader, fast-check)', () => {
  type Op = { kind: 'write'; item: Generated } | { kind: 'release'; count: number } | { kind: 'close' } | { kind: 'abort' } | { kind: 'cancel' }
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 6, arbitrary: generatedItem.map((item): Op => ({ kind: 'write', item })) },
    { weight: 4, arbitrary: fc.integer({ min: 1, max: 4 }).map((count): Op => ({ kind: 'release', count })) },
    { weight: 1, arbitrary: fc.constant<Op>({ kind: 'close' }) },
    { weight: 1, arbitrary: fc.constant<Op>({ kind: 'abort' }) },
    { weight: 1, arbitrary: fc.constant<Op>({ kind: 'cancel' }) },
  )

  it('items reach the sink in order, never more than buffer_size without their done, the end once after them, the registry empties', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 8 }), fc.array(op, { maxLength: 40 }), async (bufferSize, ops) => {
        const registry = new ChannelRegistry()
        const refs = registry.create(bufferSize)
        const writer = registry.openWriter(refs.writer)
        const received: ReceivedItem[] = []
        const pending: Array<() => void> = []
        const ends: boolean[] = []
        let itemsAfterEnd = 0
        const reader = registry.attachReader(refs.reader, {
          item: (item, done) => {
            if (ends.length > 0) itemsAfterEnd++
            received.push(fromLocal(item))
            pending.push(done)
          },
          end: (normal) => void ends.push(normal),
        })
        const accepted: ReceivedItem[] = []
        const writes: Array<Promise<unknown>> = []
        let cancelled = false
        let aborted = false
        let endsAtCancel = 0
        for (const step of ops) {
          switch (step.kind) {
            case 'write': {
              const item = step.item
              const write = 'text' in item ? writer.sendMessage(item.text) : writer.write(item.bytes)
              writes.push(write.then(() => accepted.push(asReceived(item)), () => {}))
              break
            }
            case 'release':
              for (const done of pending.splice(0, step.count)) done()
              break
            case 'close':
              writer.close()
              break
            case 'abort':
              aborted = true
              writer.abort()
              break
            case 'cancel':
              if (!cancelled) endsAtCancel = ends.length
              cancelled = true
              reader.cancel()
              break
          }
          await new Promise((resolve) => setImmediate(resolve))
          assert.ok(cancelled || pending.length <= bufferSize, `${pending.length} items without their done > ${bufferSize}`)
        }
        writer.close()
        for (let turns = 0; ends.length === 0 && !cancelled; turns++) {
          if (turns > 10_000) assert.fail('the sink never saw the end of the channel')
          for (const done of pending.splice(0)) done()
          await new Promise((resolve) => setImmediate(resolve))
        }
        for (const done of pending.splice(0)) done()
        await Promise.all(writes)
        assert.equal(itemsAfterEnd, 0, 'no item after the end')
        assert.ok(ends.length <= 1, 'the end once')
        assert.ok(isPrefix(received, accepted), 'in order')
        if (cancelled) assert.equal(ends.length, endsAtCancel, 'a cancelled sink is told no end after it')
        else if (!aborted) {
          assert.deepEqual(ends, [true])
          assert.deepEqual(received, accepted, 'a normal end: every accepted item')
        } else assert.equal(ends.length, 1)
        await waitFor(() => registry.size === 0, 'registry.size === 0', 2000)
      }),
      { numRuns: 300 },
    )
  })
})

describe('channel sockets (fast-check, real WebSockets)', () => {
  let t: TestEngine
  before(async () => {
    t = await startTestEngine({ builtins: [] })
  })
  after(() => t.stop())

  type Ending = { kind: 'close'; code: number | undefined } | { kind: 'terminate' }
  const ending: fc.Arbitrary<Ending> = fc.oneof(
    fc.constant<Ending>({ kind: 'close', code: 1000 }),
    fc.constant<Ending>({ kind: 'close', code: undefined }),
    fc.constantFrom(1001, 1011, 3000, 4000, 4999).map((code): Ending => ({ kind: 'close', code })),
    fc.constant<Ending>({ kind: 'terminate' }),
  )

  it('whatever the frames, the moment the reader connects and how the writer ends: order kept, nothing lost on a normal end, 1000 or 1011, registry empty', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 16 }),
        fc.array(generatedItem, { maxLength: 24 }),
        fc.nat(),
        ending,
        fc.option(fc.nat(), { nil: undefined }),
        async (bufferSize, items, readerSeed, end, leaveSeed) => {
          const refs = (await t.engine.inject({ function_id: 'engine::channels::create', data: { buffer_size: bufferSize } })) as { writer: never; reader: never }
          const sent = items.map(asReceived)
          // The reader connects before item `readerAt`; items.length + 1: after the writer ended.
          const readerAt = readerSeed % (items.length + 2)
          const leaveAfter = leaveSeed === undefined || items.length === 0 ? undefined : leaveSeed % items.length
          const writer = await ChannelSocket.open(t.url, refs.writer)
          let reader: ChannelSocket | undefined
          const connectReader = async () => {
            reader = await ChannelSocket.open(t.url, refs.reader)
            if (leaveAfter !== undefined) {
              const r = reader
              r.ws.on('message', () => {
                if (r.items.length === leaveAfter + 1) r.ws.close(1000)
              })
            }
          }
          for (let i = 0; i < items.length; i++) {
            if (i === readerAt) await connectReader()
            writer.send(sent[i]!)
          }
          if (readerAt === items.length) await connectReader()
          if (end.kind === 'terminate') writer.ws.terminate()
          else writer.ws.close(end.code)
          if (reader === undefined) await connectReader()
          const { code } = await reader!.closed
          const got = reader!.items
          if (leaveAfter !== undefined) {
            assert.ok(isPrefix(got, sent), 'a reader that left got a prefix')
          } else if (end.kind === 'terminate') {
            assert.ok(isPrefix(got, sent), 'a terminated writer: a prefix')
            assert.equal(code, 1011)
          } else {
            assert.equal(got.length, sent.length, 'every item')
            assert.ok(isPrefix(got, sent), 'in order')
            assert.equal(code, end.code === 1000 || end.code === undefined ? 1000 : 1011)
          }
          await writer.closed
          await waitFor(() => t.engine.channels.size === 0, 't.engine.channels.size === 0', 10_000)
        },
      ),
      { numRuns: 40 },
    )
  })
})

describe('channel ids from the upgrade path (fast-check)', () => {
  // The registry keeps its channels in a CallIndex (not a Map) so that an HTTP request's objects
  // die young; the id in `/ws/channels/<id>` is the client's. Hostile ids: any UTF-16 (lone
  // surrogates too), names of Object.prototype, the empty string, very long strings, uuid-shaped
  // ones, and ids of channels already removed.
  const hostileId = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.constantFrom('', '__proto__', 'constructor', 'hasOwnProperty', 'toString', 'valueOf', '00000000-0000-0000-0000-000000000000'),
    fc.uuid(),
    fc.tuple(fc.integer({ min: 1, max: 64 * 1024 }), fc.string({ unit: 'binary', minLength: 1, maxLength: 2 })).map(([n, c]) => c.repeat(n)),
  )
  type Op = { kind: 'create' } | { kind: 'remove'; pick: number } | { kind: 'lookup'; id: string } | { kind: 'stale'; pick: number }
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 4, arbitrary: fc.constant<Op>({ kind: 'create' }) },
    { weight: 3, arbitrary: fc.nat().map((pick): Op => ({ kind: 'remove', pick })) },
    { weight: 3, arbitrary: hostileId.map((id): Op => ({ kind: 'lookup', id })) },
    { weight: 1, arbitrary: fc.nat().map((pick): Op => ({ kind: 'stale', pick })) },
  )

  it('finds exactly the open channels: a hostile or removed id is not found and throws nothing, through any number of creates and removals', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const registry = new ChannelRegistry()
        const open = new Map<string, { writerKey: string; readerKey: string }>()
        const removed: string[] = []
        for (const o of ops) {
          if (o.kind === 'create') {
            const { writer, reader } = registry.create()
            open.set(writer.channel_id, { writerKey: writer.access_key, readerKey: reader.access_key })
          } else if (o.kind === 'remove' && open.size > 0) {
            const id = [...open.keys()][o.pick % open.size]!
            registry.remove(id)
            open.delete(id)
            removed.push(id)
          } else if (o.kind === 'lookup') {
            assert.equal(registry.get(o.id) !== undefined, open.has(o.id))
            assert.equal(registry.find(o.id, o.id, 'write'), undefined)
            assert.equal(registry.find(o.id, o.id, 'read'), undefined)
          } else if (o.kind === 'stale' && removed.length > 0) {
            const id = removed[o.pick % removed.length]!
            assert.equal(registry.get(id), undefined)
          }
          assert.equal(registry.size, open.size)
        }
        for (const [id, keys] of open) {
          assert.equal(registry.get(id)?.id, id)
          assert.equal(registry.find(id, keys.writerKey, 'write')?.direction, 'write')
          assert.equal(registry.find(id, keys.readerKey, 'read')?.direction, 'read')
          assert.equal(registry.find(id, keys.readerKey, 'write'), undefined)
        }
        registry.stop()
        assert.equal(registry.size, 0)
      }),
      { numRuns: 200 },
    )
  })
})
