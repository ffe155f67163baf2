/**
 * Property-based fuzz test of the queue worker's functions (builtins.md §7.3, §7.4): random
 * payloads never crash the engine and are answered with a result or a stable catalogue code; the
 * queue keeps delivering afterwards.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { registerWorker } from 'svc-sdk'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { errorText, MAX_MESSAGE_CHARS, MAX_NAME_CHARS, quoted } from '../shared/failure-text.ts'
import { redriveHint } from './delivery.ts'
import { parse } from 'yaml'
import { parseQueueWorkerSettings, queueDeclarationYaml } from './settings.ts'
import { MAX_DLQ_STACK_CHARS } from './delivery.ts'
import { waitFor } from '../../../test/support/wait.ts'

const CODES = new Set([
  'INVALID_ARGUMENTS',
  'queue_not_set',
  'topic_not_set',
  'message_id_not_set',
  'queue_not_found',
  'invalid_message_group',
  'invalid_queue_config',
  'SCHEMA_INVALID',
  'enqueue_error',
])
const FUNCTIONS = [
  'svc::durable::publish',
  'queue::define',
  'svc::queue::redrive',
  'svc::queue::redrive_message',
  'svc::queue::discard_message',
  'engine::queue::list_topics',
  'engine::queue::topic_stats',
  'engine::queue::dlq_topics',
  'engine::queue::dlq_messages',
  'engine::queue::enqueue',
]

/** Refused as queue names: a queue name is a key of queue_configs (issue 16). */
const RESERVED = ['__proto__', 'constructor', 'prototype'] as const
let t: TestEngine
before(async () => {
  t = await startTestEngine({ settings: { queue: { adapter: { name: 'memory' }, queue_configs: { q: {}, f: { type: 'fifo', message_group_field: 'g' } } } } })
})
after(() => t.stop())

const hostile = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('q', 'f', '', 'no_such', '\ud800', -1, 1e308, Number.MAX_SAFE_INTEGER + 2, 604_800_001, null),
  // Names that reach Object.prototype as object keys (issue 16).
  fc.constantFrom(...RESERVED, 'toString', 'hasOwnProperty', '__defineGetter__'),
)

