/**
 * The pieces of the lines a built-in logs when a delivery it made fails (issue 21 "In the
 * terminal": a failed queue attempt, a message dead-lettered, a failed cron run). Those lines reach
 * the developer's terminal and the log store through the engine's logger at the default level.
 *
 * What they quote came from outside — a handler's error code and message, a topic, a function id —
 * so each piece is bounded in length and shown through the terminal escaping
 * (`runtime/engine/terminal.ts`): one line, no control character a terminal could act on, however
 * hostile the handler.
 */
import type { ErrorBody } from 'svc-protocol/errors'
import { terminalText } from '../../engine/terminal.ts'

/** Most characters of an error message quoted in a failure line (longer ones end with `…`). */
export const MAX_MESSAGE_CHARS = 500
/** Most characters of a name (queue, topic, function id, error code) quoted in a failure line. */
export const MAX_NAME_CHARS = 200

/**
 * `text` cut to `max` UTF-16 units (never inside a surrogate pair; `…` marks a cut), with every
 * control character shown as text (`terminalText`): one line, safe for a terminal.
 * @example quoted('boom\u001b[2J\nnext', 100) // 'boom\\x1b[2J\\nnext'
 */
export function quoted(text: string, max: number = MAX_NAME_CHARS): string {
  if (text.length <= max) return terminalText(text)
  let end = max
  const last = text.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end-- // keep a pair whole: drop its first half
  return `${terminalText(text.slice(0, end))}…`
}

/**
 * `<code>: <message>` of an error body, each bounded and escaped ({@link quoted}).
 * @example errorText({ code: 'invocation_failed', message: 'SMTP refused' }) // 'invocation_failed: SMTP refused'
 */
export function errorText(error: Pick<ErrorBody, 'code' | 'message'>): string {
  return `${quoted(String(error.code), MAX_NAME_CHARS)}: ${quoted(String(error.message), MAX_MESSAGE_CHARS)}`
}

/**
 * A delay as a person reads it: `250 ms`, `2 s`, `1.5 s`, `4 min`, `2 h`.
 * @example formatDelay(2000) // '2 s'
 */
export function formatDelay(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(1))} s`
  if (ms < 3_600_000) return `${Number((ms / 60_000).toFixed(1))} min`
  return `${Number((ms / 3_600_000).toFixed(1))} h`
}

/** Words a POSIX shell passes through unchanged. */
const PLAIN_WORD = /^[A-Za-z0-9_.:@%+=/,-]+$/

/**
 * A POSIX shell word for `word`: as it is when it needs no quoting, else in single quotes (a `'`
 * inside written `'\''`).
 * @example shellWord("it's") // "'it'\\''s'"
 */
export function shellWord(word: string): string {
  return PLAIN_WORD.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`
}

/**
 * The `svc trigger` command line that invokes `functionId` with the string fields of `payload`
 * (cli.md §4.6): `key=value` tokens, each a shell word; a value that would be read as JSON (a
 * number, `true`, `null`…) or that needs quoting is given as a JSON string, so the command sends
 * exactly these strings.
 * @example triggerCommand('svc::queue::redrive_message', { queue: 'emails', message_id: 'b5…' }) // 'svc trigger svc::queue::redrive_message queue=emails message_id=b5…'
 */
export function triggerCommand(functionId: string, payload: Record<string, string>): string {
  const tokens = Object.entries(payload).map(([key, value]) => shellWord(`${key}=${readsAsText(value) ? value : JSON.stringify(value)}`))
  return ['svc trigger', shellWord(functionId), ...tokens].join(' ')
}

/** Whether the CLI keeps `value` as text in a `key=value` token (cli.md §4.6 rule 3: not valid JSON). */
function readsAsText(value: string): boolean {
  if (!PLAIN_WORD.test(value)) return false
  try {
    JSON.parse(value)
    return false
  } catch {
    return true
  }
}
