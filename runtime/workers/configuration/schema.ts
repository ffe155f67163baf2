/**
 * JSON Schema validation of settings values (builtins.md §11.2) with Ajv, draft 2020-12: the
 * contract of `svc-protocol/settings-schema` (the console's Configuration page checks with it too)
 * over this process's Ajv instances.
 *
 * Violations read `<json pointer>: <problem>` (`/port: must be <= 65535`, `/: must have required
 * property 'adapter'`), the form `SCHEMA_INVALID` messages list them in.
 */
import { Ajv2020, type Options } from 'ajv/dist/2020.js'
import { canonicalJson } from 'svc-protocol/json'
import { SETTINGS_SCHEMA_OPTIONS, settingsSchemaCompiler, type SchemaCompiler, type SettingsValidator } from 'svc-protocol/settings-schema'
import { BUILTIN_DESCRIPTORS } from '../catalogue.ts'
import { PRECOMPILED_VALIDATORS } from './precompiled.ts'

export type { SettingsValidator }

// One Ajv instance per process: compiled schemas are cached by it. `code.optimize: false`: the
// generated validators run a little slower but compile faster, and settings are validated only
// when written or read, never per invocation. Both instances are made on first use: the packed
// CLI's built-in schemas are precompiled, so an engine start often needs neither (issue 20).
const OPTIONS: Options = { ...SETTINGS_SCHEMA_OPTIONS, code: { optimize: false } }
let ajv: Ajv2020 | undefined

// The built-in workers' own schemas (their descriptors' `settings`, checked against the draft
// 2020-12 meta-schema by schema.test.ts) compile without that check: compiling the meta-schema,
// once per process, was a fifth of the engine's start (issue 20). Every other schema is checked.
// The packed CLI has them compiled ahead of time (precompiled.ts); a checkout compiles them here.
/** Ajv's options for the built-in settings schemas (scripts/bundle-cli.ts precompiles them with these). */
export const BUILTIN_OPTIONS: Readonly<Options> = { ...OPTIONS, validateSchema: false }
let builtinAjv: Ajv2020 | undefined
let builtinSchemas: Set<string> | undefined

/** The canonical JSON of `schema` when it is the settings schema of a built-in worker. */
function builtinSchemaKey(schema: unknown): string | undefined {
  builtinSchemas ??= new Set(BUILTIN_DESCRIPTORS.flatMap((descriptor) => (descriptor.settings === null ? [] : [canonicalJson(descriptor.settings)])))
  const key = canonicalJson(schema)
  return builtinSchemas.has(key) ? key : undefined
}

/** Built-in schemas from their precompiled validators (or the unchecked instance), others checked. */
const validators: SchemaCompiler = {
  compile(schema) {
    const builtin = builtinSchemaKey(schema)
    if (builtin === undefined) return (ajv ??= new Ajv2020(OPTIONS)).compile(schema)
    return PRECOMPILED_VALIDATORS.get(builtin) ?? (builtinAjv ??= new Ajv2020(BUILTIN_OPTIONS)).compile(schema)
  },
}

/**
 * Compiles `schema` once; `acceptPlaceholders` for a raw value (before expansion).
 * @throws Error `schema must be a JSON Schema object` or `schema is not a valid JSON Schema: <reason>`
 * when Ajv refuses it.
 * @example compileSettingsSchema({ type: 'object', properties: { port: { type: 'integer' } } })({ port: 'x' })
 * // ['/port: must be integer']
 */
export const compileSettingsSchema = settingsSchemaCompiler(validators)
