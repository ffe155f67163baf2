/**
 * The frame codec, property-based over hostile input (fast-check).
 *
 * Frame decoding of ids and namespaces (protocol.md §3.5; issue 16 item 14): an id or a namespace
 * that is not well-formed text — a lone UTF-16 surrogate, a control character, more than 1024
 * characters — makes the frame malformed with the code its reply carries, `INVALID_ID` or
 * `INVALID_NAMESPACE`; every other problem keeps `invalid_message`. Property-based over hostile
 * strings (fast-check), with the lone surrogates written as JSON escapes as a peer sends them.
 *
 * Engine → worker frames (issue 17 part 1): `decodeEngineFrame` never throws and gives every field
 * its declared type whatever a peer sends; what a client encodes (`encodeInvokeFunction`,
 * `encodeResult`) reads back the same through the engine's decoder and the client's.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { decodeEngineFrame, decodeText, encodeCancel, encodeInvokeFunction, encodeResult, encodeResultJson, RawJson, type InboundInvoke, type InboundResult } from '../src/codec.ts'
import { MAX_CANCEL_REASON, type CancelInvocationMessage, type InvokeFunctionMessage } from '../src/messages.ts'
import { isErrorBody } from '../src/errors.ts'
import { idProblem } from '../src/ids.ts'
import { MAX_FRAME_DEPTH } from '../src/json.ts'

/** Strings a hostile peer might use as ids: any code units, lone surrogates, controls, huge lengths. */
const hostileId = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1 }),
  fc.string({ minLength: 1 }),
  fc.constantFrom('a::\ud800', '\udfff', 'x\ud800\ud800y', 'ok::fn', 'a\u0000b', 'tab\tid', 'x'.repeat(1025), 'x'.repeat(1024), '😀::fn', '\ud83d'),
)

/** Where an id or a namespace sits, per frame type. */
const ID_FIELDS: ReadonlyArray<[type: string, field: string, base: Record<string, unknown>]> = [
  ['invokefunction', 'function_id', { invocation_id: 'i' }],
  ['registerfunction', 'id', {}],
  ['registertriggertype', 'id', {}],
  ['registertrigger', 'id', { trigger_type: 't', function_id: 'f' }],
  ['registertrigger', 'trigger_type', { id: 'b', function_id: 'f' }],
  ['registertrigger', 'function_id', { id: 'b', trigger_type: 't' }],
]
const NAMESPACE_FIELDS: ReadonlyArray<[type: string, field: string, base: Record<string, unknown>]> = [
  ['invokefunction', 'namespace', { invocation_id: 'i', function_id: 'f' }],
  ['registertriggertype', 'namespace', { id: 't' }],
  ['registertrigger', 'namespace', { id: 'b', trigger_type: 't', function_id: 'f' }],
  ['registertrigger', 'trigger_namespace', { id: 'b', trigger_type: 't', function_id: 'f' }],
]

function decodeWith(type: string, base: Record<string, unknown>, field: string, value: string) {
  // JSON.stringify writes a lone surrogate as a \u escape: the frame is valid UTF-8 and JSON.
  return decodeText(JSON.stringify({ type, ...base, [field]: value }))
}

describe('ids and namespaces in frames (fast-check)', () => {
  it('an id that is not well-formed text makes its frame malformed with INVALID_ID, any other id is accepted', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ID_FIELDS), hostileId, ([type, field, base], id) => {
        const decoded = decodeWith(type, base, field, id)
        const issue = idProblem(id)
        if (issue === undefined) return assert.equal(decoded.kind, 'message')
        assert.equal(decoded.kind, 'malformed')
        if (decoded.kind !== 'malformed') return
        assert.equal(decoded.code, 'INVALID_ID')
        assert.equal(decoded.reason, `${field} ${issue}`)
      }),
      { numRuns: 500 },
    )
  })

  it('a namespace that is not well-formed text makes its frame malformed with INVALID_NAMESPACE', () => {
    fc.assert(
      fc.property(fc.constantFrom(...NAMESPACE_FIELDS), hostileId, ([type, field, base], namespace) => {
        const decoded = decodeWith(type, base, field, namespace)
        const issue = idProblem(namespace)
        if (issue === undefined) return assert.equal(decoded.kind, 'message')
        assert.equal(decoded.kind, 'malformed')
        if (decoded.kind !== 'malformed') return
        assert.equal(decoded.code, 'INVALID_NAMESPACE')
        assert.equal(decoded.reason, `${field} ${issue}`)
      }),
      { numRuns: 300 },
    )
  })

  it('other problems keep invalid_message', () => {
    for (const text of ['{"type":"invokefunction","invocation_id":"i"}', '{"type":"registertrigger","id":"b","function_id":"f"}', '{"type":"invokefunction","invocation_id":"i","function_id":1}', '{"type":1}', '{']) {
      const decoded = decodeText(text)
      assert.equal(decoded.kind, 'malformed', text)
      if (decoded.kind === 'malformed') assert.equal(decoded.code, 'invalid_message', text)
    }
  })
})

