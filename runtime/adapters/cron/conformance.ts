/**
 * The conformance suite every cron slot store passes (builtins.md §9.3): call it from each store's
 * test file with a factory for a fresh, empty store.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { CronSlotStore } from './types.ts'

/** @example runCronSlotStoreConformance('memory', () => new MemoryCronSlotStore()) */
export function runCronSlotStoreConformance(name: string, open: () => CronSlotStore | Promise<CronSlotStore>): void {
  describe(`cron slot store conformance: ${name}`, () => {
    it('claims a slot once', async () => {
      const store = await open()
      assert.equal(await store.claim('s', 1000), true)
      assert.equal(await store.claim('s', 1000), false)
      assert.equal(await store.lastSlot('s'), 1000)
      await store.close()
    })

    it('refuses a slot before the last claimed one, accepts a later one', async () => {
      const store = await open()
      assert.equal(await store.claim('s', 5000), true)
      assert.equal(await store.claim('s', 4000), false)
      assert.equal(await store.claim('s', 6000), true)
      assert.equal(await store.lastSlot('s'), 6000)
      await store.close()
    })

    it('keeps schedules apart', async () => {
      const store = await open()
      assert.equal(await store.lastSlot('a'), undefined)
      assert.equal(await store.claim('a', 1000), true)
      assert.equal(await store.claim('b', 1000), true)
      assert.equal(await store.lastSlot('b'), 1000)
      await store.close()
    })

    it('gives a run lock and takes it back', async () => {
      const store = await open()
      const release = await store.lockRun('r')
      assert.equal(typeof release, 'function')
      await release!()
      const again = await store.lockRun('r')
      assert.equal(typeof again, 'function')
      await again!()
      await store.close()
    })

    it('lets exactly one of concurrent claims of a slot win', async () => {
      const store = await open()
      const results = await Promise.all(Array.from({ length: 10 }, () => store.claim('c', 42_000)))
      assert.equal(results.filter(Boolean).length, 1)
      await store.close()
    })
  })
}
