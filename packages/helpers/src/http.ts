/**
 * `svc-helpers/http` (sdk.md §11, §15): the HTTP shapes of functions bound to `http` triggers and
 * the streaming helper {@link http}.
 *
 * The helper needs only the channel ends' structure ({@link ResponseChannel},
 * {@link RequestChannel}), so it works with any SDK's channel implementation.
 *
 * @example
 * client.registerFunction('files::download', http(async (req, res) => {
 *   res.status(200).headers({ 'content-type': 'text/plain' })
 *   res.stream.write('hello ')
 *   res.stream.end('world')
 * }))
 */
import type { Writable } from 'node:stream'
import { finished } from 'node:stream/promises'
import type { HttpRequest, HttpResponse } from 'svc-protocol/payloads/http'

export type { HttpRequest, HttpResponse } from 'svc-protocol/payloads/http'
export type { HttpAuth as HttpAuthConfig, HttpInvocationConfig } from 'svc-protocol/messages'

/** The methods an `http` trigger accepts (sdk.md §15). */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** What {@link http} uses of the response channel's writer (sdk.md §9 `ChannelWriter`). */
export interface ResponseChannel {
  /** Binary items. */
  readonly stream: Writable
  /** One text item. */
  sendMessage(text: string): void
  /** Ends the channel after the items already handed to it (not those still in `stream`'s buffer). */
  close(): Promise<void>
}

/** What a handler may use of the request body channel (sdk.md §9 `ChannelReader`). */
export interface RequestChannel extends AsyncIterable<Uint8Array> {
  readAll(): Promise<Buffer>
}

/** An HTTP request with its raw body channel (sdk.md §11). */
export type StreamRequest<TBody = unknown> = HttpRequest<TBody> & { request_body: RequestChannel; response?: ResponseChannel }

/** The streaming response of sdk.md §11. */
export interface StreamResponse {
  /** Sets the status; before the first body byte. @throws Error once the body has started. */
  status(code: number): StreamResponse
  /** Sets headers; before the first body byte. @throws Error once the body has started. */
  headers(headers: Record<string, string>): StreamResponse
  /** Body bytes, each write a binary item. */
  readonly stream: Writable
  /** Ends the response after every byte written to `stream`; the helper calls it when the handler did not. */
  close(): Promise<void>
}

class ChannelResponse implements StreamResponse {
  readonly #channel: ResponseChannel
  #started = false
  closed = false

  constructor(channel: ResponseChannel) {
    this.#channel = channel
    // The first body byte fixes status and headers.
    const write = channel.stream.write.bind(channel.stream) as (...args: unknown[]) => boolean
    channel.stream.write = ((...args: unknown[]) => {
      this.#started = true
      return write(...args)
    }) as Writable['write']
  }

  #beforeBody(what: string): void {
    if (this.#started) throw new Error(`${what} must be called before the first body byte`)
  }

  status(code: number): StreamResponse {
    this.#beforeBody('status()')
    if (!Number.isInteger(code) || code < 200 || code > 599) throw new RangeError(`HTTP status must be an integer 200–599 (1xx statuses are interim, never an answer), got ${String(code)}`)
    this.#channel.sendMessage(JSON.stringify({ type: 'set_status', status_code: code }))
    return this
  }

  headers(headers: Record<string, string>): StreamResponse {
    this.#beforeBody('headers()')
    this.#channel.sendMessage(JSON.stringify({ type: 'set_headers', headers }))
    return this
  }

  get stream(): Writable {
    return this.#channel.stream
  }

  /**
   * Ends the response after every byte written to {@link stream}, including those still in its
   * buffer (the stream's `final` closes the channel), and resolves once the channel confirmed.
   * @throws (rejects) the channel's error when it failed (a client that went away: `CHANNEL_CLOSED`).
   */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    const stream = this.#channel.stream
    if (!stream.writableEnded) stream.end()
    await finished(stream)
  }
}

/**
 * Wraps a streaming HTTP handler as a function handler (sdk.md §11). When the callback returns an
 * `HttpResponse`, that buffered response is the result and the channel stays unused; otherwise the
 * response is closed (if the callback did not) and the function returns nothing.
 * @throws TypeError (from the returned handler) when the request has no response channel and the
 *   callback did not return a buffered response.
 */
export function http<TBody = unknown>(
  handler: (req: StreamRequest<TBody>, res: StreamResponse) => Promise<void | HttpResponse>,
): (req: StreamRequest<TBody>) => Promise<HttpResponse | undefined> {
  return async (req) => {
    const channel = req.response
    const res: StreamResponse =
      channel !== undefined
        ? new ChannelResponse(channel)
        : new Proxy({} as StreamResponse, {
            get() {
              throw new TypeError('this request has no response channel: return an HttpResponse instead')
            },
          })
    const result = await handler(req, res)
    if (result !== undefined && result !== null) return result
    if (res instanceof ChannelResponse && !res.closed) await res.close()
    if (channel === undefined) throw new TypeError('this request has no response channel: return an HttpResponse instead')
    return undefined
  }
}
