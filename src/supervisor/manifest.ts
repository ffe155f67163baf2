/**
 * Worker manifests (cli.md §2.2): `svc.worker.yaml` read with positions and validated, scripts
 * inferred from `runtime`, and directories without a manifest detected from their files.
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import { isMap, isScalar, isSeq } from 'yaml'
import type { Node, Pair } from 'yaml'
import { CONFIG_FILE_LIMITS, describeFound as describe, didYouMean, readTextFileSync, YamlError, YamlReader } from '../../runtime/index.ts'
import type { WorkerManifest } from './types.ts'
import { manifestFieldsUnder } from './manifest-fields.ts'

/** The manifest's file name inside a worker directory. */
export const MANIFEST_FILE = 'svc.worker.yaml'

/** Worker names (cli.md §2.1, §2.2): 1–64 characters, lower-case letters, digits, `_` and `-`. */
export const WORKER_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/

export const RUNTIME_KINDS = ['typescript', 'javascript', 'bun', 'python', 'rust'] as const
export const PACKAGE_MANAGERS = ['npm', 'pnpm', 'yarn', 'bun'] as const
export type RuntimeKind = (typeof RUNTIME_KINDS)[number]
export type PackageManager = (typeof PACKAGE_MANAGERS)[number]

/** MicroVM size bounds (cli.md §2.2): defaults 2 CPUs and 2048 MiB. */
export const RESOURCE_LIMITS = { cpus: { min: 1, max: 4 }, memory_mib: { min: 128, max: 4096 } } as const

/**
 * Dependency manifests (cli.md §5.3): their hash decides whether `scripts.install` runs again.
 * Only files directly in the worker directory count.
 */
export const DEPENDENCY_MANIFESTS = [
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'pnpm-lock.yaml',
  'yarn.lock',
  'bun.lock',
  'bun.lockb',
  'pyproject.toml',
  'requirements*.txt',
  'poetry.lock',
  'uv.lock',
  'Pipfile',
  'Pipfile.lock',
  'Cargo.toml',
  'Cargo.lock',
  'go.mod',
  'go.sum',
] as const

/** True when a file name (no directory) is one of {@link DEPENDENCY_MANIFESTS}. */
export function isDependencyManifest(fileName: string): boolean {
  if (/^requirements.*\.txt$/.test(fileName)) return true
  return (DEPENDENCY_MANIFESTS as readonly string[]).includes(fileName)
}

/** Codes of {@link ManifestError}. */
export type ManifestErrorCode = 'INVALID_MANIFEST' | 'NO_START_SCRIPT' | 'UNKNOWN_WORKER'

/**
 * A worker directory that cannot be used: the YAML readers' located error ({@link YamlError}) with
 * the manifest's codes. `message` is compiler style,
 * `workers/math/svc.worker.yaml:3:5: unknown field 'scirpts' (did you mean 'scripts'?)`, or the plain
 * problem when it has no place in a file (`Cannot determine how to start ./x: add a svc.worker.yaml
 * with scripts.start`). Codes: `INVALID_MANIFEST` (the manifest is wrong), `NO_START_SCRIPT` (no
 * manifest and nothing detected), `UNKNOWN_WORKER` (the directory does not exist).
 * `svc worker add` maps it to exit 2; at launch it puts the worker in state `failed`.
 * `file` is the manifest as named in the message (relative when the directory was given
 * relative), or the directory.
 */
export class ManifestError extends YamlError {
  override readonly name = 'ManifestError'
  declare readonly code: ManifestErrorCode

  constructor(init: { code?: ManifestErrorCode; file: string; line?: number; column?: number; problem: string; plain?: boolean }) {
    super(init.file, init.line === undefined ? undefined : { line: init.line, column: init.column ?? 1 }, init.problem, { code: init.code ?? 'INVALID_MANIFEST' })
    if (init.plain) this.message = init.problem
  }

  /** The same problem as a YAML reader's error (size, syntax, nesting, aliases), `INVALID_MANIFEST`. */
  static fromYaml(error: YamlError): ManifestError {
    return new ManifestError({ file: error.file, problem: error.problem, ...(error.place ? { line: error.place.line, column: error.place.column } : {}) })
  }
}

