/**
 * How the `redis` queue backend (./redis.ts) sends its Lua scripts: one `EVALSHA <sha> 0 <args…>`
 * command per call (`EVAL` the first time on a connection, so that Redis caches the script), written
 * as one RESP buffer built in two passes over the arguments.
 *
 * ioredis's own script commands (`defineCommand`) copy the arguments four times (spread, unshift,
 * `[sha, ...args]`, `flat`), stringify them, and write the command as a string of five
 * concatenations per argument, which the socket then flattens and encodes to UTF-8: per message
 * enqueued (14 arguments) that was about 3 KB of garbage and the largest share of the adapter's
 * CPU. Here the arguments go straight into one Buffer (from Node's pool for small calls), and a
 * batch's per-message argument lists are passed as they are, without flattening them first.
 * Replies, timeouts, errors and reconnection stay ioredis's: the command is an ioredis
 * {@link Command} whose {@link Command.toWritable} is this file's.
 */
import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'
import { Command } from 'ioredis'

/** One script argument: a string (sent as its UTF-8 bytes) or a number (sent as `String(n)`). */
export type ScriptArg = string | number
/** A call's arguments: single values, or lists of them (one level, e.g. one list per message of a batch), sent in order. */
export type ScriptArgs = ReadonlyArray<ScriptArg | readonly ScriptArg[]>

/** A Lua script, and the connections (sockets) whose Redis has it cached. */
export class LuaScript {
  readonly lua: string
  /** SHA-1 of {@link lua}, hex (what `EVALSHA` names it by). */
  readonly sha: string
  /** Sockets on which the script was sent with `EVAL` (a new connection sends it again). */
  readonly loaded = new WeakSet<object>()

  constructor(lua: string) {
    this.lua = lua
    this.sha = createHash('sha1').update(lua).digest('hex')
  }
}

/**
 * Runs `script` with no KEYS and ARGV = `fixed` followed by `args` (lists flattened in order),
 * replies as UTF-8 strings (numbers as numbers), as ioredis's script commands answer.
 * A `NOSCRIPT` reply (Redis lost its script cache: `SCRIPT FLUSH`, a restart behind a proxy) sends
 * the call again with `EVAL`, once.
 * @throws (rejects) what ioredis rejects a command with: a Redis error reply, `Command timed out`
 *   after the client's `commandTimeout`, or a connection error.
 */
export function callScript(client: Redis, script: LuaScript, fixed: readonly string[], args: ScriptArgs): Promise<unknown> {
  const command = new ScriptCommand(script, fixed, args)
  return (client.sendCommand(command) as Promise<unknown>).catch((error: unknown) => {
    if (!(error instanceof Error) || !error.message.includes('NOSCRIPT')) throw error
    return client.sendCommand(new ScriptCommand(script, fixed, args))
  })
}

const CR = 0x0d
const LF = 0x0a
/** Byte lengths of the current command's arguments, between the two passes (toWritable is synchronous). */
let lengths: number[] = []

class ScriptCommand extends Command {
  private readonly script: LuaScript
  private readonly fixed: readonly string[]
  private readonly callArgs: ScriptArgs

  constructor(script: LuaScript, fixed: readonly string[], args: ScriptArgs) {
    // ioredis's own arguments stay empty: nothing of ioredis reads a script command's arguments
    // on the way (its debug log and error objects show none).
    super('evalsha', [], { replyEncoding: 'utf8' })
    this.script = script
    this.fixed = fixed
    this.callArgs = args
  }

  override toWritable(socket: object): Buffer {
    const script = this.script
    const cached = script.loaded.has(socket)
    if (!cached) {
      script.loaded.add(socket)
      this.name = 'eval'
    } else this.name = 'evalsha'
    const reject = this.reject
    this.reject = (error: Error) => {
      // Redis lost the script: the next call on this connection sends it again.
      if (error.message.includes('NOSCRIPT')) script.loaded.delete(socket)
      reject(error)
    }
    const body = cached ? script.sha : script.lua
    // Pass 1: the size. Every string is measured once; numbers are short and ASCII.
    let count = 3 + this.fixed.length
    let size = 0
    let n = 0
    const measure = (value: ScriptArg): void => {
      const bytes = typeof value === 'string' ? Buffer.byteLength(value) : String(value).length
      lengths[n++] = bytes
      size += bytes + digits(bytes) + 5
    }
    measure(this.name)
    measure(body)
    measure('0')
    // Indexed loops: for-of allocated an iterator result per argument before the code was optimized.
    const fixed = this.fixed
    const args = this.callArgs
    for (let i = 0; i < fixed.length; i++) measure(fixed[i]!)
    for (let i = 0; i < args.length; i++) {
      const arg = args[i]!
      if (typeof arg === 'object') {
        count += arg.length
        for (let j = 0; j < arg.length; j++) measure(arg[j]!)
      } else {
        count++
        measure(arg)
      }
    }
    size += digits(count) + 3
    // Pass 2: the bytes.
    const out = Buffer.allocUnsafe(size)
    let at = 0
    n = 0
    const write = (value: ScriptArg): void => {
      const bytes = lengths[n++]!
      out[at++] = 0x24 // '$'
      at = writeDigits(out, at, bytes)
      out[at++] = CR
      out[at++] = LF
      at += out.write(typeof value === 'string' ? value : String(value), at, bytes, 'utf8')
      out[at++] = CR
      out[at++] = LF
    }
    out[at++] = 0x2a // '*'
    at = writeDigits(out, at, count)
    out[at++] = CR
    out[at++] = LF
    write(this.name)
    write(body)
    write('0')
    for (let i = 0; i < fixed.length; i++) write(fixed[i]!)
    for (let i = 0; i < args.length; i++) {
      const arg = args[i]!
      if (typeof arg === 'object') for (let j = 0; j < arg.length; j++) write(arg[j]!)
      else write(arg)
    }
    if (lengths.length > 4096) lengths = []
    return out
  }
}

function digits(value: number): number {
  let d = 1
  while (value >= 10) {
    value = Math.floor(value / 10)
    d++
  }
  return d
}

function writeDigits(out: Buffer, at: number, value: number): number {
  const end = at + digits(value)
  let i = end
  do {
    out[--i] = 0x30 + (value % 10)
    value = Math.floor(value / 10)
  } while (value > 0)
  return end
}