// ---- both directions: what a client encodes the engine decodes, and what the engine sends a client reads

/** JSON values as a peer may send them, hostile strings included (lone surrogates, controls, `__proto__` keys). */
const jsonValue = fc.jsonValue({ maxDepth: 4 }).map((v) => v as unknown)
const hostileText = fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('__proto__', 'constructor', '\ud800', 'a\u0000b', '', ' '))
/** Field values of any JSON type, so every field of every frame type is tried with the wrong type. */
const anyField = fc.oneof(jsonValue, hostileText, fc.constant(null), fc.constant(undefined))
const ENGINE_TYPES = ['invocationresult', 'invokefunction', 'cancelinvocation', 'workerregistered', 'registertrigger', 'unregistertrigger', 'triggerregistrationresult', 'registrationrejected', 'ping', 'pong', 'error', 'registerfunction', 'reattach', 'nope', 'INVOKEFUNCTION'] as const
const FIELDS = ['invocation_id', 'function_id', 'data', 'metadata', 'action', 'result', 'error', 'traceparent', 'baggage', 'worker_id', 'reattach_token', 'id', 'trigger_type', 'config', 'namespace', 'trigger_namespace', 'code', 'message', 'reason', 'owner_worker_id', 'trigger_type_id', 'worker_name'] as const

const optionalString = (value: unknown) => value === undefined || typeof value === 'string'

/** The declared field types of each decoded message (codec.ts WorkerInboundMessage). */
function assertWellTyped(message: ReturnType<typeof decodeEngineFrame>): void {
  if (message === undefined) return
  switch (message.type) {
    case 'invocationresult':
      assert.equal(typeof message.invocation_id, 'string')
      for (const f of ['function_id', 'traceparent', 'baggage'] as const) assert.ok(optionalString(message[f]), f)
      if (message.error !== undefined) assert.ok(isErrorBody(message.error))
      assert.notEqual(message.result, null)
      return
    case 'invokefunction':
      assert.equal(typeof message.function_id, 'string')
      assert.equal(message.action, undefined, 'never an action from the engine')
      assert.equal(message.namespace, undefined, 'never a namespace from the engine')
      for (const f of ['invocation_id', 'traceparent', 'baggage'] as const) assert.ok(optionalString(message[f]), f)
      assert.notEqual(message.data, undefined)
      assert.notEqual(message.metadata, null)
      return
    case 'cancelinvocation':
      assert.equal(typeof message.invocation_id, 'string')
      assert.ok(optionalString(message.reason), 'reason')
      assert.ok((message.reason?.length ?? 0) <= MAX_CANCEL_REASON, 'reason is cut')
      return
    case 'workerregistered':
      assert.equal(typeof message.worker_id, 'string')
      assert.equal(typeof message.reattach_token, 'string')
      return
    case 'registertrigger':
      for (const f of ['id', 'trigger_type', 'function_id'] as const) assert.equal(typeof message[f], 'string', f)
      for (const f of ['namespace', 'trigger_namespace'] as const) assert.ok(optionalString(message[f]), f)
      assert.ok(message.config !== undefined && message.config !== null)
      return
    case 'unregistertrigger':
      assert.equal(typeof message.id, 'string')
      return
    case 'triggerregistrationresult':
      for (const f of ['id', 'trigger_type', 'function_id'] as const) assert.equal(typeof message[f], 'string', f)
      if (message.error !== undefined) assert.ok(isErrorBody(message.error))
      return
    case 'registrationrejected':
      for (const f of ['code', 'message', 'owner_worker_id'] as const) assert.equal(typeof message[f], 'string', f)
      for (const f of ['reason', 'namespace', 'function_id', 'trigger_type_id', 'worker_name'] as const) assert.ok(optionalString(message[f]), f)
      return
    case 'error':
      assert.ok(isErrorBody(message.error))
      return
    case 'ping':
    case 'pong':
      return
  }
}

