/**
 * The catalogue of built-in workers: one descriptor per worker (builtins.md §1, cli.md §4.3), the
 * single source from which config.yaml validation (runtime/config), the CLI registry
 * (src/worker-admin/registry.ts) and the reference doc `docs/reference/workers.md` are derived.
 */
import { CONFIGURATION_DESCRIPTOR } from './configuration/descriptor.ts'
import { CONSOLE_DESCRIPTOR } from './console/descriptor.ts'
import { CRON_DESCRIPTOR } from './cron/descriptor.ts'
import { DATABASE_DESCRIPTOR } from './database/descriptor.ts'
import type { BuiltinDescriptor } from './descriptor.ts'
import { HTTP_DESCRIPTOR } from './http/descriptor.ts'
import { OBSERVABILITY_DESCRIPTOR } from './observability/descriptor.ts'
import { PUBSUB_DESCRIPTOR } from './pubsub/descriptor.ts'
import { QUEUE_DESCRIPTOR } from './queue/descriptor.ts'
import { STATE_DESCRIPTOR } from './state/descriptor.ts'
import { STREAM_DESCRIPTOR } from './stream/descriptor.ts'

export type { BuiltinDescriptor, JsonSchema, RunMode } from './descriptor.ts'

/** Every built-in in the order of builtins.md §1, then `console`. */
export const BUILTIN_DESCRIPTORS = Object.freeze([
  HTTP_DESCRIPTOR,
  STATE_DESCRIPTOR,
  STREAM_DESCRIPTOR,
  QUEUE_DESCRIPTOR,
  PUBSUB_DESCRIPTOR,
  CRON_DESCRIPTOR,
  DATABASE_DESCRIPTOR,
  CONFIGURATION_DESCRIPTOR,
  OBSERVABILITY_DESCRIPTOR,
  CONSOLE_DESCRIPTOR,
] as const)

/** Canonical name of a built-in (`svc-http`, …, `console`). */
export type BuiltinName = (typeof BUILTIN_DESCRIPTORS)[number]['name']

const byName = new Map<string, BuiltinDescriptor>()
for (const descriptor of BUILTIN_DESCRIPTORS as readonly BuiltinDescriptor[]) {
  byName.set(descriptor.name, descriptor)
  for (const alias of descriptor.aliases) byName.set(alias, descriptor)
}

/**
 * The descriptor of a canonical name or alias, undefined when it names no built-in.
 *
 * @example builtinDescriptor('db')?.name // 'database'
 */
export function builtinDescriptor(nameOrAlias: string): BuiltinDescriptor | undefined {
  return byName.get(nameOrAlias)
}

/** Every built-in in `svc worker list` order (cli.md §4.3). */
export function builtinsInListOrder(): BuiltinDescriptor[] {
  return [...BUILTIN_DESCRIPTORS].sort((a, b) => a.listOrder - b.listOrder)
}
