/**
 * The config.yaml loader (protocol.md §12, cli.md §2.1): parses the file with positions, validates
 * every key, expands placeholders and applies every default, giving an {@link EngineConfig}.
 *
 * Every problem is a {@link ConfigError} pointing at the offending key or value
 * (`config.yaml:14:5: unknown built-in worker 'databse' (did you mean 'database'?)`).
 */
import { hostname } from 'node:os'
import { dirname, isAbsolute, resolve } from 'node:path'
import { isMap, isScalar, isSeq } from 'yaml'
import type { Document, Node, Pair } from 'yaml'
import { CONFIG_FILE_LIMITS, describeFound as describe, readTextFileSync, YamlError, YamlSource, type Fail } from '../yaml/index.ts'
import type { BuiltinEntry, EngineConfig, ExposeRule, FleetConfig, HttpFunctionsPolicy, ListenerConfig, LocalWorkerEntry, RbacConfig } from '../engine/types.ts'
import { FLEET_DEFAULTS, LISTENER_DEFAULTS } from '../engine/types.ts'
import { BUILTIN_DESCRIPTORS, builtinDescriptor, type BuiltinDescriptor } from '../workers/catalogue.ts'
import { BUILTIN_ALIASES, BUILTIN_NAMES, BUILTIN_SEED_HINTS, canonicalBuiltinName, didYouMean, LISTENER_NAME } from './catalogue.ts'
import type { BuiltinName } from './catalogue.ts'
import { ConfigError } from './errors.ts'
import { CONFIG_BLOCKS, integerRules, keysOf } from './keys.ts'
import { convertScalar, ExpandError, expandPlaceholders, expandString, isSinglePlaceholder } from './placeholders.ts'
import type { Env, SchemaHint } from './placeholders.ts'

/** Defaults of protocol.md §12.2 not covered by {@link LISTENER_DEFAULTS}. */
export const CONFIG_DEFAULTS = {
  data_dir: '.svc/data',
  registration_namespace_grace_ms: 250,
  internal_invocation_timeout_ms: 30000,
} as const

/** Built-ins that run without an entry (builtins.md §1): every one but the `optional` ones (`console`). */
const DEFAULT_BUILTINS: readonly BuiltinName[] = BUILTIN_DESCRIPTORS.filter((d) => d.mode !== 'optional').map((d) => d.name)

/** The descriptor of a canonical name. */
const descriptorOf = (name: BuiltinName): BuiltinDescriptor => builtinDescriptor(name)!

export type { ExposeRule, RbacConfig }

/** A listener as config.yaml declares it (protocol.md §12.3). */
export type LoadedListenerConfig = ListenerConfig

/** `http_functions` (protocol.md §12.4), defaults applied. */
export type HttpFunctionsConfig = HttpFunctionsPolicy

/** A built-in entry; `config` is the expanded seed, `raw_config` the block as written. */
export interface LoadedBuiltinEntry extends BuiltinEntry {
  /** The `config` block as written, placeholders unexpanded (the seed kept by the configuration worker). */
  raw_config?: unknown
}

/** A local worker entry with `isolation` (cli.md §2.1), which {@link LocalWorkerEntry} lacks. */
export interface LoadedLocalWorkerEntry extends LocalWorkerEntry {
  /** Undefined when the entry does not say: the manifest decides, else `process`. */
  isolation?: 'process' | 'microvm'
}

/** What {@link loadConfig} returns: an {@link EngineConfig} plus what the CLI needs to know. */
export interface LoadedConfig extends EngineConfig {
  listeners: LoadedListenerConfig[]
  builtins: Record<string, LoadedBuiltinEntry>
  local_workers: LoadedLocalWorkerEntry[]
  http_functions: HttpFunctionsConfig
  /** Absolute path of the file read; undefined when running on built-in defaults. */
  file?: string
  /** Directory relative paths resolve against: the file's directory, else `cwd`. */
  project_root: string
}

/** Values given on the command line that win over the file for this run (cli.md §3 step 2). */
export interface ConfigOverrides {
  /** Port of the first listener (or of the default listener). */
  port?: number
  /** Host of the first listener (or of the default listener). */
  host?: string
  /** Data directory, relative to `cwd`. */
  dataDir?: string
}

