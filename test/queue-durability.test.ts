/**
 * At-least-once across crashes (builtins.md §7.8): a message in flight when the engine process is
 * killed with SIGKILL is delivered again after a restart on the same data directory, with its
 * attempt count kept; acknowledged messages are never delivered again; nothing is lost. The same
 * holds with the builtin adapter's opt-in `synchronous: normal` (only a power loss differs).
 */
import assert from 'node:assert/strict'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { after, describe, it } from 'node:test'
import { RawWorker, type Frame } from './support/raw-worker.ts'
import { startEngineProcess, tempProject } from './support/processes.ts'
import { waitFor } from './support/wait.ts'

const QUEUE_YAML = `  - name: queue
    config:
      queue_configs:
        jobs:
          max_retries: 3
          backoff_ms: 50
          concurrency: 4
`

/** The same cases with the default commits (fsync each) and with the opt-in `synchronous: normal`, whose promise is the same across a process crash. */
const MODES: Array<[string, string]> = [
  ['builtin, synchronous: full (default)', QUEUE_YAML],
  ['builtin, synchronous: normal', QUEUE_YAML.replace('    config:\n', '    config:\n      adapter: { name: builtin, config: { synchronous: normal } }\n')],
]

interface Delivery {
  n: number
  id: string
  attempt: string
}

function delivery(data: { n: number }, frame: Frame): Delivery {
  const baggage = Object.fromEntries(String(frame.baggage).split(',').map((e) => e.split('=') as [string, string]))
  return { n: data.n, id: baggage['svc.queue.message_id']!, attempt: baggage['svc.queue.attempt']! }
}

async function stats(w: RawWorker): Promise<{ depth: number; in_flight: number; dlq_depth: number }> {
  const frame = await w.call('engine::queue::topic_stats', { topic: 'jobs' })
  return frame.result
}

