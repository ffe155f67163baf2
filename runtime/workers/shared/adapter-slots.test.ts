/**
 * The kit's adapter switch (builtins.md §2.9), which every adapter-backed built-in uses (state,
 * stream, queue, pub/sub, cron, database): operations and holders finish on the adapter they
 * started on, which closes once the last of them is done.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SvcError } from 'svc-protocol/errors'
import { silentLogger } from '../../engine/logger.ts'
import { AdapterSlots } from './adapter-slots.ts'

class FakeAdapter {
  closed = 0
  readonly name: string
  constructor(name: string) {
    this.name = name
  }
  async close(): Promise<void> {
    this.closed++
  }
}

/** A promise and the function that settles it. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void
  const promise = new Promise<void>((resolve) => (open = resolve))
  return { promise, open }
}

const settle = () => new Promise((resolve) => setImmediate(resolve))

describe('AdapterSlots (builtins.md §2.9)', () => {
  it('runs on the current adapter; a replaced one closes once the operation running on it is done', async () => {
    const slots = new AdapterSlots<FakeAdapter>('svc-test', silentLogger)
    const a = new FakeAdapter('a')
    const b = new FakeAdapter('b')
    slots.install(a, 'a')
    const g = gate()
    const running = slots.run('test::op', async (adapter) => {
      await g.promise
      return adapter.name
    })
    slots.install(b, 'b')
    assert.equal(slots.identity, 'b')
    assert.equal(await slots.run('test::op', async (adapter) => adapter.name), 'b')
    await settle()
    assert.equal(a.closed, 0, 'closed under a running operation')
    g.open()
    assert.equal(await running, 'a')
    await settle()
    assert.equal(a.closed, 1)
    assert.equal(b.closed, 0)
  })

  it('a holder pins the adapter it names, also one already replaced; release closes it once', async () => {
    const slots = new AdapterSlots<FakeAdapter>('svc-test', silentLogger)
    const a = new FakeAdapter('a')
    const reservedOn = slots.install(a, 'a')
    slots.install(new FakeAdapter('b'), 'b')
    await settle()
    assert.equal(a.closed, 1, 'nothing held a, so it closed at once')

    const c = new FakeAdapter('c')
    const onC = slots.install(c, 'c')
    const held = slots.hold(onC)
    assert.equal(held, onC)
    assert.equal(slots.current, onC)
    slots.install(new FakeAdapter('d'), 'd')
    assert.notEqual(slots.current, held, 'a held slot that was replaced is no longer current')
    await settle()
    assert.equal(c.closed, 0)
    slots.release(held)
    await settle()
    assert.equal(c.closed, 1)
    // A hold on a closed slot and its release change nothing.
    slots.release(slots.hold(reservedOn))
    await settle()
    assert.equal(a.closed, 1)
  })

  it('errors the worker raised on purpose pass; any other failure is STORAGE_ERROR; a stopped worker refuses', async () => {
    const slots = new AdapterSlots<FakeAdapter>('svc-test', silentLogger)
    await assert.rejects(slots.run('test::op', async () => 1), { code: 'STORAGE_ERROR', message: 'test::op failed: the svc-test worker is stopped' })
    const a = new FakeAdapter('a')
    slots.install(a, 'a')
    const own = new SvcError('VALUE_TOO_LARGE', 'too large')
    await assert.rejects(slots.run('test::op', async () => Promise.reject(own)), (error) => error === own)
    await assert.rejects(slots.run('test::op', async () => Promise.reject(new Error('disk gone'))), { code: 'STORAGE_ERROR', message: 'test::op failed: disk gone' })
    const held = slots.hold()
    await slots.close()
    assert.equal(a.closed, 1, 'close ignores holders (their transport is gone)')
    assert.equal(slots.current, null)
    assert.equal(slots.hold(), null)
    slots.release(held)
    await settle()
    assert.equal(a.closed, 1)
  })
})