describe('decodeEngineFrame: engine → worker frames (fast-check)', () => {
  it('never throws on any text or bytes, and returns nothing for what is not a frame', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), fc.uint8Array().map((b) => b as string | Uint8Array)), (data) => {
        assertWellTyped(decodeEngineFrame(data))
      }),
      { numRuns: 500 },
    )
    for (const text of ['', '   ', 'null', '[]', '"ping"', '{', '{"type":1}', '{"type":"nope"}', '{"type":"registerfunction","id":"f"}']) {
      assert.equal(decodeEngineFrame(text), undefined, text)
    }
  })

  it('gives every field of every frame type its declared type, whatever the peer put there', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ENGINE_TYPES), fc.dictionary(fc.constantFrom(...FIELDS), anyField), (type, fields) => {
        const text = JSON.stringify({ ...fields, type })
        assertWellTyped(decodeEngineFrame(text))
        assertWellTyped(decodeEngineFrame(new TextEncoder().encode(text)))
      }),
      { numRuns: 1000 },
    )
  })

  it('reads a result, an error that is not an ErrorBody as UNKNOWN, and null as omitted', () => {
    assert.deepEqual(decodeEngineFrame('{"type":"invocationresult","invocation_id":"i","result":null}'), {
      type: 'invocationresult', invocation_id: 'i', function_id: undefined, result: undefined, error: undefined, traceparent: undefined, baggage: undefined,
    })
    const failed = decodeEngineFrame('{"type":"invocationresult","invocation_id":"i","error":{"boom":1},"result":5}')
    assert.ok(failed?.type === 'invocationresult')
    assert.deepEqual(failed.error, { code: 'UNKNOWN', message: '{"boom":1}' })
    assert.equal(failed.result, undefined)
    assert.deepEqual(decodeEngineFrame('{"type":"registertrigger","id":"b","trigger_type":"cron","function_id":"f","config":null,"metadata":null}'), {
      type: 'registertrigger', id: 'b', trigger_type: 'cron', function_id: 'f', config: {},
    })
    assert.deepEqual(decodeEngineFrame('{"type":"registrationrejected","code":5}'), {
      type: 'registrationrejected', code: 'UNKNOWN', message: 'registration rejected: UNKNOWN', owner_worker_id: '',
    })
  })
})

