/**
 * The payload of `svc trigger` from `--data` and `KEY=VALUE` tokens (cli.md §4.6, payload rules),
 * and the checks that keep it sendable: one engine message holds at most `max_message_bytes`
 * (protocol.md §2), so a larger payload is refused before anything is read in full or sent.
 */
import { openSync, closeSync, fstatSync, readFileSync } from 'node:fs'
import { JsonSyntaxError, jsonParse, parseJson } from 'svc-protocol/json'
import { terminalText } from '../../runtime/index.ts'

/**
 * A payload that cannot be built or sent; the CLI reports `message` with exit code 2 and `code`:
 * `INVALID_ARGUMENT`, or `MESSAGE_TOO_LARGE` for a payload over the engine's message limit.
 */
export class PayloadError extends Error {
  override readonly name = 'PayloadError'
  readonly code: 'INVALID_ARGUMENT' | 'MESSAGE_TOO_LARGE'
  constructor(message: string, code: 'INVALID_ARGUMENT' | 'MESSAGE_TOO_LARGE' = 'INVALID_ARGUMENT') {
    super(message)
    this.code = code
  }
}

/**
 * Room for the invocation frame around a payload (type, invocation id, function id, namespace,
 * trace context, action), bytes; the function id and namespace are counted on top.
 */
export const FRAME_ENVELOPE_BYTES = 1024

/** `104857600 bytes (100.0 MiB)`. */
export function formatBytes(bytes: number): string {
  return bytes < 1024 * 1024 ? `${bytes} bytes` : `${bytes} bytes (${(bytes / (1024 * 1024)).toFixed(1)} MiB)`
}

/** The failure for data over the message limit: what it is, its size and the limit. */
function tooLarge(what: string, bytes: number, maxMessageBytes: number, exact: boolean): PayloadError {
  return new PayloadError(
    `${what} is ${exact ? '' : 'more than '}${formatBytes(bytes)}; the engine accepts at most ${formatBytes(maxMessageBytes)} in one message (max_message_bytes), so it was not sent`,
    'MESSAGE_TOO_LARGE',
  )
}

/**
 * Refuses a payload that would not fit in one message to the engine: its JSON text, plus the
 * function id, the namespace and {@link FRAME_ENVELOPE_BYTES} for the frame around it, over
 * `maxMessageBytes` (protocol.md §2; the engine would close the connection with 1009).
 *
 * @param label names the payload in the message: `--data @orders.json`, `the payload`
 * @throws {PayloadError} `MESSAGE_TOO_LARGE`: `<label> is <n> bytes (<x> MiB); the engine accepts at most <limit> …`
 * @example assertFitsMessage({ a: 1 }, 64 * 1024 * 1024, 'the payload', 'math::add')
 */
export function assertFitsMessage(payload: unknown, maxMessageBytes: number, label: string, functionId: string, namespace = ''): void {
  const bytes = Buffer.byteLength(JSON.stringify(payload) ?? 'null')
  if (bytes + Buffer.byteLength(functionId) + Buffer.byteLength(namespace) + FRAME_ENVELOPE_BYTES > maxMessageBytes) {
    throw tooLarge(label, bytes, maxMessageBytes, true)
  }
}

/**
 * Where a JSON text fails, without quoting it (a file may hold anything, secrets included, and any
 * byte): `line 3 column 5: value expected, found 'n'`, the one character shown escaped. From the
 * project's own scanner (svc-protocol/json), which also refuses nesting deeper than 128 levels, as
 * the engine does for values from outside.
 */
export function jsonProblem(text: string, err: unknown): string {
  if (!(err instanceof JsonSyntaxError)) return 'not valid JSON'
  const before = text.slice(0, err.index)
  const line = before.split('\n').length
  const column = err.index - (before.lastIndexOf('\n') + 1) + 1
  const what = /\(([^()]*)\)$/.exec(err.message)?.[1]
  let problem: string
  if (err.index >= text.length) problem = `unexpected end of the text${what ? ` (${what})` : ''}`
  else if (what === undefined) problem = err.message.replace(/ at position \d+/, '')
  else {
    const found = String.fromCodePoint(text.codePointAt(err.index)!)
    problem = `${what}, found '${terminalText(found)}'`
  }
  return `line ${line} column ${column}: ${problem}`
}

/**
 * The value of one `KEY=VALUE` token: the parsed JSON value when the text after `=` is valid JSON,
 * otherwise the text itself (`zip=01234` stays the string `"01234"`, `e=` is `""`).
 */
export function parseTokenValue(text: string): unknown {
  if (text === '') return ''
  try {
    return jsonParse(text)
  } catch {
    return text
  }
}

