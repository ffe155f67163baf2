/**
 * Descriptor of the state worker (builtins.md §4). The settings schema follows §4.1; it lives here
 * rather than in ./settings.ts so that the CLI can read it without loading the storage adapters.
 */
import { adapterEntrySchema, type BuiltinDescriptor } from '../descriptor.ts'

export const STATE_DESCRIPTOR = {
  name: 'svc-state',
  aliases: ['state'],
  mode: 'default',
  engineName: 'svc-state',
  title: 'State',
  description: 'Key-value store addressed by scope and key, with change triggers',
  spec: 'builtins.md §4',
  disabledEffect: 'its functions and triggers are unavailable',
  configurationId: 'svc-state',
  settingsSource: 'seed',
  settings: {
    type: 'object',
    properties: {
      adapter: adapterEntrySchema(['builtin', 'memory', 'redis']),
      triggers_enabled: { type: 'boolean', default: true, description: 'false stops all state trigger delivery' },
      max_value_bytes: {
        type: ['integer', 'null'],
        minimum: 1,
        default: null,
        description: 'writes whose JSON encoding is larger fail with VALUE_TOO_LARGE (bytes)',
      },
    },
  },
  adapters: ['builtin', 'memory', 'redis'],
  functions: ['state::*'],
  triggerTypes: ['state'],
  runsIn: 'engine',
  implemented: true,
  listOrder: 1,
} as const satisfies BuiltinDescriptor