describe('one codec, both directions (fast-check)', () => {
  /** A value as JSON carries it (no -0, no null prototypes). */
  const plain = (value: unknown) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)))
  const id = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => idProblem(s) === undefined)
  const action = fc.option(fc.oneof(fc.constant({ type: 'void' as const }), fc.record({ type: fc.constant('enqueue' as const), queue: id }, { requiredKeys: ['type', 'queue'] })), { nil: undefined })

  it("a worker's invokefunction reads back the same through the engine's decoder and a worker's", () => {
    fc.assert(
      fc.property(
        fc.record({ invocation_id: fc.option(fc.uuid(), { nil: undefined }), function_id: id, data: jsonValue, metadata: fc.option(jsonValue, { nil: undefined }), action, namespace: fc.option(id, { nil: undefined }), traceparent: fc.option(id, { nil: undefined }), baggage: fc.option(id, { nil: undefined }) }),
        (fields) => {
          const message = { type: 'invokefunction' as const, ...fields }
          const text = encodeInvokeFunction(message)
          const engineSide = decodeText(text)
          assert.equal(engineSide.kind, 'message')
          if (engineSide.kind !== 'message' || engineSide.message.type !== 'invokefunction') return
          const received = engineSide.message as InboundInvoke
          assert.equal(received.function_id, fields.function_id)
          assert.equal(received.invocation_id, fields.invocation_id)
          assert.equal(received.namespace, fields.namespace)
          assert.deepEqual(received.action, plain(fields.action))
          assert.deepEqual(received.data.value, plain(fields.data) ?? null)
          const workerSide = decodeEngineFrame(text)
          assert.ok(workerSide?.type === 'invokefunction')
          assert.deepEqual(workerSide.data, plain(fields.data) ?? null)
          assert.equal(workerSide.traceparent, fields.traceparent)
          assert.equal(workerSide.baggage, fields.baggage)
          assert.deepEqual(workerSide.metadata, plain(fields.metadata) ?? undefined)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('an invocationresult reads back the same in both directions, with its trace context', () => {
    fc.assert(
      fc.property(fc.uuid(), id, jsonValue, fc.option(id, { nil: undefined }), fc.boolean(), (invocationId, functionId, result, traceparent, raw) => {
        const text = encodeResult(invocationId, JSON.stringify(functionId), raw ? RawJson.of(result) : result, undefined, traceparent)
        const workerSide = decodeEngineFrame(text)
        assert.ok(workerSide?.type === 'invocationresult')
        assert.deepEqual(workerSide.result, plain(result) ?? undefined)
        assert.equal(workerSide.traceparent, traceparent)
        const engineSide = decodeText(text)
        assert.ok(engineSide.kind === 'message' && engineSide.message.type === 'invocationresult')
        assert.deepEqual((engineSide.message as InboundResult).result?.value, plain(result) ?? undefined)
      }),
      { numRuns: 300 },
    )
  })

  it('refuses to encode a payload JSON cannot carry', () => {
    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    assert.throws(() => encodeInvokeFunction({ type: 'invokefunction', function_id: 'f', data: cycle }), TypeError)
    assert.throws(() => encodeInvokeFunction({ type: 'invokefunction', function_id: 'f', data: 1n }), TypeError)
    assert.equal(encodeInvokeFunction({ type: 'invokefunction', function_id: 'f', data: undefined }), '{"type":"invokefunction","function_id":"f","data":null}')
  })
})

describe('cancelinvocation (fast-check)', () => {
  const reason = fc.oneof(hostileText, fc.string({ minLength: 1000, maxLength: 3000 }), fc.constant(undefined))

  it('the engine reads any cancel frame as a message with a string invocation_id and a reason of at most 1024 characters, or as malformed (never throws)', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('invocation_id', 'reason', 'function_id', 'data'), anyField), (fields) => {
        const decoded = decodeText(JSON.stringify({ ...fields, type: 'cancelinvocation' }))
        if (decoded.kind === 'message') {
          const m = decoded.message as CancelInvocationMessage
          assert.equal(m.type, 'cancelinvocation')
          assert.equal(typeof m.invocation_id, 'string')
          assert.ok(m.reason === undefined || (typeof m.reason === 'string' && m.reason.length <= MAX_CANCEL_REASON))
        } else {
          assert.equal(decoded.kind, 'malformed')
          assert.ok(typeof fields.invocation_id !== 'string' || (fields.reason !== undefined && fields.reason !== null && typeof fields.reason !== 'string'))
        }
      }),
      { numRuns: 1000 },
    )
  })

  it('what encodeCancel writes reads back the same in both directions, its reason cut to 1024 characters', () => {
    fc.assert(
      fc.property(hostileText, reason, (invocationId, why) => {
        const text = encodeCancel(invocationId, why as string | undefined)
        const expected: CancelInvocationMessage = { type: 'cancelinvocation', invocation_id: invocationId }
        if (why !== undefined) expected.reason = (why as string).slice(0, MAX_CANCEL_REASON)
        const engine = decodeText(text)
        assert.equal(engine.kind, 'message')
        assert.deepEqual({ ...(engine as { message: object }).message }, expected)
        assert.deepEqual(decodeEngineFrame(text), expected)
      }),
      { numRuns: 500 },
    )
  })
})

// ---- the routed call's frames read in one pass (decodeCall) against the member map ------------