export interface LoadConfigOptions {
  /** Directory relative names resolve against; default `process.cwd()`. */
  cwd?: string
  /** Environment for placeholders and `SVC_NAMESPACE_GRACE_MS`; default `process.env`. */
  env?: Env
  overrides?: ConfigOverrides
}

/**
 * Reads and validates a config.yaml. With `file` undefined the result is the built-in defaults
 * (one listener on 127.0.0.1:49134, data in `<cwd>/.svc/data`). `file` is shown as given in error
 * messages and resolved against `cwd`.
 *
 * Placeholders are expanded everywhere at load time. Built-in `config` blocks are settings seeds:
 * `raw_config` keeps them as written, and `config` holds them expanded with
 * {@link BUILTIN_SEED_HINTS} so the engine can hand them to the built-ins directly.
 *
 * `SVC_NAMESPACE_GRACE_MS` in `env` overrides `registration_namespace_grace_ms`.
 *
 * @throws {ConfigError} `CONFIG_NOT_FOUND` for a missing file, `INVALID_CONFIG` for anything invalid.
 * @example
 * const config = loadConfig('config.yaml', { cwd: process.cwd(), overrides: { port: 0 } })
 */
export function loadConfig(file: string | undefined, options: LoadConfigOptions = {}): LoadedConfig {
  const cwd = options.cwd ?? process.cwd()
  if (file === undefined) return finish(defaultsFor(cwd), undefined, cwd, options)
  const absolute = resolve(cwd, file)
  let text: string
  try {
    text = readTextFileSync(absolute, { file, maxBytes: CONFIG_FILE_LIMITS.maxBytes })
  } catch (err) {
    if (err instanceof YamlError) throw ConfigError.fromYaml(err)
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') throw ConfigError.notFound(file)
    if (code === 'EISDIR') throw new ConfigError({ file, problem: 'is a directory, not a config file' })
    throw new ConfigError({ file, problem: `cannot be read (${(err as Error).message})` })
  }
  return parseConfig(text, file, { ...options, cwd, absolutePath: absolute })
}

/**
 * Validates config.yaml text (the work of {@link loadConfig} without the read), e.g. for a reload.
 * `fileName` labels errors; `absolutePath` (default `fileName` resolved against `cwd`) fixes the
 * project root.
 *
 * @throws {ConfigError}
 */
export function parseConfig(
  text: string,
  fileName: string,
  options: LoadConfigOptions & { absolutePath?: string } = {},
): LoadedConfig {
  const cwd = options.cwd ?? process.cwd()
  const absolute = options.absolutePath ?? resolve(cwd, fileName)
  const root = dirname(absolute)
  const reader = new Reader(text, fileName, options.env ?? process.env)
  const config = reader.read(root)
  config.file = absolute
  return finish(config, fileName, cwd, options)
}

function defaultsFor(root: string): Internal {
  return {
    listeners: [],
    registration_namespace_grace_ms: CONFIG_DEFAULTS.registration_namespace_grace_ms,
    internal_invocation_timeout_ms: CONFIG_DEFAULTS.internal_invocation_timeout_ms,
    data_dir: resolve(root, CONFIG_DEFAULTS.data_dir),
    builtins: {},
    local_workers: [],
    http_functions: { url_allowlist: [], block_private_ips: true, require_https: true },
    project_root: root,
  }
}

