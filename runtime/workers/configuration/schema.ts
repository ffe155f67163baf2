/**
 * JSON Schema validation of settings values (builtins.md §11.2) with Ajv, draft 2020-12.
 *
 * Violations read `<json pointer>: <problem>` (`/port: must be <= 65535`, `/: must have required
 * property 'adapter'`), the form `SCHEMA_INVALID` messages list them in.
 */
import { Ajv2020, type Options, type ValidateFunction, type ErrorObject } from 'ajv/dist/2020.js'
import { canonicalJson } from 'svc-protocol/json'
import { isSinglePlaceholder } from '../../config/placeholders.ts'
import { BUILTIN_DESCRIPTORS } from '../catalogue.ts'
import { PRECOMPILED_VALIDATORS } from './precompiled.ts'

/** A compiled schema: the violations of a value, empty when it is valid. */
export type SettingsValidator = (value: unknown) => string[]

// One Ajv instance per process: compiled schemas are cached by it. `strict: false` accepts schemas
// that use annotation keywords Ajv does not know (`format` values, `x-*`), as users' schemas may.
// `code.optimize: false`: the generated validators run a little slower but compile faster, and
// settings are validated only when written or read, never per invocation.
const OPTIONS: Options = { allErrors: true, strict: false, validateFormats: false, code: { optimize: false } }
const ajv = new Ajv2020(OPTIONS)

// The built-in workers' own schemas (their descriptors' `settings`, checked against the draft
// 2020-12 meta-schema by schema.test.ts) compile without that check: compiling the meta-schema,
// once per process, was a fifth of the engine's start (issue 20). Every other schema is checked.
// The packed CLI has them compiled ahead of time (precompiled.ts); a checkout compiles them here.
/** Ajv's options for the built-in settings schemas (scripts/bundle-cli.ts precompiles them with these). */
export const BUILTIN_OPTIONS: Readonly<Options> = { ...OPTIONS, validateSchema: false }
const builtinAjv = new Ajv2020(BUILTIN_OPTIONS)
let builtinSchemas: Set<string> | undefined

/** The canonical JSON of `schema` when it is the settings schema of a built-in worker. */
function builtinSchemaKey(schema: unknown): string | undefined {
  builtinSchemas ??= new Set(BUILTIN_DESCRIPTORS.flatMap((descriptor) => (descriptor.settings === null ? [] : [canonicalJson(descriptor.settings)])))
  const key = canonicalJson(schema)
  return builtinSchemas.has(key) ? key : undefined
}

/**
 * Compiles `schema` once.
 * @throws Error `schema is not a valid JSON Schema: <reason>` when Ajv refuses it.
 * @example compileSettingsSchema({ type: 'object', properties: { port: { type: 'integer' } } })({ port: 'x' })
 * // ['/port: must be integer']
 */
export function compileSettingsSchema(schema: unknown, options: { acceptPlaceholders?: boolean } = {}): SettingsValidator {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    if (typeof schema !== 'boolean') throw new Error('schema must be a JSON Schema object')
  }
  let validate: ValidateFunction
  try {
    const builtin = builtinSchemaKey(schema)
    validate = builtin === undefined ? ajv.compile(schema as object) : (PRECOMPILED_VALIDATORS.get(builtin) ?? builtinAjv.compile(schema as object))
  } catch (error) {
    throw new Error(`schema is not a valid JSON Schema: ${(error as Error).message}`)
  }
  if (options.acceptPlaceholders !== true) return (value) => (validate(value) ? [] : (validate.errors ?? []).map(describeViolation))
  // A raw value (before expansion): a string made of one placeholder stands for the integer, number
  // or boolean the schema expects there, converted after expansion (builtins.md §2.8).
  return (value) =>
    validate(value) ? [] : (validate.errors ?? []).filter((error) => !(error.keyword === 'type' && isPlaceholderAt(value, error.instancePath))).map(describeViolation)
}

/** True when the value at JSON pointer `pointer` of `root` is a string of exactly one placeholder. */
function isPlaceholderAt(root: unknown, pointer: string): boolean {
  let value = root
  for (const token of pointer === '' ? [] : pointer.slice(1).split('/')) {
    if (typeof value !== 'object' || value === null) return false
    value = (value as Record<string, unknown>)[token.replaceAll('~1', '/').replaceAll('~0', '~')]
  }
  return typeof value === 'string' && isSinglePlaceholder(value)
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
