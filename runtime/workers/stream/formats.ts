/**
 * Payload schemas of the stream worker's trigger types (builtins.md §6.3, §6.5), registered with
 * them and reported by `engine::triggers::info`. Registration-time data only.
 */
import type { FormatSchema } from 'svc-protocol'

const STRING = { type: 'string' } as const

/** A change event: the `stream` trigger payload and the WebSocket frame (§6.3). */
export const STREAM_CHANGE_EVENT = {
  type: 'object',
  required: ['type', 'timestamp', 'streamName', 'groupId', 'id', 'event'],
  properties: {
    type: { const: 'stream' },
    timestamp: { type: 'integer', description: 'Unix milliseconds' },
    streamName: STRING,
    groupId: STRING,
    id: { type: ['string', 'null'], description: 'the item id; for stream::send its id or null' },
    event: {
      type: 'object',
      required: ['type'],
      description: 'create/update: data is the new value; delete: the removed value; event: {type, data} of a stream::send',
      properties: {
        type: { type: 'string', enum: ['create', 'update', 'delete', 'event'] },
        data: {},
        event: { type: 'object', required: ['type', 'data'], properties: { type: { type: 'string', description: 'the send type' }, data: {} } },
      },
    },
  },
} satisfies FormatSchema

/** Payload of `stream:join` and `stream:leave` hooks (§6.5). */
export const JOIN_LEAVE_PAYLOAD = {
  type: 'object',
  required: ['subscription_id', 'stream_name', 'group_id', 'id', 'context'],
  properties: {
    subscription_id: STRING,
    stream_name: STRING,
    group_id: STRING,
    id: { type: ['string', 'null'] },
    context: { description: 'what the auth function returned; null when absent' },
  },
} satisfies FormatSchema