/** Applies what does not come from the file: default listener and built-ins, env, overrides. */
function finish(
  config: Internal,
  fileName: string | undefined,
  cwd: string,
  options: LoadConfigOptions,
): LoadedConfig {
  if (config.listeners.length === 0 && !config.listenersDeclared) config.listeners.push({ ...LISTENER_DEFAULTS })
  delete config.listenersDeclared
  for (const name of DEFAULT_BUILTINS) config.builtins[name] ??= { enabled: true }

  const env = options.env ?? process.env
  const grace = env.SVC_NAMESPACE_GRACE_MS
  if (grace !== undefined && grace !== '') {
    if (!/^\d+$/.test(grace.trim())) {
      throw new ConfigError({
        file: 'SVC_NAMESPACE_GRACE_MS',
        problem: `must be an integer >= 0 (got '${grace}')`,
      })
    }
    config.registration_namespace_grace_ms = Number(grace.trim())
  }

  if (config.fleet !== undefined) {
    const engine = env.SVC_FLEET_ENGINE
    if (engine !== undefined && engine !== '') {
      if (!FLEET_NAME.test(engine)) throw new ConfigError({ file: 'SVC_FLEET_ENGINE', problem: `must be 1 to 64 letters, digits, '_' or '-' (got ${JSON.stringify(engine.slice(0, 80))})` })
      config.fleet.engine = engine
    }
    config.fleet.engine ??= `${hostname().replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 50) || 'engine'}-${process.pid}`
  }

  const overrides = options.overrides ?? {}
  if (overrides.port !== undefined || overrides.host !== undefined) {
    const label = fileName ?? 'config.yaml'
    if (config.listeners.length === 0) {
      throw new ConfigError({ file: label, problem: 'every svc-worker-manager entry is disabled; --port and --host have no listener to apply to' })
    }
    const first = config.listeners[0]!
    if (overrides.port !== undefined) first.port = overrides.port
    if (overrides.host !== undefined) first.host = overrides.host
  }
  if (overrides.dataDir !== undefined) config.data_dir = resolve(cwd, overrides.dataDir)
  return config
}

// ---------------------------------------------------------------------------------------------

/** Keys of a worker entry by kind (protocol.md §12.2, cli.md §2.1), from the one description in keys.ts. */
const ENTRY_KEYS = keysOf(CONFIG_BLOCKS.entry)
const LOCAL_ENTRY_KEYS = [...ENTRY_KEYS, ...keysOf(CONFIG_BLOCKS.local)]
const TOP_LEVEL_KEYS = keysOf(CONFIG_BLOCKS.top)
const RBAC_KEYS = keysOf(CONFIG_BLOCKS.rbac)
const EXPOSE_RULE_KEYS = keysOf(CONFIG_BLOCKS.exposeRule)
const HTTP_FUNCTIONS_KEYS = keysOf(CONFIG_BLOCKS.httpFunctions)
const FLEET_KEYS = keysOf(CONFIG_BLOCKS.fleet)
const FLEET_INTEGERS: Readonly<Record<string, IntRule>> = integerRules(CONFIG_BLOCKS.fleet)
/** Fleet and engine names: one NATS subject token each (docs/decisions.md, issue 19). */
export const FLEET_NAME = /^[A-Za-z0-9_-]{1,64}$/
/** URL schemes of the NATS client. */
const NATS_URL = /^(nats|tls):\/\/[^\s]+$/
const LOCAL_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/

type IntRule = { min: number; max?: number }
const LISTENER_INTEGERS: Readonly<Record<string, IntRule>> = integerRules(CONFIG_BLOCKS.listener)
const LISTENER_KEYS = keysOf(CONFIG_BLOCKS.listener)
const TOP_INTEGERS: Readonly<Record<string, IntRule>> = integerRules(CONFIG_BLOCKS.top)
const CONFIGURATION_INTEGERS: Readonly<Record<string, IntRule>> = { debounce_ms: { min: 0 } }
/** The `configuration` entry's own keys (builtins.md §11.1), from its descriptor. */
const CONFIGURATION_KEYS = Object.keys(descriptorOf('configuration').settings?.properties ?? {})

interface Place {
  line: number
  column: number
}

type Internal = LoadedConfig & { listenersDeclared?: boolean }

/** Walks the YAML syntax tree so that every error can name its line and column. */
class Reader {
  private readonly source: YamlSource
  private readonly file: string
  private readonly env: Env
  private readonly failAt: Fail = (node, problem) => this.fail(node, problem)

  constructor(text: string, file: string, env: Env) {
    try {
      this.source = new YamlSource(text, { file })
    } catch (err) {
      if (err instanceof YamlError) throw ConfigError.fromYaml(err)
      throw err
    }
    this.file = file
    this.env = env
  }

  private get doc(): Document.Parsed {
    return this.source.doc
  }

