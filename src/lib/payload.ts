/**
 * The payload of `svc trigger` from `--data` and `KEY=VALUE` tokens (cli.md §4.6, payload rules).
 */
import { readFileSync } from 'node:fs'
import { jsonParse } from 'svc-protocol/json'

/** A payload that cannot be built; the CLI reports `message` with exit code 2. */
export class PayloadError extends Error {
  override readonly name = 'PayloadError'
  readonly code = 'INVALID_ARGUMENT'
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
 * an argument list is limited by the OS (about 128 KiB per argument on Linux, `E2BIG`).
 *
 * @param readStdin reads standard input to its end (injected for tests)
 * @throws {PayloadError} `--data: cannot read <file> (<reason>)`, `--data: cannot read standard input (<reason>)`
 * @example await readDataArgument('@payload.json', '--data', readAll) // the file's text
 */
export async function readDataArgument(
  value: string | undefined,
  flag: string,
  readStdin: () => Promise<string>,
  cwd = process.cwd(),
): Promise<string | undefined> {
  if (value === undefined) return undefined
  if (value === '-') {
    try {
      return await readStdin()
    } catch (err) {
      throw new PayloadError(`${flag}: cannot read standard input (${(err as Error).message})`)
    }
  }
  if (value.startsWith('@')) {
    const file = value.slice(1)
    if (file === '') throw new PayloadError(`${flag}: '@' must be followed by a file name, e.g. ${flag} @payload.json`)
    try {
      return readFileSync(file.startsWith('/') ? file : `${cwd}/${file}`, 'utf8')
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      throw new PayloadError(`${flag}: cannot read ${file} (${code === 'ENOENT' ? 'no such file' : (err as Error).message})`)
    }
  }
  return value
}

/** Reads all of `stream` (standard input by default) as UTF-8 text. */
export async function readAll(stream: NodeJS.ReadableStream = process.stdin): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer))
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
 * @param dataFlag the flag named in a JSON error (`--payload` for the legacy form)
 * @throws {PayloadError} for invalid `--data` JSON (`--data: invalid JSON (<parser message>)`), a
 *   malformed token, or tokens over a `--data` that is not a JSON object
 * @example buildPayload('{"a":1}', ['b=2', 'name=alice']) // { a: 1, b: 2, name: 'alice' }
 */
export function buildPayload(data: string | undefined, tokens: readonly string[], dataFlag = '--data'): unknown {
  let base: unknown = {}
  if (data !== undefined) {
    try {
      base = jsonParse(data)
    } catch (err) {
      throw new PayloadError(`${dataFlag}: invalid JSON (${(err as Error).message})`)
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
    return { functionId: input.functionIdFlag, payload: buildPayload(input.payloadFlag ?? input.data, [], input.payloadFlag !== undefined ? '--payload' : '--data'), warnings: [] }
  }
  const [functionId, ...tokens] = input.positionals
  if (functionId === '') throw new PayloadError('FUNCTION_ID must not be empty')
  if (functionId !== undefined && functionId.includes('=')) {
    throw new PayloadError(`Missing FUNCTION_ID: the first argument '${functionId}' looks like key=value; put the function id first`)
  }
  const payload = buildPayload(input.data, tokens)
  const warnings = tokens.map(tokenWarning).filter((w): w is string => w !== undefined)
  return { functionId, payload, warnings }
}
