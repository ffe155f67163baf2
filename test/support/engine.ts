/**
 * Starts a real engine for tests: every port 0, a temporary data directory, the built-in workers
 * of `createBuiltins()` unless `builtins` is given.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { LegLimits } from '../../runtime/engine/callees.ts'
import { Engine } from '../../runtime/engine/engine.ts'
import { silentLogger } from '../../runtime/engine/logger.ts'
import { createBuiltins } from '../../runtime/workers/index.ts'
import type { Clock } from '../../runtime/workers/shared/clock.ts'
import { LISTENER_DEFAULTS, type BuiltinWorker, type EngineConfig, type ListenerConfig, type Logger } from '../../runtime/engine/types.ts'

export interface TestEngineOptions {
  /** Reuse a data directory (restart tests); default: a new temporary one, removed by stop(). */
  dataDir?: string
  builtins?: BuiltinWorker[]
  /**
   * Settings seeds by built-in name, e.g. `{ 'svc-http': { max_body_bytes: 10 } }`. svc-http and
   * svc-stream always get port 0 unless a seed names a port, also when `config.builtins` replaces
   * the entries: a test never binds a default port (3111, 3112) another svc may hold.
   */
  settings?: Record<string, unknown>
  listener?: Partial<ListenerConfig>
  /** Further listeners after the first (port 0 unless given), e.g. one with `rbac`. */
  extraListeners?: Partial<ListenerConfig>[]
  config?: Partial<Omit<EngineConfig, 'listeners' | 'data_dir'>>
  log?: Logger
  /** Clock of the built-ins that keep timers (createBuiltins' `clock`) and of the engine's channel sweep; default the real one. */
  clock?: Clock
  /** Bounds on open invocations (EngineOptions.limits). */
  limits?: Partial<LegLimits>
}

export interface TestEngine {
  engine: Engine
  /** Worker URL, e.g. ws://127.0.0.1:40123 */
  url: string
  /** Every listener's URL, in configuration order (`urls[0] === url`). */
  urls: string[]
  /** HTTP worker base URL, e.g. http://127.0.0.1:40124 (empty when svc-http is not running). */
  httpUrl: string
  /** Stream client WebSocket URL, e.g. ws://127.0.0.1:40125 (empty when svc-stream is not running). */
  streamUrl: string
  dataDir: string
  stop(): Promise<void>
}

export async function startTestEngine(options: TestEngineOptions = {}): Promise<TestEngine> {
  const ownDir = options.dataDir === undefined
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'svc-test-')))
  const settings: Record<string, unknown> = { ...(options.settings ?? {}) }
  settings['svc-http'] = { port: 0, ...((settings['svc-http'] as object | undefined) ?? {}) }
  settings['svc-stream'] = { port: 0, ...((settings['svc-stream'] as object | undefined) ?? {}) }
  const builtins: EngineConfig['builtins'] = {
    ...Object.fromEntries(Object.entries(settings).map(([name, config]) => [name, { enabled: true, config }])),
    ...options.config?.builtins,
  }
  for (const name of ['svc-http', 'svc-stream']) {
    const entry = builtins[name]
    builtins[name] = { ...entry, enabled: entry?.enabled ?? true, config: { port: 0, ...(entry?.config as object | undefined) } }
  }
  const config: EngineConfig = {
    listeners: [{ ...LISTENER_DEFAULTS, port: 0, ...options.listener }, ...(options.extraListeners ?? []).map((l) => ({ ...LISTENER_DEFAULTS, port: 0, ...l }))],
    registration_namespace_grace_ms: 250,
    internal_invocation_timeout_ms: 30000,
    data_dir: dataDir,
    local_workers: [],
    ...options.config,
    builtins,
  }
  const engineOptions: ConstructorParameters<typeof Engine>[1] = { log: options.log ?? silentLogger, builtins: options.builtins ?? createBuiltins(options.clock ? { ...config, clock: options.clock } : config) }
  if (options.limits) engineOptions.limits = options.limits
  if (options.clock) engineOptions.clock = options.clock
  const engine = new Engine(config, engineOptions)
  await engine.start()
  return {
    engine,
    url: engine.workerUrls[0]!,
    urls: engine.workerUrls,
    httpUrl: engine.listenUrls('svc-http')[0] ?? '',
    streamUrl: engine.listenUrls('svc-stream')[0] ?? '',
    dataDir,
    async stop() {
      await engine.stop()
      if (ownDir) await rm(dataDir, { recursive: true, force: true })
    },
  }
}
