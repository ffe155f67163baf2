/**
 * Option resolution for `registerWorker` (sdk.md §2, protocol.md §2): address, defaults from the
 * environment, and the announce payload — the Node side of the options; the backoff itself is the
 * client core's (`svc-protocol/client`). Pure functions, computed once per client.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { arch, hostname, platform, release } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { otelEnabled } from 'svc-helpers/observability/internal'
import { backoffDelay, DEFAULT_INVOCATION_TIMEOUT_MS, DEFAULT_RECONNECTION_CONFIG, engineAddresses, InvocationError, splitAddressList } from 'svc-protocol/client'
import { Errors } from 'svc-protocol/errors'
import { idProblem } from 'svc-protocol/ids'
import type { WorkerAnnounce } from './protocol.ts'
import type { InitOptions, ReconnectionConfig, TelemetryOptions } from './types.ts'

/** Address used when neither the argument nor `SVC_URL` names one (protocol.md §2). */
export const DEFAULT_ENGINE_URL = 'ws://127.0.0.1:49134'

export { backoffDelay, DEFAULT_INVOCATION_TIMEOUT_MS, DEFAULT_RECONNECTION_CONFIG }

// Through the CommonJS face of node:http, read when the headers are checked: an ES import of
// node:http reads every export once, and its `WebSocket` loads undici, a fifth of a worker's start.
const { validateHeaderName, validateHeaderValue } = process.getBuiltinModule('node:http')

/** The SDK's own version, sent in the announce. `../package.json` holds from both src/ and dist/. */
export const SDK_VERSION: string = (createRequire(import.meta.url)('../package.json') as { version: string }).version

type Env = Record<string, string | undefined>

/** A value of the environment, with the empty string counting as unset. */
function envValue(env: Env, name: string): string | undefined {
  const value = env[name]
  return value === undefined || value === '' ? undefined : value
}

/**
 * The engine addresses (sdk.md §2, issue 19 §3): the argument (one URL, or a list of the engines of
 * a fleet), else env `SVC_URL` (one URL, or several separated by commas: `ws://a:49134,ws://b:49134`),
 * else {@link DEFAULT_ENGINE_URL}. The first is tried first; the client rotates through the rest.
 * @throws TypeError when an entry is empty, not a URL or not a `ws:`/`wss:` URL, or the list is
 *   empty or longer than 64; the message names the entry by position and never shows its
 *   credentials (`engineAddresses` of `svc-protocol/client`).
 * @example resolveAddress(undefined, { SVC_URL: 'ws://10.0.0.1:49134, ws://10.0.0.2:49134' }) // both
 */
export function resolveAddress(address: string | readonly string[] | undefined, env: Env = process.env): readonly string[] {
  if (address !== undefined) return engineAddresses(address)
  const fromEnv = envValue(env, 'SVC_URL')
  return engineAddresses(fromEnv === undefined ? DEFAULT_ENGINE_URL : splitAddressList(fromEnv), 'SVC_URL')
}

/** Options after defaults, as the client uses them. */
export interface ResolvedOptions {
  workerName: string
  workerDescription?: string
  namespace?: string
  invocationTimeoutMs: number
  reconnection: ReconnectionConfig
  headers?: Record<string, string>
  telemetry: TelemetryOptions
  enableMetricsReporting: boolean
  /**
   * Telemetry for this client (sdk.md §12.1): `otel.enabled`, else env `OTEL_ENABLED`
   * (false/0/no/off disables), else true. When false the client records no handler spans, even
   * if another client of the process turned telemetry on.
   */
  otelEnabled: boolean
}

function assertNumber(name: string, value: unknown, min: number, max = Number.POSITIVE_INFINITY): void {
  if (typeof value !== 'number' || Number.isNaN(value) || value < min || value > max) {
    throw new TypeError(`${name} must be a number between ${min} and ${max}, got ${String(value)}`)
  }
}

/**
 * Applies the defaults of sdk.md §2.
 * @throws TypeError for a blank `namespace`, out-of-range numbers or invalid header names/values;
 *   InvocationError `INVALID_NAMESPACE` for a namespace (option or `SVC_NAMESPACE`) that is not
 *   well-formed text (protocol.md §3.5).
 */
