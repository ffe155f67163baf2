/**
 * JSON Schema validation of settings values (builtins.md §11.2) with Ajv, draft 2020-12: the
 * contract of `svc-protocol/settings-schema` (the console's Configuration page checks with it too)
 * over this process's one Ajv instance.
 *
 * Violations read `<json pointer>: <problem>` (`/port: must be <= 65535`, `/: must have required
 * property 'adapter'`), the form `SCHEMA_INVALID` messages list them in.
 */
import { Ajv2020 } from 'ajv/dist/2020.js'
import { SETTINGS_SCHEMA_OPTIONS, settingsSchemaCompiler, type SettingsValidator } from 'svc-protocol/settings-schema'

export type { SettingsValidator }

/**
 * Compiles `schema` once; `acceptPlaceholders` for a raw value (before expansion).
 * One Ajv instance per process: compiled schemas are cached by it.
 * @throws Error `schema is not a valid JSON Schema: <reason>` when Ajv refuses it.
 * @example compileSettingsSchema({ type: 'object', properties: { port: { type: 'integer' } } })({ port: 'x' })
 * // ['/port: must be integer']
 */
export const compileSettingsSchema = settingsSchemaCompiler(new Ajv2020({ ...SETTINGS_SCHEMA_OPTIONS }))
