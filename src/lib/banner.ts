/**
 * The ready banner of `svc start` and its `--json` twin, the `engine_ready` event (cli.md §3 step 6).
 */

/** What the engine reports once it is ready. */
export interface ReadyInfo {
  version: string
  /** Milliseconds from process start to ready. */
  readyMs: number
  /** One WebSocket URL per listener, actual ports. */
  engineUrls: string[]
  /** `listen_urls` of svc-http (empty when it is disabled or not built in yet). */
  httpUrls: string[]
  /** `listen_urls` of svc-stream. */
  streamUrls: string[]
  /**
   * Local worker entries of config.yaml and their state when the banner is printed: a supervisor
   * state (`running`, `starting`, `installing`, `failed`, …), `disabled` (`enabled: false`) or
   * `skipped` (`--no-workers`).
   */
  workers: Array<{ name: string; state: string }>
  /**
   * Address of the `console` entry of config.yaml when it is launched (cli.md §3), with the access
   * token svc gave it (`/?token=…`) unless the entry turns the token off; else undefined.
   */
  consoleUrl?: string | undefined
  /**
   * In a fleet (`fleet` in config.yaml, issue 19): its name, this engine's name, the engines heard
   * from so far (this one included) and whether NATS is reachable.
   */
  fleet?: { name: string; engine: string; engines: number; status: 'healthy' | 'degraded' } | undefined
  /** Absolute path of the config file, undefined when running on built-in defaults. */
  configFile: string | undefined
  dataDir: string
}

const LABEL_WIDTH = 10

function line(label: string, value: string): string {
  return `  ${label.padEnd(LABEL_WIDTH)}${value}\n`
}

/**
 * The human banner:
 * ```
 * svc 0.1.0 ready in 420 ms
 *   engine    ws://127.0.0.1:49134
 *   http      http://127.0.0.1:3111
 *   console   svc console  → http://127.0.0.1:3113
 *   workers   math-worker running · caller-worker installing · old-worker disabled
 *   fleet     shop as eu-1 · 3 engines
 * ```
 */
export function formatBanner(info: ReadyInfo): string {
  let text = `svc ${info.version} ready in ${info.readyMs} ms\n`
  for (const url of info.engineUrls) text += line('engine', url)
  for (const url of info.httpUrls) text += line('http', url)
  for (const url of info.streamUrls) text += line('streams', url)
  if (info.consoleUrl !== undefined) text += line('console', `svc console  → ${info.consoleUrl}`)
  if (info.workers.length > 0) text += line('workers', info.workers.map((w) => `${w.name} ${w.state}`).join(' · '))
  if (info.fleet !== undefined) {
    const { name, engine, engines, status } = info.fleet
    text += line('fleet', `${name} as ${engine} · ${status === 'healthy' ? `${engines} engine${engines === 1 ? '' : 's'}` : 'NATS unreachable, serving alone until it is'}`)
  }
  return text
}

/**
 * The `engine_ready` event (one JSON line); `engine_url`, `http_url`, `stream_url` are the first of
 * each, or null; `console_url` (with its token) only when svc launches the console entry.
 */
export function readyEvent(info: ReadyInfo): Record<string, unknown> {
  return {
    event: 'engine_ready',
    version: info.version,
    ready_ms: info.readyMs,
    engine_url: info.engineUrls[0] ?? null,
    http_url: info.httpUrls[0] ?? null,
    stream_url: info.streamUrls[0] ?? null,
    engine_urls: info.engineUrls,
    http_urls: info.httpUrls,
    stream_urls: info.streamUrls,
    ...(info.consoleUrl === undefined ? {} : { console_url: info.consoleUrl }),
    workers: info.workers,
    ...(info.fleet === undefined ? {} : { fleet: info.fleet }),
    config_file: info.configFile ?? null,
    data_dir: info.dataDir,
  }
}