  read(root: string): Internal {
    const config: Internal = defaultsFor(root)
    const top = this.deref(this.doc.contents)
    if (top === null || (isScalar(top) && top.value === null)) return config
    if (!isMap(top)) this.fail(top, 'the top level must be a mapping of keys such as workers and data_dir')

    for (const pair of top.items as Pair<Node | null, Node | null>[]) {
      const key = this.keyOf(pair)
      const value = pair.value
      switch (key) {
        case 'workers':
          this.readWorkers(value, pair, config, root)
          break
        case 'data_dir': {
          const dir = this.string(value, pair, 'data_dir', { nonEmpty: true })
          config.data_dir = isAbsolute(dir) ? dir : resolve(root, dir)
          break
        }
        case 'registration_namespace_grace_ms':
        case 'internal_invocation_timeout_ms':
          config[key] = this.integer(value, pair, key, TOP_INTEGERS[key]!)
          break
        case 'http_functions':
          config.http_functions = this.readHttpFunctions(value, pair)
          break
        case 'fleet': {
          const fleet = this.readFleet(value, pair)
          if (fleet !== undefined) config.fleet = fleet
          break
        }
        default:
          this.failKey(pair, `unknown top-level key '${key}'${didYouMean(key, TOP_LEVEL_KEYS)}`)
      }
    }
    return config
  }

  // -- worker entries --------------------------------------------------------------------------

  private readWorkers(value: Node | null, owner: Pair<Node | null, Node | null>, config: Internal, root: string): void {
    const list = this.deref(value)
    if (list === null || (isScalar(list) && list.value === null)) return
    if (!isSeq(list)) this.fail(list, `workers must be a list of entries (- name: …)${describe(list)}`, owner)
    const seen = new Map<string, Place>()
    for (const item of list.items as Array<Node | null>) {
      const entry = this.deref(item)
      if (entry === null || !isMap(entry)) this.fail(entry ?? list, 'each workers entry must be a mapping with a name')
      const pairs = new Map<string, Pair<Node | null, Node | null>>()
      for (const pair of entry.items as Pair<Node | null, Node | null>[]) pairs.set(this.keyOf(pair), pair)
      const namePair = pairs.get('name')
      if (!namePair) this.fail(entry, "workers entry has no 'name'")
      const name = this.string(namePair.value, namePair, 'name', { nonEmpty: true })
      const nameNode = namePair.value ?? namePair.key
      const canonical = name === LISTENER_NAME ? undefined : canonicalBuiltinName(name)

      const refused = canonical === undefined ? undefined : descriptorOf(canonical).declarationRefused
      if (refused !== undefined) this.fail(nameNode, refused)
      if (name === LISTENER_NAME || canonical !== undefined) {
        for (const [key, pair] of pairs) {
          if ((ENTRY_KEYS as readonly string[]).includes(key)) continue
          if ((LOCAL_ENTRY_KEYS as readonly string[]).includes(key)) {
            this.failKey(pair, `${key} is not allowed for ${name === LISTENER_NAME ? 'the listener' : 'built-in worker'} '${name}'${key === 'worker_path' && name !== LISTENER_NAME ? '; give a local worker a name of its own' : ''}`)
          }
          this.failKey(pair, `unknown key '${key}' in worker entry '${name}'${didYouMean(key, ENTRY_KEYS)}`)
        }
      } else {
        for (const [key, pair] of pairs) {
          if (!(LOCAL_ENTRY_KEYS as readonly string[]).includes(key)) {
            this.failKey(pair, `unknown key '${key}' in worker entry '${name}'${didYouMean(key, LOCAL_ENTRY_KEYS)}`)
          }
        }
        if (!pairs.has('worker_path')) {
          const names = [LISTENER_NAME, ...BUILTIN_NAMES.filter((n) => descriptorOf(n).declarationRefused === undefined), ...Object.keys(BUILTIN_ALIASES)]
          const hint = didYouMean(name, names)
          this.fail(
            nameNode,
            hint
              ? `unknown built-in worker '${name}'${hint}`
              : `unknown built-in worker '${name}'; a local worker needs worker_path`,
          )
        }
      }

      const enabledPair = pairs.get('enabled')
      const enabled = enabledPair ? this.boolean(enabledPair.value, enabledPair, 'enabled') : true
      const configPair = pairs.get('config')

      if (name === LISTENER_NAME) {
        config.listenersDeclared = true
        const listener = this.readListener(configPair)
        if (enabled) config.listeners.push(listener)
        continue
      }

      const key = canonical ?? name
      const earlier = seen.get(key)
      if (earlier) {
        this.fail(nameNode, `worker '${key}' is declared twice (first at line ${earlier.line})`)
      }
      seen.set(key, this.source.placeOf(nameNode))

      if (canonical !== undefined) {
        if (descriptorOf(canonical).mode === 'mandatory' && !enabled) {
          this.fail(enabledPair!.value ?? enabledPair!.key, `${canonical} always runs and cannot be disabled`)
        }
        config.builtins[canonical] = this.readBuiltin(canonical, enabled, configPair)
      } else {
        if (!LOCAL_NAME.test(name)) {
          this.fail(nameNode, `invalid worker name '${name}': use 1-64 characters a-z, 0-9, '_' and '-', starting with a letter or digit`)
        }
        config.local_workers.push(this.readLocal(name, enabled, pairs, root))
      }
    }
  }

