/** JSON text encoding of state values and the size limit, shared by the state adapters. */
import { Errors } from 'svc-protocol/errors'
import { jsonParse } from 'svc-protocol/json'
import type { StateValue } from './types.ts'

/** @throws TypeError for a value JSON cannot represent at top level (`undefined`, a function). */
export function encodeStateValue(value: StateValue): string {
  const text = JSON.stringify(value)
  if (text === undefined) throw new TypeError(`cannot store ${typeof value} as a state value`)
  return text
}

export function decodeStateValue(text: string): StateValue {
  return jsonParse(text) as StateValue
}

/**
 * Enforces `max_value_bytes` (builtins.md §4.1) on the JSON text about to be stored.
 * @param limit bytes; null or undefined means no limit.
 * @param setting the name of the limit in the message (the stream worker's is `max_item_bytes`).
 * @throws SvcError `VALUE_TOO_LARGE` (`value of N bytes exceeds max_value_bytes M`).
 */
export function checkValueSize(text: string, limit: number | null | undefined, setting?: string): void {
  if (limit === null || limit === undefined) return
  // Each UTF-16 unit is at most 3 UTF-8 bytes, so short texts need no exact count.
  if (text.length * 3 <= limit) return
  const bytes = Buffer.byteLength(text, 'utf8')
  if (bytes > limit) throw Errors.valueTooLarge(bytes, limit, setting)
}
