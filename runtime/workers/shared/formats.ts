/**
 * Result schemas (`response_format`) shared by the state and stream workers, whose set, delete and
 * update answer alike (builtins.md §4, §6): reported by `engine::functions::info` and in
 * docs/reference/functions.md.
 */
import type { FormatSchema } from 'svc-protocol'

/** `{old_value, new_value}` of a set: the value before (null when absent) and after. */
export const CHANGE_RESULT = {
  type: 'object',
  required: ['old_value', 'new_value'],
  properties: { old_value: { description: 'null when the key was absent' }, new_value: {} },
} satisfies FormatSchema

/** `{old_value}` of a delete; `{}` when nothing was there. */
export const DELETE_RESULT = {
  type: 'object',
  properties: { old_value: { description: 'absent when nothing was there' } },
} satisfies FormatSchema

/** `{old_value, new_value, errors?}` of an update: operations that failed are listed, the others applied. */
export const UPDATE_RESULT = {
  ...CHANGE_RESULT,
  properties: {
    ...CHANGE_RESULT.properties,
    errors: {
      type: 'array',
      description: 'operations that could not apply; the others did',
      items: {
        type: 'object',
        required: ['op_index', 'code', 'message'],
        properties: { op_index: { type: 'integer' }, code: { type: 'string' }, message: { type: 'string' } },
      },
    },
  },
} satisfies FormatSchema

/** A page `{<field>: [...], total, offset, limit}` of `item`s. */
export function pageResult(field: string, item: FormatSchema): FormatSchema {
  return {
    type: 'object',
    required: [field, 'total', 'offset', 'limit'],
    properties: { [field]: { type: 'array', items: item }, total: { type: 'integer' }, offset: { type: 'integer' }, limit: { type: 'integer' } },
  }
}

/** The result of a function that answers nothing (`engine::log::*`, `publish`, `stream::send`). */
export const NO_RESULT = { type: 'null', description: 'no result' } satisfies FormatSchema

/** A channel reference `{channel_id, access_key, direction}` (protocol.md §9). */
export const CHANNEL_REF = {
  type: 'object',
  required: ['channel_id', 'access_key', 'direction'],
  properties: { channel_id: { type: 'string' }, access_key: { type: 'string' }, direction: { type: 'string', enum: ['read', 'write'] } },
} satisfies FormatSchema
