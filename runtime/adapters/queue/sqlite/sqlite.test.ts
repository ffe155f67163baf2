import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import { input, runQueueBackendConformance } from '../conformance.ts'
import { RawJson } from 'svc-protocol/codec'
import { IndexedQueueBackend } from '../indexed.ts'
import type { QueueMessageInput } from '../types.ts'
import { openSqliteQueue, SqliteJournal } from './sqlite.ts'

const root = mkdtempSync(join(tmpdir(), 'svc-queue-sqlite-'))
after(() => rmSync(root, { recursive: true, force: true }))
let counter = 0
const freshDir = () => join(root, `case-${++counter}`)

runQueueBackendConformance('builtin (SQLite)', () => openSqliteQueue({}, { dataDir: freshDir() }))
runQueueBackendConformance('builtin (SQLite, synchronous: normal)', () => openSqliteQueue({ synchronous: 'normal' }, { dataDir: freshDir() }))

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

/** The `queue_messages` table of queue.db before issue 20: keyed by `id`, `seq` a plain column. */
const OLD_MESSAGES_TABLE = `CREATE TABLE queue_messages (
    id        TEXT PRIMARY KEY,
    seq       INTEGER NOT NULL,
    queue     TEXT NOT NULL,
    state     TEXT NOT NULL,
    attempts  INTEGER NOT NULL,
    ready_at  INTEGER NOT NULL,
    failed_at INTEGER,
    error     TEXT,
    body      TEXT NOT NULL
  )`

/** Rewrites the messages of the queue.db in `dataDir` into the table as it was before issue 20, rows unchanged. */
function toOldSchema(dataDir: string): void {
  const db = new DatabaseSync(join(dataDir, 'queue.db'))
  db.exec(`BEGIN; ALTER TABLE queue_messages RENAME TO current_messages; ${OLD_MESSAGES_TABLE};
    INSERT INTO queue_messages (id, seq, queue, state, attempts, ready_at, failed_at, error, body) SELECT id, seq, queue, state, attempts, ready_at, failed_at, error, body FROM current_messages;
    DROP TABLE current_messages; COMMIT`)
  db.close()
}

