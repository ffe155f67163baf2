/**
 * Text from outside on a terminal (issue 16 item 8): the escaping functions and the console log
 * line, with examples of each attack and fast-check properties over any input.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { formatLogLine, type LogRecord } from './logger.ts'
import { terminalJson, terminalLines, terminalText } from './terminal.ts'

/** Every character a terminal may act on, TAB excepted (see terminal.ts). */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/
/** The SGR colour sequences formatLogLine paints, and nothing else. */
// eslint-disable-next-line no-control-regex
const OUR_SGR = /\u001b\[[0-9;]*m/g

/** Sequences seen in attacks: OSC 52 (clipboard), OSC 0 (title), CSI, 8-bit CSI, CR/LF, bidi overrides. */
const ATTACKS = [
  '\u001b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\u0007',
  '\u001b]52;c;aGk=\u001b\\',
  '\u001b]0;pwned\u0007',
  '\u001b[2J\u001b[H',
  '\u001b[31m',
  '\u009b31m',
  '\u009d0;x\u009c',
  '\r12:00:00.000 engine ERROR forged\n',
  '\r\n',
  '\n',
  '\r',
  '\u0007',
  '\u007f',
  '\u0085',
  '\u202e',
  '\u2066',
  '\u2069',
  '\u200f',
  '\u2028',
  '\t',
  '\ud800',
]

/** Any string, with the attack sequences mixed in often. */
const hostile = fc
  .array(fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom(...ATTACKS), fc.string({ unit: 'grapheme-ascii' })), { maxLength: 12 })
  .map((parts) => parts.join(''))

describe('terminalText (issue 16 item 8)', () => {
  it('shows escape sequences, CR, LF, DEL, C1 and bidi controls as text', () => {
    assert.equal(terminalText('a\u001b]52;c;aGk=\u0007b'), 'a\\x1b]52;c;aGk=\\x07b')
    assert.equal(terminalText('ok\r12:00 engine ERROR x\nnext'), 'ok\\r12:00 engine ERROR x\\nnext')
    assert.equal(terminalText('\u007f\u009b\u0085'), '\\x7f\\x9b\\x85')
    assert.equal(terminalText('user\u202eexe.txt\u2066'), 'user\\u202eexe.txt\\u2066')
    assert.equal(terminalText('tab\tkept, C:\\path kept, café ✓'), 'tab\tkept, C:\\path kept, café ✓')
  })

  it('terminalLines keeps line breaks (CRLF is one) and shows a lone CR', () => {
    assert.deepEqual(terminalLines('Error: x\r\n    at f\nthen\rover'), ['Error: x', '    at f', 'then\\rover'])
  })

  it('terminalJson is the same JSON with DEL, C1 and bidi controls as \\u escapes', () => {
    const value = { name: 'a\u202eb\u009b\u007f', n: 1, nested: ['\u001b]0;t\u0007'] }
    const text = terminalJson(value)
    assert.equal(text, '{"name":"a\\u202eb\\u009b\\u007f","n":1,"nested":["\\u001b]0;t\\u0007"]}')
    assert.deepEqual(JSON.parse(text), value)
    assert.equal(terminalJson(undefined), 'null')
  })

  it('fuzz: no output holds a character a terminal acts on (fast-check)', () => {
    fc.assert(
      fc.property(hostile, (text) => {
        assert.doesNotMatch(terminalText(text), CONTROL)
        const lines = terminalLines(text)
        for (const line of lines) assert.doesNotMatch(line, CONTROL)
        assert.equal(lines.length, text.split('\n').length)
      }),
      { numRuns: 2000 },
    )
  })

  it('fuzz: terminalJson parses back to the same value and holds no raw control character (fast-check)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), hostile, fc.constantFrom(undefined, 2), (value, text, indent) => {
        const document = { value, text, [text]: text }
        const out = terminalJson(document, indent)
        assert.deepEqual(JSON.parse(out), JSON.parse(JSON.stringify(document)))
        assert.doesNotMatch(indent === undefined ? out : out.replace(/\n/g, ''), CONTROL)
      }),
      { numRuns: 500 },
    )
  })
})

describe('console log lines (cli.md §3, issue 16 item 8)', () => {
  const time = new Date(2026, 0, 2, 3, 4, 5, 6)

  it('a message of several lines is one line each with the real source; a CR cannot overwrite', () => {
    const record: LogRecord = { time, source: 'evil\u001b]0;t\u0007', level: 'info', message: 'hello\r\n03:04:05.006 engine ERROR forged\rover\n' }
    assert.equal(
      formatLogLine(record),
      '03:04:05.006 evil\\x1b]0;t\\x07 INFO hello\n03:04:05.006 evil\\x1b]0;t\\x07 INFO 03:04:05.006 engine ERROR forged\\rover',
    )
  })

  it("the message's colours are dropped, ours added after escaping: the only escape sequences are our SGR codes", () => {
    const line = formatLogLine({ time, source: 'w', level: 'error', message: '\u001b[32mgreen\u001b[0m\u009b2J', data: { k: '\u202e\u001b' } }, true)
    assert.doesNotMatch(line.replace(OUR_SGR, ''), CONTROL)
    // The message's own colours are dropped; the 8-bit CSI is shown.
    assert.match(line, /green\\x9b2J/)
    assert.match(line, /"k":"\\u202e\\u001b"/)
  })

  it('fuzz: any source, message and data give lines that start with the time and the real source and hold only our SGR codes (fast-check)', () => {
    fc.assert(
      fc.property(hostile, hostile, fc.constantFrom('debug', 'info', 'warn', 'error'), fc.dictionary(hostile, hostile, { maxKeys: 3 }), fc.boolean(), (source, message, level, data, colour) => {
        const record: LogRecord = { time, source, level: level as LogRecord['level'], message, data }
        const lines = formatLogLine(record, colour).replace(OUR_SGR, '').split('\n')
        const expected = terminalLines(message.replace(/\u001b\[[0-9;:]*m/g, ''))
        while (expected.length > 1 && expected[expected.length - 1] === '') expected.pop()
        assert.equal(lines.length, expected.length)
        for (const line of lines) {
          assert.doesNotMatch(line, CONTROL)
          assert.ok(line.startsWith(`03:04:05.006 ${terminalText(source)} ${level.toUpperCase()} `), line)
        }
      }),
      { numRuns: 1000 },
    )
  })
})
