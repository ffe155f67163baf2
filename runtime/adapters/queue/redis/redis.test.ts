/**
 * The redis queue backend against a real `redis-server` (test/support/redis.ts): the shared
 * conformance suite, then two backends on one Redis acting as two engines of a fleet (leases,
 * crash recovery, wake-ups), and Redis going away and coming back.
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { startTestRedis } from '../../../../test/support/redis.ts'
import { input, runQueueBackendConformance } from '../conformance.ts'
import { RedisQueueBackend, type RedisQueueConfig } from './redis.ts'

const redis = await startTestRedis()
after(() => redis.close())

let prefixes = 0
const config = (fields: Partial<RedisQueueConfig> = {}): RedisQueueConfig => ({ url: redis.url, key_prefix: `t${++prefixes}:`, lease_ms: 30_000, ...fields })
const open = (fields: Partial<RedisQueueConfig> = {}) => RedisQueueBackend.open(config(fields))

runQueueBackendConformance('redis', () => open())