/**
 * The warning for a `KEY=VALUE` value that starts like a JSON object or array but does not parse, so
 * it is sent as text (`o={"k":1` with a brace missing is rarely meant as a string); undefined otherwise.
 */
export function tokenWarning(token: string): string | undefined {
  const at = token.indexOf('=')
  if (at <= 0) return undefined
  const text = token.slice(at + 1)
  const first = text.trimStart()[0]
  if (first !== '{' && first !== '[') return undefined
  try {
    jsonParse(text)
    return undefined
  } catch (err) {
    return `the value of '${token.slice(0, at)}' starts with '${first}' but is not valid JSON (${(err as Error).message}); sending it as text`
  }
}

/**
 * Reads a `--data` (or `--payload`) argument: `@<file>` is the text of that file, `-` the whole of
 * standard input, anything else the JSON text itself. Large payloads go through a file or stdin, since
 * an argument list is limited by the OS (about 128 KiB per argument on Linux, `E2BIG`). A file or
 * input larger than `maxBytes` is refused before it is read in full: it could not be sent anyway.
 *
 * @param readStdin reads standard input to its end, failing past `maxBytes` (injected for tests)
 * @param maxBytes the engine's message limit (`max_message_bytes`, protocol.md §2), bytes
 * @throws {PayloadError} `--data: cannot read <file> (<reason>)`, `--data: cannot read standard input (<reason>)`;
 *   `MESSAGE_TOO_LARGE` `--data @<file> is <n> bytes …` for a file or input over `maxBytes`
 * @example await readDataArgument('@payload.json', '--data', readAll) // the file's text
 */
export async function readDataArgument(
  value: string | undefined,
  flag: string,
  readStdin: (maxBytes: number) => Promise<string>,
  cwd = process.cwd(),
  maxBytes = Infinity,
): Promise<string | undefined> {
  if (value === undefined) return undefined
  if (value === '-') {
    try {
      return await readStdin(maxBytes)
    } catch (err) {
      if (err instanceof InputTooLarge) throw tooLarge(`${flag} - (standard input)`, err.bytes, maxBytes, false)
      throw new PayloadError(`${flag}: cannot read standard input (${(err as Error).message})`)
    }
  }
  if (value.startsWith('@')) {
    const file = value.slice(1)
    if (file === '') throw new PayloadError(`${flag}: '@' must be followed by a file name, e.g. ${flag} @payload.json`)
    let fd: number | undefined
    try {
      fd = openSync(file.startsWith('/') ? file : `${cwd}/${file}`, 'r')
      const size = fstatSync(fd).size
      if (size > maxBytes) throw tooLarge(`${flag} @${file}`, size, maxBytes, true)
      return readFileSync(fd, 'utf8')
    } catch (err) {
      if (err instanceof PayloadError) throw err
      const code = (err as NodeJS.ErrnoException).code
      throw new PayloadError(`${flag}: cannot read ${file} (${code === 'ENOENT' ? 'no such file' : (err as Error).message})`)
    } finally {
      if (fd !== undefined) closeSync(fd)
    }
  }
  return value
}

/** Standard input went past the limit of {@link readAll}; `bytes` were read when it stopped. */
export class InputTooLarge extends Error {
  override readonly name = 'InputTooLarge'
  readonly bytes: number
  constructor(bytes: number) {
    super(`more than ${bytes} bytes`)
    this.bytes = bytes
  }
}

/**
 * Reads all of `stream` (standard input by default) as UTF-8 text.
 *
 * @param maxBytes stops reading and throws {@link InputTooLarge} once more than this many bytes came
 */
export async function readAll(stream: NodeJS.ReadableStream = process.stdin, maxBytes = Infinity): Promise<string> {
  const chunks: Buffer[] = []
  let bytes = 0
  for await (const chunk of stream) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer)
    bytes += buffer.byteLength
    if (bytes > maxBytes) throw new InputTooLarge(maxBytes)
    chunks.push(buffer)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * Splits a token at its first `=`.
 *
 * @throws {PayloadError} `Invalid argument 'x': expected key=value`, `Invalid argument '=x': empty key`
 */
export function parseToken(token: string): { key: string; value: unknown } {
  const at = token.indexOf('=')
  if (at < 0) throw new PayloadError(`Invalid argument '${token}': expected key=value`)
  if (at === 0) throw new PayloadError(`Invalid argument '${token}': empty key`)
  return { key: token.slice(0, at), value: parseTokenValue(token.slice(at + 1)) }
}

