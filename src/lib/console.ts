/**
 * `svc console` (cli.md §4.8): start the console backend of `svc-console`, print its address,
 * optionally open a browser, and run until SIGINT/SIGTERM.
 */
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
// The console's backend (its server, svc-sdk, OpenTelemetry) loads only in runConsole: `svc` imports
// this module for the banner's console address, and starts no console in-process (issue 20).
import { checkAllowedHost, checkToken, CONSOLE_TOKEN_ENV } from 'svc-console/access'
import type { ConsoleLog, RunningConsole } from 'svc-console'
import { terminalText } from '../../runtime/index.ts'
import { CliError, ExitCode, usageError } from './errors.ts'
import { shownAddress } from './engine-addresses.ts'
import { microvmWorkers } from '../worker-admin/state-files.ts'

export interface ConsoleCommandOptions {
  port: number
  /**
   * When `port` is taken (`EADDRINUSE`), listen on a free port the system picks instead and say so
   * on stderr (the default port, 3113, when `--port` was not given); otherwise a port in use fails
   * with `PORT_IN_USE` (cli.md §4.8).
   */
  portFallback?: boolean
  host: string
  /** Further Host names to serve (`--allowed-host`, repeatable). */
  allowedHosts?: readonly string[]
  /**
   * The access token: a string from `SVC_CONSOLE_TOKEN` (never printed: whoever set it knows it),
   * undefined to draw one (printed in the address), `false` for `--no-token`.
   */
  token?: string | false
  /** Resolved engine URL (`--engine`, `SVC_URL`, config.yaml, default). */
  engineUrl: string
  /** Open a browser once listening (only when the command is interactive). */
  open: boolean
  json: boolean
  version: string
  /**
   * The project whose supervisor state files say which workers run in a microVM and with which
   * pids (`GET /api/microvms`, the Workers page's VM RSS); none when undefined.
   */
  projectRoot?: string | undefined
  stdout?: (text: string) => void
  stderr?: (text: string) => void
}

/** True for `127.0.0.0/8`, `::1` and `localhost`: hosts only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (bare === 'localhost' || bare === '::1' || bare === '0:0:0:0:0:0:0:1') return true
  return isIP(bare) === 4 && bare.startsWith('127.')
}

/**
 * The console server's log on the terminal: info on stdout (none with `json`), warnings and errors
 * on stderr. Messages quote request lines and engine errors, so they are escaped for the terminal
 * (a raw byte 0x9B in a URL arrives as U+009B, a C1 control sequence introducer).
 */
export function consoleLog(stdout: (text: string) => void, stderr: (text: string) => void, json: boolean): ConsoleLog {
  const warn = (m: string): void => stderr(`Warning: ${terminalText(m)}\n`)
  const error = (m: string): void => stderr(`Error: ${terminalText(m)}\n`)
  return json ? { info() {}, warn, error } : { info: (m) => stdout(`${terminalText(m)}\n`), warn, error }
}

/**
 * Starts the console server and prints `svc console → <address>` (or, with `json`, the
 * `{"event":"console_ready","url"}` line). The address carries the access token (`/?token=…`) when
 * the console drew it; a token from `SVC_CONSOLE_TOKEN` is not printed. Warns on stderr for a
 * non-loopback host and for `--no-token`.
 *
 * With `portFallback`, a port in use is replaced by a free one (a line on stderr names both).
 *
 * @throws {CliError} `PORT_IN_USE` exit 1 `Port 3113 is already in use; pass --port` (without
 *   `portFallback`); exit 1 for
 *   other bind failures; exit 2 for an engine URL that is not ws:// or wss://, an `--allowed-host`
 *   that is not a host name, or a `SVC_CONSOLE_TOKEN` that is not 16 to 512 of `A-Z a-z 0-9 . _ ~ -`
 */
