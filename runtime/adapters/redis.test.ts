/**
 * The shared Redis connection module (runtime/adapters/redis.ts) against a real `redis-server`:
 * the `adapter.config` block, what a failed call becomes, reconnecting, and hostile config input.
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import { SvcError } from 'svc-protocol/errors'
import { startTestRedis } from '../../test/support/redis.ts'
import { CALL_TIMEOUT_MS, connectRedis, parseRedisConfig, redactRedisUrl, redisCallError, describeRedis, waitReady } from './redis.ts'
import { waitFor } from '../../test/support/wait.ts'

const redis = await startTestRedis()
after(() => redis.close())

describe('redis adapter config (builtins.md §13.4)', () => {
  it('validates its config block; redis_url is accepted for url', () => {
    assert.deepEqual(parseRedisConfig({}), { url: 'redis://127.0.0.1:6379', key_prefix: 'svc:' })
    assert.deepEqual(parseRedisConfig({ redis_url: 'rediss://h:1', key_prefix: 'app:' }), {
      url: 'rediss://h:1',
      key_prefix: 'app:',
    })
    assert.deepEqual(parseRedisConfig({ url: 'redis://h', redis_url: 'redis://h' }).url, 'redis://h')
    assert.throws(() => parseRedisConfig({ url: 'http://h' }), /adapter\.config\.url must be a redis:\/\/ or rediss:\/\/ URL/)
    assert.throws(() => parseRedisConfig({ redis_url: 3 }), /adapter\.config\.redis_url must be a redis:\/\//)
    assert.throws(() => parseRedisConfig({ url: 'redis://a', redis_url: 'redis://b' }), /give only one of them/)
    assert.throws(() => parseRedisConfig({ key_prefix: 1 }), /adapter\.config\.key_prefix must be a string/)
    assert.throws(() => parseRedisConfig({ path: 'x' }), /adapter\.config\.path is not a redis adapter option/)
    // 'a\ud800' and 'a\udc00' both reach Redis as 'a' + U+FFFD: one store under two names.
    assert.throws(() => parseRedisConfig({ key_prefix: 'a\ud800' }), /adapter\.config\.key_prefix must be well-formed Unicode text/)
    assert.equal(parseRedisConfig({ key_prefix: 'a\uFFFD😀' }).key_prefix, 'a\uFFFD😀')
  })

  it('names an entry in logs by URL and prefix, without the password', () => {
    const name = describeRedis(parseRedisConfig({ url: 'redis://user:s3cret@cache:6379/2', key_prefix: 'app:' }))
    assert.equal(name, 'redis:redis://user:***@cache:6379/2#app:')
  })

  it('takes any config block: a valid entry or an Error naming an adapter.config field, never the password (fast-check)', () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.constantFrom('redis://', 'redis://h', 'rediss://u:p@h:1/0', 'redis://[::1', 'redis://h:99999', 'http://h', 'redis://\u0000', 'redis://h\ud800', '', 'a\ud800', '\udc00:'),
    )
    const value = fc.oneof(text, fc.integer(), fc.constant(null), fc.boolean(), fc.array(text, { maxLength: 2 }), fc.dictionary(text, text, { maxKeys: 2 }))
    const block = fc.dictionary(fc.oneof(fc.constantFrom('url', 'redis_url', 'key_prefix', '__proto__', 'constructor'), text), value, { maxKeys: 4 })
    fc.assert(
      fc.property(block, (config) => {
        let parsed
        try {
          parsed = parseRedisConfig(config)
        } catch (error) {
          assert.ok(error instanceof Error && /^adapter\.config\./.test(error.message), String(error))
          return
        }
        assert.match(parsed.url, /^rediss?:\/\/./)
        assert.equal(typeof parsed.key_prefix, 'string')
        assert.ok(parsed.key_prefix.isWellFormed(), 'a prefix with a lone surrogate would share a store with others')
      }),
      { numRuns: 500 },
    )
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 20 }).filter((p) => encodeURIComponent(p) !== '***'), (password) => {
        const url = `redis://user:${encodeURIComponent(password)}@cache:6379`
        assert.ok(!redactRedisUrl(url).includes(`:${encodeURIComponent(password)}@`), redactRedisUrl(url))
      }),
    )
  })
})

describe('redis connections and failed calls (builtins.md §13.4)', () => {
  it('a Redis error reply is STORAGE_ERROR; an error the adapter raised passes as it is', async (t) => {
    const client = connectRedis(redis.url)
    t.after(() => client.disconnect())
    assert.equal(await waitReady(client, CALL_TIMEOUT_MS), true)
    const reply = await client.call('NO-SUCH-COMMAND').then(
      () => assert.fail('the command was answered'),
      (error: unknown) => error,
    )
    const mapped = redisCallError(reply, redactRedisUrl(redis.url), 'test call')
    assert.equal(mapped.code, 'STORAGE_ERROR')
    assert.match(mapped.message, /^test call failed in redis at redis:\/\/127\.0\.0\.1:\d+: ERR unknown command/)
    const own = new SvcError('VALUE_TOO_LARGE', 'kept')
    assert.equal(redisCallError(own, 'x', 'y'), own)
    const loading = Object.assign(new Error('LOADING Redis is loading the dataset in memory'), { name: 'ReplyError' })
    assert.equal(redisCallError(loading, 'x', 'y').code, 'ADAPTER_UNAVAILABLE')
  })

  it('with Redis down a call fails at once with ADAPTER_UNAVAILABLE (no offline queue); the client reconnects when Redis is back', async (t) => {
    const late = await startTestRedis()
    t.after(() => late.close())
    await late.stop()
    const client = connectRedis(late.url)
    t.after(() => client.disconnect())
    assert.equal(await waitReady(client, CALL_TIMEOUT_MS), false)
    const failure = await client.get('k').then(
      () => assert.fail('answered without a server'),
      (error: unknown) => redisCallError(error, redactRedisUrl(late.url), 'test get'),
    )
    assert.equal(failure.code, 'ADAPTER_UNAVAILABLE')
    assert.match(failure.message, /^redis at redis:\/\/127\.0\.0\.1:\d+ is unavailable \(test get\): /)
    await late.start()
    await waitFor(() => client.ping().then(() => true, () => false), 'the client to reconnect', 15_000, 50)
  })

  it('a subscriber connection has no call timeout (it waits for messages); a command connection has one', () => {
    const commands = connectRedis(redis.url)
    const subscriber = connectRedis(redis.url, 'subscriber')
    try {
      assert.equal(commands.options.commandTimeout, CALL_TIMEOUT_MS)
      assert.equal(subscriber.options.commandTimeout, undefined)
      assert.equal(commands.options.enableOfflineQueue, false)
    } finally {
      commands.disconnect()
      subscriber.disconnect()
    }
  })
})
