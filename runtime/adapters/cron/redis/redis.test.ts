/**
 * The redis cron slot store against a real `redis-server` (test/support/redis.ts): the shared
 * conformance suite, the key layout of §13.4, run locks between two stores, and Redis being away.
 */
import assert from 'node:assert/strict'
import { after, it } from 'node:test'
import { Redis } from 'ioredis'
import { startTestRedis } from '../../../../test/support/redis.ts'
import { runCronSlotStoreConformance } from '../conformance.ts'
import { RedisCronSlotStore, SLOT_LOCK_MS } from './redis.ts'
import { waitFor } from '../../../../test/support/wait.ts'

const redis = await startTestRedis()
after(() => redis.close())
let prefixes = 0
const open = (key_prefix = `c${++prefixes}:`) => RedisCronSlotStore.open({ url: redis.url, key_prefix })

runCronSlotStoreConformance('redis', () => open())

it('keeps the slot lock <prefix>cron:<schedule>:<slot> for 24 h and the last slot', async () => {
  const store = await open('layout:')
  const probe = new Redis(redis.url)
  try {
    assert.equal(await store.claim('abc', 5000), true)
    const ttl = await probe.pttl('layout:cron:abc:5000')
    assert.ok(ttl > SLOT_LOCK_MS - 60_000 && ttl <= SLOT_LOCK_MS, `ttl ${ttl}`)
    assert.equal(await probe.get('layout:cron:abc:last'), '5000')
  } finally {
    probe.disconnect()
    await store.close()
  }
})

it('lets one engine hold the run lock of a schedule at a time; another store sees it taken', async () => {
  const a = await open('runlock:')
  const b = await open('runlock:')
  const probe = new Redis(redis.url)
  try {
    const release = await a.lockRun('s')
    assert.ok(release)
    assert.equal(await b.lockRun('s'), null)
    const ttl = await probe.pttl('runlock:cron:s:run')
    assert.ok(ttl > 0 && ttl <= 30_000, `ttl ${ttl}`)
    await release()
    const other = await b.lockRun('s')
    assert.ok(other)
    await other()
  } finally {
    probe.disconnect()
    await Promise.all([a.close(), b.close()])
  }
})

it('fails claims while Redis is away and works again once it is back', async () => {
  const store = await open('away:')
  try {
    await redis.stop()
    await assert.rejects(store.claim('s', 1000))
    await redis.start()
    // A claim that throws (Redis not reachable yet) is tried again; the first answer must be true.
    assert.equal(await waitFor(() => store.claim('s', 2000).then((won) => ({ won })), 'a claim once Redis is back', 20_000, 200).then(({ won }) => won), true)
  } finally {
    await store.close()
  }
})
