/**
 * The functions of the configuration worker (builtins.md §11.2): `configuration::register`,
 * `::get`, `::set`, `::update`, `::list` and `::schema`. Payloads are checked here (§2.1); the
 * entries, their files, expansion and validation are the {@link SettingsEntries} (./entries.ts),
 * whose mutations run one after another.
 */
import { Errors } from 'svc-protocol/errors'
import type { InvocationContext, LocalWorker } from '../../engine/types.ts'
import { assertUpdateOps } from '../../update-ops/index.ts'
import { traceOriginOf } from '../shared/fanout.ts'
import type { EntryRegistration, SettingsEntries } from './entries.ts'
import { ENTRY_ID } from './files.ts'
import { CONFIGURATION_RESULTS } from './formats.ts'
import { compileSettingsSchema, type SettingsValidator } from './schema.ts'

type Payload = Record<string, unknown>

/**
 * Registers the `configuration::*` functions on `worker`, answered by `entries`.
 * @example registerConfigurationFunctions(context.worker, entries)
 */
export function registerConfigurationFunctions(worker: LocalWorker, entries: SettingsEntries): void {
  const id = { type: 'string', pattern: ENTRY_ID.source }
  const register = (name: string, handler: (p: Payload, ctx: InvocationContext) => unknown, description: string, properties: Record<string, unknown>, required: string[]) =>
    worker.registerFunction(name, (data, ctx) => handler(payloadOf(data), ctx), {
      description,
      request_format: { type: 'object', required, properties },
      response_format: CONFIGURATION_RESULTS[name],
    })
  register('configuration::register', (p, ctx) => entries.serialised(() => entries.register(registrationOf(p), traceOriginOf(ctx))), 'Register a settings entry with its JSON Schema; keeps a stored value', {
    id, name: { type: 'string' }, description: { type: 'string' }, schema: { type: 'object' }, initial_value: {}, metadata: { type: 'object' },
  }, ['id', 'schema'])
  register('configuration::get', (p) => get(entries, p), 'Read an entry: {id, value}, expanded and validated unless raw', { id, raw: { type: 'boolean', default: false } }, ['id'])
  register('configuration::set', (p, ctx) => entries.serialised(() => set(entries, p, ctx)), 'Replace an entry value after validation: {old_value, new_value}', { id, value: {}, metadata: { type: 'object' } }, ['id', 'value'])
  register('configuration::update', (p, ctx) => entries.serialised(() => update(entries, p, ctx)), 'Apply update operations; stored only if the result validates', {
    id, ops: { type: 'array', items: { type: 'object', required: ['type'] } },
  }, ['id', 'ops'])
  register('configuration::list', () => entries.list(), 'Every entry without its value: {configurations: [{id, name, description, schema, metadata?}]}', {}, [])
  register('configuration::schema', (p) => entries.schema(entryId(p)), 'The schema of an entry: {id, name, description, schema, metadata?}', { id }, ['id'])
}

/**
 * The checked payload of `configuration::register`.
 * @throws SvcError `INVALID_ARGUMENTS` (`schema is required`, a schema that does not compile, …),
 *   `INVALID_ID`
 */
function registrationOf(p: Payload): EntryRegistration {
  const id = entryId(p)
  if (p.schema === undefined || p.schema === null) throw Errors.invalidArguments('schema is required')
  const name = optionalString(p, 'name') ?? id
  const description = optionalString(p, 'description') ?? ''
  const metadata = optionalObject(p, 'metadata')
  let validate: SettingsValidator
  try {
    validate = compileSettingsSchema(p.schema)
  } catch (error) {
    throw Errors.invalidArguments((error as Error).message)
  }
  return { id, name, description, metadata, schema: p.schema, validate, initial_value: p.initial_value }
}

function get(entries: SettingsEntries, p: Payload): { id: string; value: unknown } {
  const id = entryId(p)
  const raw = p.raw === true
  if (p.raw !== undefined && p.raw !== null && typeof p.raw !== 'boolean') throw Errors.invalidArguments('raw must be a boolean')
  return entries.get(id, raw)
}

function set(entries: SettingsEntries, p: Payload, ctx: InvocationContext): Promise<{ old_value: unknown; new_value: unknown }> {
  const id = entryId(p)
  if (!Object.hasOwn(p, 'value')) throw Errors.invalidArguments('value is required')
  const metadata = optionalObject(p, 'metadata')
  return entries.set(id, p.value, metadata, traceOriginOf(ctx))
}

function update(entries: SettingsEntries, p: Payload, ctx: InvocationContext): ReturnType<SettingsEntries['update']> {
  const id = entryId(p)
  if (p.ops === undefined || p.ops === null) throw Errors.invalidArguments('ops is required')
  assertUpdateOps(p.ops)
  return entries.update(id, p.ops, traceOriginOf(ctx))
}

// ---- payload validation (§2.1) ---------------------------------------------------------------

function payloadOf(data: unknown): Payload {
  if (data === undefined || data === null) return {}
  if (typeof data !== 'object' || Array.isArray(data)) throw Errors.invalidArguments('payload must be an object')
  return data as Payload
}

function entryId(p: Payload): string {
  const id = p.id
  if (id === undefined || id === null) throw Errors.invalidArguments('id is required')
  if (typeof id !== 'string') throw Errors.invalidArguments('id must be a string')
  if (!ENTRY_ID.test(id)) throw Errors.invalidId(id)
  return id
}

function optionalString(p: Payload, field: string): string | undefined {
  const value = p[field]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw Errors.invalidArguments(`${field} must be a string`)
  return value
}

function optionalObject(p: Payload, field: string): Record<string, unknown> | undefined {
  const value = p[field]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'object' || Array.isArray(value)) throw Errors.invalidArguments(`${field} must be an object`)
  return value as Record<string, unknown>
}
