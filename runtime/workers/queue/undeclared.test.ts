/**
 * Enqueueing to an undeclared queue (builtins.md §7.4 step 3, issue 21): `queue_not_found`, whose
 * message ends with the config.yaml lines that declare the queue — the same for every way of
 * enqueueing: svc-sdk's Enqueue action, a worker's raw `invokefunction` with the action, and
 * `svc trigger --enqueue`. The lines parse with the `yaml` library, and pasted under `workers:` of
 * a config.yaml they load as the queue worker's settings with that queue.
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { parse } from 'yaml'
import { InvocationError, registerWorker, TriggerAction, type SvcClient } from 'svc-sdk'
import { cliEnv, runSvc } from '../../../test/support/cli.ts'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { RawWorker } from '../../../test/support/raw-worker.ts'
import { parseConfig } from '../../config/loader.ts'
import { parseQueueWorkerSettings, QUEUE_DEFAULTS } from './settings.ts'

const FIRST_LINE = "Queue 'emails' is not declared in queue_configs. Declare it from code (queue::define; svc-sdk: defineQueue) or in config.yaml under workers: (merged into the queue entry if there is one):"

/** The YAML of a `queue_not_found` message: everything after its first line. */
function yamlOf(message: string): string {
  const at = message.indexOf('\n')
  assert.ok(at > 0, `no lines to paste in: ${message}`)
  return message.slice(at + 1)
}

/** Checks that `yaml` declares `queue` with the default settings, read as svc reads config.yaml. */
function assertDeclares(yaml: string, queue: string): void {
  const entries = parse(`workers:\n${yaml}`) as { workers: Array<{ name: string; config: unknown }> }
  assert.equal(entries.workers.length, 1)
  assert.equal(entries.workers[0]!.name, 'queue')
  const settings = parseQueueWorkerSettings(entries.workers[0]!.config)
  assert.deepEqual([...settings.queue_configs.keys()], [queue])
  assert.deepEqual(settings.queue_configs.get(queue), QUEUE_DEFAULTS)
  // Pasted into a project's config.yaml, below its other entries.
  const config = parseConfig(`workers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n${yaml}\n`, 'config.yaml', { cwd: tmpdir() })
  assert.deepEqual(Object.keys((config.builtins!.queue!.config as { queue_configs: object }).queue_configs), [queue])
}

describe('enqueue to an undeclared queue: the error shows the config.yaml lines (issue 21)', () => {
  let t: TestEngine
  let client: SvcClient
  let dir: string
  before(async () => {
    t = await startTestEngine({ settings: { queue: { adapter: { name: 'memory' }, queue_configs: { known: {} } } } })
    client = registerWorker(t.url, { workerName: 'undeclared-test', otel: { enabled: false } })
    dir = await mkdtemp(join(tmpdir(), 'svc-undeclared-'))
  })
  after(async () => {
    await client.shutdown()
    await t.stop()
    await rm(dir, { recursive: true, force: true })
  })

  it('svc-sdk: TriggerAction.Enqueue rejects with queue_not_found and the lines', async () => {
    const error = await client.trigger({ function_id: 'mail::send', payload: {}, action: TriggerAction.Enqueue({ queue: 'emails' }) }).then(
      () => assert.fail('enqueued to an undeclared queue'),
      (e: InvocationError) => e,
    )
    assert.ok(error instanceof InvocationError)
    assert.equal(error.code, 'queue_not_found')
    assert.equal(error.detail.split('\n')[0], FIRST_LINE)
    assert.equal(yamlOf(error.detail), '  - name: queue\n    config:\n      queue_configs:\n        emails: { max_retries: 3, concurrency: 10 }')
    assertDeclares(yamlOf(error.detail), 'emails')
  })

  it('a raw invokefunction with the enqueue action, for names YAML would misread unquoted', async () => {
    const w = await RawWorker.connect(t.url)
    try {
      for (const queue of ['123', 'true', 'null', '-', 'a:b', '1e3', '.inf', '0x1F', 'emails']) {
        const frame = await w.call('mail::send', {}, { action: { type: 'enqueue', queue } })
        assert.equal(frame.error?.code, 'queue_not_found', queue)
        assertDeclares(yamlOf(frame.error.message), queue)
      }
    } finally {
      await w.close()
    }
  })

  it('svc trigger --enqueue prints the lines, which paste as they are printed', async () => {
    const result = await runSvc(['trigger', 'mail::send', 'to=a@example.com', '--enqueue', 'emails', '--engine', t.url], { cwd: dir, env: cliEnv() })
    assert.equal(result.code, 1, result.stderr)
    const [first, ...rest] = result.stderr.split('\n')
    assert.equal(first, `Error: queue_not_found: ${FIRST_LINE}`)
    // The CLI indents the lines of a message by two more spaces; pasted, they line up under workers: again.
    const printed = rest.filter((line) => line.startsWith('    ')).map((line) => line.slice(2))
    assert.deepEqual(printed, ['  - name: queue', '    config:', '      queue_configs:', '        emails: { max_retries: 3, concurrency: 10 }'])
    assertDeclares(printed.join('\n'), 'emails')
  })

  it('a declared queue (and a redrive of an unknown name) keeps the plain message', async () => {
    const receipt = await client.trigger({ function_id: 'mail::send', payload: {}, action: TriggerAction.Enqueue({ queue: 'known' }) })
    assert.match(receipt.messageReceiptId, /^[0-9a-f-]{36}$/)
    await assert.rejects(t.engine.inject({ function_id: 'svc::queue::redrive', data: { queue: 'emails' } }), { code: 'queue_not_found', message: "Queue 'emails' is not declared in queue_configs" })
  })
})
