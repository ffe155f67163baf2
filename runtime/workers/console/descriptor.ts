/**
 * Descriptor of the web console (cli.md §7). The console is not an engine built-in: it runs as a
 * process of its own (`svc console`) that connects as `svc-console`. Only its descriptor lives
 * here, so the catalogue that config.yaml and `svc worker` read is complete.
 */
import type { BuiltinDescriptor } from '../descriptor.ts'

export const CONSOLE_DESCRIPTOR = {
  name: 'console',
  aliases: ['svc-console'],
  mode: 'optional',
  engineName: 'svc-console',
  title: 'Console',
  description: 'Web console on port 3113, launched as svc console --no-open; its address in the ready banner carries the access token',
  spec: 'cli.md §7',
  configurationId: null,
  settingsSource: 'flags',
  settings: {
    type: 'object',
    properties: {
      port: { type: 'integer', minimum: 0, maximum: 65535, default: 3113 },
      host: { type: 'string', minLength: 1, default: '127.0.0.1', description: 'a non-loopback host prints a warning: anyone who can reach it and has the access token can use the console' },
      allowed_hosts: {
        type: 'array',
        items: { type: 'string', minLength: 1 },
        default: [],
        description: 'further host names requests may name (besides localhost, 127.0.0.1, [::1] and host), as --allowed-host',
      },
      token: {
        type: 'boolean',
        default: true,
        description: 'require the per-run access token (the banner address carries it; SVC_CONSOLE_TOKEN sets it); false is --no-token',
      },
    },
  },
  functions: ['svc-console::*'],
  triggerTypes: [],
  runsIn: 'process',
  implemented: true,
  listOrder: 7,
} as const satisfies BuiltinDescriptor
