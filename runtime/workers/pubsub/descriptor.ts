/** Descriptor of the pub/sub worker (builtins.md §8). */
import { adapterEntrySchema, type BuiltinDescriptor } from '../descriptor.ts'

export const PUBSUB_DESCRIPTOR = {
  name: 'svc-pubsub',
  aliases: ['pubsub'],
  mode: 'default',
  engineName: 'svc-pubsub',
  title: 'Pub/sub',
  description: 'Best-effort fan-out of published events to subscribe triggers',
  spec: 'builtins.md §8',
  disabledEffect: 'its functions and triggers are unavailable',
  configurationId: 'svc-pubsub',
  settingsSource: 'seed',
  settings: {
    type: 'object',
    properties: {
      adapter: adapterEntrySchema(['builtin', 'memory', 'redis'], 'builtin and memory: in-process; redis: fans out across engines'),
    },
  },
  adapters: ['builtin', 'memory', 'redis'],
  functions: ['publish'],
  triggerTypes: ['subscribe'],
  runsIn: 'engine',
  implemented: true,
  listOrder: 3,
} as const satisfies BuiltinDescriptor
