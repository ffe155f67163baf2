import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { after, describe, it } from 'node:test'
import { input, runQueueBackendConformance } from '../conformance.ts'
import { openSqliteQueue } from './sqlite.ts'

const root = mkdtempSync(join(tmpdir(), 'svc-queue-sqlite-'))
after(() => rmSync(root, { recursive: true, force: true }))
let counter = 0
const freshDir = () => join(root, `case-${++counter}`)

runQueueBackendConformance('builtin (SQLite)', () => openSqliteQueue({}, { dataDir: freshDir() }))

describe('builtin (SQLite) queue backend', () => {
  const T0 = 1_700_000_000_000
  it('creates <dataDir>/queue.db in WAL mode with synchronous=FULL', async () => {
    const dataDir = freshDir()
    const backend = openSqliteQueue({}, { dataDir })
    await backend.enqueue([input()])
    const db = new DatabaseSync(join(dataDir, 'queue.db'))
    assert.equal((db.prepare('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode, 'wal')
    assert.equal((db.prepare('SELECT count(*) AS n FROM queue_messages').get() as { n: number }).n, 1)
    db.close()
    await backend.close()
    assert.ok(existsSync(join(dataDir, 'queue.db')))
  })

  it('commits before the promise resolves, and reopens with every state kept', async () => {
    const dataDir = freshDir()
    const first = openSqliteQueue({}, { dataDir }, T0)
    const acked = input({ data: { n: 1 } })
    const inflight = input({ data: { n: 2 }, group: 'g' })
    const delayed = input({ data: { n: 3 }, ready_at: T0 + 60_000 })
    const dead = input({ data: { n: 4 } })
    const later = input({ data: { n: 5 }, group: 'g' })
    await first.enqueue([acked, inflight, delayed, dead, later])
    await first.enqueue([input({ idempotency: { key: 'k', expires_at: T0 + 10_000 } })])
    await first.reserve('q', { now: T0, limit: 10 })
    await first.ack(acked.id)
    await first.deadLetter(dead.id, { code: 'boom', message: 'x' }, T0 + 1)
    await first.saveSubscriber({ queue: 'topic::f', topic: 'topic', namespace: 'default', function_id: 'f', detached_at: 9 })
    // Read through another connection before closing: everything is already committed.
    const reader = new DatabaseSync(join(dataDir, 'queue.db'), { readOnly: true })
    assert.equal((reader.prepare("SELECT count(*) AS n FROM queue_messages WHERE state = 'in_flight'").get() as { n: number }).n, 2)
    reader.close()
    await first.close()

    const second = openSqliteQueue({}, { dataDir }, T0 + 100)
    assert.equal(await second.get(acked.id), undefined)
    assert.deepEqual(await second.recover(T0 + 100, () => 4), { requeued: 2, deadLettered: 0 })
    const got = await second.reserve('q', { now: T0 + 100, limit: 10 })
    assert.deepEqual(got.map((m) => [m.id, m.attempts]).sort(), [[inflight.id, 2], [got.find((m) => m.id !== inflight.id)!.id, 2]].sort())
    assert.equal((await second.deadLetters('q', 0, 10))[0]!.id, dead.id)
    assert.deepEqual(await second.enqueue([input({ idempotency: { key: 'k', expires_at: T0 + 20_000 }, enqueued_at: T0 + 100 })]).then((o) => o[0]!.duplicate), true)
    assert.equal((await second.subscribers())[0]!.detached_at, 9)
    // fifo order kept across the restart: `later` waits behind `inflight`.
    assert.ok(!got.some((m) => m.id === later.id))
    assert.equal((await second.counts('q', T0 + 100)).delayed, 1)
    await second.close()
  })
})