  private readListener(configPair: Pair<Node | null, Node | null> | undefined): LoadedListenerConfig {
    const listener: LoadedListenerConfig = { ...LISTENER_DEFAULTS }
    const block = configPair ? this.mapping(configPair.value, configPair, `${LISTENER_NAME} config`) : undefined
    if (!block) return listener
    for (const pair of block.items as Pair<Node | null, Node | null>[]) {
      const key = this.keyOf(pair)
      const rule = LISTENER_INTEGERS[key]
      if (rule) {
        ;(listener as unknown as Record<string, number>)[key] = this.integer(pair.value, pair, key, rule)
      } else if (key === 'host') {
        listener.host = this.string(pair.value, pair, 'host', { nonEmpty: true })
      } else if (key === 'middleware_function_id') {
        listener.middleware_function_id = this.string(pair.value, pair, key, { nonEmpty: true })
      } else if (key === 'rbac') {
        const rbac = this.readRbac(pair)
        if (rbac) listener.rbac = rbac
      } else {
        this.failKey(pair, `unknown key '${key}' in ${LISTENER_NAME} config${didYouMean(key, LISTENER_KEYS)}`)
      }
    }
    return listener
  }

  private readRbac(owner: Pair<Node | null, Node | null>): RbacConfig | undefined {
    const block = this.mapping(owner.value, owner, 'rbac')
    if (!block) return undefined
    const rbac: RbacConfig = { expose_functions: [] }
    for (const pair of block.items as Pair<Node | null, Node | null>[]) {
      const key = this.keyOf(pair)
      if (key === 'expose_functions') {
        rbac.expose_functions = this.readExposeRules(pair)
      } else if ((RBAC_KEYS as readonly string[]).includes(key)) {
        ;(rbac as unknown as Record<string, string>)[key] = this.string(pair.value, pair, key, { nonEmpty: true })
      } else {
        this.failKey(pair, `unknown key '${key}' in rbac${didYouMean(key, RBAC_KEYS)}`)
      }
    }
    return rbac
  }

  private readExposeRules(owner: Pair<Node | null, Node | null>): ExposeRule[] {
    const list = this.deref(owner.value)
    if (list === null || (isScalar(list) && list.value === null)) return []
    if (!isSeq(list)) this.fail(list, 'expose_functions must be a list', owner)
    const rules: ExposeRule[] = []
    for (const raw of list.items as Array<Node | null>) {
      const item = this.deref(raw)
      if (item !== null && isScalar(item) && typeof item.value === 'string') {
        rules.push(this.expand(item.value as string, item))
        continue
      }
      if (item === null || !isMap(item)) {
        this.fail(item ?? list, 'an expose_functions rule is a pattern string or a mapping with match or metadata')
      }
      let match: string | undefined
      let metadata: Record<string, unknown> | undefined
      let namespace: string | undefined
      for (const pair of item.items as Pair<Node | null, Node | null>[]) {
        const key = this.keyOf(pair)
        if (key === 'match') match = this.string(pair.value, pair, 'match', { nonEmpty: true })
        else if (key === 'namespace') namespace = this.string(pair.value, pair, 'namespace', { nonEmpty: true })
        else if (key === 'metadata') {
          const block = this.mapping(pair.value, pair, 'metadata')
          metadata = (block ? this.value(block, true) : {}) as Record<string, unknown>
        } else this.failKey(pair, `unknown key '${key}' in an expose_functions rule${didYouMean(key, EXPOSE_RULE_KEYS)}`)
      }
      if ((match === undefined) === (metadata === undefined)) {
        this.fail(item, 'an expose_functions rule needs exactly one of match or metadata')
      }
      const rule: ExposeRule = match !== undefined ? { match } : { metadata: metadata! }
      if (namespace !== undefined) rule.namespace = namespace
      rules.push(rule)
    }
    return rules
  }

