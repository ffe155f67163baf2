/**
 * Renders `docs/reference/workers.md` from the worker descriptors, so the reference can never
 * drift from what config.yaml validation and the CLI use. `reference.test.ts` fails when the
 * committed file is stale; regenerate it with `npm run docs:workers`.
 */
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { builtinsInListOrder, type BuiltinDescriptor, type JsonSchema } from './catalogue.ts'

/** Path of the generated reference, relative to the repository root. */
export const WORKERS_REFERENCE_PATH = 'docs/reference/workers.md'

const MODE_TEXT: Record<BuiltinDescriptor['mode'], string> = {
  default: 'by default (`enabled: false` turns it off)',
  optional: 'only when declared',
  mandatory: 'always; cannot be added, removed or disabled',
}

const SOURCE_TEXT: Record<BuiltinDescriptor['settingsSource'], string> = {
  seed: 'settings entry, seeded once from the `config` block of its config.yaml entry (builtins.md §2.7)',
  'own-block': 'read directly from the `config` block of its config.yaml entry',
  'settings-file': 'settings file only; must not be declared in config.yaml',
  flags: 'its process options (`svc console` flags), from its config.yaml entry',
}

function code(text: string): string {
  return `\`${text}\``
}

function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ')
}

function typeOf(schema: JsonSchema): string {
  const types = schema.type === undefined ? [] : typeof schema.type === 'string' ? [schema.type] : [...schema.type]
  let text = types.join(' or ') || 'any'
  if (schema.enum) text = schema.enum.map((v) => code(String(v))).join(', ')
  else if (types.includes('array') && schema.items?.type !== undefined && schema.items.properties === undefined) {
    text = `${typeOf(schema.items)}[]`
  }
  const range: string[] = []
  if (schema.minimum !== undefined && schema.maximum !== undefined) range.push(`${schema.minimum}–${schema.maximum}`)
  else if (schema.minimum !== undefined) range.push(`≥ ${schema.minimum}`)
  else if (schema.maximum !== undefined) range.push(`≤ ${schema.maximum}`)
  return range.length > 0 ? `${text} ${range.join(' ')}` : text
}

function defaultOf(schema: JsonSchema, required: boolean): string {
  if (schema.default !== undefined) return code(JSON.stringify(schema.default))
  return required ? 'required' : 'none'
}

/** One row per leaf key, dotted (`cors.max_age_seconds`, `queue_configs.<name>.type`, `middleware[].priority`). */
function rows(schema: JsonSchema, prefix: string, out: string[][], required = false): void {
  if (prefix !== '') out.push([code(prefix), cell(typeOf(schema)), cell(defaultOf(schema, required)), cell(schema.description ?? '')])
  const requiredKeys = new Set(schema.required ?? [])
  const join = (key: string) => (prefix === '' ? key : `${prefix}.${key}`)
  for (const [key, child] of Object.entries(schema.properties ?? {})) rows(child, join(key), out, requiredKeys.has(key))
  if (typeof schema.additionalProperties === 'object' && (schema.additionalProperties.properties || schema.additionalProperties.additionalProperties)) {
    const inner: string[][] = []
    for (const [key, child] of Object.entries(schema.additionalProperties.properties ?? {})) {
      rows(child, `${join('<name>')}.${key}`, inner, (schema.additionalProperties.required ?? []).includes(key))
    }
    out.push(...inner)
  }
  if (schema.items?.properties) {
    const itemsRequired = new Set(schema.items.required ?? [])
    for (const [key, child] of Object.entries(schema.items.properties)) rows(child, `${prefix}[].${key}`, out, itemsRequired.has(key))
  }
}

/** Table rows (key, type, default, notes) of a settings-like schema, one per leaf key; used by scripts/reference-docs.ts. */
export function renderSchemaRows(schema: JsonSchema): string[][] {
  const out: string[][] = []
  rows(schema, '', out)
  return out
}

function section(d: BuiltinDescriptor): string {
  const lines: string[] = [`## ${d.name}`, '', `${d.description}. Specified in ${d.spec}.${d.implemented ? '' : ' **Not implemented yet** in this release.'}`, '']
  const facts: Array<[string, string]> = [
    ['Aliases', d.aliases.length > 0 ? d.aliases.map(code).join(', ') : 'none'],
    ['Runs', `${MODE_TEXT[d.mode]}; ${d.runsIn === 'engine' ? 'inside the engine' : 'as a separate process'}`],
    ['Listed as', code(d.engineName)],
    ['Configuration id', d.configurationId === null ? 'none' : code(d.configurationId)],
    ['Settings', SOURCE_TEXT[d.settingsSource]],
    ['Functions', d.functions.length > 0 ? d.functions.map(code).join(', ') : 'none'],
    ['Trigger types', d.triggerTypes.length > 0 ? d.triggerTypes.map(code).join(', ') : 'none'],
  ]
  if (d.adapters) facts.push(['Adapters', d.adapters.map(code).join(', ')])
  if (d.disabledEffect) facts.push(['When disabled', d.disabledEffect])
  if (d.declarationRefused) facts.push(['Declared in config.yaml', `refused: ${d.declarationRefused}`])
  lines.push('| | |', '|---|---|', ...facts.map(([k, v]) => `| ${k} | ${cell(v)} |`), '')
  if (d.settings) {
    const table: string[][] = []
    rows(d.settings, '', table)
    lines.push('| Key | Type | Default | Notes |', '|---|---|---|---|', ...table.map((r) => `| ${r.join(' | ')} |`), '')
  }
  return lines.join('\n')
}

/**
 * The Markdown of `docs/reference/workers.md`.
 *
 * @example renderWorkersReference().startsWith('# Built-in workers') // true
 */
export function renderWorkersReference(): string {
  const list = builtinsInListOrder()
  const header = [
    '# Built-in workers',
    '',
    '<!-- Generated from runtime/workers/*/descriptor.ts by `npm run docs:workers`; do not edit by hand. -->',
    '',
    'Every built-in worker with its names, run mode, settings and defaults. Keys missing from a',
    'settings entry take the defaults below; defaults are never written into the settings file',
    '(builtins.md §2.7). String values may contain `${NAME}` placeholders (§2.8).',
    '',
    '| Worker | Aliases | Runs | Status |',
    '|---|---|---|---|',
    ...list.map((d) => `| [${code(d.name)}](#${d.name.replace(/[^a-z0-9-]/g, '')}) | ${d.aliases.map(code).join(', ')} | ${d.mode} | ${d.implemented ? 'available' : 'not implemented yet'} |`),
    '',
  ]
  return [...header, ...list.map(section)].join('\n').trimEnd() + '\n'
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('../../', import.meta.url))
  writeFileSync(`${root}${WORKERS_REFERENCE_PATH}`, renderWorkersReference())
  console.log(`wrote ${WORKERS_REFERENCE_PATH}`)
}