describe('queue functions under random input', () => {
  it('answer every payload with a result or a catalogue code', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...FUNCTIONS),
        fc.oneof(
          hostile,
          fc.record(
            { queue: hostile, topic: hostile, message_id: hostile, data: hostile, config: hostile, function_id: hostile, offset: hostile, limit: hostile, delay_ms: hostile, idempotency_key: hostile },
            { requiredKeys: [] },
          ),
        ),
        async (fn, payload) => {
          // queue::define with a valid name would change settings: keep its names out of the way.
          if (fn === 'queue::define' && typeof payload === 'object' && payload !== null && !Array.isArray(payload)) (payload as Record<string, unknown>).queue = `fz-${String((payload as Record<string, unknown>).queue).slice(0, 20)}`
          try {
            await t.engine.inject({ function_id: fn, data: payload })
          } catch (error) {
            const code = (error as { code?: string }).code
            assert.ok(code !== undefined && CODES.has(code), `${fn} failed with ${code}: ${(error as Error).message}`)
          }
        },
      ),
      { numRuns: 400 },
    )
    // Still alive and answering.
    const topics = (await t.engine.inject({ function_id: 'engine::queue::list_topics', data: {} })) as Array<{ name: string }>
    assert.ok(topics.some((topic) => topic.name === 'q'))
  })

  it('an enqueue to any undeclared name answers queue_not_found whose config.yaml lines declare exactly that name (issue 21)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.stringMatching(/^[A-Za-z0-9_.:-]{1,128}$/), fc.constantFrom('123', 'true', 'False', 'NO', 'null', 'Null', '-', '-1', ':', '::', 'a:b', '.inf', '.NaN', '0x1F', '0o7', '1e3', '1_000', '_', 'y')),
        async (queue) => {
          fc.pre(queue !== 'q' && queue !== 'f' && !(RESERVED as readonly string[]).includes(queue))
          const error = await t.engine.inject({ function_id: 'engine::queue::enqueue', data: { queue, function_id: 'x::y', data: {} } }).then(
            () => assert.fail('enqueued'),
            (e: { code: string; message: string }) => e,
          )
          assert.equal(error.code, 'queue_not_found')
          const yaml = error.message.slice(error.message.indexOf('\n') + 1)
          assert.equal(yaml, queueDeclarationYaml(queue))
          const [entry] = (parse(`workers:\n${yaml}`) as { workers: Array<{ name: string; config: unknown }> }).workers
          assert.equal(entry!.name, 'queue')
          assert.deepEqual([...parseQueueWorkerSettings(entry!.config).queue_configs.keys()], [queue])
        },
      ),
      { numRuns: 300 },
    )
    // No name that is not one gets lines to paste.
    for (const queue of [...RESERVED, 'a b', 'x'.repeat(129), '\u001b[2J']) assert.equal(queueDeclarationYaml(queue), undefined)
  })

  it("keeps a failing handler's stack with its dead letter, whatever it holds, cut to MAX_DLQ_STACK_CHARS (fast-check)", async () => {
    await t.engine.inject({ function_id: 'queue::define', data: { queue: 'fz-dead', config: { max_retries: 0 } } })
    const client = registerWorker(t.url, { workerName: 'fz-stacks', otel: { enabled: false } })
    try {
      client.registerFunction('fz::throws', (data: { stack: string; n: number }) => {
        throw Object.assign(new Error(`failed ${data.n}`), { stack: data.stack })
      })
      await waitFor(async () => ((await t.engine.inject({ function_id: 'engine::functions::list', data: {} })) as { functions: Array<{ function_id: string }> }).functions.some((f) => f.function_id === 'fz::throws'), 'the condition')
      const stack = fc.oneof(
        fc.string({ unit: 'binary', maxLength: 200 }),
        fc.constantFrom('\u001b]52;c;aGk=\u0007\n    at x (/a.js:1:1)', '\r\n\u202e', '__proto__'),
        fc.integer({ min: MAX_DLQ_STACK_CHARS - 2, max: 200_000 }).map((n) => `Error: big\n${'    at f (/big.js:1:1)\n'.repeat(Math.ceil(n / 24))}`.slice(0, n)),
      )
      let n = 0
      await fc.assert(
        fc.asyncProperty(stack, async (sent) => {
          const id = ++n
          await t.engine.inject({ function_id: 'fz::throws', data: { stack: sent, n: id }, action: { type: 'enqueue', queue: 'fz-dead' } })
          let entry: { error?: { message: string; stacktrace?: string } } | undefined
          await waitFor(async () => {
            const page = (await t.engine.inject({ function_id: 'engine::queue::dlq_messages', data: { topic: 'fz-dead', limit: 5 } })) as Array<{ error?: { message: string; stacktrace?: string } }>
            entry = page.find((m) => m.error?.message === `failed ${id}`)
            return entry !== undefined
          }, 'the condition', 15_000)
          // A stack is what the SDK sent (toErrorBody keeps a non-empty one), at most the first MAX_DLQ_STACK_CHARS characters.
          assert.equal(entry!.error!.stacktrace, sent === '' ? undefined : sent.slice(0, MAX_DLQ_STACK_CHARS))
        }),
        { numRuns: 40 },
      )
    } finally {
      await client.shutdown()
    }
  })

  it('queue::define refuses reserved names whatever the config, and stores nothing (fast-check)', async () => {
    const stored = async () => JSON.stringify(((await t.engine.inject({ function_id: 'configuration::get', data: { id: 'queue', raw: true } })) as { value: unknown }).value)
    const before = await stored()
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...RESERVED), fc.oneof(hostile, fc.constant({}), fc.record({ max_retries: fc.integer({ min: 0, max: 5 }) })), async (queue, config) => {
        // As a worker sends it: JSON text read back, so `__proto__` is an own key.
        const data = JSON.parse(JSON.stringify({ queue, config }) ?? 'null')
        await assert.rejects(t.engine.inject({ function_id: 'queue::define', data }), { code: 'invalid_queue_config' })
        await assert.rejects(t.engine.inject({ function_id: 'engine::queue::enqueue', data: { queue, function_id: 'x::y', data: {} } }), { code: 'queue_not_found' })
      }),
      { numRuns: 60 },
    )
    assert.equal(await stored(), before)
    assert.equal(({} as Record<string, unknown>).max_retries, undefined)
  })
})

