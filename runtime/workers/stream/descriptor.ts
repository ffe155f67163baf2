/** Descriptor of the stream worker (builtins.md §6). */
import { adapterEntrySchema, type BuiltinDescriptor } from '../descriptor.ts'

export const STREAM_DESCRIPTOR = {
  name: 'svc-stream',
  aliases: ['stream'],
  mode: 'default',
  engineName: 'svc-stream',
  title: 'Stream',
  description: 'Streams of grouped items pushed to triggers and WebSocket clients (port 3112)',
  spec: 'builtins.md §6',
  disabledEffect: 'its functions and triggers are unavailable',
  configurationId: 'svc-stream',
  settingsSource: 'seed',
  settings: {
    type: 'object',
    properties: {
      port: { type: 'integer', minimum: 0, maximum: 65535, default: 3112, description: 'client WebSocket listener; 0 binds an ephemeral port' },
      host: { type: 'string', minLength: 1, default: '127.0.0.1' },
      auth_function: { type: ['string', 'null'], default: null, description: 'function called before each upgrade; applies to new connections' },
      auth_timeout_ms: { type: 'integer', minimum: 1, default: 10000, description: 'ms' },
      client_buffer_messages: { type: 'integer', minimum: 1, default: 1024, description: 'a client with more unsent messages is closed with code 1013' },
      client_buffer_bytes: { type: 'integer', minimum: 1, default: 16777216, description: 'a client with more unsent bytes (UTF-8 of its frames, socket buffer included) is closed with code 1013' },
      max_item_bytes: { type: ['integer', 'null'], minimum: 1, default: null, description: 'larger writes fail with VALUE_TOO_LARGE (bytes)' },
      adapter: adapterEntrySchema(['builtin', 'memory', 'redis']),
    },
  },
  adapters: ['builtin', 'memory', 'redis'],
  functions: ['stream::*'],
  triggerTypes: ['stream', 'stream:join', 'stream:leave'],
  runsIn: 'engine',
  implemented: true,
  listOrder: 2,
} as const satisfies BuiltinDescriptor
