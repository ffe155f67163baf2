/** Descriptor of the configuration worker (builtins.md §11). */
import type { BuiltinDescriptor } from '../descriptor.ts'

export const CONFIGURATION_DESCRIPTOR = {
  name: 'configuration',
  aliases: [],
  mode: 'mandatory',
  engineName: 'configuration',
  title: 'Configuration',
  description: 'Stores, validates and watches the settings entries of built-in workers',
  spec: 'builtins.md §11',
  configurationId: null,
  settingsSource: 'own-block',
  settings: {
    type: 'object',
    additionalProperties: false,
    properties: {
      directory: { type: 'string', minLength: 1, default: 'config', description: 'settings directory, relative to the project root' },
      watch: { type: 'boolean', default: true, description: 'watch the directory for hand edits' },
      debounce_ms: { type: 'integer', minimum: 0, default: 500, description: 'ms' },
    },
  },
  adapters: ['fs'],
  functions: ['configuration::*'],
  triggerTypes: ['configuration'],
  runsIn: 'engine',
  implemented: true,
  listOrder: 8,
} as const satisfies BuiltinDescriptor
