/**
 * A stored message's payload and its immutable fields, as text (issue 20): the payload is kept as
 * the JSON text it arrived as ({@link RawJson}: an enqueue's `data` as the caller's frame carried
 * it, checked once by the engine's frame scanner) from the enqueue to the delivery's frame, never
 * decoded and encoded again on the way. `builtin` (its `body` column) and `redis` (the `b` field of
 * a message's hash) store the same body text.
 */
import { RawJson } from 'svc-protocol/codec'
import { jsonParse } from 'svc-protocol/json'

/**
 * The stored form of a payload: a {@link RawJson} as it is when its text is well-formed UTF-16
 * (always so for a frame read off a WebSocket, which is UTF-8), else its value encoded (JSON
 * escapes a lone surrogate, which SQLite's and Redis's UTF-8 would replace); any other value
 * encoded once (`undefined`, and what JSON cannot hold, as `null`).
 * @throws TypeError for a value JSON.stringify refuses (a BigInt, a cycle), as before.
 * @example storedPayload({ n: 1 }).text // '{"n":1}'
 */
export function storedPayload(data: unknown): RawJson {
  if (data instanceof RawJson) return data.text.isWellFormed() ? data : new RawJson(JSON.stringify(data.value) ?? 'null')
  return new RawJson(JSON.stringify(data ?? null) ?? 'null')
}

const HEAD = '{"data_chars":'
const DATA_KEY = ',"data":'

/**
 * One JSON object text: `{"data_chars":L,<fields>,"data":<payload text>}`. `fields` (JSON values)
 * are encoded; the payload's text is spliced in as it is, last, and `data_chars` (its length in
 * UTF-16 units) lets {@link decodeBody} take it back out without reading it. Any JSON reader sees
 * the same object plus `data_chars` (an earlier version reading a shared Redis ignores it).
 * @example encodeBody({ function_id: 'a::b' }, new RawJson('{"n":1}')) // '{"data_chars":7,"function_id":"a::b","data":{"n":1}}'
 */
export function encodeBody(fields: Record<string, unknown>, data: RawJson): string {
  const inner = JSON.stringify(fields).slice(1, -1)
  return `${HEAD}${data.text.length}${inner === '' ? '' : `,${inner}`}${DATA_KEY}${data.text}}`
}

/**
 * The fields and payload of a body text: one written by {@link encodeBody} without reading its
 * payload (only the other fields are parsed), any other JSON object (an earlier version's body) by
 * parsing it all and encoding its `data` again.
 * @throws SyntaxError when `text` is not JSON.
 */
export function decodeBody(text: string): { fields: Record<string, unknown>; data: RawJson } {
  if (text.startsWith(HEAD)) {
    const comma = text.indexOf(',', HEAD.length)
    const chars = Number(text.slice(HEAD.length, comma))
    const dataAt = text.length - 1 - chars
    if (comma !== -1 && Number.isSafeInteger(chars) && chars > 0 && dataAt - DATA_KEY.length >= comma && text.charCodeAt(text.length - 1) === 125 && text.startsWith(DATA_KEY, dataAt - DATA_KEY.length)) {
      const fields = jsonParse(`{${text.slice(comma + 1, dataAt - DATA_KEY.length)}}`) as Record<string, unknown>
      return { fields, data: new RawJson(text.slice(dataAt, text.length - 1)) }
    }
  }
  const fields = jsonParse(text) as Record<string, unknown>
  const data = new RawJson(JSON.stringify(fields.data ?? null))
  delete fields.data
  delete fields.data_chars
  return { fields, data }
}
