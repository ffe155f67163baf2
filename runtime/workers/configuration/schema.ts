/**
 * JSON Schema validation of settings values (builtins.md §11.2) with Ajv, draft 2020-12.
 *
 * Violations read `<json pointer>: <problem>` (`/port: must be <= 65535`, `/: must have required
 * property 'adapter'`), the form `SCHEMA_INVALID` messages list them in.
 */
import { Ajv2020, type ValidateFunction, type ErrorObject } from 'ajv/dist/2020.js'

/** A compiled schema: the violations of a value, empty when it is valid. */
export type SettingsValidator = (value: unknown) => string[]

// One Ajv instance per process: compiled schemas are cached by it. `strict: false` accepts schemas
// that use annotation keywords Ajv does not know (`format` values, `x-*`), as users' schemas may.
const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: false })

/**
 * Compiles `schema` once.
 * @throws Error `schema is not a valid JSON Schema: <reason>` when Ajv refuses it.
 * @example compileSettingsSchema({ type: 'object', properties: { port: { type: 'integer' } } })({ port: 'x' })
 * // ['/port: must be integer']
 */
export function compileSettingsSchema(schema: unknown): SettingsValidator {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    if (typeof schema !== 'boolean') throw new Error('schema must be a JSON Schema object')
  }
  let validate: ValidateFunction
  try {
    validate = ajv.compile(schema as object)
  } catch (error) {
    throw new Error(`schema is not a valid JSON Schema: ${(error as Error).message}`)
  }
  return (value) => (validate(value) ? [] : (validate.errors ?? []).map(describeViolation))
}

function describeViolation(error: ErrorObject): string {
  const pointer = error.instancePath === '' ? '/' : error.instancePath
  let problem = error.message ?? error.keyword
  if (error.keyword === 'additionalProperties') {
    problem = `unknown key '${String((error.params as { additionalProperty?: unknown }).additionalProperty)}'`
  } else if (error.keyword === 'enum') {
    problem = `must be one of ${((error.params as { allowedValues?: unknown[] }).allowedValues ?? []).map((v) => JSON.stringify(v)).join(', ')}`
  }
  return `${pointer}: ${problem}`
}