export async function runConsole(options: ConsoleCommandOptions): Promise<RunningConsole> {
  const stdout = options.stdout ?? ((text: string) => void process.stdout.write(text))
  const stderr = options.stderr ?? ((text: string) => void process.stderr.write(text))
  // The address is named without its credentials (user, password, query: shownAddress).
  let engine: URL
  try {
    engine = new URL(options.engineUrl)
  } catch {
    throw usageError('Invalid engine URL: not a URL', 'pass --engine ws://127.0.0.1:49134')
  }
  if (engine.protocol !== 'ws:' && engine.protocol !== 'wss:') {
    throw usageError(`Invalid engine URL '${shownAddress(options.engineUrl)}': expected ws:// or wss://`, 'pass --engine ws://127.0.0.1:49134')
  }
  const allowedHosts = options.allowedHosts ?? []
  for (const name of allowedHosts) {
    try {
      checkAllowedHost(name)
    } catch (err) {
      throw usageError((err as Error).message, 'pass a host name such as --allowed-host devbox.local')
    }
  }
  if (typeof options.token === 'string') {
    try {
      checkToken(options.token)
    } catch (err) {
      throw usageError(`${CONSOLE_TOKEN_ENV}: ${(err as Error).message}`, `unset ${CONSOLE_TOKEN_ENV} to get a random token`)
    }
  }
  if (options.token === false) {
    stderr(`Warning: the console has no access token (--no-token): every program and user that can reach its port can invoke functions and read data\n`)
  }
  if (!isLoopbackHost(options.host)) {
    stderr(
      options.token === false
        ? `Warning: the console listens on ${options.host} and has no authentication; anyone who can reach this port can invoke functions and read data\n`
        : `Warning: the console listens on ${options.host}: anyone who can reach this port and has the access token can invoke functions and read data; plain HTTP does not protect the token on the network\n`,
    )
  }
  const log = consoleLog(stdout, stderr, options.json === true)
  const { ConsoleListenError, startConsole } = await import('svc-console')
  const start = (port: number) =>
    startConsole({
      port,
      host: options.host,
      engineUrl: options.engineUrl,
      log,
      version: options.version,
      allowedHosts,
      ...(options.token === undefined ? {} : { token: options.token }),
      ...(options.projectRoot === undefined ? {} : { microvms: () => microvmWorkers(options.projectRoot!) }),
    })
  let running: RunningConsole
  try {
    try {
      running = await start(options.port)
    } catch (err) {
      // Another console (or anything) holds the default port: a second project's console still starts.
      if (!(options.portFallback === true && options.port !== 0 && err instanceof ConsoleListenError && err.code === 'EADDRINUSE')) throw err
      running = await start(0)
      stderr(`Port ${options.port} is already in use; the console listens on port ${new URL(running.url).port} instead (pass --port to choose one)\n`)
    }
  } catch (err) {
    if (err instanceof ConsoleListenError) {
      throw new CliError({ code: err.code === 'EADDRINUSE' ? 'PORT_IN_USE' : 'LISTEN_FAILED', message: err.message, exitCode: ExitCode.Failure, cause: err })
    }
    throw err
  }
  // A token the console drew is shown once here; one from the environment is never printed.
  const drawn = options.token === undefined
  if (options.json) stdout(`${JSON.stringify({ event: 'console_ready', url: running.url, ...(drawn ? { open_url: running.openUrl, token: running.token } : {}) })}\n`)
  else stdout(`svc console → ${drawn ? running.openUrl : running.url}${typeof options.token === 'string' ? ` (access token from ${CONSOLE_TOKEN_ENV})` : ''}\n  engine  ${shownAddress(options.engineUrl)}\n`)
  if (options.open) await openBrowser(drawn ? running.openUrl : running.url)
  return running
}

/**
 * Opens `url` in the default browser (`open` on macOS, `cmd /c start` on Windows, else
 * `xdg-open`); a missing opener or a failure is ignored: the address is printed either way.
 */
export async function openBrowser(url: string): Promise<void> {
  const [command, args] =
    process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '""', url]] : ['xdg-open', [url]]
  try {
    const { execa } = await import('execa')
    const child = execa(command, args as string[], { detached: true, stdio: 'ignore', reject: false })
    child.catch(() => {})
    child.unref()
  } catch {
    // no browser opener on this machine
  }
}

/**
 * Waits for SIGINT or SIGTERM, closes the console and resolves with exit code 0 (cli.md §1.1); a
 * second SIGINT exits 130 at once. `running` may still be starting: the handlers are in place
 * before it prints its address, so a signal sent as soon as the address appears stops it cleanly
 * (before, such a SIGTERM killed the process by signal). Rejects with `running`'s error if it
 * fails to start (the handlers removed).
 */
export function untilSignal(
  running: RunningConsole | Promise<RunningConsole>,
  options: { json: boolean; stderr?: (text: string) => void; exit?: (code: number) => never },
): Promise<number> {
  const stderr = options.stderr ?? ((text: string) => void process.stderr.write(text))
  const exit = options.exit ?? ((code: number) => process.exit(code))
  const started = Promise.resolve(running)
  return new Promise((resolve, reject) => {
    let requested = false
    const remove = () => {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
    }
    const onSignal = (signal: NodeJS.Signals) => {
      if (requested) {
        if (signal === 'SIGINT') exit(ExitCode.Interrupted)
        return
      }
      requested = true
      if (options.json) process.stdout.write(`${JSON.stringify({ event: 'shutdown', signal })}\n`)
      else stderr(`\nReceived ${signal}; stopping the console\n`)
      const deadline = setTimeout(() => exit(ExitCode.Success), 5000)
      deadline.unref()
      started
        .then((console) => console.close())
        .catch(() => {})
        .finally(() => {
          clearTimeout(deadline)
          remove()
          resolve(ExitCode.Success)
        })
    }
    process.on('SIGINT', onSignal)
    process.on('SIGTERM', onSignal)
    started.catch((err: unknown) => {
      if (requested) return
      remove()
      reject(err)
    })
  })
}