  private readBuiltin(
    name: BuiltinName,
    enabled: boolean,
    configPair: Pair<Node | null, Node | null> | undefined,
  ): LoadedBuiltinEntry {
    const entry: LoadedBuiltinEntry = { enabled }
    if (!configPair) return entry
    const node = this.deref(configPair.value)
    if (node === null || (isScalar(node) && node.value === null)) return entry
    if (!isMap(node)) this.fail(node, `config of built-in worker '${name}' must be a mapping${describe(node)}`)
    if (descriptorOf(name).settingsSource === 'own-block') {
      entry.config = this.readConfigurationOptions(configPair)
      entry.raw_config = this.value(node, false)
      return entry
    }
    const raw = this.value(node, false)
    entry.raw_config = raw
    try {
      entry.config = expandPlaceholders(raw, this.env, BUILTIN_SEED_HINTS[name] as SchemaHint | undefined)
    } catch (err) {
      if (err instanceof ExpandError) this.fail(this.nodeAt(node, err.path), err.message)
      throw err
    }
    return entry
  }

  /** The `configuration` entry's own keys (builtins.md §11.1), read directly and expanded now. */
  private readConfigurationOptions(owner: Pair<Node | null, Node | null>): Record<string, unknown> {
    const block = this.mapping(owner.value, owner, 'configuration config')
    const options: Record<string, unknown> = {}
    if (!block) return options
    for (const pair of block.items as Pair<Node | null, Node | null>[]) {
      const key = this.keyOf(pair)
      if (key === 'directory') options.directory = this.string(pair.value, pair, key, { nonEmpty: true })
      else if (key === 'watch') options.watch = this.boolean(pair.value, pair, key)
      else if (CONFIGURATION_INTEGERS[key]) options[key] = this.integer(pair.value, pair, key, CONFIGURATION_INTEGERS[key]!)
      else this.failKey(pair, `unknown key '${key}' in configuration config${didYouMean(key, CONFIGURATION_KEYS)}; configuration takes only directory, watch and debounce_ms`)
    }
    return options
  }

  private readLocal(
    name: string,
    enabled: boolean,
    pairs: Map<string, Pair<Node | null, Node | null>>,
    root: string,
  ): LoadedLocalWorkerEntry {
    const pathPair = pairs.get('worker_path')!
    const workerPath = this.string(pathPair.value, pathPair, 'worker_path', { nonEmpty: true })
    const entry: LoadedLocalWorkerEntry = {
      name,
      worker_path: isAbsolute(workerPath) ? workerPath : resolve(root, workerPath),
      enabled,
      env: {},
      watch: true,
    }
    const namespacePair = pairs.get('namespace')
    if (namespacePair) entry.namespace = this.string(namespacePair.value, namespacePair, 'namespace', { nonEmpty: true })
    const watchPair = pairs.get('watch')
    if (watchPair) entry.watch = this.boolean(watchPair.value, watchPair, 'watch')
    const isolationPair = pairs.get('isolation')
    if (isolationPair) {
      const isolation = this.string(isolationPair.value, isolationPair, 'isolation', {})
      if (isolation !== 'process' && isolation !== 'microvm') {
        this.fail(isolationPair.value!, `isolation must be 'process' or 'microvm' (got '${isolation}')`)
      }
      entry.isolation = isolation
    }
    const envPair = pairs.get('env')
    if (envPair) {
      const block = this.mapping(envPair.value, envPair, 'env')
      for (const pair of (block?.items ?? []) as Pair<Node | null, Node | null>[]) {
        const key = this.keyOf(pair)
        const node = this.deref(pair.value)
        if (node === null || !isScalar(node) || node.value === null || typeof node.value === 'object') {
          this.fail(node ?? pair.key!, `env.${key} must be a string, number or boolean`)
        }
        entry.env[key] = typeof node.value === 'string' ? this.expand(node.value, node) : String(node.value)
      }
    }
    const configPair = pairs.get('config')
    if (configPair) {
      const node = this.deref(configPair.value)
      if (node !== null && !(isScalar(node) && node.value === null)) entry.config = this.value(node, true)
    }
    return entry
  }

