/**
 * What `svc` (src/lib/start.ts, config.yaml entries) and `svc compose` (src/compose/runner.ts,
 * containers) hand the orchestrator alike: the console as a supervised process (cli.md §4.3
 * `console` entry, §4.7 `builtin://console`), and the registration check of a worker by the
 * connections the engine lists (cli.md §5.3).
 */
import { mkdirSync } from 'node:fs'
import { CONSOLE_TOKEN_ENV } from 'svc-console/access'
import { consoleStartCommand } from '../lib/console.ts'
import type { RegistrationProbe, WorkerLaunch, WorkerSpec } from './types.ts'

/** The name the console announces; it counts as registered once a connection of that name is there. */
export const CONSOLE_WORKER_NAME = 'svc-console'

/** What {@link consoleWorkerSpec} needs. */
export interface ConsoleLaunch {
  /** Entry or container name (`console`, or the compose key). */
  name: string
  /** Where it runs (`.svc/console/`, `.svc/compose/<ns>/console/`); created if missing. */
  directory: string
  engineUrl: string
  projectRoot: string
  envBase: WorkerSpec['envBase']
  /** The entry's or container's `config` (port, host, allowed_hosts, token). */
  config: unknown
  /** The access token, passed in `SVC_CONSOLE_TOKEN`; undefined with `token: false`. */
  token: string | undefined
  logFile?: string
  stateFile?: string
}

/**
 * The supervised console (cli.md §4.3, §4.7): `svc console --no-open --engine <url>` with the
 * entry's flags ({@link consoleStartCommand}) run from `directory`, nothing installed or watched,
 * namespace `default`; its token in the environment, never on the command line other users can read.
 * It counts as registered once `svc-console` connected in `default` since it started (by time: the
 * launcher may run the console under another Node, so its pid is not the one svc started), and it
 * is never started beside itself (a second console would find its port taken).
 *
 * @throws {CliError} exit 2 for a `config` that `consoleStartCommand` refuses
 */
export function consoleWorkerSpec(launch: ConsoleLaunch): WorkerLaunch {
  const startCommand = consoleStartCommand(launch.engineUrl, launch.config)
  mkdirSync(launch.directory, { recursive: true })
  const spec: WorkerLaunch = {
    name: launch.name,
    directory: launch.directory,
    namespace: 'default',
    projectRoot: launch.projectRoot,
    envBase: launch.envBase,
    env: launch.token === undefined ? {} : { [CONSOLE_TOKEN_ENV]: launch.token },
    watch: false,
    noInstall: true,
    startCommand,
    registersAs: { name: CONSOLE_WORKER_NAME, namespace: 'default', byPid: false },
    overlap: false,
  }
  if (launch.logFile !== undefined) spec.logFile = launch.logFile
  if (launch.stateFile !== undefined) spec.stateFile = launch.stateFile
  return spec
}

/** A connection as the engine lists it, in-process (`Session`) or over `engine::workers::list`. */
export interface ListedConnection {
  /** The worker (connection) id, when listed over `engine::workers::list`. */
  id?: string | undefined
  name: string | null
  namespace: string
  /** When it connected, ms since the epoch. */
  connectedAtMs: number
  /** The worker's own pid, from its announce, when known. */
  pid?: number | undefined
}

/**
 * True when one of `connections` is `name` in `namespace` and belongs to the process `probe`
 * describes: it connected since that process started (an older one is the previous process, not yet
 * gone), or it announced that process's pid (cli.md §5.3).
 */
export function connectedSince(connections: Iterable<ListedConnection>, name: string, namespace: string, probe: RegistrationProbe): boolean {
  for (const c of connections) {
    if (c.name !== name || c.namespace !== namespace) continue
    if (c.connectedAtMs >= probe.startedAtMs || (probe.pid !== undefined && c.pid === probe.pid)) return true
  }
  return false
}
