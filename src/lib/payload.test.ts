import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Readable } from 'node:stream'
import { mkdtempSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import {
  assertFitsMessage,
  buildPayload,
  dataLabel,
  FRAME_ENVELOPE_BYTES,
  InputTooLarge,
  PayloadError,
  parseToken,
  readAll,
  readDataArgument,
  resolveTriggerInput,
  tokenWarning,
} from './payload.ts'

function failsWith(fn: () => unknown, message: string | RegExp) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof PayloadError, `expected a PayloadError, got ${String(err)}`)
    assert.equal(err.code, 'INVALID_ARGUMENT')
    if (typeof message === 'string') assert.equal(err.message, message)
    else assert.match(err.message, message)
    return true
  })
}

describe('svc trigger tokens: the table of cli.md §4.6', () => {
  // Each row as the shell hands the token to the CLI (quotes already removed by the shell).
  const table: Array<[string, string, unknown]> = [
    ['a=10', 'a', 10],
    ['ok=true', 'ok', true],
    ['x=null', 'x', null],
    ['name=alice', 'name', 'alice'],
    ['zip=01234', 'zip', '01234'],
    ['s="true"', 's', 'true'],
    ['o={"k":1}', 'o', { k: 1 }],
    ['l=[1,2]', 'l', [1, 2]],
    ['e=', 'e', ''],
    ['a.b=1', 'a.b', 1],
  ]
  for (const [token, key, value] of table) {
    it(`${token} gives ${JSON.stringify({ [key]: value })}`, () => {
      assert.deepEqual(parseToken(token), { key, value })
      assert.deepEqual(buildPayload(undefined, [token]), { [key]: value })
    })
  }

  it('keeps a shell-quoted value with spaces as one string', () => {
    assert.deepEqual(buildPayload(undefined, ['name=Ada Lovelace']), { name: 'Ada Lovelace' })
  })

  it('splits at the first = only', () => {
    assert.deepEqual(buildPayload(undefined, ['q=a=b', 'expr==1']), { q: 'a=b', expr: '=1' })
  })

  it('parses other JSON forms: negatives, floats, exponents, nested objects', () => {
    assert.deepEqual(buildPayload(undefined, ['n=-1.5', 'big=1e3', 'deep={"a":{"b":[null]}}']), {
      n: -1.5,
      big: 1000,
      deep: { a: { b: [null] } },
    })
  })

  it('keeps text that only looks like JSON as text', () => {
    assert.deepEqual(buildPayload(undefined, ['t=True', "u='x'", 'v={k:1}', 'w=[1,']), {
      t: 'True',
      u: "'x'",
      v: '{k:1}',
      w: '[1,',
    })
  })
})

describe('buildPayload: base and merge rules', () => {
  it('is {} with neither --data nor tokens', () => {
    assert.deepEqual(buildPayload(undefined, []), {})
  })

  it('uses --data as given, any JSON value, when there are no tokens', () => {
    assert.deepEqual(buildPayload('{"a":1}', []), { a: 1 })
    assert.deepEqual(buildPayload('[1,2]', []), [1, 2])
    assert.equal(buildPayload('"text"', []), 'text')
    assert.equal(buildPayload('42', []), 42)
    assert.equal(buildPayload('null', []), null)
  })

  it('applies tokens left to right over --data, later ones winning (shallow merge)', () => {
    assert.deepEqual(buildPayload('{"a":1,"b":{"c":1},"keep":true}', ['a=2', 'b={"d":2}', 'a=3']), {
      a: 3,
      b: { d: 2 },
      keep: true,
    })
  })

  it('treats a __proto__ key as a plain field', () => {
    const payload = buildPayload(undefined, ['__proto__={"polluted":true}']) as Record<string, unknown>
    assert.equal(JSON.stringify(payload), '{"__proto__":{"polluted":true}}')
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
    assert.equal(Object.getPrototypeOf(payload), Object.prototype)
  })

  it('rejects invalid --data JSON saying where, without quoting the text (issue 16)', () => {
    failsWith(() => buildPayload('{a:1}', []), "--data: invalid JSON (line 1 column 2: property name expected, found 'a')")
    failsWith(() => buildPayload('', []), '--data: invalid JSON (line 1 column 1: unexpected end of the text (value expected))')
    failsWith(() => buildPayload('{"a":1,\n"b": [1,2,\n  nope]}', [], '--data @f.json'), "--data @f.json: invalid JSON (line 3 column 3: value expected, found 'n')")
    failsWith(() => buildPayload('\u001b]52;c;aGVsbG8=\u0007 secret', [], '--data @bin.dat'), "--data @bin.dat: invalid JSON (line 1 column 1: value expected, found '\\x1b')")
    failsWith(() => buildPayload('['.repeat(200), []), '--data: invalid JSON (line 1 column 129: nesting deeper than 128 levels)')
  })

  it('fuzz: an invalid --data never echoes its text or a control character (fast-check)', () => {
    // eslint-disable-next-line no-control-regex
    const control = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/
    const secret = 'S3CR3T-T0KEN'
    const junk = fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('\u001b]52;c;aGk=\u0007', '\r\n', '\u202e', '{"a":', '[1,', '"', '\\u12'))
    fc.assert(
      fc.property(fc.array(junk, { maxLength: 6 }), fc.array(junk, { maxLength: 6 }), (before, after) => {
        const text = `${before.join('')}${secret}${after.join('')}`
        try {
          buildPayload(text, [], '--data @f.json')
          return
        } catch (err) {
          assert.ok(err instanceof PayloadError)
          assert.doesNotMatch(err.message, control)
          assert.ok(!err.message.includes(secret.slice(0, 4)), err.message)
          assert.ok(err.message.length < 160, err.message)
        }
      }),
      { numRuns: 1000 },
    )
  })

  it('rejects tokens over --data that is not an object', () => {
    for (const data of ['[1]', '"s"', '1', 'null', 'true']) {
      failsWith(() => buildPayload(data, ['a=1']), '--data must be a JSON object when key=value arguments are given')
    }
  })

  it('rejects a token without = and an empty key', () => {
    failsWith(() => buildPayload(undefined, ['x']), "Invalid argument 'x': expected key=value")
    failsWith(() => buildPayload(undefined, ['a=1', '=x']), "Invalid argument '=x': empty key")
  })
})

