import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { BUILTIN_SEED_HINTS } from '../config/catalogue.ts'
import { expandPlaceholders } from '../config/placeholders.ts'
import { BUILTIN_DESCRIPTORS, builtinDescriptor, builtinsInListOrder, type BuiltinDescriptor, type JsonSchema } from './catalogue.ts'
import { HTTP_SETTINGS_DEFAULTS, parseHttpSettings } from './http/settings.ts'
import { createBuiltins } from './index.ts'
import { renderWorkersReference, WORKERS_REFERENCE_PATH } from './reference.ts'
import { parseStateSettings } from './state/settings.ts'

const all = BUILTIN_DESCRIPTORS as readonly BuiltinDescriptor[]

/** The defaults a schema declares, as the object a worker gets for an empty settings value. */
function defaultsOf(schema: JsonSchema): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, child] of Object.entries(schema.properties ?? {})) if (child.default !== undefined) out[key] = child.default
  return out
}

/** Checks `value` against the keywords the settings schemas use; returns the problems. */
function violations(schema: JsonSchema, value: unknown, at = ''): string[] {
  const problems: string[] = []
  const types = schema.type === undefined ? [] : typeof schema.type === 'string' ? [schema.type] : [...schema.type]
  const actual = value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value
  if (types.length > 0 && !types.includes(actual) && !(actual === 'integer' && types.includes('number'))) problems.push(`${at}: ${actual} is not ${types.join('|')}`)
  if (schema.enum && !schema.enum.includes(value)) problems.push(`${at}: not in enum`)
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) problems.push(`${at}: below minimum`)
    if (schema.maximum !== undefined && value > schema.maximum) problems.push(`${at}: above maximum`)
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    for (const [key, child] of Object.entries(value)) {
      const sub = schema.properties?.[key] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined)
      if (sub) problems.push(...violations(sub, child, `${at}/${key}`))
      else if (schema.additionalProperties === false) problems.push(`${at}/${key}: not allowed`)
    }
  }
  return problems
}

describe('worker catalogue (builtins.md §1, cli.md §4.3)', () => {
  it('has one descriptor per name, and no alias that is also a name or another alias', () => {
    const spellings = all.flatMap((d) => [d.name, ...d.aliases])
    assert.equal(new Set(spellings).size, spellings.length)
    for (const d of all) for (const spelling of [d.name, ...d.aliases]) assert.equal(builtinDescriptor(spelling), d)
    assert.equal(builtinDescriptor('svc-worker-manager'), undefined)
  })

  it('lists in builtins.md §1 order and, for the CLI, in cli.md §4.3 order', () => {
    assert.deepEqual(
      all.map((d) => d.name),
      ['svc-http', 'svc-state', 'svc-stream', 'queue', 'svc-pubsub', 'svc-cron', 'database', 'configuration', 'svc-observability', 'console'],
    )
    assert.deepEqual(
      builtinsInListOrder().map((d) => d.name),
      ['svc-http', 'svc-state', 'svc-stream', 'svc-pubsub', 'svc-cron', 'queue', 'database', 'console', 'configuration', 'svc-observability'],
    )
  })

  it('marks as implemented exactly the built-ins the engine starts, plus the console process', () => {
    const started = createBuiltins({ data_dir: '/nonexistent', builtins: {} }).map((w) => w.name).sort()
    const implemented = all.filter((d) => d.implemented && d.runsIn === 'engine').map((d) => d.engineName).sort()
    assert.deepEqual(implemented, started)
  })

  it('gives every disable-able default worker the words for `svc worker remove`, and no others', () => {
    for (const d of all) assert.equal(d.disabledEffect !== undefined, d.mode === 'default', d.name)
  })

  it('declares defaults that satisfy their own schemas', () => {
    for (const d of all) {
      if (!d.settings) continue
      const walk = (schema: JsonSchema, at: string): void => {
        if (schema.default !== undefined) assert.deepEqual(violations(schema, schema.default, at), [], `${d.name} ${at}`)
        for (const [key, child] of Object.entries(schema.properties ?? {})) walk(child, `${at}/${key}`)
        if (typeof schema.additionalProperties === 'object') walk(schema.additionalProperties, `${at}/*`)
      }
      walk(d.settings, '')
    }
  })

  it('agrees with the defaults the HTTP and state workers apply', () => {
    const http = builtinDescriptor('svc-http')!.settings!
    assert.deepEqual(defaultsOf(http), { ...HTTP_SETTINGS_DEFAULTS })
    assert.deepEqual(parseHttpSettings(undefined), { ...HTTP_SETTINGS_DEFAULTS })
    const state = builtinDescriptor('svc-state')!.settings!
    const parsed = parseStateSettings(undefined)
    assert.deepEqual(defaultsOf(state), { adapter: { name: parsed.adapter.name }, triggers_enabled: parsed.triggers_enabled, max_value_bytes: parsed.max_value_bytes })
  })

  it('drives seed conversion: single placeholders become integers, booleans and numbers where the schema says so', () => {
    const env = { PORT: '8080', TRIG: 'false', PRIO: '2.5', MAXB: '100' }
    assert.deepEqual(
      expandPlaceholders({ port: '${PORT}', host: '${PORT}', middleware: [{ function_id: 'm', priority: '${PRIO}' }] }, env, BUILTIN_SEED_HINTS['svc-http']),
      { port: 8080, host: '8080', middleware: [{ function_id: 'm', priority: 2.5 }] },
    )
    assert.deepEqual(expandPlaceholders({ triggers_enabled: '${TRIG}', max_value_bytes: '${MAXB}' }, env, BUILTIN_SEED_HINTS['svc-state']), {
      triggers_enabled: false,
      max_value_bytes: 100,
    })
    assert.deepEqual(
      expandPlaceholders({ queue_configs: { emails: { concurrency: '${MAXB}' } } }, env, BUILTIN_SEED_HINTS.queue),
      { queue_configs: { emails: { concurrency: 100 } } },
    )
    assert.equal(BUILTIN_SEED_HINTS['svc-observability'], undefined, 'never declared in config.yaml')
  })
})

describe('docs/reference/workers.md', () => {
  it('is the current rendering of the descriptors (run `npm run docs:workers` after changing one)', () => {
    const committed = readFileSync(fileURLToPath(new URL(`../../${WORKERS_REFERENCE_PATH}`, import.meta.url)), 'utf8')
    assert.equal(committed, renderWorkersReference(), `${WORKERS_REFERENCE_PATH} is stale: run npm run docs:workers`)
  })

  it('lists every worker and every top-level settings key', () => {
    const text = renderWorkersReference()
    for (const d of all) {
      assert.ok(text.includes(`## ${d.name}\n`), d.name)
      for (const key of Object.keys(d.settings?.properties ?? {})) assert.ok(text.includes(`| \`${key}\` |`), `${d.name} ${key}`)
    }
  })
})