export interface LoadManifestOptions {
  /**
   * When false, a missing and uninferable start command is not an error and `scripts.start` is
   * `''` (compose containers whose `scripts.run` replaces it). Default true.
   */
  requireStart?: boolean
  /** How the directory is named in messages; default `dir` as given. */
  label?: string
}

/**
 * Reads `<dir>/svc.worker.yaml` and validates it, inferring missing scripts from `runtime` (or, when
 * the manifest names no `runtime.kind`, from the directory's files); without a manifest, detects the
 * directory (cli.md §2.2): `package.json` → `<manager> install` and `<manager> run dev` (or `start`),
 * the manager being bun, pnpm or yarn when their lockfile exists, else npm; `pyproject.toml` or
 * `requirements.txt` → python; `Cargo.toml` → rust. A detected directory is named after its base name.
 *
 * @throws {ManifestError} `INVALID_MANIFEST` with file, line and column for unknown fields, wrong
 *   types, a bad name, an unknown `runtime.kind`/`package_manager`/`isolation`, `resources` out of
 *   bounds (cpus 1–4, memory_mib 128–4096) or a start command that is neither given nor inferable;
 *   `NO_START_SCRIPT` for an undetectable directory without a manifest; `UNKNOWN_WORKER` when `dir`
 *   is not a directory.
 * @example
 * const manifest = loadManifest('./workers/math-worker')
 * manifest.scripts.start // 'node --import tsx src/index.ts'
 */
export function loadManifest(dir: string, options: LoadManifestOptions = {}): WorkerManifest {
  const label = options.label ?? dir
  const absolute = resolve(dir)
  let isDir = false
  try {
    isDir = statSync(absolute).isDirectory()
  } catch {
    /* reported below */
  }
  if (!isDir) {
    throw new ManifestError({ code: 'UNKNOWN_WORKER', file: label, problem: `Worker directory ${label} does not exist`, plain: true })
  }
  const file = join(absolute, MANIFEST_FILE)
  if (!existsSync(file)) return detectManifest(absolute, { ...options, label })
  let text: string
  try {
    text = readTextFileSync(file, { file: join(label, MANIFEST_FILE), maxBytes: CONFIG_FILE_LIMITS.maxBytes })
  } catch (err) {
    if (err instanceof YamlError) throw ManifestError.fromYaml(err)
    throw new ManifestError({ file: join(label, MANIFEST_FILE), problem: `cannot be read (${(err as Error).message})` })
  }
  return parseManifest(text, { ...options, directory: absolute, fileLabel: join(label, MANIFEST_FILE) })
}

/**
 * Validates manifest text (the work of {@link loadManifest} without the read). `directory` is the
 * absolute worker directory (for inference from its files); `fileLabel` names the file in messages.
 *
 * @throws {ManifestError} `INVALID_MANIFEST`
 */
export function parseManifest(
  text: string,
  options: { directory: string; fileLabel?: string; requireStart?: boolean },
): WorkerManifest {
  const file = options.fileLabel ?? MANIFEST_FILE
  const reader = new ManifestReader(text, file)
  const manifest = reader.read()
  manifest.file = join(options.directory, MANIFEST_FILE)
  const kind = manifest.runtime.kind
  const inferred = kind
    ? inferScripts(kind, manifest.runtime.package_manager ?? defaultManager(kind), manifest.runtime.entry, options.directory)
    : detectScripts(options.directory)
  if (manifest.scripts.install === undefined && inferred?.install !== undefined) manifest.scripts.install = inferred.install
  // A rust worker whose install was given compiles with it (the inferred install is the build).
  if (manifest.scripts.build === undefined && inferred?.build !== undefined) manifest.scripts.build = kind === 'rust' ? (manifest.scripts.install ?? inferred.build) : inferred.build
  if (!manifest.scripts.start) {
    if (inferred?.start) manifest.scripts.start = inferred.start
    else if (options.requireStart !== false) reader.missingStart(kind, manifest.runtime.entry)
    else manifest.scripts.start = ''
  }
  if (kind && !manifest.runtime.package_manager && isJavaScriptKind(kind)) manifest.runtime.package_manager = defaultManager(kind)
  return manifest
}