/** `bin/run.js` of this svc installation (the nearest package.json named `svc` above this module). */
export function svcBin(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown }
      if (pkg.name === 'svc') return join(dir, 'bin', 'run.js')
    } catch {
      // no package.json here; keep walking up
    }
    const parent = dirname(dir)
    if (parent === dir) throw new Error('cannot find the svc package that holds this module')
    dir = parent
  }
}

/** Quotes one argument for the platform shell the supervisor uses (`sh -c`, `cmd.exe /c`). */
function shellQuote(arg: string): string {
  if (process.platform === 'win32') return `"${arg.replace(/"/g, '""')}"`
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`
}

/** The `config` block of a `console` entry (config.yaml or a `builtin://console` container). */
interface ConsoleEntryConfig {
  port?: unknown
  host?: unknown
  allowed_hosts?: unknown
  token?: unknown
}

/**
 * The start command of the config.yaml `console` entry (cli.md §4.2, §4.3): this Node running
 * `svc console --no-open --engine <url>`, with `--port`/`--host`, one `--allowed-host` per
 * `allowed_hosts` name and `--no-token` for `token: false` from the entry's `config`. The token
 * itself goes through the environment (`SVC_CONSOLE_TOKEN`), never the command line, which every
 * local user can read.
 *
 * @throws {CliError} exit 2 for a `port` that is not an integer 0–65535, a blank `host`, an
 *   `allowed_hosts` that is not a list of host names, or a `token` that is not a boolean
 */
export function consoleStartCommand(engineUrl: string, config: unknown): string {
  const block = (typeof config === 'object' && config !== null ? config : {}) as ConsoleEntryConfig
  const args = [process.execPath, svcBin(), 'console', '--no-open', '--engine', engineUrl]
  if (block.port !== undefined) {
    const port = typeof block.port === 'string' ? Number(block.port) : block.port
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535) {
      throw usageError(`config.yaml: console port must be an integer from 0 to 65535, got ${JSON.stringify(block.port)}`)
    }
    args.push('--port', String(port))
  }
  if (block.host !== undefined) {
    if (typeof block.host !== 'string' || block.host.trim() === '') throw usageError('config.yaml: console host must be a non-empty string')
    args.push('--host', block.host)
  }
  if (block.allowed_hosts !== undefined) {
    if (!Array.isArray(block.allowed_hosts)) throw usageError('config.yaml: console allowed_hosts must be a list of host names')
    for (const name of block.allowed_hosts) {
      try {
        if (typeof name !== 'string') throw new TypeError(`${JSON.stringify(name)} is not a host name`)
        checkAllowedHost(name)
      } catch (err) {
        throw usageError(`config.yaml: console allowed_hosts: ${(err as Error).message.replace(/^--allowed-host /, '')}`)
      }
      args.push('--allowed-host', name)
    }
  }
  if (block.token !== undefined) {
    const token = block.token === 'false' ? false : block.token === 'true' ? true : block.token
    if (typeof token !== 'boolean') throw usageError(`config.yaml: console token must be true or false, got ${JSON.stringify(block.token)}`)
    if (!token) args.push('--no-token')
  }
  return args.map(shellQuote).join(' ')
}

/** True when the `console` entry's `config` turns the access token off (`token: false`). */
export function consoleTokenOff(config: unknown): boolean {
  const token = (typeof config === 'object' && config !== null ? (config as ConsoleEntryConfig).token : undefined)
  return token === false || token === 'false'
}

/**
 * The address the `console` entry of config.yaml serves, for the ready banner (cli.md §3):
 * `http://<host>:<port>` from the entry's `config` (defaults 127.0.0.1 and 3113; a wildcard host
 * shows as 127.0.0.1, an IPv6 host in brackets), then `/?token=<token>` when svc gave the console
 * its access token. Port 0 is shown as configured: the console picks its port and prints it itself.
 *
 * @example consoleUrl({ port: 4000 }) // 'http://127.0.0.1:4000'
 * @example consoleUrl({}, 'kq3R0yFf2n9wX1bT5cLh7uZsP4eVaMdG') // 'http://127.0.0.1:3113/?token=kq3R0yFf2n9wX1bT5cLh7uZsP4eVaMdG'
 */
export function consoleUrl(config: unknown, token?: string): string {
  const block = (typeof config === 'object' && config !== null ? config : {}) as ConsoleEntryConfig
  const port = block.port === undefined ? 3113 : String(block.port)
  let host = typeof block.host === 'string' && block.host.trim() !== '' ? block.host.trim() : '127.0.0.1'
  if (host === '0.0.0.0' || host === '::') host = '127.0.0.1'
  if (isIP(host) === 6) host = `[${host}]`
  return `http://${host}:${port}${token === undefined ? '' : `/?token=${token}`}`
}