describe('builtin (SQLite) queue backend: a queue.db of the schema before issue 20', () => {
  const T0 = 1_700_000_000_000
  it('opens it, keeps every message in its state and order, and delivers them', async () => {
    const dataDir = freshDir()
    const first = openSqliteQueue({}, { dataDir }, T0)
    const ready = Array.from({ length: 5 }, (_, n) => input({ data: { n } }))
    const inflight = input({ data: { n: 10 }, group: 'g' })
    const behind = input({ data: { n: 11 }, group: 'g' })
    const delayed = input({ data: { n: 12 }, ready_at: T0 + 60_000 })
    const dead = input({ queue: 'other', data: { n: 13 } })
    await first.enqueue([inflight, behind, dead])
    await first.enqueue([...ready, delayed, input({ data: { n: 14 }, idempotency: { key: 'k', expires_at: T0 + 10_000 } })])
    const keyed = (await first.reserve('q', { now: T0, limit: 1 }))[0]!
    assert.equal(keyed.id, inflight.id)
    await first.reserve('other', { now: T0, limit: 1 })
    await first.deadLetter(dead.id, { code: 'boom', message: 'x' }, T0 + 1)
    await first.close()
    toOldSchema(dataDir)
    const before = new DatabaseSync(join(dataDir, 'queue.db'), { readOnly: true })
    const rowsBefore = before.prepare('SELECT id, seq, queue, state, attempts, ready_at, failed_at, error, body FROM queue_messages ORDER BY seq').all()
    assert.equal((before.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'index' AND tbl_name = 'queue_messages'").get() as { n: number }).n, 1, 'the old table has its id index')
    before.close()

    const second = openSqliteQueue({}, { dataDir }, T0 + 100)
    try {
      const after = new DatabaseSync(join(dataDir, 'queue.db'), { readOnly: true })
      assert.deepEqual(after.prepare('SELECT id, seq, queue, state, attempts, ready_at, failed_at, error, body FROM queue_messages ORDER BY seq').all(), rowsBefore, 'every row kept as it was')
      assert.equal((after.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'index' AND tbl_name = 'queue_messages'").get() as { n: number }).n, 0, 'no index beside the table keyed by seq')
      after.close()
      assert.deepEqual(await second.recover(T0 + 100, () => 4), { requeued: 1, deadLettered: 0 })
      assert.equal((await second.deadLetters('other', 0, 10))[0]!.id, dead.id)
      assert.equal((await second.enqueue([input({ idempotency: { key: 'k', expires_at: T0 + 20_000 }, enqueued_at: T0 + 100 })]))[0]!.duplicate, true)
      // Every live message delivered once, the fifo group's in its order and the others in enqueue order.
      const delivered: number[] = []
      for (let now = T0 + 100; delivered.length < 9 && now < T0 + 10 * 60_000; now += 30_000) {
        for (let got = await second.reserve('q', { now, limit: 1 }); got.length > 0; got = await second.reserve('q', { now, limit: 1 })) {
          delivered.push((got[0]!.data.value as { n: number }).n)
          await second.ack(got[0]!.id)
        }
      }
      assert.deepEqual([...delivered].sort((a, b) => a - b), [0, 1, 2, 3, 4, 10, 11, 12, 14])
      assert.ok(delivered.indexOf(10) < delivered.indexOf(11), 'fifo order kept')
      assert.deepEqual(delivered.filter((n) => n < 5 || n === 14), [0, 1, 2, 3, 4, 14], 'enqueue order kept')
      await second.enqueue([input({ data: { n: 20 } })])
    } finally {
      await second.close()
    }
    // A new message and the acknowledgements written through the migrated table are read back.
    const third = openSqliteQueue({}, { dataDir }, T0 + 20 * 60_000)
    try {
      const left = await third.reserve('q', { now: T0 + 20 * 60_000, limit: 10 })
      assert.deepEqual(left.map((m) => (m.data.value as { n: number }).n), [20], 'acknowledged messages stay deleted')
      assert.equal((await third.deadLetters('other', 0, 10))[0]!.id, dead.id)
    } finally {
      await third.close()
    }
  })
})

/**
 * A journal that reads, inside each transaction right before its COMMIT, the connection's
 * `PRAGMA synchronous` (1 NORMAL, 2 FULL): the level SQLite applies to that commit.
 */
class ProbeJournal extends SqliteJournal {
  readonly levels: number[] = []
  /** Called with the level of each commit as it happens. */
  onCommit: (level: number) => void = () => {}
  protected override beforeCommit(): void {
    const level = Number((this.db.prepare('PRAGMA synchronous').get() as { synchronous: number }).synchronous)
    this.levels.push(level)
    this.onCommit(level)
  }
}
const NORMAL = 1
const FULL = 2

describe('builtin (SQLite) queue backend: the synchronous level of each commit (builtins.md §7.8, §13.2)', () => {
  const T0 = 1_700_000_000_000
  const probed = (synchronous: 'FULL' | 'NORMAL') => {
    const journal = new ProbeJournal(join(freshDir(), 'queue.db'), synchronous)
    return { journal, backend: new IndexedQueueBackend('builtin', journal, T0) }
  }
  /** The levels of the commits `step` made. */
  const levelsOf = async (journal: ProbeJournal, step: () => Promise<unknown>) => {
    const from = journal.levels.length
    await step()
    return journal.levels.slice(from)
  }

  it('commits what answers a caller with FULL (fsync) and the delivery bookkeeping with NORMAL', async () => {
    const { journal, backend } = probed('FULL')
    try {
      const a = input({ data: { n: 1 } })
      const b = input({ data: { n: 2 } })
      assert.deepEqual(await levelsOf(journal, () => backend.enqueue([a, b])), [FULL], 'an enqueue is durable before its receipt')
      assert.deepEqual(await levelsOf(journal, () => backend.reserve('q', { now: T0, limit: 1 })), [NORMAL], "an attempt's start")
      assert.deepEqual(await levelsOf(journal, () => backend.ack(a.id)), [NORMAL], 'an acknowledgement')
      assert.deepEqual(await levelsOf(journal, () => backend.reserve('q', { now: T0, limit: 1 })), [NORMAL])
      assert.deepEqual(await levelsOf(journal, () => backend.release(b.id, { ready_at: T0 })), [NORMAL], 'a retry')
      await backend.reserve('q', { now: T0, limit: 1 })
      assert.deepEqual(await levelsOf(journal, () => backend.deadLetter(b.id, { code: 'boom', message: 'x' }, T0)), [NORMAL], 'a dead letter after an attempt')
      assert.deepEqual(await levelsOf(journal, () => backend.redriveMessage('q', b.id, T0)), [FULL], 'a redrive answers its caller')
      await backend.reserve('q', { now: T0, limit: 1 })
      await backend.deadLetter(b.id, { code: 'boom', message: 'x' }, T0)
      assert.deepEqual(await levelsOf(journal, () => backend.redrive('q', T0)), [FULL])
      await backend.reserve('q', { now: T0, limit: 1 })
      await backend.deadLetter(b.id, { code: 'boom', message: 'x' }, T0)
      assert.deepEqual(await levelsOf(journal, () => backend.discard('q', b.id)), [FULL], 'a discard answers its caller')
      const record = { queue: 't::f', topic: 't', namespace: 'default', function_id: 'f' }
      assert.deepEqual(await levelsOf(journal, () => backend.saveSubscriber(record)), [FULL])
      assert.deepEqual(await levelsOf(journal, () => backend.deleteSubscriber('t::f')), [FULL])
      // An enqueue and an acknowledgement in one turn share one commit, which is then FULL.
      const c = input({ data: { n: 3 } })
      await backend.enqueue([c])
      await backend.reserve('q', { now: T0, limit: 1 })
      const d = input({ data: { n: 4 } })
      assert.deepEqual(await levelsOf(journal, () => Promise.all([backend.ack(c.id), backend.enqueue([d])])), [FULL])
      await backend.reserve('q', { now: T0, limit: 1 })
      assert.deepEqual(await levelsOf(journal, () => backend.recover(T0, () => 4)), [NORMAL], 'recovery at open')
    } finally {
      await backend.close()
    }
  })

  it('commits everything with NORMAL under the opt-in synchronous: normal', async () => {
    const { journal, backend } = probed('NORMAL')
    try {
      const a = input()
      await backend.enqueue([a])
      await backend.reserve('q', { now: T0, limit: 1 })
      await backend.ack(a.id)
      await backend.saveSubscriber({ queue: 't::f', topic: 't', namespace: 'default', function_id: 'f' })
      assert.deepEqual(journal.levels, [NORMAL, NORMAL, NORMAL, NORMAL])
    } finally {
      await backend.close()
    }
  })
})

describe('builtin (SQLite) queue backend: unawaited operations', () => {
  const T0 = 1_700_000_000_000
  /** Resolves after the event loop turned once more (setImmediate runs after the I/O of a turn). */
  const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

  it('close commits the changes of operations not yet awaited', async () => {
    const dataDir = freshDir()
    const first = openSqliteQueue({}, { dataDir }, T0)
    const a = input({ data: { n: 1 } })
    const b = input({ data: { n: 2 } })
    const c = input({ data: { n: 3 } })
    await first.enqueue([a])
    // Not awaited: changes of this turn and of the next one.
    const pending = [first.enqueue([b]), nextTurn().then(() => first.enqueue([c])), first.reserve('q', { now: T0, limit: 1 })]
    await nextTurn()
    await first.close()
    await Promise.all(pending)
    const second = openSqliteQueue({}, { dataDir }, T0)
    assert.deepEqual((await second.get(a.id))?.attempts, 1)
    assert.deepEqual([(await second.get(b.id))?.id, (await second.get(c.id))?.id], [b.id, c.id])
    await second.close()
  })
})

/** A journal whose next commits fail (as on a full disk) while `failing` is set: the transaction is rolled back. */
class FailingJournal extends SqliteJournal {
  failing = false
  protected override beforeCommit(): void {
    if (this.failing) throw new Error('disk full')
  }
}

describe('builtin (SQLite) queue backend: payload text', () => {
  const T0 = 1_700_000_000_000
  it('keeps a payload given as JSON text byte for byte across a restart, and reads the bodies an earlier version wrote', async () => {
    const dataDir = freshDir()
    const text = '{"id": 12345678901234567891, "tags": ["a", "b\\"c"], "data": {"x": 1}}'
    const first = openSqliteQueue({}, { dataDir }, T0)
    const raw = input({ data: new RawJson(text), metadata: { m: 1 }, traceparent: '00-0123456789abcdef0123456789abcdef-0123456789abcdef-01' })
    const lone = input({ data: new RawJson('["x\udfff"]') })
    const plain = input({ data: { n: 1 } })
    await first.enqueue([raw, lone, plain])
    await first.close()
    const second = openSqliteQueue({}, { dataDir }, T0)
    try {
      const got = await second.reserve('q', { now: T0, limit: 10 })
      assert.deepEqual(
        got.map((m) => [m.id, m.data.text, m.size_bytes]),
        [
          [raw.id, text, Buffer.byteLength(text)],
          [lone.id, '["x\\udfff"]', 11],
          [plain.id, '{"n":1}', 7],
        ],
      )
      assert.deepEqual([got[0]!.metadata, got[0]!.traceparent, got[1]!.data.value], [{ m: 1 }, raw.traceparent, ['x\udfff']])
    } finally {
      await second.close()
    }
    // A body without the payload's length first (as written before issue 20): the payload is read from the JSON.
    const db = new DatabaseSync(join(dataDir, 'queue.db'))
    db.exec("UPDATE queue_messages SET body = json_remove(body, '$.data_chars')")
    db.close()
    const third = openSqliteQueue({}, { dataDir }, T0)
    try {
      const got = await Promise.all([raw.id, lone.id, plain.id].map((id) => third.get(id)))
      assert.deepEqual(
        got.map((m) => [m!.data.value, m!.metadata, m!.state, m!.attempts]),
        [
          [JSON.parse(text), { m: 1 }, 'in_flight', 1],
          [['x\udfff'], undefined, 'in_flight', 1],
          [{ n: 1 }, undefined, 'in_flight', 1],
        ],
      )
    } finally {
      await third.close()
    }
  })
})

describe('builtin (SQLite) queue backend: a failed transaction', () => {
  const T0 = 1_700_000_000_000
  it('rejects its operations, and the next commit writes the whole row of a message whose first write was lost', async () => {
    const dataDir = freshDir()
    const journal = new FailingJournal(join(dataDir, 'queue.db'), 'FULL')
    const backend = new IndexedQueueBackend('builtin', journal, T0)
    const a = input({ data: { n: 1 } })
    journal.failing = true
    await assert.rejects(backend.enqueue([a]), /disk full/)
    journal.failing = false
    // The index kept it: its attempt start is the next write, and the row is written whole.
    assert.deepEqual((await backend.reserve('q', { now: T0, limit: 1 })).map((m) => m.id), [a.id])
    await backend.close()
    const reopened = openSqliteQueue({}, { dataDir }, T0)
    try {
      const stored = await reopened.get(a.id)
      assert.deepEqual([stored?.state, stored?.attempts, stored?.data.value], ['in_flight', 1, { n: 1 }])
    } finally {
      await reopened.close()
    }
  })
})

describe('builtin (SQLite) queue backend under hostile names and unawaited operations (fast-check)', () => {
  const T0 = 1_700_000_000_000
  // Names and data that reach SQLite's UTF-8 text columns through bound parameters: lone
  // surrogates, NUL, quotes, non-BMP, long strings, empty strings.
  const hostile = fc.oneof(
    fc.constantFrom('', 'q', '\u0000', 'a\u0000b', "'", '"', '\\', 'a\ud800', 'a\udc00', '\ud800', '\udfff\ud800', '😀', 'e\u0301', '\n', '%'),
    fc.string({ unit: 'binary', maxLength: 8 }),
    fc.string({ maxLength: 300 }).map((s) => s.repeat(3)),
  )
  type Op =
    | { kind: 'enqueue'; queue: number; group?: number; idem?: number; dead: boolean; delay: boolean }
    | { kind: 'reserve'; queue: number }
    | { kind: 'settle'; pick: number; how: 'ack' | 'release' | 'refund' | 'dead' }
    | { kind: 'dlq'; queue: number; how: 'redrive' | 'discard' }
    | { kind: 'subscriber'; queue: number; remove: boolean }
    /** Awaits every operation issued since the last one (the others run unawaited, across turns). */
    | { kind: 'await' }
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('enqueue' as const), queue: fc.nat(2), group: fc.option(fc.nat(3), { nil: undefined }), idem: fc.option(fc.nat(3), { nil: undefined }), dead: fc.boolean(), delay: fc.boolean() }, { requiredKeys: ['kind', 'queue', 'dead', 'delay'] }),
    fc.record({ kind: fc.constant('reserve' as const), queue: fc.nat(2) }),
    fc.record({ kind: fc.constant('settle' as const), pick: fc.nat(), how: fc.constantFrom('ack' as const, 'release' as const, 'refund' as const, 'dead' as const) }),
    fc.record({ kind: fc.constant('dlq' as const), queue: fc.nat(2), how: fc.constantFrom('redrive' as const, 'discard' as const) }),
    fc.record({ kind: fc.constant('subscriber' as const), queue: fc.nat(2), remove: fc.boolean() }),
    fc.constant({ kind: 'await' as const }),
  )

  const byQueue = (a: { queue: string }, b: { queue: string }) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0)

  it('a reopened store holds exactly what the live one held, whatever the names and the interleaving', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('full' as const, 'normal' as const), fc.array(hostile, { minLength: 3, maxLength: 3 }), fc.array(hostile, { minLength: 4, maxLength: 4 }), fc.array(op, { minLength: 1, maxLength: 30 }), async (synchronous, queues, names, ops) => {
        const dataDir = freshDir()
        // The level of every commit, read in the commit path: an operation that answers a caller
        // with a durability promise resolves only after a FULL commit made since it was issued;
        // a commit while no such operation waits is NORMAL (and every commit is with `normal`).
        const journal = new ProbeJournal(join(dataDir, 'queue.db'), synchronous === 'full' ? 'FULL' : 'NORMAL')
        const live = new IndexedQueueBackend('builtin', journal, T0)
        let fullCommits = 0
        let durableWaiting = 0
        journal.onCommit = (level) => {
          if (synchronous === 'normal' || durableWaiting === 0) assert.equal(level, NORMAL, 'a commit that answers no caller does not wait for the disk')
          if (level === FULL) fullCommits++
        }
        /** `promise` of an operation promised durable: it resolves after a FULL commit when it `changed` something. */
        const durable = <T,>(promise: Promise<T>, changed: (value: T) => boolean): Promise<T> => {
          const before = fullCommits
          durableWaiting++
          return promise.then(
            (value) => {
              durableWaiting--
              if (synchronous === 'full' && changed(value)) assert.ok(fullCommits > before, 'answered only after an fsynced commit')
              return value
            },
            (error: unknown) => {
              durableWaiting--
              throw error
            },
          )
        }
        const ids = new Set<string>()
        const inFlight: string[] = []
        let unawaited: Array<Promise<unknown>> = []
        let n = 0
        // Every operation at its own time: dead letters keep their order (failed_at) across the reopen.
        let now = T0
        try {
          for (const o of ops) {
            now += 10
            switch (o.kind) {
              case 'enqueue': {
                const fields: Partial<QueueMessageInput> = { id: `${names[n % names.length]}#${++n}`, queue: queues[o.queue]!, function_id: names[n % names.length]!, namespace: names[(n + 1) % names.length]!, enqueued_at: now, ready_at: o.delay ? now + 15 : now, data: { name: names[(n + 2) % names.length], n } }
                if (o.group !== undefined) fields.group = names[o.group]!
                if (o.idem !== undefined) fields.idempotency = { key: names[o.idem]!, expires_at: now + 100 }
                if (o.dead) fields.dead = { code: 'no_subscribers', message: names[0]! }
                ids.add(fields.id!)
                unawaited.push(durable(live.enqueue([input(fields)]), (outcomes) => outcomes.some((o) => !o.duplicate)))
                break
              }
              case 'reserve':
                unawaited.push(live.reserve(queues[o.queue]!, { now, limit: 1000 }).then((got) => inFlight.push(...got.map((m) => m.id))))
                break
              case 'settle': {
                if (inFlight.length === 0) break
                const [id] = inFlight.splice(o.pick % inFlight.length, 1)
                unawaited.push(o.how === 'ack' ? live.ack(id!) : o.how === 'dead' ? live.deadLetter(id!, { code: 'boom', message: names[2]!, stacktrace: names[3]! }, now) : live.release(id!, { ready_at: now + 5, refund: o.how === 'refund' }))
                break
              }
              case 'dlq': {
                const dead = await live.deadLetters(queues[o.queue]!, 0, 1000)
                unawaited.push(o.how === 'redrive' ? durable(live.redrive(queues[o.queue]!, now), (count) => count > 0) : durable(live.discard(queues[o.queue]!, dead[0]?.id ?? names[3]!), (discarded) => discarded))
                break
              }
              case 'subscriber':
                unawaited.push(o.remove ? durable(live.deleteSubscriber(queues[o.queue]!), () => false) : durable(live.saveSubscriber({ queue: queues[o.queue]!, topic: names[0]!, namespace: names[1]!, function_id: names[2]! }), () => true))
                break
              case 'await':
                await Promise.all(unawaited)
                unawaited = []
                break
            }
          }
          await Promise.all(unawaited)
          const expected = { messages: await Promise.all([...ids].map((id) => live.get(id))), counts: await Promise.all(queues.map((q) => live.counts(q, now))), dead: await Promise.all(queues.map((q) => live.deadLetters(q, 0, 1000))), subscribers: (await live.subscribers()).sort(byQueue), queues: (await live.queues()).sort() }
          await live.close()
          const reopened = openSqliteQueue({ synchronous }, { dataDir }, now)
          try {
            const actual = { messages: await Promise.all([...ids].map((id) => reopened.get(id))), counts: await Promise.all(queues.map((q) => reopened.counts(q, now))), dead: await Promise.all(queues.map((q) => reopened.deadLetters(q, 0, 1000))), subscribers: (await reopened.subscribers()).sort(byQueue), queues: (await reopened.queues()).sort() }
            assert.deepEqual(actual, expected)
          } finally {
            await reopened.close()
          }
        } finally {
          await Promise.allSettled(unawaited)
          await live.close()
        }
      }),
      { numRuns: 40 },
    )
  })
})