function isJavaScriptKind(kind: RuntimeKind): boolean {
  return kind === 'typescript' || kind === 'javascript' || kind === 'bun'
}

function defaultManager(kind: RuntimeKind): PackageManager {
  return kind === 'bun' ? 'bun' : 'npm'
}

/** Scripts inferred for a directory; `start` undefined when it cannot be inferred. */
export interface InferredScripts {
  install?: string
  build?: string
  start?: string
}

/**
 * The inference table of cli.md §2.2 as svc implements it for issue 18. `entry` is needed for
 * every kind but rust; without it only `install` is inferred.
 * - Python: a virtual environment per worker (`.venv`, made with the `python3` on PATH); `install`
 *   is `pip install -e .` when `pyproject.toml` exists in `directory`, else `-r requirements.txt`;
 *   `start` runs the venv's interpreter on an entry ending in `.py` as a file, anything else with
 *   `-m`.
 * - Rust: `install` and `build` are `cargo build --release` (the build runs before every start that
 *   follows a change, while the previous binary keeps serving); `start` is the release binary,
 *   `"${CARGO_TARGET_DIR:-target}/release/<bin>"`, where `<bin>` is `entry` when given, else the
 *   binary `Cargo.toml` in `directory` names ({@link cargoBinaryName}); undefined when neither says.
 * - TypeScript with npm or pnpm runs `node <entry>` when the worker's `tsconfig.json` sets
 *   `compilerOptions.erasableSyntaxOnly` (Node strips the types: {@link erasableSyntaxOnly}), else
 *   `node --import tsx <entry>`: one Node process with tsx's loader (the worker's own `tsx`); yarn runs `yarn exec tsx <entry>` (Plug'n'Play has no
 *   node_modules to import from); bun runs `bun run <entry>` (bun runs TypeScript itself).
 *
 * Start commands are single simple commands, which the supervisor runs with `exec` (one process).
 */
export function inferScripts(kind: RuntimeKind, manager: PackageManager, entry: string | undefined, directory?: string): InferredScripts {
  const quoted = entry === undefined ? undefined : shellQuote(entry)
  switch (kind) {
    case 'typescript': {
      const install = `${manager} install`
      if (quoted === undefined) return { install }
      // One process (issue 20): Node strips the types itself when the worker's tsconfig promises
      // erasable syntax only; otherwise Node with tsx's loader in it (not npx → tsx's CLI → a second
      // Node). Yarn keeps `yarn exec`, which also works under Plug'n'Play (no node_modules to import from).
      if (manager === 'npm' || manager === 'pnpm') return { install, start: directory !== undefined && erasableSyntaxOnly(directory) ? `node ${quoted}` : `node --import tsx ${quoted}` }
      if (manager === 'bun') return { install, start: `bun run ${quoted}` }
      return { install, start: `${manager} exec tsx ${quoted}` }
    }
    case 'javascript':
      return quoted === undefined ? { install: `${manager} install` } : { install: `${manager} install`, start: `node ${quoted}` }
    case 'bun':
      return quoted === undefined ? { install: 'bun install' } : { install: 'bun install', start: `bun run ${quoted}` }
    case 'python': {
      const usesPyproject = directory === undefined || existsSync(join(directory, 'pyproject.toml')) || !existsSync(join(directory, 'requirements.txt'))
      const install = `python3 -m venv .venv && .venv/bin/pip install ${usesPyproject ? '-e .' : '-r requirements.txt'}`
      if (entry === undefined) return { install }
      return { install, start: entry.endsWith('.py') ? `.venv/bin/python ${quoted}` : `.venv/bin/python -m ${quoted}` }
    }
    case 'rust': {
      const build = 'cargo build --release'
      const binary = entry ?? (directory === undefined ? undefined : cargoBinaryName(directory))
      if (binary === undefined || !CARGO_NAME.test(binary)) return { install: build, build }
      return { install: build, build, start: `"\${CARGO_TARGET_DIR:-target}/release/${binary}"` }
    }
  }
}

/** Names cargo accepts for a package or binary target (and that need no quoting in a shell word). */
const CARGO_NAME = /^[A-Za-z0-9_-]{1,64}$/

