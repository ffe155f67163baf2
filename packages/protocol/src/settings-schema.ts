/**
 * What a configuration entry's `schema` means (builtins.md §11.2, §2.8): a JSON Schema, draft
 * 2020-12, checked with every violation listed as `<json pointer>: <problem>` (`/port: must be <=
 * 65535`, `/: must have required property 'adapter'`) — the form `SCHEMA_INVALID` messages list
 * them in — and, for a raw value before placeholder expansion, a string of exactly one placeholder
 * (`${PORT}`) accepted where the schema expects an integer, number or boolean.
 *
 * The configuration worker and the console's Configuration page check values with this one
 * contract, so the page shows the engine's own messages before saving. It imports no validator:
 * each side passes its own Ajv 2020 instance made with {@link SETTINGS_SCHEMA_OPTIONS} (the
 * engine's from Node, the console's bundled for the browser), so `svc-protocol` stays free of
 * dependencies.
 *
 * @example
 * import { Ajv2020 } from 'ajv/dist/2020.js'
 * const compileSettingsSchema = settingsSchemaCompiler(new Ajv2020(SETTINGS_SCHEMA_OPTIONS))
 * compileSettingsSchema({ type: 'object', properties: { port: { type: 'integer' } } })({ port: 'x' })
 * // ['/port: must be integer']
 */

/** One violation as a JSON Schema validator reports it (the fields of Ajv's `ErrorObject` read here). */
export interface SchemaViolation {
  keyword: string
  /** JSON pointer of the value in the checked instance; `''` is the root. */
  instancePath: string
  message?: string
  params: Record<string, unknown>
}

/** A compiled schema as a validator gives it: true when valid, else `errors` holds the violations. */
export interface SchemaValidateFunction {
  (value: unknown): boolean
  errors?: SchemaViolation[] | null
}

/** A JSON Schema 2020-12 validator (Ajv's `Ajv2020`), made with {@link SETTINGS_SCHEMA_OPTIONS}. */
export interface SchemaCompiler {
  /** @throws Error when `schema` is not a valid JSON Schema. */
  compile(schema: object | boolean): SchemaValidateFunction
}

/**
 * The validator's options: every violation (`allErrors`), annotation keywords it does not know
 * accepted (`strict: false`: `format` values, `x-*`, as users' schemas may hold), formats not
 * checked.
 */
export const SETTINGS_SCHEMA_OPTIONS = Object.freeze({ allErrors: true, strict: false, validateFormats: false })

/** A compiled settings schema: the violations of a value, empty when it is valid. */
export type SettingsValidator = (value: unknown) => string[]

/** Options of a compile: `acceptPlaceholders` for raw values read before expansion (builtins.md §2.8). */
export interface SettingsSchemaOptions {
  acceptPlaceholders?: boolean
}

/**
 * True when `text` is exactly one `${…}` placeholder (builtins.md §2.8): such a string stands for
 * the integer, number or boolean the schema expects there, converted after expansion.
 * @example isSinglePlaceholder('${PORT:3000}') // true
 */
export function isSinglePlaceholder(text: string): boolean {
  return text.startsWith('${') && text.indexOf('}') === text.length - 1
}

/**
 * The settings-schema compiler over `validator`: `compile(schema, options)` compiles a schema once
 * and returns its {@link SettingsValidator}.
 * @throws Error `schema must be a JSON Schema object` (not an object or boolean) or `schema is not a
 * valid JSON Schema: <reason>` (the validator refused it), from the compile.
 */
export function settingsSchemaCompiler(validator: SchemaCompiler): (schema: unknown, options?: SettingsSchemaOptions) => SettingsValidator {
  return (schema, options = {}) => {
    if ((typeof schema !== 'object' || schema === null || Array.isArray(schema)) && typeof schema !== 'boolean') throw new Error('schema must be a JSON Schema object')
    let validate: SchemaValidateFunction
    try {
      validate = validator.compile(schema)
    } catch (error) {
      throw new Error(`schema is not a valid JSON Schema: ${(error as Error).message}`)
    }
    if (options.acceptPlaceholders !== true) return (value) => (validate(value) ? [] : (validate.errors ?? []).map(describeViolation))
    return (value) =>
      validate(value) ? [] : (validate.errors ?? []).filter((error) => !(error.keyword === 'type' && isPlaceholderAt(value, error.instancePath))).map(describeViolation)
  }
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

/** `<json pointer>: <problem>`; unknown keys and enums named the way `SCHEMA_INVALID` lists them. */
function describeViolation(error: SchemaViolation): string {
  const pointer = error.instancePath === '' ? '/' : error.instancePath
  let problem = error.message ?? error.keyword
  if (error.keyword === 'additionalProperties') {
    problem = `unknown key '${String((error.params as { additionalProperty?: unknown }).additionalProperty)}'`
  } else if (error.keyword === 'enum') {
    problem = `must be one of ${((error.params as { allowedValues?: unknown[] }).allowedValues ?? []).map((v) => JSON.stringify(v)).join(', ')}`
  }
  return `${pointer}: ${problem}`
}
