/**
 * The NATS subjects a fleet uses (issue 19, docs/guides/scale-out.md). Every subject starts with
 * `svc.<fleet>.`, so one NATS server can carry several fleets and standard NATS tools can watch
 * one (`nats sub 'svc.shop.>'`):
 *
 * - `svc.<fleet>.heartbeat` — every engine's {@link Heartbeat}, each `heartbeat_interval_ms`.
 * - `svc.<fleet>.snapshot.<instance>` — request/reply: what that engine's workers registered.
 * - `svc.<fleet>.call.<instance>.<namespace>.<function>` — a call to a function on that engine,
 *   one subject per function (the frame inside names the function too; the subject lets NATS
 *   tools see the traffic per function). An engine that is gone has no subscription, so NATS
 *   answers "no responders" at once.
 * - `svc.<fleet>.reply.<instance>.<member instance>` — answers to the calls this engine made to one
 *   member (the frame names the call); NATS "no responders" there means the member is gone.
 */
import { createHash } from 'node:crypto'

/** Characters a subject token keeps as they are; every other UTF-8 byte becomes `%XX`. */
const PLAIN = /^[A-Za-z0-9_:-]*$/
/** Longest token kept readable; longer ones become a digest (NATS bounds a subject's length). */
const MAX_TOKEN = 128

/**
 * One NATS subject token for any text: readable where it can be (`orders::validate` stays so),
 * `%XX` escapes otherwise, a digest when that would be long. Never empty, never `.`, `*` or `>`.
 */
export function subjectToken(text: string): string {
  let token = PLAIN.test(text) ? text : Array.from(Buffer.from(text, 'utf8'), (b) => (isPlainByte(b) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('')
  if (token.length > MAX_TOKEN) token = `%H${createHash('sha256').update(text).digest('hex').slice(0, 40)}`
  return token === '' ? '%E' : token
}

function isPlainByte(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x5f || b === 0x3a || b === 0x2d
}

/** The subjects of one fleet, as seen from one engine instance. */
export class FleetSubjects {
  readonly heartbeat: string
  /** This engine's call subscription: every function it serves. */
  readonly calls: string
  /** This engine's reply subscription, and the prefix of its reply subject per member. */
  readonly replies: string
  readonly replyPrefix: string
  private readonly prefix: string

  constructor(fleet: string, instance: string) {
    this.prefix = `svc.${fleet}.`
    this.heartbeat = `${this.prefix}heartbeat`
    this.calls = `${this.prefix}call.${instance}.>`
    this.replyPrefix = `${this.prefix}reply.${instance}.`
    this.replies = `${this.replyPrefix}*`
  }

  snapshot(instance: string): string {
    return `${this.prefix}snapshot.${instance}`
  }

  call(instance: string, namespace: string, functionId: string): string {
    return `${this.prefix}call.${instance}.${subjectToken(namespace)}.${subjectToken(functionId)}`
  }
}