  private readHttpFunctions(value: Node | null, owner: Pair<Node | null, Node | null>): HttpFunctionsConfig {
    const result: HttpFunctionsConfig = { url_allowlist: [], block_private_ips: true, require_https: true }
    const block = this.mapping(value, owner, 'http_functions')
    if (!block) return result
    for (const pair of block.items as Pair<Node | null, Node | null>[]) {
      const key = this.keyOf(pair)
      if (key === 'block_private_ips' || key === 'require_https') result[key] = this.boolean(pair.value, pair, key)
      else if (key === 'url_allowlist') {
        const list = this.deref(pair.value)
        if (list === null || (isScalar(list) && list.value === null)) continue
        if (!isSeq(list)) this.fail(list, 'url_allowlist must be a list of host names', pair)
        result.url_allowlist = (list.items as Array<Node | null>).map((item) =>
          this.string(item, undefined, 'a url_allowlist entry', { nonEmpty: true, anchor: list }),
        )
      } else {
        this.failKey(pair, `unknown key '${key}' in http_functions${didYouMean(key, HTTP_FUNCTIONS_KEYS)}`)
      }
    }
    return result
  }

  /** The `fleet` section (issue 19): `name` and `nats` required; `engine` defaults in {@link finish}. */
  private readFleet(value: Node | null, owner: Pair<Node | null, Node | null>): FleetConfig | undefined {
    const block = this.mapping(value, owner, 'fleet')
    if (!block) return undefined
    const fleet: Partial<FleetConfig> = { ...FLEET_DEFAULTS }
    for (const pair of block.items as Pair<Node | null, Node | null>[]) {
      const key = this.keyOf(pair)
      if (key === 'name' || key === 'engine') {
        const name = this.string(pair.value, pair, `fleet.${key}`, { nonEmpty: true })
        if (!FLEET_NAME.test(name)) this.fail(this.deref(pair.value), `fleet.${key} must be 1 to 64 letters, digits, '_' or '-' (got ${JSON.stringify(name.slice(0, 80))})`)
        fleet[key] = name
      } else if (key === 'nats') {
        const node = this.deref(pair.value)
        const items = node !== null && isSeq(node) ? (node.items as Array<Node | null>) : [pair.value]
        if (items.length === 0) this.fail(node, 'fleet.nats must name at least one NATS server URL')
        fleet.nats = items.map((item) => {
          const url = this.string(item, pair, 'fleet.nats', { nonEmpty: true })
          // The URL may carry credentials: the message shows its scheme rule, not the URL.
          if (!NATS_URL.test(url)) this.fail(this.deref(item), 'fleet.nats entries must be nats:// or tls:// URLs without spaces, e.g. nats://127.0.0.1:4222')
          return url
        })
      } else if (key === 'heartbeat_interval_ms' || key === 'heartbeat_timeout_ms') {
        fleet[key] = this.integer(pair.value, pair, `fleet.${key}`, FLEET_INTEGERS[key]!)
      } else {
        this.failKey(pair, `unknown key '${key}' in fleet${didYouMean(key, FLEET_KEYS)}`)
      }
    }
    if (fleet.name === undefined) this.fail(block, 'fleet.name is required: engines with the same name and NATS servers form one fleet')
    if (fleet.nats === undefined) this.fail(block, 'fleet.nats is required: the NATS server URL(s) the engines meet on, e.g. nats://127.0.0.1:4222')
    if (fleet.heartbeat_timeout_ms! < 2 * fleet.heartbeat_interval_ms!) {
      this.fail(block, `fleet.heartbeat_timeout_ms (${fleet.heartbeat_timeout_ms}) must be at least twice heartbeat_interval_ms (${fleet.heartbeat_interval_ms})`)
    }
    return fleet as FleetConfig
  }

  // -- typed scalars ---------------------------------------------------------------------------

