/**
 * Text from outside on a terminal (issue 16, item 8). A worker's output, an OTLP `service.name`, a
 * log body, a function's error message, a description a worker registered: any of them may hold
 * control characters that a terminal obeys — OSC 52 writes the clipboard, OSC 0 sets the window
 * title, CSI sequences move the cursor and erase, CR returns to the start of the line so the rest
 * overwrites it, LF starts a line that looks like another source's — or the Unicode bidirectional
 * controls that make text read differently from what it is ("Trojan Source", CVE-2021-42574).
 *
 * Everything the CLI prints that came from outside goes through {@link terminalText} (one line),
 * {@link terminalLines} (a block whose line breaks are kept) or {@link terminalJson} (`--json`
 * documents) before the CLI adds its own colours, so the only escape sequences that reach the
 * terminal are the CLI's SGR colour codes.
 *
 * Rendering: `\n`, `\r` become those two-character texts; other C0 controls, DEL and the C1
 * controls (U+0080–U+009F, which some terminals read as 8-bit CSI/OSC) become `\xHH`; the bidi
 * controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) and the line and paragraph
 * separators (U+2028, U+2029) become `\uHHHH`. TAB is kept: it only moves the cursor to the next
 * tab stop and cannot erase or overwrite (tab stops themselves are set by escape sequences, which
 * are escaped). A backslash is kept as it is, so Windows paths and JSON read normally; the escaped
 * form is for reading, not for parsing back.
 */

/** Characters a terminal may act on, other than TAB (see the module comment). */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g

/** The same set without C0 controls, which `JSON.stringify` already escapes. */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g

function escapeChar(c: string): string {
  if (c === '\n') return '\\n'
  if (c === '\r') return '\\r'
  const code = c.charCodeAt(0)
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
}

/**
 * One line of text from outside, safe to print: every control character a terminal could act on
 * (C0 but TAB, DEL, C1, bidi controls, U+2028/U+2029) rendered visibly, line breaks included.
 *
 * @example terminalText('ok\u001b]52;c;aGk=\u0007\r12:00 engine ERROR x') // 'ok\\x1b]52;c;aGk=\\x07\\r12:00 engine ERROR x'
 */
export function terminalText(text: string): string {
  UNSAFE.lastIndex = 0
  return UNSAFE.test(text) ? text.replace(UNSAFE, escapeChar) : text
}

/**
 * A block of text from outside (a stack trace, the tail of a log file) as safe lines: split at
 * LF (a CR before it belongs to the break), each line through {@link terminalText}, so a lone CR
 * shows as `\r` and can never overwrite a line. The caller decides how to prefix or indent them.
 *
 * @example terminalLines('Error: x\r\n    at f (a.js:1:1)') // ['Error: x', '    at f (a.js:1:1)']
 */
export function terminalLines(text: string): string[] {
  return text.split(/\r?\n/).map(terminalText)
}

/**
 * `JSON.stringify(value, null, indent)` safe for a terminal and still the same JSON: DEL, the C1
 * controls, the bidi controls and U+2028/U+2029, which `JSON.stringify` leaves raw, are written
 * as `\uHHHH` escapes (C0 controls it escapes itself), so a parser reads exactly the same value.
 * A value `JSON.stringify` has no text for (undefined, a function) is written `null`, as it would
 * be inside an array.
 *
 * @example terminalJson({ name: 'a\u202eb' }) // '{"name":"a\\u202eb"}'
 */
export function terminalJson(value: unknown, indent?: number): string {
  const text = (JSON.stringify(value, null, indent) as string | undefined) ?? 'null'
  UNSAFE_IN_JSON.lastIndex = 0
  return UNSAFE_IN_JSON.test(text) ? text.replace(UNSAFE_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : text
}
