/**
 * Project discovery and engine address resolution (cli.md §1).
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, isAbsolute, sep } from 'node:path'
import { CONFIG_FILE_LIMITS, type Env, expandString, readTextFileSync, terminalText, YamlSource } from '../../runtime/index.ts'
import { engineAt, projectName, runningEngineOf } from './engines.ts'
import type { EngineRecord } from './engines.ts'
import { CliCodes, CliError, ExitCode } from './errors.ts'
import { splitAddressList } from 'svc-protocol/client'
import { shownAddresses } from './engine-addresses.ts'

/** Name of the engine configuration file looked for in the working directory and its parents. */
export const CONFIG_FILE_NAME = 'config.yaml'

/** The engine address when nothing else says (cli.md §1). */
export const DEFAULT_ENGINE_URL = 'ws://127.0.0.1:49134'

/**
 * The nearest `config.yaml`: in `cwd` or the nearest parent directory that has one. Returns its
 * absolute path, or undefined when no directory up to the file-system root has one.
 */
export function findConfigFile(cwd: string): string | undefined {
  let dir = resolve(cwd)
  for (;;) {
    const candidate = join(dir, CONFIG_FILE_NAME)
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate
    const parent = dirname(dir)
    if (parent === dir) return undefined
    dir = parent
  }
}

/** Where the config file comes from, and how to name it in messages. */
export interface LocatedConfig {
  /** Absolute path; undefined when none was found and none was named. */
  path: string | undefined
  /** The name shown in errors: as given with --config, else relative to cwd when below it. */
  label: string | undefined
  /** True when named with `--config`. */
  explicit: boolean
}

/** cli.md §1 project discovery: `--config <file>`, else the nearest config.yaml. */
export function locateConfig(configFlag: string | undefined, cwd: string): LocatedConfig {
  if (configFlag !== undefined) return { path: resolve(cwd, configFlag), label: configFlag, explicit: true }
  const found = findConfigFile(cwd)
  return { path: found, label: found === undefined ? undefined : displayPath(found, cwd), explicit: false }
}

/** `path` relative to `cwd` when it lies below it (`config.yaml`, `sub/config.yaml`), else absolute. */
export function displayPath(path: string, cwd: string): string {
  const rel = relative(cwd, path)
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel) ? rel : path
}

/** `ws://host:port`, reading a wildcard bind address as loopback and bracketing IPv6 hosts. */
export function listenerUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host
  return `ws://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`
}

/**
 * The engine URL for commands that stay connected through svc-sdk with one address (`svc console`,
 * the compose daemon), as {@link projectEngine} resolves it: of a comma-separated list
 * (`--engine`, `SVC_URL`; issue 19 §3) the first address. Commands that connect once take the
 * whole list from {@link projectEngine} and use the first engine that answers.
 * @throws CliError (exit 3) when the address belongs to another project's engine.
 */
export function resolveEngineUrl(options: EngineOptions): string {
  return splitAddressList(projectEngine(options).url)[0]!
}

/**
 * {@link resolveEngine}, refusing an address the project took from its config.yaml (or the default)
 * that another project's running engine holds: a command never answers from the wrong engine
 * (issue 11). An engine chosen with `--engine` or `SVC_URL` is used as asked.
 * @throws CliError {@link foreignEngineError}
 */
export function projectEngine(options: EngineOptions): EngineTarget {
  const target = resolveEngine(options)
  if (target.foreign !== undefined && (target.source === 'config' || target.source === 'default')) throw foreignEngineError(target)
  return target
}

/** Inputs of {@link resolveEngine}. */
export interface EngineOptions {
  /** `--engine`/`--url`. */
  flag?: string | undefined
  env?: Env
  cwd: string
  /** `--config`. */
  configFlag?: string | undefined
}

/** Where the engine address came from. */
export type EngineSource = 'flag' | 'env' | 'state' | 'config' | 'default'

/** The engine a command talks to, and whose it is. */
export interface EngineTarget {
  /**
   * The address as given: one `ws://` URL, or from `--engine`/`SVC_URL` several separated by
   * commas (issue 19 §3), tried in order by the commands (`connectFirst` of trigger.ts). Shown
   * only through `shownAddresses` (no credentials).
   */
  url: string
  source: EngineSource
  /** The project the command runs in (root and name); undefined outside a project. */
  project: { root: string; name: string } | undefined
  /**
   * The running engine at `url` when it belongs to another project than the command's (from the
   * registry of running engines); undefined when it is this project's, unknown or not running.
   */
  foreign: EngineRecord | undefined
}

/**
 * The engine of cli.md §1, made project-scoped (issue 11): `flag` (--engine/--url), else `SVC_URL`,
 * else the running engine recorded in the project (`.svc/state/engine.json`, so `svc --port 0` and
 * ports set by placeholders are found), else the first svc-worker-manager entry of config.yaml,
 * else {@link DEFAULT_ENGINE_URL}. `foreign` names another project's engine listening at that
 * address, if the registry of running engines knows one.
 */
