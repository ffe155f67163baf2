/**
 * A starting payload for a request schema (FormatSchema or JSON Schema, protocol.md §4): the
 * schema's `default`/`examples` when given, otherwise a value of the right type for every property.
 */
import type { JsonSchema } from '../api/types.ts'

/** An example value for `schema`; `{}` when there is none. */
export function exampleFromSchema(schema: JsonSchema | undefined, depth = 0): unknown {
  if (!schema || typeof schema !== 'object' || depth > 8) return {}
  if (schema.default !== undefined) return schema.default
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0]
  if (schema.const !== undefined) return schema.const
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0]
  const first = schema.oneOf?.[0] ?? schema.anyOf?.[0]
  if (first) return exampleFromSchema(first, depth + 1)
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type
  switch (type) {
    case 'string':
      return ''
    case 'number':
    case 'integer':
      return typeof schema.minimum === 'number' ? schema.minimum : 0
    case 'boolean':
      return false
    case 'null':
      return null
    case 'array':
      return []
    case 'map':
      return {}
    default: {
      if (!schema.properties) return {}
      const out: Record<string, unknown> = {}
      for (const [name, sub] of Object.entries(schema.properties)) out[name] = exampleFromSchema(sub, depth + 1)
      return out
    }
  }
}
