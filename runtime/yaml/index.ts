/**
 * The shared YAML reader (see source.ts): every YAML text svc reads goes through {@link YamlSource},
 * which bounds size, nesting and alias expansion and names `file:line:column` in its errors.
 */
export { CONFIG_FILE_LIMITS, describeFound, MAX_ALIAS_NODES, MAX_YAML_BYTES, YamlSource } from './source.ts'
export type { AnyPair, Fail, YamlLimits, YamlSourceOptions } from './source.ts'
export { YamlError } from './errors.ts'
export type { Place, YamlErrorOptions } from './errors.ts'
export { YamlReader } from './reader.ts'
export type { LocatedErrorFactory } from './reader.ts'
export { readTextFile, readTextFileSync } from './file.ts'
export type { ReadTextOptions } from './file.ts'