export function resolveOptions(options: InitOptions = {}, env: Env = process.env): ResolvedOptions {
  let namespace: string | undefined
  if (options.namespace !== undefined) {
    if (typeof options.namespace !== 'string' || options.namespace.trim() === '') {
      throw new TypeError('namespace is empty: give it a name, or omit it to use `default`')
    }
    namespace = options.namespace
  } else {
    const fromEnv = envValue(env, 'SVC_NAMESPACE')
    // A whitespace-only variable is treated like an empty one rather than failing the worker.
    namespace = fromEnv !== undefined && fromEnv.trim() !== '' ? fromEnv : undefined
  }
  // The engine would refuse the announce (a void call, so silently) and place every registration in `default`.
  const problem = namespace === undefined ? undefined : idProblem(namespace)
  if (problem !== undefined) {
    const error = Errors.namespaceNotText(`namespace ${problem}`)
    throw new InvocationError({ code: error.code, message: error.message })
  }

  const invocationTimeoutMs = options.invocationTimeoutMs ?? DEFAULT_INVOCATION_TIMEOUT_MS
  assertNumber('invocationTimeoutMs', invocationTimeoutMs, 1)

  const reconnection: ReconnectionConfig = { ...DEFAULT_RECONNECTION_CONFIG }
  for (const [key, value] of Object.entries(options.reconnectionConfig ?? {})) {
    if (value !== undefined && key in reconnection) (reconnection as unknown as Record<string, number>)[key] = value
  }
  assertNumber('reconnectionConfig.initialDelayMs', reconnection.initialDelayMs, 0)
  assertNumber('reconnectionConfig.maxDelayMs', reconnection.maxDelayMs, 0)
  assertNumber('reconnectionConfig.backoffMultiplier', reconnection.backoffMultiplier, 0)
  assertNumber('reconnectionConfig.jitterFactor', reconnection.jitterFactor, 0, 1)
  assertNumber('reconnectionConfig.maxRetries', reconnection.maxRetries, -1)

  const resolved: ResolvedOptions = {
    workerName: options.workerName ?? envValue(env, 'SVC_WORKER_NAME') ?? `${hostname()}:${process.pid}`,
    invocationTimeoutMs,
    reconnection,
    telemetry: options.telemetry ?? {},
    enableMetricsReporting: options.enableMetricsReporting ?? true,
    otelEnabled: otelEnabled(options.otel?.enabled, env),
  }
  if (options.workerDescription !== undefined) resolved.workerDescription = options.workerDescription
  if (namespace !== undefined) resolved.namespace = namespace
  if (options.headers !== undefined) {
    for (const [name, value] of Object.entries(options.headers)) {
      validateHeaderName(name)
      validateHeaderValue(name, value)
    }
    resolved.headers = options.headers
  }
  return resolved
}

/** `name` of the nearest package.json at or above `dir`, else the base name of `dir`. */
function detectProjectName(dir: string): string {
  for (let current = dir; ; current = dirname(current)) {
    try {
      const pkg = JSON.parse(readFileSync(join(current, 'package.json'), 'utf8')) as { name?: unknown }
      if (typeof pkg.name === 'string' && pkg.name !== '') return pkg.name
    } catch {
      // no readable package.json here; keep walking up
    }
    if (dirname(current) === current) return basename(dir)
  }
}

function detectLanguage(): string {
  const entry = process.argv[1] ?? ''
  return /\.[mc]?ts$/.test(entry) ? 'typescript' : 'javascript'
}

/** The announce payload of sdk.md §2 / protocol.md §3.2. */
export function buildAnnounce(options: ResolvedOptions, env: Env = process.env): WorkerAnnounce {
  const announce: WorkerAnnounce = {
    runtime: 'node',
    version: SDK_VERSION,
    name: options.workerName,
    os: `${platform()} ${release()} (${arch()})`,
    pid: process.pid,
    isolation: envValue(env, 'SVC_ISOLATION') ?? null,
  }
  if (options.workerDescription !== undefined) announce.description = options.workerDescription
  if (options.namespace !== undefined) announce.namespace = options.namespace
  const t = options.telemetry
  const telemetry: NonNullable<WorkerAnnounce['telemetry']> = {
    language: t.language ?? detectLanguage(),
    project_name: t.project_name ?? detectProjectName(process.cwd()),
    framework: t.framework ?? 'svc-node',
  }
  if (t.amplitude_api_key !== undefined) telemetry.amplitude_api_key = t.amplitude_api_key
  announce.telemetry = telemetry
  return announce
}