/**
 * Builds the payload: the base is `data` parsed as JSON (any JSON value) or `{}`; tokens are
 * applied left to right as a shallow merge, keys taken literally (no nesting on dots).
 *
 * @param data the `--data` text, undefined when the flag was not given
 * @param tokens `KEY=VALUE` arguments in command-line order
 * @param dataFlag names the data in a JSON error: `--data`, `--data @orders.json`, `--payload`
 * @throws {PayloadError} for invalid `--data` JSON (`--data: invalid JSON (line <l> column <c>:
 *   <problem>)`, {@link jsonProblem}: the text is never quoted), a malformed token, or tokens over a
 *   `--data` that is not a JSON object
 * @example buildPayload('{"a":1}', ['b=2', 'name=alice']) // { a: 1, b: 2, name: 'alice' }
 */
export function buildPayload(data: string | undefined, tokens: readonly string[], dataFlag = '--data'): unknown {
  let base: unknown = {}
  if (data !== undefined) {
    try {
      base = parseJson(data)
    } catch (err) {
      throw new PayloadError(`${dataFlag}: invalid JSON (${jsonProblem(data, err)})`)
    }
  }
  const fields = tokens.map(parseToken)
  if (fields.length === 0) return base
  if (typeof base !== 'object' || base === null || Array.isArray(base)) {
    throw new PayloadError('--data must be a JSON object when key=value arguments are given')
  }
  const payload: Record<string, unknown> = { ...(base as Record<string, unknown>) }
  for (const { key, value } of fields) {
    // defineProperty, not assignment: a literal `__proto__` key must become a field, not a prototype.
    Object.defineProperty(payload, key, { value, enumerable: true, writable: true, configurable: true })
  }
  return payload
}

/** How messages name a `--data`/`--payload` argument: `--data @orders.json`, `--data -`, or the flag alone for inline JSON. */
export function dataLabel(flag: string, value: string | undefined): string {
  return value !== undefined && (value === '-' || value.startsWith('@')) ? `${flag} ${value}` : flag
}

/** What `svc trigger` was asked for, positional and legacy forms reconciled. */
export interface TriggerInput {
  /** Undefined when no function id was given at all. */
  functionId: string | undefined
  payload: unknown
  /** Warnings to print on stderr ({@link tokenWarning}); the call goes ahead. */
  warnings: string[]
}

/**
 * Reads the positional form `svc trigger [FUNCTION_ID] [KEY=VALUE...] [--data <json>]` and the legacy
 * form `--function-id=<id> [--payload=<json>]` (which equals `svc trigger <id> --data <json>`).
 *
 * @throws {PayloadError} `--function-id/--payload cannot be combined with positional arguments`,
 *   `--payload requires --function-id`, `--payload and --data cannot be combined`, and the errors
 *   of {@link buildPayload}
 */
export function resolveTriggerInput(input: {
  positionals: readonly string[]
  data?: string | undefined
  functionIdFlag?: string | undefined
  payloadFlag?: string | undefined
  /** How errors name `data` and `payloadFlag` ({@link dataLabel}); default `--data` and `--payload`. */
  dataLabel?: string | undefined
  payloadLabel?: string | undefined
}): TriggerInput {
  const legacy = input.functionIdFlag !== undefined || input.payloadFlag !== undefined
  if (legacy) {
    if (input.positionals.length > 0) {
      throw new PayloadError('--function-id/--payload cannot be combined with positional arguments')
    }
    if (input.functionIdFlag === undefined) throw new PayloadError('--payload requires --function-id')
    if (input.payloadFlag !== undefined && input.data !== undefined) {
      throw new PayloadError('--payload and --data cannot be combined; --payload is the legacy spelling of --data')
    }
    if (input.functionIdFlag === '') throw new PayloadError('--function-id must not be empty')
    const label = input.payloadFlag !== undefined ? (input.payloadLabel ?? '--payload') : (input.dataLabel ?? '--data')
    return { functionId: input.functionIdFlag, payload: buildPayload(input.payloadFlag ?? input.data, [], label), warnings: [] }
  }
  const [functionId, ...tokens] = input.positionals
  if (functionId === '') throw new PayloadError('FUNCTION_ID must not be empty')
  if (functionId !== undefined && functionId.includes('=')) {
    throw new PayloadError(`Missing FUNCTION_ID: the first argument '${functionId}' looks like key=value; put the function id first`)
  }
  const payload = buildPayload(input.data, tokens, input.dataLabel ?? '--data')
  const warnings = tokens.map(tokenWarning).filter((w): w is string => w !== undefined)
  return { functionId, payload, warnings }
}
