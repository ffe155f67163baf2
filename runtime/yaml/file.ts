/**
 * Reading a YAML file without reading more than its limit: the size is checked before the text
 * is read (and again while reading, for files that grow or report no size, like a FIFO).
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { YamlError } from './errors.ts'

export interface ReadTextOptions {
  /** How the file is named in errors. */
  file: string
  /** Largest file read, bytes. */
  maxBytes: number
  /** Refuse bytes that are not UTF-8 (`is not valid UTF-8`) instead of replacing them with U+FFFD. Default false. */
  strictUtf8?: boolean
}

const CHUNK = 64 * 1024

/**
 * The text of `path`, at most `maxBytes` long.
 * @throws {YamlError} `is <n> bytes, more than the <limit>-byte limit`, `is not valid UTF-8`
 * @throws the `fs` error (`ENOENT`, `EISDIR`, …) when the file cannot be read
 */
export function readTextFileSync(path: string, options: ReadTextOptions): string {
  const fd = openSync(path, 'r')
  try {
    const size = fstatSync(fd).size
    if (size > options.maxBytes) throw tooLarge(options, size)
    const chunks: Buffer[] = []
    let total = 0
    for (;;) {
      const chunk = Buffer.allocUnsafe(CHUNK)
      const n = readSync(fd, chunk, 0, CHUNK, null)
      if (n === 0) break
      total += n
      if (total > options.maxBytes) throw tooLarge(options)
      chunks.push(chunk.subarray(0, n))
    }
    return decode(Buffer.concat(chunks, total), options)
  } finally {
    closeSync(fd)
  }
}

/** {@link readTextFileSync}, asynchronously. */
export async function readTextFile(path: string, options: ReadTextOptions): Promise<string> {
  const handle = await open(path, 'r')
  try {
    const size = (await handle.stat()).size
    if (size > options.maxBytes) throw tooLarge(options, size)
    const chunks: Buffer[] = []
    let total = 0
    for (;;) {
      const chunk = Buffer.allocUnsafe(CHUNK)
      const { bytesRead } = await handle.read(chunk, 0, CHUNK, null)
      if (bytesRead === 0) break
      total += bytesRead
      if (total > options.maxBytes) throw tooLarge(options)
      chunks.push(chunk.subarray(0, bytesRead))
    }
    return decode(Buffer.concat(chunks, total), options)
  } finally {
    await handle.close()
  }
}

/** `bytes` undefined: found while reading, the whole size is unknown. */
function tooLarge(options: ReadTextOptions, bytes?: number): YamlError {
  const size = bytes === undefined ? 'is more than' : `is ${bytes} bytes, more than`
  return new YamlError(options.file, undefined, `${size} the ${options.maxBytes}-byte limit`)
}

function decode(buffer: Buffer, options: ReadTextOptions): string {
  if (!options.strictUtf8) return buffer.toString('utf8')
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(buffer)
  } catch {
    throw new YamlError(options.file, undefined, 'is not valid UTF-8')
  }
}
