/**
 * A hostile slow HTTP client (slowloris): a raw TCP connection that sends its first bytes and then
 * one more chunk every `everyMs` for as long as the server keeps the connection. It never closes
 * its own side (`allowHalfOpen`), so the connection ends only when the server really closes it: a
 * server that merely answers and half-closes (FIN) still reads, and keeps the connection forever.
 */
import { connect } from 'node:net'

export interface SlowClientOptions {
  /** Sent at once, e.g. a request line and some headers. */
  first: string
  /** The `i`-th later chunk; default one header line `x-slow-<i>: y\r\n` (the head never completes). */
  next?: (i: number) => string
  /** Pause between chunks, ms; default 50. */
  everyMs?: number
  /** Rejects when the server has not closed the connection after this long, ms; default 20000. */
  deadlineMs?: number
}

export interface SlowClientResult {
  /** Everything the server sent (latin1), e.g. `HTTP/1.1 408 Request Timeout…`, or '' after a bare close. */
  text: string
  /** From connect to the server's close, ms. */
  ms: number
  /** Chunks sent after `first`. */
  chunks: number
}

/**
 * Connects to `url` (`http://` or `ws://` host and port) and trickles bytes until the server closes
 * the connection. Resolves when it did; rejects when it is still open after `deadlineMs`.
 *
 * @example
 * const { text } = await slowClient('http://127.0.0.1:3111', { first: 'GET / HTTP/1.1\r\nHost: x\r\n' })
 */
export function slowClient(url: string, options: SlowClientOptions): Promise<SlowClientResult> {
  const { hostname, port } = new URL(url)
  const next = options.next ?? ((i: number) => `x-slow-${i}: y\r\n`)
  const everyMs = options.everyMs ?? 50
  const deadlineMs = options.deadlineMs ?? 20_000
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const socket = connect({ host: hostname.replace(/^\[|\]$/g, ''), port: Number(port), allowHalfOpen: true })
    let text = ''
    let chunks = 0
    let timer: NodeJS.Timeout | undefined
    socket.setEncoding('latin1')
    socket.on('data', (c: string) => (text += c))
    // A write after the server closed its socket is answered with a reset: that is the close.
    socket.on('error', () => {})
    const deadline = setTimeout(() => {
      clearInterval(timer)
      socket.destroy()
      reject(new Error(`the server kept a slow connection open for ${deadlineMs} ms (${chunks} chunks sent; received ${JSON.stringify(text.slice(0, 80))})`))
    }, deadlineMs)
    socket.on('close', () => {
      clearTimeout(deadline)
      clearInterval(timer)
      resolve({ text, ms: Date.now() - started, chunks })
    })
    socket.once('connect', () => {
      socket.write(options.first)
      timer = setInterval(() => {
        if (!socket.destroyed && socket.writable) socket.write(next(chunks++))
      }, everyMs)
    })
  })
}