describe('resolveTriggerInput: positional and legacy forms', () => {
  it('takes the first positional as the function id and the rest as tokens', () => {
    assert.deepEqual(resolveTriggerInput({ positionals: ['math::add', 'a=1', 'b=2'] }), {
      functionId: 'math::add',
      payload: { a: 1, b: 2 },
      warnings: [],
    })
    assert.deepEqual(resolveTriggerInput({ positionals: ['math::add'], data: '{"a":5}' }), {
      functionId: 'math::add',
      payload: { a: 5 },
      warnings: [],
    })
  })

  it('reports no function id when there is none', () => {
    assert.deepEqual(resolveTriggerInput({ positionals: [] }), { functionId: undefined, payload: {}, warnings: [] })
  })

  it('refuses a key=value where the function id should be', () => {
    failsWith(
      () => resolveTriggerInput({ positionals: ['a=1'] }),
      "Missing FUNCTION_ID: the first argument 'a=1' looks like key=value; put the function id first",
    )
  })

  it('accepts --function-id with --payload, defaulting the payload to {}', () => {
    assert.deepEqual(resolveTriggerInput({ positionals: [], functionIdFlag: 'math::add', payloadFlag: '{"a":1}' }), {
      functionId: 'math::add',
      payload: { a: 1 },
      warnings: [],
    })
    assert.deepEqual(resolveTriggerInput({ positionals: [], functionIdFlag: 'math::add' }), {
      functionId: 'math::add',
      payload: {},
      warnings: [],
    })
    assert.deepEqual(resolveTriggerInput({ positionals: [], functionIdFlag: 'x', payloadFlag: '[1]' }), {
      functionId: 'x',
      payload: [1],
      warnings: [],
    })
  })

  it('refuses to mix the legacy form with positional arguments', () => {
    for (const positionals of [['math::add'], ['a=1']]) {
      failsWith(
        () => resolveTriggerInput({ positionals, functionIdFlag: 'math::add' }),
        '--function-id/--payload cannot be combined with positional arguments',
      )
      failsWith(
        () => resolveTriggerInput({ positionals, payloadFlag: '{}' }),
        '--function-id/--payload cannot be combined with positional arguments',
      )
    }
  })

  it('refuses --payload without --function-id, and --payload with --data', () => {
    failsWith(() => resolveTriggerInput({ positionals: [], payloadFlag: '{}' }), '--payload requires --function-id')
    failsWith(
      () => resolveTriggerInput({ positionals: [], functionIdFlag: 'f', payloadFlag: '{}', data: '{}' }),
      /^--payload and --data cannot be combined/,
    )
  })

  it('reports invalid legacy --payload JSON like --data', () => {
    failsWith(() => resolveTriggerInput({ positionals: [], functionIdFlag: 'f', payloadFlag: '{' }), /^--payload: invalid JSON/)
  })
})

