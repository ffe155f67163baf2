/** Test support of the client core's tests: a transport the test scripts, and a condition wait. */
import type { Transport, TransportHandlers } from '../../src/transport/types.ts'

/**
 * A transport scripted by the test: records what the client sends, delivers what the test gives,
 * synchronously (so an exception in the client's handling reaches the test). Closes report after a
 * timer turn, as a socket's do.
 */
export class ScriptedTransport implements Transport {
  readonly sent: string[] = []
  handlers: TransportHandlers | undefined
  isOpen = false
  bufferedAmount = 0
  closedWith: number | undefined
  pings = 0
  send(text: string): void {
    if (this.isOpen) this.sent.push(text)
  }
  close(code?: number): void {
    if (!this.isOpen) return
    this.isOpen = false
    this.closedWith = code
    setTimeout(() => this.handlers?.close(code ?? 1005, ''), 0)
  }
  terminate(): void {
    this.isOpen = false
    setTimeout(() => this.handlers?.close(1006, ''), 0)
  }
  ping(): void {
    this.pings++
  }
  setHandlers(handlers: TransportHandlers): void {
    this.handlers = handlers
  }
  /** The connection opens. */
  open(): void {
    this.isOpen = true
    this.handlers?.open?.()
  }
  /** The engine sends `frame` (an object, or text as it is). */
  deliver(frame: object | string): void {
    this.handlers?.message(typeof frame === 'string' ? frame : JSON.stringify(frame), false)
  }
  /** The frames the client sent, parsed. */
  frames(): Array<{ type: string; [key: string]: any }> {
    return this.sent.map((text) => JSON.parse(text))
  }
}
