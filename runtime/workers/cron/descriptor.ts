/** Descriptor of the cron worker (builtins.md §9). */
import { adapterEntrySchema, type BuiltinDescriptor } from '../descriptor.ts'

export const CRON_DESCRIPTOR = {
  name: 'svc-cron',
  aliases: ['cron'],
  mode: 'default',
  engineName: 'svc-cron',
  title: 'Cron',
  description: 'Runs functions on cron schedules, once per slot',
  spec: 'builtins.md §9',
  disabledEffect: 'its triggers will not fire',
  configurationId: 'svc-cron',
  settingsSource: 'seed',
  settings: {
    type: 'object',
    properties: {
      adapter: adapterEntrySchema(['builtin', 'memory', 'redis'], 'builtin: SQLite cron.db (last slots); redis: once-per-slot across engines'),
      default_timezone: { type: 'string', minLength: 1, default: 'UTC', description: 'IANA zone name of triggers without timezone' },
    },
  },
  adapters: ['builtin', 'memory', 'redis'],
  functions: [],
  triggerTypes: ['cron'],
  runsIn: 'engine',
  implemented: true,
  listOrder: 4,
} as const satisfies BuiltinDescriptor