  private string(
    value: Node | null,
    owner: Pair<Node | null, Node | null> | undefined,
    key: string,
    rules: { nonEmpty?: boolean; anchor?: Node },
  ): string {
    const node = this.deref(value)
    if (node === null || !isScalar(node) || typeof node.value !== 'string') {
      this.fail(node ?? owner?.key ?? rules.anchor ?? null, `${key} must be a string${describe(node)}`)
    }
    const text = this.expand(node.value as string, node)
    if (rules.nonEmpty && text === '') this.fail(node, `${key} must not be empty`)
    return text
  }

  private integer(value: Node | null, owner: Pair<Node | null, Node | null>, key: string, rule: IntRule): number {
    const node = this.deref(value)
    let n: unknown = node !== null && isScalar(node) ? node.value : undefined
    if (typeof n === 'string' && isSinglePlaceholder(n)) n = convertScalar(this.expand(n, node!), { type: 'integer' })
    if (typeof n !== 'number' || !Number.isInteger(n)) {
      this.fail(node ?? owner.key, `${key} must be an integer${describe(node, n)}`)
    }
    const range = rule.max === undefined ? `>= ${rule.min}` : `between ${rule.min} and ${rule.max}`
    if (n < rule.min || (rule.max !== undefined && n > rule.max)) this.fail(node, `${key} must be an integer ${range} (got ${n})`)
    return n
  }

  private boolean(value: Node | null, owner: Pair<Node | null, Node | null>, key: string): boolean {
    const node = this.deref(value)
    let b: unknown = node !== null && isScalar(node) ? node.value : undefined
    if (typeof b === 'string' && isSinglePlaceholder(b)) b = convertScalar(this.expand(b, node!), { type: 'boolean' })
    if (typeof b !== 'boolean') this.fail(node ?? owner.key, `${key} must be true or false${describe(node, b)}`)
    return b
  }

  /** A mapping block, or undefined when the value is empty (`key:` with nothing after it). */
  private mapping(value: Node | null, owner: Pair<Node | null, Node | null>, what: string) {
    const node = this.deref(value)
    if (node === null || (isScalar(node) && node.value === null)) return undefined
    if (!isMap(node)) this.fail(node, `${what} must be a mapping${describe(node)}`, owner)
    return node
  }

  /** The plain value of a subtree, strings expanded when `expand` is true. */
  private value(node: Node | null, expand: boolean): unknown {
    const target = this.deref(node)
    if (target === null) return null
    if (isScalar(target)) {
      return expand && typeof target.value === 'string' ? this.expand(target.value, target) : target.value
    }
    if (isSeq(target)) return (target.items as Array<Node | null>).map((item) => this.value(item, expand))
    if (isMap(target)) {
      const out: Record<string, unknown> = {}
      for (const pair of target.items as Pair<Node | null, Node | null>[]) out[this.keyOf(pair)] = this.value(pair.value, expand)
      return out
    }
    return target.toJSON()
  }

  private expand(text: string, node: Node): string {
    try {
      return expandString(text, this.env)
    } catch (err) {
      if (err instanceof ExpandError) this.fail(node, err.message)
      throw err
    }
  }

  // -- positions -------------------------------------------------------------------------------

  private keyOf(pair: Pair<Node | null, Node | null>): string {
    return this.source.keyOf(pair, this.failAt)
  }

  private deref(node: Node | null | undefined): Node | null {
    return this.source.deref(node, this.failAt)
  }

  /** The node at `path` below `node`, for errors found after conversion to plain values. */
  private nodeAt(node: Node, path: ReadonlyArray<string | number>): Node {
    let current: Node = node
    for (const step of path) {
      const target = this.deref(current)
      let next: Node | null | undefined
      if (target && isMap(target)) {
        next = (target.items as Pair<Node | null, Node | null>[]).find((pair) => this.keyOf(pair) === String(step))?.value
      } else if (target && isSeq(target)) {
        next = (target.items as Array<Node | null>)[Number(step)]
      }
      if (!next) return current
      current = next
    }
    return current
  }

  private fail(node: Node | null | undefined, problem: string, fallback?: Pair<Node | null, Node | null>): never {
    const place = this.source.placeOf(node ?? fallback?.key ?? null)
    throw new ConfigError({ file: this.file, line: place.line, column: place.column, problem })
  }

  private failKey(pair: Pair<Node | null, Node | null>, problem: string): never {
    this.fail(pair.key ?? pair.value, problem)
  }
}