/** Cargo.toml files larger than this are not read for a binary name (a worker's is a few KiB). */
const CARGO_TOML_MAX_BYTES = 256 * 1024

/**
 * The binary `cargo build --release` makes for the package whose `Cargo.toml` is in `directory`:
 * the only `[[bin]]` target's `name`, else `[package] name` (cargo's default binary,
 * `src/main.rs`), or undefined when there are several `[[bin]]` targets and none is named after the
 * package, when the file is missing, larger than 256 KiB or names nothing usable. A line-based
 * reader of the keys it needs (`name = "…"` in `[package]` and `[[bin]]` tables), not a TOML
 * parser: a manifest it cannot read needs `runtime.entry` or `scripts.start`.
 */
export function cargoBinaryName(directory: string): string | undefined {
  let text: string
  try {
    const file = join(directory, 'Cargo.toml')
    if (statSync(file).size > CARGO_TOML_MAX_BYTES) return undefined
    text = readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
  return binaryNameOf(text)
}

/** {@link cargoBinaryName} of a Cargo.toml text. */
export function binaryNameOf(text: string): string | undefined {
  let table = ''
  let packageName: string | undefined
  const bins: Array<string | undefined> = []
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim()
    const header = /^(\[\[?)\s*([A-Za-z0-9_.-]+)\s*(\]\]?)\s*(?:#.*)?$/.exec(line)
    if (header) {
      table = header[1] === '[[' && header[3] === ']]' ? `[[${header[2]}]]` : header[2]!
      if (table === '[[bin]]') bins.push(undefined)
      continue
    }
    const name = /^name\s*=\s*(?:"([^"\\]*)"|'([^']*)')\s*(?:#.*)?$/.exec(line)
    if (!name) continue
    const value = name[1] ?? name[2]!
    if (table === 'package') packageName = value
    else if (table === '[[bin]]') bins[bins.length - 1] = value
  }
  const named = bins.filter((b): b is string => b !== undefined)
  let binary: string | undefined
  if (bins.length === 0) binary = packageName
  else if (bins.length === 1) binary = named[0] ?? packageName
  else binary = packageName !== undefined && named.includes(packageName) ? packageName : undefined
  return binary !== undefined && CARGO_NAME.test(binary) ? binary : undefined
}

/** What {@link detectScripts} found in a directory. */
interface Detected extends InferredScripts {
  kind: RuntimeKind
  manager?: PackageManager
}

/**
 * Detection of a directory without manifest (cli.md §2.2), or undefined when nothing is recognised.
 * `start` is undefined when the project type is known but not how to start it.
 */
function detectScripts(directory: string): Detected | undefined {
  const has = (name: string) => existsSync(join(directory, name))
  if (has('package.json')) {
    const manager: PackageManager = has('bun.lock') || has('bun.lockb') ? 'bun' : has('pnpm-lock.yaml') ? 'pnpm' : has('yarn.lock') ? 'yarn' : 'npm'
    let scripts: Record<string, unknown> = {}
    try {
      const parsed = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { scripts?: unknown }
      if (parsed.scripts && typeof parsed.scripts === 'object') scripts = parsed.scripts as Record<string, unknown>
    } catch {
      /* an unreadable package.json starts nothing; the install step will report it */
    }
    const script = typeof scripts.dev === 'string' ? 'dev' : typeof scripts.start === 'string' ? 'start' : undefined
    const detected: Detected = { kind: manager === 'bun' ? 'bun' : 'javascript', manager, install: `${manager} install` }
    if (script) detected.start = `${manager} run ${script}`
    return detected
  }
  if (has('pyproject.toml') || has('requirements.txt')) {
    const module = has('main.py') ? 'main.py' : pythonModuleName(directory)
    const inferred = inferScripts('python', 'npm', module, directory)
    return { kind: 'python', ...inferred }
  }
  if (has('Cargo.toml')) return { kind: 'rust', ...inferScripts('rust', 'npm', undefined, directory) }
  return undefined
}

