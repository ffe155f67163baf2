/** Descriptor of the HTTP worker (builtins.md §3). */
import type { BuiltinDescriptor } from '../descriptor.ts'
import { HTTP_SETTINGS_SCHEMA } from './settings.ts'

export const HTTP_DESCRIPTOR = {
  name: 'svc-http',
  aliases: ['http'],
  mode: 'default',
  engineName: 'svc-http',
  title: 'HTTP',
  description: 'Serves functions as HTTP routes (trigger type http)',
  spec: 'builtins.md §3',
  disabledEffect: 'its HTTP routes will not answer',
  configurationId: 'svc-http',
  settingsSource: 'seed',
  settings: HTTP_SETTINGS_SCHEMA,
  functions: [],
  triggerTypes: ['http'],
  runsIn: 'engine',
  implemented: true,
  listOrder: 0,
} as const satisfies BuiltinDescriptor
