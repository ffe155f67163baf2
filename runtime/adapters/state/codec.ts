/** JSON text encoding of state values, shared by the adapters that store text. */
import type { StateValue } from './types.ts'

/** @throws TypeError for a value JSON cannot represent at top level (`undefined`, a function). */
export function encodeStateValue(value: StateValue): string {
  const text = JSON.stringify(value)
  if (text === undefined) throw new TypeError(`cannot store ${typeof value} as a state value`)
  return text
}

export function decodeStateValue(text: string): StateValue {
  return JSON.parse(text) as StateValue
}