describe('--data @file and --data - (large payloads without E2BIG)', () => {
  const noStdin = () => Promise.reject(new Error('stdin not expected'))

  it('reads @file relative to the working directory, - from standard input, anything else as is', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-payload-'))
    writeFileSync(join(dir, 'p.json'), '{"a":1}')
    assert.equal(await readDataArgument('@p.json', '--data', noStdin, dir), '{"a":1}')
    assert.equal(await readDataArgument(`@${join(dir, 'p.json')}`, '--data', noStdin, '/'), '{"a":1}')
    assert.equal(await readDataArgument('-', '--data', () => readAll(Readable.from([Buffer.from('[1,'), Buffer.from('2]')]))), '[1,2]')
    assert.equal(await readDataArgument('{"b":2}', '--data', noStdin), '{"b":2}')
    assert.equal(await readDataArgument(undefined, '--data', noStdin), undefined)
  })

  it('names the file that cannot be read', async () => {
    await assert.rejects(readDataArgument('@nope.json', '--data', noStdin, tmpdir()), (err: unknown) => {
      assert.ok(err instanceof PayloadError)
      assert.equal(err.message, '--data: cannot read nope.json (no such file)')
      return true
    })
    await assert.rejects(readDataArgument('@', '--payload', noStdin), /--payload: '@' must be followed by a file name/)
  })
})

describe('payloads over the engine\'s message limit (issue 16 item 14)', () => {
  const noStdin = () => Promise.reject(new Error('stdin not expected'))
  const tooLarge = (pattern: RegExp) => (err: unknown) => {
    assert.ok(err instanceof PayloadError, String(err))
    assert.equal(err.code, 'MESSAGE_TOO_LARGE')
    assert.match(err.message, pattern)
    return true
  }

  it('refuses a file larger than the limit before reading it, naming its size and the limit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-payload-'))
    writeFileSync(join(dir, 'big.json'), '')
    truncateSync(join(dir, 'big.json'), 100 * 1024 * 1024)
    await assert.rejects(
      readDataArgument('@big.json', '--data', noStdin, dir, 64 * 1024 * 1024),
      tooLarge(/^--data @big\.json is 104857600 bytes \(100\.0 MiB\); the engine accepts at most 67108864 bytes \(64\.0 MiB\) in one message \(max_message_bytes\), so it was not sent$/),
    )
    writeFileSync(join(dir, 'fits.json'), '{"a":1}')
    assert.equal(await readDataArgument('@fits.json', '--data', noStdin, dir, 7), '{"a":1}')
  })

  it('stops reading standard input past the limit', async () => {
    const stream = () => Readable.from([Buffer.alloc(600, 'x'), Buffer.alloc(600, 'x')])
    await assert.rejects(readAll(stream(), 1000), InputTooLarge)
    await assert.rejects(
      readDataArgument('-', '--data', (max) => readAll(stream(), max), tmpdir(), 1000),
      tooLarge(/^--data - \(standard input\) is more than 1000 bytes; the engine accepts at most 1000 bytes in one message/),
    )
    assert.equal((await readAll(stream(), 1200)).length, 1200)
  })

  it('refuses a payload whose message would exceed the limit (payload, id, namespace and the frame around it)', () => {
    const payload = { blob: 'x'.repeat(1000) }
    const bytes = JSON.stringify(payload).length
    assertFitsMessage(payload, bytes + FRAME_ENVELOPE_BYTES + 'f::g'.length, 'the payload', 'f::g')
    assert.throws(() => assertFitsMessage(payload, bytes + FRAME_ENVELOPE_BYTES + 3, 'the payload', 'f::g'), tooLarge(new RegExp(`^the payload is ${bytes} bytes;`)))
    assert.throws(() => assertFitsMessage(payload, bytes + FRAME_ENVELOPE_BYTES + 4, 'the payload', 'f::g', 'ns'), tooLarge(/^the payload is/))
  })

  it('labels name the file or standard input', () => {
    assert.equal(dataLabel('--data', '@a.json'), '--data @a.json')
    assert.equal(dataLabel('--data', '-'), '--data -')
    assert.equal(dataLabel('--data', '{"a":1}'), '--data')
    assert.equal(dataLabel('--payload', undefined), '--payload')
  })
})

describe('key=value values that look like JSON but are not', () => {
  it('warns for { or [ that does not parse, and sends the text', () => {
    assert.match(tokenWarning('o={"k":1')!, /^the value of 'o' starts with '\{' but is not valid JSON \(.+\); sending it as text$/)
    assert.match(tokenWarning('l=[1,')!, /^the value of 'l' starts with '\['/)
    const input = resolveTriggerInput({ positionals: ['f', 'o={k:1}', 'a=1'] })
    assert.deepEqual(input.payload, { o: '{k:1}', a: 1 })
    assert.equal(input.warnings.length, 1)
  })

  it('says nothing for valid JSON or other text', () => {
    for (const token of ['o={"k":1}', 'l=[1,2]', 'name=alice', 'e=', 'x=}{']) assert.equal(tokenWarning(token), undefined, token)
  })
})