describe('builtin queue adapter entry', () => {
  it('names the opt-in synchronous: normal in the log line of the adapter in use, and only it', async () => {
    const { describeQueueAdapter, parseQueueAdapterEntry } = await import('../index.ts')
    const context = { dataDir: '/srv/app/.svc/data' }
    assert.equal(describeQueueAdapter(parseQueueAdapterEntry({ name: 'builtin', config: { synchronous: 'normal' } }), context), 'builtin:/srv/app/.svc/data/queue.db (synchronous: normal, no wait for the disk)')
    assert.equal(describeQueueAdapter(parseQueueAdapterEntry({ name: 'builtin', config: { synchronous: 'full' } }), context), 'builtin:/srv/app/.svc/data/queue.db')
    assert.equal(describeQueueAdapter(parseQueueAdapterEntry(undefined), context), 'builtin:/srv/app/.svc/data/queue.db')
  })
})

describe('builtin queue adapter entry under hostile config (fast-check)', () => {
  it('parses to path and synchronous as documented, or refuses with the field named', async () => {
    const { parseQueueAdapterEntry } = await import('../index.ts')
    const value = fc.oneof(fc.constantFrom('full', 'normal', 'FULL', 'off', 'extra', '', ' normal', null, 0, 1, true, '__proto__'), fc.jsonValue({ maxDepth: 2 }), fc.string({ unit: 'binary', maxLength: 8 }))
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('path', 'synchronous', 'sync', '__proto__', 'constructor'), value, { maxKeys: 3 }), (config) => {
        let spec
        try {
          spec = parseQueueAdapterEntry({ name: 'builtin', config })
        } catch (error) {
          assert.match((error as Error).message, /^adapter\.config\b/)
          return
        }
        assert.equal(spec.name, 'builtin')
        const parsed = spec.config as { path?: unknown; synchronous?: unknown }
        assert.ok(parsed.synchronous === undefined || parsed.synchronous === 'full' || parsed.synchronous === 'normal')
        assert.ok(parsed.path === undefined || (typeof parsed.path === 'string' && parsed.path !== ''))
        for (const key of Object.keys(parsed)) assert.ok(key === 'path' || key === 'synchronous', key)
      }),
      { numRuns: 300 },
    )
  })
})
