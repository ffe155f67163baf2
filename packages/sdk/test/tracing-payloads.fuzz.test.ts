/**
 * The span a handler invocation exports (sdk.md §12.2–§12.3, protocol.md §10.1–§10.2), checked
 * against the general path: for any inbound payload and result — hostile text (quotes,
 * backslashes, escapes, lone surrogates, non-ASCII), nested sensitive keys, keys that are prefixes
 * or near-misses of sensitive names, 70-bit integers, payloads over the byte cap — the `/otel`
 * frame is valid OTLP/JSON, and the span in it carries the ids of the `traceparent` returned with
 * the result, the payload events of `redactAndTruncate` (the redaction and cap every other span
 * goes through) at the span's start and end times, and the status and attributes of the SDK.
 *
 * The payload cap is set here (SVC_TRACE_PAYLOAD_MAX_BYTES, read once per process), so this file
 * runs in a process of its own (node --test runs each file apart).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import type { Transport, TransportHandlers } from 'svc-protocol/transport'
import { redactAndTruncate } from 'svc-helpers/observability'
import { flushOtel, initOtel, shutdownOtel } from 'svc-sdk/telemetry'
import { endInvocationSpan, startInvocationSpan } from '../src/tracing.ts'

const CAP = 600
process.env['SVC_TRACE_PAYLOAD_MAX_BYTES'] = String(CAP)
delete process.env['SVC_DISABLE_TRACE_PAYLOADS']

/** A `/otel` transport that is open at once and keeps every OTLP frame's text. */
function recorder(): { connector: () => Transport; frames: string[] } {
  const frames: string[] = []
  let handlers: TransportHandlers | undefined
  const connector = (): Transport => ({
    send: () => {},
    sendBinary: (data) => {
      const text = Buffer.from(data).toString('utf8')
      if (text.startsWith('OTLP')) frames.push(text.slice(4))
    },
    bufferedAmount: 0,
    isOpen: true,
    close: () => handlers?.close(1000, ''),
    terminate: () => handlers?.close(1006, ''),
    ping: () => {},
    setHandlers(h) {
      handlers = h
      queueMicrotask(() => h.open?.())
    },
  })
  return { connector, frames }
}

/** Keys near the sensitive names of sdk.md §12.2: the names, their prefixes, case and Unicode variants. */
const KEYS = [
  'password', 'Passwor', 'passwd', 'pass', 'secret', 'secre', 'client_secret', 'token', 'tok', 'tokens', 'id_token', 'x-token', 'tokenizer',
  'api_key', 'api_ke', 'apikey', 'api-key', 'API_KEY', 'api_\u212Aey', 'paſſword', 'authorization', 'author', 'bearer', 'bear', 'access_key',
  'private_key', 'credential', 'note', '__proto__', 'constructor', 'é', '"', '\\', '\\u0070assword', '\uD800', '',
]

/** JSON values as a frame delivers them (strings with anything in them, big and small numbers). */
const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.constantFrom('"', '\\', '\\"', '\u0000\u001f', '\uD800', 'a\uDFFFb', '\u2028', '日本語😀', '[REDACTED]', '..."[TRUNCATED]"', 'x'.repeat(2000), 'é'.repeat(400)),
    fc.integer(),
    // 70-bit integers: a frame's JSON.parse makes them doubles, written back in exponent form.
    fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map((n) => Number(n)),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.constantFrom(...KEYS)), tie('value'), { maxKeys: 4 }),
  ),
})).value

type OtlpSpan = Record<string, any>
const attrs = (list: Array<{ key: string; value: Record<string, unknown> }> | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, Object.values(kv.value)[0]]))

describe('property: the span of an invocation (fast-check)', () => {
  const rec = recorder()
  before(async () => {
    assert.equal(initOtel({ engineWsUrl: 'ws://127.0.0.1:1', connector: rec.connector, metricsEnabled: false, fetchInstrumentationEnabled: false }), true)
    await new Promise((resolve) => setImmediate(resolve))
  })
  after(async () => {
    await shutdownOtel()
  })

  it('any payload and result give valid OTLP/JSON with the redacted, capped payload events at the start and end times', async () => {
    const PARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    await fc.assert(
      fc.asyncProperty(
        // A frame's data is what JSON.parse gives back of its text.
        jsonValue.map((v) => JSON.parse(JSON.stringify(v)) as unknown),
        jsonValue,
        fc.option(fc.record({ code: fc.constantFrom('out_of_stock', 'invocation_failed'), message: fc.string({ unit: 'binary', maxLength: 30 }) })),
        fc.boolean(),
        async (data, result, error, parented) => {
          rec.frames.length = 0
          const s = startInvocationSpan('orders::create', data, parented ? PARENT : undefined, 'tenant=acme')
          assert.ok(s !== undefined)
          const headers = error === null ? endInvocationSpan(s, result, undefined, JSON.stringify(result)) : endInvocationSpan(s, undefined, error)
          await flushOtel()
          assert.equal(rec.frames.length, 1)
          const request = JSON.parse(rec.frames[0]!) as { resourceSpans: Array<{ scopeSpans: Array<{ scope: { name: string }; spans: OtlpSpan[] }> }> }
          const span = request.resourceSpans[0]!.scopeSpans[0]!.spans[0]!
          const [, traceId, spanId] = headers.traceparent!.split('-')
          assert.equal(span.traceId, traceId)
          assert.equal(span.spanId, spanId)
          if (parented) assert.equal(span.parentSpanId, 'b7ad6b7169203331')
          else assert.equal(span.parentSpanId, undefined)
          assert.equal(span.name, 'execute orders::create')
          assert.equal(span.kind, 1)
          assert.deepEqual(attrs(span.attributes), error === null ? { 'svc.function.id': 'orders::create', tenant: 'acme' } : { 'svc.function.id': 'orders::create', tenant: 'acme', 'error.type': error.code })
          assert.deepEqual(span.status, error === null ? { code: 1 } : error.message === '' ? { code: 2 } : { code: 2, message: error.message })
          const events = span.events as OtlpSpan[]
          const input = events[0]!
          const output = events.at(-1)!
          assert.equal(input.name, 'svc.invocation.input')
          assert.equal(output.name, 'svc.invocation.output')
          const want = (value: unknown, ok: boolean) => {
            const payload = redactAndTruncate(value, CAP)
            return { 'svc.payload.json': payload.json, 'svc.payload.truncated': payload.truncated, 'svc.payload.ok': ok }
          }
          assert.deepEqual(attrs(input.attributes), want(data, true))
          assert.deepEqual(attrs(output.attributes), error === null ? want(result, true) : want(error, false))
          assert.equal(input.timeUnixNano, span.startTimeUnixNano, 'the input event is at the start')
          assert.equal(output.timeUnixNano, span.endTimeUnixNano, 'the output event is at the end')
          assert.ok(BigInt(span.endTimeUnixNano) >= BigInt(span.startTimeUnixNano))
          assert.equal(events.length, error === null ? 2 : 3, 'a failure records its exception between the payloads')
        },
      ),
      { numRuns: 300 },
    )
  })
})