/** `[project] name` of pyproject.toml as an importable module name, if any. */
function pythonModuleName(directory: string): string | undefined {
  try {
    const text = readFileSync(join(directory, 'pyproject.toml'), 'utf8')
    const section = /^\[project\]\s*$([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(text)?.[1] ?? ''
    const name = /^\s*name\s*=\s*["']([^"']+)["']/m.exec(section)?.[1]
    return name ? name.replace(/[-.]/g, '_') : undefined
  } catch {
    return undefined
  }
}

/**
 * The manifest of a directory without `svc.worker.yaml` (cli.md §2.2): named after the directory
 * (lower-cased, other characters replaced by `-`), scripts detected from its files.
 *
 * @throws {ManifestError} `NO_START_SCRIPT`: `Cannot determine how to start <path>: add a svc.worker.yaml with scripts.start`
 */
export function detectManifest(directory: string, options: LoadManifestOptions = {}): WorkerManifest {
  const absolute = resolve(directory)
  const label = options.label ?? directory
  const detected = detectScripts(absolute)
  if (!detected?.start && options.requireStart !== false) {
    throw new ManifestError({
      code: 'NO_START_SCRIPT',
      file: label,
      problem: `Cannot determine how to start ${label}: add a svc.worker.yaml with scripts.start`,
      plain: true,
    })
  }
  const manifest: WorkerManifest = {
    name: workerNameFor(absolute),
    runtime: {},
    scripts: { start: detected?.start ?? '' },
    env: {},
    isolation: 'process',
    watch: { enabled: true, ignore: [] },
  }
  if (detected) {
    manifest.runtime.kind = detected.kind
    if (detected.manager) manifest.runtime.package_manager = detected.manager
    if (detected.install) manifest.scripts.install = detected.install
    if (detected.build) manifest.scripts.build = detected.build
  }
  return manifest
}

/** A valid worker name derived from a directory's base name (`My App` → `my-app`). */
export function workerNameFor(directory: string): string {
  const name = basename(resolve(directory))
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 64)
  return name === '' ? 'worker' : name
}

/** Quotes a path for `sh -c` when it holds anything but safe characters. */
function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`
}

// ---------------------------------------------------------------------------------------------

// Field lists come from the one description the reference is generated from (manifest-fields.ts).
const TOP_KEYS = manifestFieldsUnder('')
const RUNTIME_KEYS = manifestFieldsUnder('runtime')
const SCRIPT_KEYS = manifestFieldsUnder('scripts')
const RESOURCE_KEYS = manifestFieldsUnder('resources')
const WATCH_KEYS = manifestFieldsUnder('watch')

type AnyPair = Pair<Node | null, Node | null>

/** Walks the YAML tree (the shared located reader) so every error names its line and column. */
class ManifestReader extends YamlReader {
  private scriptsNode: Node | null = null
  private runtimeNode: Node | null = null

  constructor(text: string, file: string) {
    super(text, { file }, (name, place, problem, code) =>
      new ManifestError({ file: name, problem, ...(place ? { line: place.line, column: place.column } : {}), ...(code ? { code: code as ManifestErrorCode } : {}) }),
    )
  }

  read(): WorkerManifest {
    const top = this.deref(this.doc.contents)
    if (top === null || (isScalar(top) && top.value === null)) this.fail(null, "the manifest is empty; it needs at least 'name'")
    if (!isMap(top)) this.fail(top, `the manifest must be a mapping of fields such as name and scripts${describe(top)}`)

    const manifest: WorkerManifest = {
      name: '',
      runtime: {},
      scripts: { start: '' },
      env: {},
      isolation: 'process',
      watch: { enabled: true, ignore: [] },
    }
    let named = false
    for (const pair of top.items as AnyPair[]) {
      const key = this.keyOf(pair)
      switch (key) {
        case 'name': {
          const name = this.string(pair, 'name')
          if (!WORKER_NAME_PATTERN.test(name)) {
            this.fail(pair.value, `invalid name '${name}': use 1-64 characters a-z, 0-9, '_' and '-', starting with a letter or digit`)
          }
          manifest.name = name
          named = true
          break
        }
        case 'description':
          manifest.description = this.string(pair, 'description', true)
          break
        case 'runtime':
          this.runtimeNode = pair.key
          this.readRuntime(pair, manifest)
          break
        case 'scripts':
          this.scriptsNode = pair.key
          this.readScripts(pair, manifest)
          break
        case 'env':
          manifest.env = this.readEnv(pair)
          break
        case 'isolation':
          manifest.isolation = this.oneOf(pair, 'isolation', ['process', 'microvm'] as const)
          break
        case 'resources':
          this.readResources(pair, manifest)
          break
        case 'watch':
          this.readWatch(pair, manifest)
          break
        default:
          this.failKey(pair, `unknown field '${key}'${didYouMean(key, TOP_KEYS)}`)
      }
    }
    if (!named) this.fail(null, "missing required field 'name'")
    return manifest
  }

  /** The error for a start command that is neither given nor inferable. */
  missingStart(kind: RuntimeKind | undefined, entry: string | undefined): never {
    let why: string
    if (!kind) why = 'give scripts.start, or runtime.kind and runtime.entry to infer it'
    else if (kind === 'rust') why = `give scripts.start, or runtime.entry (the binary's name) when Cargo.toml does not name one binary`
    else if (entry === undefined) why = `give scripts.start, or runtime.entry to infer it for ${kind}`
    else why = 'give scripts.start'
    this.fail(this.scriptsNode ?? this.runtimeNode, `missing scripts.start: ${why}`)
  }

  private readRuntime(owner: AnyPair, manifest: WorkerManifest): void {
    const block = this.mapping(owner, 'runtime')
    for (const pair of (block?.items ?? []) as AnyPair[]) {
      const key = this.keyOf(pair)
      switch (key) {
        case 'kind':
          manifest.runtime.kind = this.oneOf(pair, 'runtime.kind', RUNTIME_KINDS)
          break
        case 'package_manager':
          manifest.runtime.package_manager = this.oneOf(pair, 'runtime.package_manager', PACKAGE_MANAGERS)
          break
        case 'entry':
          manifest.runtime.entry = this.string(pair, 'runtime.entry')
          break
        case 'base_image':
          manifest.runtime.base_image = this.string(pair, 'runtime.base_image')
          break
        default:
          this.failKey(pair, `unknown field 'runtime.${key}'${didYouMean(key, RUNTIME_KEYS)}`)
      }
    }
    const kind = manifest.runtime.kind
    if (kind && (kind === 'python' || kind === 'rust') && manifest.runtime.package_manager) {
      const pair = (block!.items as AnyPair[]).find((p) => this.keyOf(p) === 'package_manager')!
      this.fail(pair.value, `runtime.package_manager applies to JavaScript kinds only, not ${kind}`)
    }
  }

  private readScripts(owner: AnyPair, manifest: WorkerManifest): void {
    const block = this.mapping(owner, 'scripts')
    for (const pair of (block?.items ?? []) as AnyPair[]) {
      const key = this.keyOf(pair)
      if (!SCRIPT_KEYS.includes(key)) {
        this.failKey(pair, `unknown field 'scripts.${key}'${didYouMean(key, SCRIPT_KEYS)}`)
      }
      manifest.scripts[key as keyof WorkerManifest['scripts']] = this.string(pair, `scripts.${key}`)
    }
  }

  private readEnv(owner: AnyPair): Record<string, string> {
    const block = this.mapping(owner, 'env')
    const env: Record<string, string> = {}
    for (const pair of (block?.items ?? []) as AnyPair[]) {
      const key = this.keyOf(pair)
      const node = this.deref(pair.value)
      // Numbers and booleans are accepted as their text, as in config.yaml `env`.
      if (node === null || !isScalar(node) || node.value === null || typeof node.value === 'object') {
        this.fail(node ?? pair.key, `env.${key} must be a string${describe(node)}`)
      }
      env[key] = String(node.value)
    }
    return env
  }

  private readResources(owner: AnyPair, manifest: WorkerManifest): void {
    const block = this.mapping(owner, 'resources')
    const resources: NonNullable<WorkerManifest['resources']> = {}
    for (const pair of (block?.items ?? []) as AnyPair[]) {
      const key = this.keyOf(pair)
      if (key !== 'cpus' && key !== 'memory_mib') this.failKey(pair, `unknown field 'resources.${key}'${didYouMean(key, RESOURCE_KEYS)}`)
      const node = this.deref(pair.value)
      const value = node !== null && isScalar(node) ? node.value : undefined
      const limits = RESOURCE_LIMITS[key]
      if (typeof value !== 'number' || !Number.isInteger(value)) this.fail(node ?? pair.key, `resources.${key} must be an integer${describe(node)}`)
      if (value < limits.min || value > limits.max) {
        this.fail(node, `resources.${key} must be between ${limits.min} and ${limits.max} (got ${value})`)
      }
      resources[key] = value
    }
    manifest.resources = resources
  }

  private readWatch(owner: AnyPair, manifest: WorkerManifest): void {
    const node = this.deref(owner.value)
    // `watch: false` is accepted as a short form of `watch: { enabled: false }`.
    if (node !== null && isScalar(node) && typeof node.value === 'boolean') {
      manifest.watch.enabled = node.value
      return
    }
    const block = this.mapping(owner, 'watch')
    for (const pair of (block?.items ?? []) as AnyPair[]) {
      const key = this.keyOf(pair)
      if (key === 'enabled') {
        const value = this.deref(pair.value)
        if (value === null || !isScalar(value) || typeof value.value !== 'boolean') {
          this.fail(value ?? pair.key, `watch.enabled must be true or false${describe(value)}`)
        }
        manifest.watch.enabled = value.value as boolean
      } else if (key === 'ignore') {
        const list = this.deref(pair.value)
        if (list === null || (isScalar(list) && list.value === null)) continue
        if (!isSeq(list)) this.fail(list, `watch.ignore must be a list of glob patterns${describe(list)}`)
        manifest.watch.ignore = (list.items as Array<Node | null>).map((raw) => {
          const item = this.deref(raw)
          if (item === null || !isScalar(item) || typeof item.value !== 'string' || item.value === '') {
            this.fail(item ?? list, `watch.ignore entries must be non-empty glob strings${describe(item)}`)
          }
          return item.value as string
        })
      } else {
        this.failKey(pair, `unknown field 'watch.${key}'${didYouMean(key, WATCH_KEYS)}`)
      }
    }
  }

  // -- typed values: the shared reader's, with the catalogue's did-you-mean ------------------

  protected override oneOf<T extends string>(pair: AnyPair, field: string, values: readonly T[]): T {
    return super.oneOf(pair, field, values, (value) => didYouMean(value, values))
  }
}

