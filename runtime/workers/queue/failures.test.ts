/**
 * Failed deliveries in the terminal and in `svc logs` (issue 21 "In the terminal"): a real engine
 * and a worker whose handler throws. Each failed attempt is one warning line — queue, function,
 * `attempt n of m`, the error, when the next retry runs — and the move to the dead letter queue one
 * error line with the `svc trigger` command that redrives the message; both reach the engine's
 * console logger and the log store (`engine::logs::list`) at the default level. A hostile error
 * message (control characters, ANSI, a megabyte) is printed bounded and escaped.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { RawWorker } from '../../../test/support/raw-worker.ts'
import { recordingLogger, type LogEntry } from '../../../test/support/recording-log.ts'
import { MAX_MESSAGE_CHARS } from '../shared/failure-text.ts'
import { waitFor } from '../../../test/support/wait.ts'

type Logs = { logs: Array<{ body: string; severity_text: string }> }

describe('queue worker: failed deliveries are logged (issue 21)', () => {
  let t: TestEngine
  let entries: LogEntry[]
  let w: RawWorker
  before(async () => {
    const recording = recordingLogger()
    entries = recording.entries
    t = await startTestEngine({
      log: recording.log,
      settings: {
        'svc-observability': { store: 'memory' },
        queue: { adapter: { name: 'memory' }, queue_configs: { emails: { max_retries: 2, backoff_ms: 10 }, hostile: { max_retries: 0 } } },
      },
    })
    w = await RawWorker.connect(t.url)
  })
  after(async () => {
    await w.close()
    await t.stop()
  })

  const stored = async (search: string): Promise<Logs['logs']> => ((await t.engine.inject({ function_id: 'engine::logs::list', data: { search } })) as Logs).logs
  const linesOf = (needle: string) => entries.filter((e) => e.message.includes(needle))

  it('one warning per failed attempt with attempt n of m and the next retry, then one error with the redrive command', async () => {
    let calls = 0
    w.serve('mail::send', () => {
      calls++
      throw Object.assign(new Error('SMTP refused'), { code: 'SMTP_DOWN' })
    })
    const answer = await w.call('mail::send', { to: 'a@example.com' }, { action: { type: 'enqueue', queue: 'emails' } })
    const id = answer.result.messageReceiptId as string
    await waitFor(() => linesOf('moved to the dead letter queue').length === 1, "linesOf('moved to the dead letter queue').length === 1")
    assert.equal(calls, 3)
    const failures = linesOf('queue emails: mail::send failed')
    assert.deepEqual(
      failures.map((e) => [e.level, e.message]),
      [
        ['warn', 'queue emails: mail::send failed, attempt 1 of 3: SMTP_DOWN: SMTP refused; next retry in 10 ms'],
        ['warn', 'queue emails: mail::send failed, attempt 2 of 3: SMTP_DOWN: SMTP refused; next retry in 20 ms'],
        ['error', `queue emails: mail::send failed, attempt 3 of 3: SMTP_DOWN: SMTP refused; moved to the dead letter queue. Redrive it: svc trigger svc::queue::redrive_message queue=emails message_id=${id}`],
      ],
    )
    // The same lines in the log store, which `svc logs` reads.
    await waitFor(async () => (await stored('queue emails: mail::send failed')).length === 3, "(await stored('queue emails: mail::send failed')).length === 3")
    const kept = await stored('queue emails: mail::send failed')
    assert.deepEqual(kept.map((r) => r.severity_text).sort(), ['ERROR', 'WARN', 'WARN'])
    // The printed command's payload is what redrives the message.
    const redriven = (await t.engine.inject({ function_id: 'svc::queue::redrive_message', data: { queue: 'emails', message_id: id } })) as { redriven: number }
    assert.equal(redriven.redriven, 1)
  })

  it('a durable subscriber names its topic, and its redrive command the subscriber queue', async () => {
    w.serve('audit::record', () => {
      throw new Error('disk full')
    })
    w.send({ type: 'registertrigger', id: 'sub-1', trigger_type: 'durable:subscriber', function_id: 'audit::record', config: { topic: 'orders', max_retries: 1, backoff_ms: 5 } })
    await waitFor(() => t.engine.triggers.getBinding('sub-1')?.status === 'active', "t.engine.triggers.getBinding('sub-1')?.status === 'active'")
    await t.engine.inject({ function_id: 'svc::durable::publish', data: { topic: 'orders', data: { n: 1 } } })
    await waitFor(() => linesOf('durable subscriber of topic orders').length === 2, "linesOf('durable subscriber of topic orders').length === 2")
    const [first, last] = linesOf('durable subscriber of topic orders')
    assert.equal(first!.message, 'durable subscriber of topic orders: audit::record failed, attempt 1 of 2: invocation_failed: disk full; next retry in 5 ms')
    assert.match(last!.message, /^durable subscriber of topic orders: audit::record failed, attempt 2 of 2: invocation_failed: disk full; moved to the dead letter queue\. Redrive it: svc trigger svc::queue::redrive_message queue=orders::audit::record message_id=[0-9a-f-]{36}$/)
  })

  it('prints a hostile error message bounded, on one line, with no control character', async () => {
    const hostile = `\u001b[2J\u001b]52;c;aGk=\u0007evil\r\n12:00:00.000 engine ERROR forged\u202e${'x'.repeat(1_000_000)}`
    w.serve('bad::handler', () => {
      throw Object.assign(new Error(hostile), { code: 'BAD' })
    })
    await w.call('bad::handler', {}, { action: { type: 'enqueue', queue: 'hostile' } })
    await waitFor(() => linesOf('queue hostile: bad::handler failed').length === 1, "linesOf('queue hostile: bad::handler failed').length === 1")
    const [line] = linesOf('queue hostile: bad::handler failed')
    assert.equal(line!.level, 'error')
    // eslint-disable-next-line no-control-regex
    assert.doesNotMatch(line!.message, /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u202e]/)
    assert.ok(line!.message.includes('BAD: \\x1b[2J\\x1b]52;c;aGk=\\x07evil\\r\\n12:00:00.000 engine ERROR forged\\u202exxx'))
    assert.ok(line!.message.length < MAX_MESSAGE_CHARS * 2 + 300, `line of ${line!.message.length} characters`)
    assert.ok(line!.message.includes('x…; moved to the dead letter queue'))
  })
})