for (const [mode, QUEUE_YAML] of MODES) describe(`queue durability (${mode})`, () => {
  let project: string
  after(() => rm(project, { recursive: true, force: true }))

  it('redelivers the in-flight message after kill -9 with its attempt count, and no acknowledged one', async () => {
    project = await tempProject(QUEUE_YAML)
    let engine = await startEngineProcess(project)
    let w = await RawWorker.connect(engine.engineUrl)
    const before: Delivery[] = []
    w.serve('job::run', (data, frame) => {
      before.push(delivery(data, frame))
      if (data.n === 7) return new Promise(() => {}) // still running when the engine dies
      return { ok: true }
    })
    const receipts = new Map<number, string>()
    for (let n = 0; n < 30; n++) {
      const answer = await w.call('job::run', { n }, { action: { type: 'enqueue', queue: 'jobs' } })
      assert.equal(answer.error, undefined)
      receipts.set(n, answer.result.messageReceiptId)
    }
    await waitFor(async () => {
      const s = await stats(w)
      return s.depth === 0 && s.in_flight === 1 && before.length === 30
    }, 'every message answered but the one in flight', 10_000)
    // The acknowledgements of the last answers committed: queue.db holds only the message in flight.
    const db = new DatabaseSync(join(project, '.svc', 'data', 'queue.db'), { timeout: 10_000 })
    try {
      await waitFor(() => (db.prepare('SELECT count(*) AS n FROM queue_messages').get() as { n: number }).n === 1, 'queue.db holding only the message in flight')
    } finally {
      db.close()
    }
    await engine.kill9()
    await w.close().catch(() => {})

    engine = await startEngineProcess(project)
    w = await RawWorker.connect(engine.engineUrl)
    const afterRestart: Delivery[] = []
    w.serve('job::run', (data, frame) => {
      afterRestart.push(delivery(data, frame))
      return { ok: true }
    })
    await waitFor(() => afterRestart.length >= 1, 'afterRestart.length >= 1', 10_000)
    await waitFor(async () => {
      const s = await stats(w)
      return s.depth === 0 && s.in_flight === 0
    }, 'nothing waiting or in flight (depth counts delayed retries too)', 10_000)
    assert.deepEqual(afterRestart, [{ n: 7, id: receipts.get(7)!, attempt: '2' }])
    assert.equal((await stats(w)).dlq_depth, 0)
    // Every message was delivered, each acknowledged one exactly once.
    assert.deepEqual([...new Set(before.map((d) => d.n))].sort((a, b) => a - b), [...receipts.keys()])
    assert.equal(before.length, 30)
    await w.close()
    assert.equal(await engine.stop(), 0)
  })

  it('loses no answered enqueue and repeats no attempt number across kill -9 under load (enqueues and deliveries in flight)', async () => {
    const dir = await tempProject(QUEUE_YAML)
    try {
      let engine = await startEngineProcess(dir)
      let w = await RawWorker.connect(engine.engineUrl)
      const seen: Delivery[] = []
      w.serve('job::run', (data, frame) => {
        seen.push(delivery(data, frame))
        // Answer a turn later, so that several attempts are in flight when the engine dies.
        return new Promise((resolve) => setImmediate(() => resolve({ ok: true })))
      })
      // A producer with 16 enqueues awaiting their receipt at a time, until the engine dies.
      const receipts = new Map<number, string>()
      let killed = false
      let next = 0
      const lane = async () => {
        while (!killed && next < 5_000) {
          const n = next++
          let answer
          try {
            answer = await w.call('job::run', { n }, { action: { type: 'enqueue', queue: 'jobs' } })
          } catch {
            return // the engine died with this enqueue unanswered: it may or may not be stored
          }
          if (answer.error === undefined) receipts.set(n, answer.result.messageReceiptId)
        }
      }
      const producing = Promise.all(Array.from({ length: 16 }, lane))
      await waitFor(() => seen.length >= 150 && receipts.size > seen.length, 'deliveries running while enqueues are answered', 20_000)
      killed = true
      await engine.kill9()
      await w.close().catch(() => {})
      await producing
      const beforeKill = seen.length

      engine = await startEngineProcess(dir)
      w = await RawWorker.connect(engine.engineUrl)
      w.serve('job::run', (data, frame) => void seen.push(delivery(data, frame)))
      const answered = new Set(receipts.values())
      await waitFor(() => {
        const delivered = new Set(seen.map((d) => d.id))
        return [...answered].every((id) => delivered.has(id))
      }, 'every answered enqueue delivered', 60_000)
      await waitFor(async () => {
        const s = await stats(w)
        return s.depth === 0 && s.in_flight === 0
      }, 'the queue drained', 20_000)
      assert.equal((await stats(w)).dlq_depth, 0)
      assert.ok(seen.slice(0, beforeKill).every((d) => d.attempt === '1'), 'no attempt failed before the kill')
      // Attempt counts kept: an attempt stored before the kill is never numbered again after it.
      const attempts = new Map<string, string[]>()
      for (const d of seen) attempts.set(d.id, [...(attempts.get(d.id) ?? []), d.attempt])
      for (const [id, list] of attempts) assert.equal(new Set(list).size, list.length, `message ${id} got attempts ${list.join(', ')}`)
      await w.close()
      assert.equal(await engine.stop(), 0)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('keeps enqueued messages across kill -9 before any delivery (nothing lost)', async () => {
    const dir = await tempProject(QUEUE_YAML)
    try {
      let engine = await startEngineProcess(dir)
      let w = await RawWorker.connect(engine.engineUrl)
      for (let n = 0; n < 50; n++) {
        const answer = await w.call('absent::run', { n }, { action: { type: 'enqueue', queue: 'jobs' } })
        assert.equal(answer.error, undefined)
      }
      await engine.kill9()
      await w.close().catch(() => {})
      engine = await startEngineProcess(dir)
      w = await RawWorker.connect(engine.engineUrl)
      const seen = new Set<number>()
      w.serve('absent::run', (data) => void seen.add(data.n))
      await waitFor(() => seen.size === 50, 'seen.size === 50', 15_000)
      await w.close()
      assert.equal(await engine.stop(), 0)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