/** Largest `tsconfig.json` read for {@link erasableSyntaxOnly}, bytes. */
const MAX_TSCONFIG_BYTES = 256 * 1024

/**
 * True when `<directory>/tsconfig.json` sets `compilerOptions.erasableSyntaxOnly: true` (TypeScript
 * 5.8+): the sources use only syntax Node's type stripping can erase (no enums, namespaces or
 * parameter properties), so Node 22.18+/23.6+ runs them as they are. A file that is missing, larger
 * than {@link MAX_TSCONFIG_BYTES}, not JSON with comments and trailing commas, or that `extends`
 * another (whose options this does not follow) gives false: tsx's loader then runs the worker.
 * @example erasableSyntaxOnly('./workers/math-worker') // true for the templates
 */
export function erasableSyntaxOnly(directory: string): boolean {
  let text: string
  try {
    const file = join(directory, 'tsconfig.json')
    if (statSync(file).size > MAX_TSCONFIG_BYTES) return false
    text = readFileSync(file, 'utf8')
  } catch {
    return false
  }
  let config: unknown
  try {
    config = JSON.parse(withoutJsonComments(text))
  } catch {
    return false
  }
  if (typeof config !== 'object' || config === null) return false
  const { compilerOptions } = config as { compilerOptions?: unknown }
  return typeof compilerOptions === 'object' && compilerOptions !== null && (compilerOptions as { erasableSyntaxOnly?: unknown }).erasableSyntaxOnly === true
}

/** JSON with line and block comments and trailing commas, as tsconfig files are, made plain JSON; strings kept as they are. */
function withoutJsonComments(text: string): string {
  let out = ''
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (c === '"') {
      let j = i + 1
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1
      out += text.slice(i, j + 1)
      i = j
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++
      out += '\n'
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2)
      i = end < 0 ? text.length : end + 1
      out += ' '
    } else out += c
  }
  return out.replace(/,(\s*[}\]])/g, '$1')
}