describe("a call's frames read in one pass give what the member map gives (fast-check)", () => {
  /**
   * The same frame with a leading space: `decodeText` reads it through the member map only (the
   * one-pass reading takes frames that start with `{"type":"invo`), so the two decodings of one
   * frame can be compared. Error messages name positions, shifted by the space: compared are the
   * kind, the message or the fields and the code.
   */
  function sameAsMemberMap(text: string): void {
    const fast = decodeText(text)
    const full = decodeText(' ' + text)
    assert.equal(fast.kind, full.kind, text)
    if (fast.kind === 'message' && full.kind === 'message') assert.deepEqual(fast.message, full.message, text)
    if (fast.kind === 'malformed' && full.kind === 'malformed') {
      assert.equal(fast.code, full.code, text)
      assert.deepEqual(fast.raw, full.raw, text)
    }
  }

  /** Ids, with the ones idProblem refuses that JSON writes without an escape (DEL, too long). */
  const id = fc.oneof({ arbitrary: fc.string({ maxLength: 40 }), weight: 8 }, { arbitrary: fc.constantFrom('a\u007fb', 'x'.repeat(1025), 'x'.repeat(1024), '😀::fn'), weight: 1 })
  const fieldValue = fc.oneof(
    jsonValue.map((v) => JSON.stringify(v) ?? 'null'),
    hostileText.map((s) => JSON.stringify(s)),
    fc.constantFrom('null', '"a\\"b"', '"\\u0041"', '"\\ud800"', '"\u0007"', '"x\ty"', ' {"a":1}', '{"a":1} ', '[ 1 ,2 ]', '01', '-', '1.', '1e', '-0.5e+7', 'tru', 'nul', '{"a":}', '[1,]', '"', '{', '"a"b"', '{}', '[]', '""'),
  )
  const rareKey = fc.constantFrom('error', 'action', 'namespace', 'type', 'timeout_ms', 'dat', 'datas', 'result ', 'function_id"')
  const key = fc.oneof({ arbitrary: fc.constantFrom('invocation_id', 'function_id', 'data', 'metadata', 'result', 'traceparent', 'baggage', 'span_start', 'span_end'), weight: 6 }, { arbitrary: rareKey, weight: 1 })
  const head = fc.oneof(
    { arbitrary: fc.constantFrom('{"type":"invokefunction"', '{"type":"invocationresult"'), weight: 8 },
    { arbitrary: fc.constantFrom('{"type":"invokefunctions"', '{"type":"invocationresult" ', '{"type":"invo"'), weight: 1 },
  )
  const colon = fc.oneof({ arbitrary: fc.constant(':'), weight: 6 }, { arbitrary: fc.constantFrom(' :', ': '), weight: 1 })
  const close = fc.oneof({ arbitrary: fc.constant('}'), weight: 6 }, { arbitrary: fc.constantFrom(' }', '} ', '', ',}', '}}'), weight: 1 })
  /** Actions of an invocation (every enqueued message's frame carries one), well-formed or not. */
  const action = fc.oneof(
    { arbitrary: fc.record({ type: fc.constant('enqueue'), queue: fc.oneof(id, hostileText), delay_ms: fc.option(fc.oneof(fc.integer(), fc.double(), fc.constant('5')), { nil: undefined }), idempotency_key: fc.option(fc.oneof(id, fc.integer()), { nil: undefined }) }, { requiredKeys: ['type'] }), weight: 4 },
    { arbitrary: fc.constant({ type: 'void' }), weight: 1 },
    { arbitrary: jsonValue, weight: 1 },
  )
  const member = fc.tuple(key, colon, fc.oneof({ arbitrary: fieldValue, weight: 1 }, { arbitrary: id.map((v) => JSON.stringify(v)), weight: 2 }))
  /** A frame built field by field: any order, repeats, wrong types, spaces, escapes, broken values. */
  const builtFrame = fc
    .tuple(head, id, id, fc.array(member, { maxLength: 6 }), close)
    .map(([h, callId, fn, members, end]) => h + `,"invocation_id":${JSON.stringify(callId)},"function_id":${JSON.stringify(fn)}` + members.map(([k, c, v]) => `,${JSON.stringify(k)}${c}${v}`).join('') + end)
  /** Frames as svc's encoders write them, then maybe one character inserted, removed or replaced. */
  const encodedFrame = fc
    .tuple(
      fc.oneof(
        fc
          .record({ invocation_id: fc.option(id, { nil: undefined }), function_id: fc.oneof(id, hostileText), data: jsonValue, metadata: fc.option(jsonValue, { nil: undefined }), action: fc.option(action, { nil: undefined }), namespace: fc.option(fc.oneof(id, hostileText), { nil: undefined }), traceparent: fc.option(id, { nil: undefined }), baggage: fc.option(id, { nil: undefined }) })
          .map((fields) => encodeInvokeFunction({ type: 'invokefunction', ...fields } as InvokeFunctionMessage)),
        fc.tuple(id, id, fc.option(jsonValue, { nil: undefined }), fc.option(id, { nil: undefined }), fc.option(id, { nil: undefined })).map(([invocationId, functionId, result, traceparent, baggage]) =>
          encodeResult(invocationId, JSON.stringify(functionId), result, undefined, traceparent, baggage),
        ),
        // A result handing its span to the engine (span_start/span_end).
        fc.tuple(id, id, fc.option(jsonValue, { nil: undefined }), id, fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }), fc.bigInt({ min: 0n, max: 2n ** 63n - 1n })).map(([invocationId, functionId, result, traceparent, start, end]) =>
          encodeResultJson(invocationId, JSON.stringify(functionId), result === undefined ? undefined : JSON.stringify(result), undefined, traceparent, undefined, { start: String(start), end: String(end) }),
        ),
      ),
      fc.nat(),
      fc.constantFrom('none', 'insert', 'delete', 'replace'),
      fc.constantFrom(...'{}[]",:\\ -+.eE0123456789tfnul\u0000\u001f\ud800'.split('')),
    )
    .map(([text, at, op, ch]) => {
      const i = at % text.length
      if (op === 'insert') return text.slice(0, i) + ch + text.slice(i)
      if (op === 'delete') return text.slice(0, i) + text.slice(i + 1)
      if (op === 'replace') return text.slice(0, i) + ch + text.slice(i + 1)
      return text
    })

  it('every frame, well-formed or hostile, decodes as through the member map', () => {
    fc.assert(fc.property(fc.oneof(builtFrame, encodedFrame), sameAsMemberMap), { numRuns: 3000 })
  })

  it('payloads nested to the frame limit pass, one level more does not; text stays as sent', () => {
    const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)
    for (const levels of [MAX_FRAME_DEPTH - 2, MAX_FRAME_DEPTH - 1, MAX_FRAME_DEPTH, MAX_FRAME_DEPTH + 1]) {
      sameAsMemberMap(`{"type":"invokefunction","function_id":"f","data":${nested(levels)}}`)
      sameAsMemberMap(`{"type":"invocationresult","invocation_id":"i","result":{"a":${nested(levels)}}}`)
    }
    const ok = decodeText(`{"type":"invokefunction","function_id":"f","data":${nested(MAX_FRAME_DEPTH - 1)}}`)
    assert.ok(ok.kind === 'message' && (ok.message as InboundInvoke).data.text === nested(MAX_FRAME_DEPTH - 1))
    assert.equal(decodeText(`{"type":"invokefunction","function_id":"f","data":${nested(MAX_FRAME_DEPTH)}}`).kind, 'malformed')
    const text = '{"type":"invocationresult","invocation_id":"i-1","function_id":"bench::echo","traceparent":"00-ab-cd-01","result":{"a":[1,-2.5e3,true,null,"ü"]}}'
    const decoded = decodeText(text)
    assert.ok(decoded.kind === 'message')
    assert.deepEqual({ ...decoded.message, result: (decoded.message as InboundResult).result?.text }, {
      type: 'invocationresult',
      invocation_id: 'i-1',
      function_id: 'bench::echo',
      traceparent: '00-ab-cd-01',
      result: '{"a":[1,-2.5e3,true,null,"ü"]}',
    })
  })

  it('a result handing its span to the engine keeps span_start and span_end, in one pass and through the member map', () => {
    const text = encodeResultJson('i-2', '"f"', '{"ok":1}', undefined, '00-' + 'a'.repeat(32) + '-' + 'b'.repeat(16) + '-01', 'k=v', { start: '1764400000000000001', end: '1764400000000500002' })
    sameAsMemberMap(text)
    const decoded = decodeText(text)
    assert.ok(decoded.kind === 'message')
    const message = decoded.message as InboundResult
    assert.equal(message.span_start, '1764400000000000001')
    assert.equal(message.span_end, '1764400000000500002')
    assert.equal(message.result?.text, '{"ok":1}')
  })
})
