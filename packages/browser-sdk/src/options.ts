/**
 * Option resolution of the browser's `registerWorker` (sdk.md §13): no environment fallbacks, the
 * address is required, `headers` is ignored; and the announce a page sends (`runtime: "browser"`,
 * `os` from the user agent, no `pid`). Pure functions, computed once per client.
 */
import { DEFAULT_INVOCATION_TIMEOUT_MS, DEFAULT_RECONNECTION_CONFIG, engineAddresses, InvocationError, type ReconnectionConfig, type WorkerAnnounce } from 'svc-protocol/client'
import { Errors } from 'svc-protocol/errors'
import { idProblem } from 'svc-protocol/ids'
import type { InitOptions } from './types.ts'
import { SDK_VERSION } from './version.ts'

/** Options after defaults, as the client uses them. */
export interface ResolvedOptions {
  workerName: string
  workerDescription?: string
  namespace?: string
  invocationTimeoutMs: number
  reconnection: ReconnectionConfig
  /** True when `headers` was given: it is ignored, and the facade says so once. */
  headersIgnored: boolean
}

/**
 * The engine addresses, as given: required, one `ws:`/`wss:` URL or a list of them, the engines of
 * a fleet tried in order and in rotation (issue 19 §3). Query parameters are how a browser passes
 * credentials (protocol.md §13.2); errors never show them.
 * @throws TypeError when `address` is missing, an empty list, or an entry is empty or not a
 *   `ws:`/`wss:` URL (`engineAddresses` of `svc-protocol/client`).
 */
export function resolveAddress(address: unknown): readonly string[] {
  if (typeof address !== 'string' && !Array.isArray(address)) throw new TypeError('engine address is required in a browser: registerWorker("wss://…/?token=…")')
  return engineAddresses(address)
}

function assertNumber(name: string, value: unknown, min: number, max = Number.POSITIVE_INFINITY): void {
  if (typeof value !== 'number' || Number.isNaN(value) || value < min || value > max) {
    throw new TypeError(`${name} must be a number between ${min} and ${max}, got ${String(value)}`)
  }
}

/** `browser:` and 8 random hex digits (sdk.md §13), from the platform's `crypto.getRandomValues`. */
function defaultWorkerName(): string {
  const bytes = new Uint8Array(4)
  globalThis.crypto.getRandomValues(bytes)
  let hex = ''
  for (const b of bytes) hex += (b + 0x100).toString(16).slice(1)
  return `browser:${hex}`
}

/**
 * Applies the defaults of sdk.md §13 (`workerName` `browser:<8 hex>`, `invocationTimeoutMs`
 * 30000, the reconnection defaults of §2).
 * @throws TypeError for a blank or non-string `namespace` or `workerName`, and out-of-range numbers;
 *   InvocationError `INVALID_NAMESPACE` for a namespace that is not well-formed text
 *   (protocol.md §3.5), which the engine would refuse.
 */
export function resolveOptions(options: InitOptions = {}): ResolvedOptions {
  if (options === null || typeof options !== 'object') throw new TypeError('options must be an object')
  let namespace: string | undefined
  if (options.namespace !== undefined) {
    if (typeof options.namespace !== 'string' || options.namespace.trim() === '') {
      throw new TypeError('namespace is empty: give it a name, or omit it to use `default`')
    }
    const problem = idProblem(options.namespace)
    if (problem !== undefined) {
      const error = Errors.namespaceNotText(`namespace ${problem}`)
      throw new InvocationError({ code: error.code, message: error.message })
    }
    namespace = options.namespace
  }
  if (options.workerName !== undefined && (typeof options.workerName !== 'string' || options.workerName.trim() === '')) {
    throw new TypeError('workerName must be a non-blank string')
  }

  const invocationTimeoutMs = options.invocationTimeoutMs ?? DEFAULT_INVOCATION_TIMEOUT_MS
  assertNumber('invocationTimeoutMs', invocationTimeoutMs, 1)

  const reconnection: ReconnectionConfig = { ...DEFAULT_RECONNECTION_CONFIG }
  const given = options.reconnectionConfig ?? {}
  if (given === null || typeof given !== 'object') throw new TypeError('reconnectionConfig must be an object')
  for (const key of Object.keys(reconnection) as Array<keyof ReconnectionConfig>) {
    const value = given[key]
    if (value !== undefined) reconnection[key] = value
  }
  assertNumber('reconnectionConfig.initialDelayMs', reconnection.initialDelayMs, 0)
  assertNumber('reconnectionConfig.maxDelayMs', reconnection.maxDelayMs, 0)
  assertNumber('reconnectionConfig.backoffMultiplier', reconnection.backoffMultiplier, 0)
  assertNumber('reconnectionConfig.jitterFactor', reconnection.jitterFactor, 0, 1)
  assertNumber('reconnectionConfig.maxRetries', reconnection.maxRetries, -1)

  const resolved: ResolvedOptions = {
    workerName: options.workerName ?? defaultWorkerName(),
    invocationTimeoutMs,
    reconnection,
    headersIgnored: options.headers !== undefined,
  }
  if (options.workerDescription !== undefined) resolved.workerDescription = String(options.workerDescription)
  if (namespace !== undefined) resolved.namespace = namespace
  return resolved
}

/** The announce of sdk.md §13 / protocol.md §3.2: `runtime: "browser"`, `os` from the user agent, no `pid`. */
export function buildAnnounce(options: ResolvedOptions): WorkerAnnounce {
  const userAgent = (globalThis as { navigator?: { userAgent?: unknown } }).navigator?.userAgent
  const announce: WorkerAnnounce = {
    runtime: 'browser',
    version: SDK_VERSION,
    name: options.workerName,
    os: typeof userAgent === 'string' && userAgent !== '' ? userAgent : 'unknown',
    isolation: null,
    telemetry: { language: 'javascript', framework: 'svc-browser' },
  }
  if (options.workerDescription !== undefined) announce.description = options.workerDescription
  if (options.namespace !== undefined) announce.namespace = options.namespace
  return announce
}