/** Splits a command line as a POSIX shell does for the words `shellWord` writes: plain, single-quoted and backslash-escaped parts. */
function shellSplit(line: string): string[] {
  const words: string[] = []
  let word = ''
  let open = false
  let quoting = false
  let escaped = false
  for (const c of line) {
    if (escaped) {
      word += c
      escaped = false
    } else if (quoting) {
      if (c === "'") quoting = false
      else word += c
    } else if (c === "'") {
      quoting = true
      open = true
    } else if (c === '\\') {
      escaped = true
    } else if (c === ' ') {
      if (open || word !== '') words.push(word)
      word = ''
      open = false
    } else {
      word += c
    }
  }
  assert.equal(quoting, false, 'unterminated quote')
  if (open || word !== '') words.push(word)
  return words
}

/** The payload svc trigger builds from `key=value` tokens (cli.md §4.6 rules 2–3). */
function cliPayload(tokens: string[]): Record<string, unknown> {
  const payload: Record<string, unknown> = {}
  for (const token of tokens) {
    const at = token.indexOf('=')
    const text = token.slice(at + 1)
    let value: unknown = text
    try {
      value = JSON.parse(text)
    } catch {
      // not JSON: kept as text
    }
    payload[token.slice(0, at)] = value
  }
  return payload
}

describe('failure lines under hostile input (issue 21, fast-check)', () => {
  // eslint-disable-next-line no-control-regex
  const UNSAFE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/
  const text = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 2000 }),
    fc.string({ unit: fc.constantFrom('\u001b', '[', '2', 'J', '\r', '\n', '\u0007', '\u009b', '\u202e', '\ud83d', '\ude00', 'x', "'", '\\'), maxLength: 3000 }),
    fc.constantFrom('', 'ok', '\ud800', 'x'.repeat(100_000)),
  )

  it('quotes any error code and message on one line, bounded, never splitting a surrogate pair', () => {
    fc.assert(
      fc.property(text, text, (code, message) => {
        const line = errorText({ code, message })
        assert.doesNotMatch(line, UNSAFE)
        assert.ok(line.length <= 6 * (MAX_NAME_CHARS + MAX_MESSAGE_CHARS) + 4)
        const cut = quoted(message, MAX_MESSAGE_CHARS)
        if (message.length > MAX_MESSAGE_CHARS) assert.ok(cut.endsWith('…') && !/[\ud800-\udbff]…$/.test(cut))
      }),
      { numRuns: 300 },
    )
  })

  it('gives a redrive command that sends exactly the queue and message id, or no command at all', () => {
    const queue = fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9_.:-]{1,128}$/),
      fc.constantFrom('123', 'true', 'null', '1e3', '-1', '"x"', 'a b', "it's", '$(rm -rf /)', '`id`', 'a;b', '*', '~'),
      text.filter((t) => t !== ''),
    )
    fc.assert(
      fc.property(queue, fc.uuid(), (name, id) => {
        const hint = redriveHint(`${name}::fn::x`, id)
        assert.doesNotMatch(hint, UNSAFE)
        if (!hint.startsWith('Redrive it: ')) return
        const words = shellSplit(hint.slice('Redrive it: '.length))
        assert.deepEqual(words.slice(0, 3), ['svc', 'trigger', 'svc::queue::redrive_message'])
        assert.deepEqual(cliPayload(words.slice(3)), { queue: `${name}::fn::x`, message_id: id })
      }),
      { numRuns: 400 },
    )
  })
})
