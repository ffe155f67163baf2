/**
 * A small JSON Schema validator for the configuration editor (cli.md §7.2): checks a value before
 * `configuration::set` so the user sees violations at once. It covers the keywords the built-in
 * settings schemas use (type, properties, required, additionalProperties, items, enum, const,
 * minimum/maximum, exclusive bounds, string and array lengths, pattern, oneOf/anyOf/allOf) and
 * reports each violation as `<json pointer>: <problem>`, the format of `SCHEMA_INVALID`
 * (builtins.md §11.2). The engine validates again on save; this is a convenience, not the authority.
 *
 * A string that is exactly one `${NAME}`/`${NAME:default}` placeholder is accepted where the schema
 * expects an integer, number or boolean, as it is converted after expansion (builtins.md §2.8).
 */
import type { JsonSchema } from '../api/types.ts'

const PLACEHOLDER = /^\$\{[A-Za-z_][A-Za-z0-9_]*(:-?[^}]*)?\}$/

function typeOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number'
  return typeof value
}

function matchesType(value: unknown, type: string): boolean {
  const actual = typeOf(value)
  if (type === 'number') return actual === 'number' || actual === 'integer'
  if (type === 'map') return actual === 'object'
  if (actual === 'string' && (type === 'integer' || type === 'number' || type === 'boolean')) return PLACEHOLDER.test(value as string)
  return actual === type
}

function pointer(path: string[]): string {
  return path.length === 0 ? '/' : '/' + path.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')
}

/** Violations of `value` against `schema`, as `<pointer>: <problem>` strings; `[]` when valid. */
export function validate(schema: JsonSchema | undefined, value: unknown, path: string[] = []): string[] {
  if (!schema || typeof schema !== 'object') return []
  const errors: string[] = []
  const at = pointer(path)
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type]
    if (!types.some((t) => matchesType(value, t))) {
      errors.push(`${at}: must be ${types.join(' or ')}`)
      return errors
    }
  }
  if (schema.const !== undefined && JSON.stringify(schema.const) !== JSON.stringify(value)) errors.push(`${at}: must be ${JSON.stringify(schema.const)}`)
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    errors.push(`${at}: must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`)
  }
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) errors.push(`${at}: must be >= ${schema.minimum}`)
    if (typeof schema.maximum === 'number' && value > schema.maximum) errors.push(`${at}: must be <= ${schema.maximum}`)
    if (typeof schema.exclusiveMinimum === 'number' && value <= schema.exclusiveMinimum) errors.push(`${at}: must be > ${schema.exclusiveMinimum}`)
    if (typeof schema.exclusiveMaximum === 'number' && value >= schema.exclusiveMaximum) errors.push(`${at}: must be < ${schema.exclusiveMaximum}`)
  }
  if (typeof value === 'string' && !PLACEHOLDER.test(value)) {
    if (typeof schema.minLength === 'number' && value.length < schema.minLength) errors.push(`${at}: must have at least ${schema.minLength} characters`)
    if (typeof schema.maxLength === 'number' && value.length > schema.maxLength) errors.push(`${at}: must have at most ${schema.maxLength} characters`)
    if (typeof schema.pattern === 'string') {
      try {
        if (!new RegExp(schema.pattern, 'u').test(value)) errors.push(`${at}: must match pattern ${schema.pattern}`)
      } catch {
        // A pattern the browser cannot compile is left to the engine.
      }
    }
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === 'number' && value.length < schema.minItems) errors.push(`${at}: must have at least ${schema.minItems} items`)
    if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) errors.push(`${at}: must have at most ${schema.maxItems} items`)
    if (schema.items && typeof schema.items === 'object') value.forEach((item, i) => errors.push(...validate(schema.items, item, [...path, String(i)])))
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const object = value as Record<string, unknown>
    for (const name of schema.required ?? []) if (!(name in object)) errors.push(`${at}: must have required property '${name}'`)
    const properties = schema.properties ?? {}
    for (const [name, child] of Object.entries(object)) {
      const sub = properties[name]
      if (sub) errors.push(...validate(sub, child, [...path, name]))
      else if (schema.additionalProperties === false) errors.push(`${pointer([...path, name])}: is not allowed (no such property)`)
      else if (schema.additionalProperties && typeof schema.additionalProperties === 'object') errors.push(...validate(schema.additionalProperties, child, [...path, name]))
    }
  }
  if (schema.allOf) for (const sub of schema.allOf) errors.push(...validate(sub, value, path))
  if (schema.anyOf && !schema.anyOf.some((sub) => validate(sub, value, path).length === 0)) errors.push(`${at}: must match one of the allowed shapes`)
  if (schema.oneOf && schema.oneOf.filter((sub) => validate(sub, value, path).length === 0).length !== 1) errors.push(`${at}: must match exactly one of the allowed shapes`)
  return errors
}