export function resolveEngine(options: EngineOptions): EngineTarget {
  const env = options.env ?? process.env
  const located = locateConfig(options.configFlag, options.cwd)
  const root = located.path !== undefined && existsSync(located.path) ? dirname(located.path) : undefined
  const project = root === undefined ? undefined : { root, name: projectName(root) }
  let url: string
  let source: EngineSource
  const running = root === undefined ? undefined : runningEngineOf(root)
  if (options.flag) [url, source] = [options.flag, 'flag']
  else if (env.SVC_URL) [url, source] = [env.SVC_URL, 'env']
  else if (running?.engine_urls[0] !== undefined) [url, source] = [running.engine_urls[0], 'state']
  else {
    const fromFile = located.path ? firstListenerUrl(located.path, env) : undefined
    ;[url, source] = fromFile === undefined ? [DEFAULT_ENGINE_URL, 'default'] : [fromFile, 'config']
  }
  let foreign: EngineRecord | undefined
  if (project !== undefined && source !== 'state') {
    for (const address of splitAddressList(url)) {
      const owner = engineAt(address, env as NodeJS.ProcessEnv)
      if (owner !== undefined && owner.project_root !== project.root) {
        foreign = owner
        break
      }
    }
  }
  return { url, source, project, foreign }
}

/**
 * What a command says about its engine before it talks to it (issue 11), one line for stderr or
 * undefined: a warning when an explicit address (--engine, SVC_URL) is another project's engine;
 * that the project's engine is not running when its address holds another project's engine;
 * outside a project, that no project was found and which address (the default, or `SVC_URL`) is
 * used; otherwise, for an address found in the project (not given by the user), which engine it is
 * when that is not the default address.
 */
export function engineNotice(target: EngineTarget): string | undefined {
  const line = noticeLine(target)
  // Project names and roots come from other projects' files: one escaped line (issue 16).
  return line === undefined ? undefined : `${terminalText(line)}\n`
}

function noticeLine(target: EngineTarget): string | undefined {
  if (target.foreign !== undefined && (target.source === 'flag' || target.source === 'env')) {
    const here = target.project === undefined ? '' : `, not of this project (${target.project.name})`
    return `Warning: ${shownAddresses(target.url)} is the engine of project ${target.foreign.project_name} (${target.foreign.project_root})${here}`
  }
  if (target.foreign !== undefined) {
    return `The engine of project ${target.project?.name ?? 'this project'} is not running (${shownAddresses(target.url)} is the engine of project ${target.foreign.project_name})`
  }
  // Outside a project nothing chose the engine but the default (or an exported SVC_URL): say so,
  // so a command run in the wrong directory does not read as this project's answer.
  if (target.project === undefined && (target.source === 'default' || target.source === 'env')) {
    return `No svc project here (no config.yaml in this directory or above); using the engine at ${shownAddresses(target.url)}${target.source === 'env' ? ' (SVC_URL)' : ''}`
  }
  // An address the user gave (--engine, SVC_URL) needs no announcement.
  if (target.source === 'flag' || target.source === 'env' || target.url === DEFAULT_ENGINE_URL) return undefined
  const whose = target.project === undefined ? '' : ` (project ${target.project.name})`
  return `Engine ${shownAddresses(target.url)}${whose}`
}

/**
 * The `Hint:` after `Cannot connect to the engine …` (code `ENGINE_UNREACHABLE`) that fits where the
 * address came from: the project's own engine (its record, config.yaml or the default) → start it
 * with svc in the project's root, or pass --engine; `--engine` → check that address; `SVC_URL` →
 * check or unset it. Undefined outside a project, where the catalogue's hint for the code applies.
 */
export function unreachableHint(target: EngineTarget): string | undefined {
  if (target.source === 'flag') return `check the address given with --engine (${shownAddresses(target.url)}), or start that engine with svc`
  if (target.source === 'env') return `check SVC_URL (${shownAddresses(target.url)}), or unset it to use ${target.project === undefined ? 'the default engine' : "the project's engine"}`
  if (target.project === undefined) return undefined
  return `start it with svc in ${target.project.root}, or pass --engine <url> of a running engine`
}

/**
 * The failure for a project whose own engine is not running while another project's engine holds
 * its address (issue 11): exit 3, naming both, so the command never answers from the wrong engine.
 */
export function foreignEngineError(target: EngineTarget): CliError {
  const owner = target.foreign!
  const name = target.project?.name ?? 'this project'
  return new CliError({
    code: CliCodes.EngineUnreachable,
    message: `The engine of project ${name} is not running (${shownAddresses(target.url)} is the engine of project ${owner.project_name} at ${owner.project_root})`,
    hint: `start it with svc in ${target.project?.root ?? 'the project directory'}, or pass --engine ${shownAddresses(target.url)} to use ${owner.project_name}'s engine`,
    exitCode: ExitCode.Unreachable,
  })
}

function firstListenerUrl(file: string, env: Env): string | undefined {
  let document: unknown
  try {
    document = new YamlSource(readTextFileSync(file, { file, maxBytes: CONFIG_FILE_LIMITS.maxBytes }), { file }).toJS()
  } catch {
    return undefined
  }
  const workers = (document as { workers?: unknown } | null)?.workers
  if (!Array.isArray(workers)) return undefined
  for (const entry of workers) {
    if (typeof entry !== 'object' || entry === null) continue
    const { name, enabled, config } = entry as { name?: unknown; enabled?: unknown; config?: unknown }
    if (name !== 'svc-worker-manager' || enabled === false) continue
    const block = (typeof config === 'object' && config !== null ? config : {}) as { host?: unknown; port?: unknown }
    try {
      const host = typeof block.host === 'string' ? expandString(block.host, env) : '127.0.0.1'
      const port = typeof block.port === 'string' ? Number(expandString(block.port, env)) : (block.port ?? 49134)
      if (typeof port !== 'number' || !Number.isInteger(port) || port <= 0 || port > 65535) return undefined
      return listenerUrl(host, port)
    } catch {
      return undefined
    }
  }
  return undefined
}
