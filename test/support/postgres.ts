/**
 * A private PostgreSQL server for tests: `initdb` into a temporary directory, `postgres` on a free
 * loopback port with trust authentication and no fsync, stopped by `close()` (and killed when the
 * test process ends). Start one per test file.
 *
 * PostgreSQL refuses to run as root: when the tests run as root, the server runs as the `postgres`
 * system user (created by the Debian package) in a directory owned by it.
 *
 * Fails (never skips) when the binaries are missing, saying how to install them.
 */
import { spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './redis.ts'
import { runSetup, spawnServer, stopServer } from './server.ts'

export interface TestPostgres {
  /** `postgres://svc@127.0.0.1:<port>/postgres` (user `svc`, no password). */
  readonly url: string
  readonly port: number
  /** Stops the server and removes its directory. */
  close(): Promise<void>
}

const INSTALL_HINT = 'PostgreSQL is not installed; the database tests need it: apt-get install -y postgresql'

/** The newest `/usr/lib/postgresql/<version>/bin`, or the directory of `initdb` on PATH. */
function postgresBin(): string {
  const root = '/usr/lib/postgresql'
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
      .sort((a, b) => Number(b) - Number(a))
    if (versions[0] !== undefined) return join(root, versions[0], 'bin')
  }
  const probe = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' })
  const found = probe.stdout.trim()
  if (probe.status === 0 && found !== '') return join(found, '..')
  throw new Error(INSTALL_HINT)
}

/** uid and gid of the `postgres` user when running as root, else undefined (run as ourselves). */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' })
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' })
  if (uid.status !== 0 || gid.status !== 0) throw new Error(`PostgreSQL refuses to run as root and there is no postgres user; ${INSTALL_HINT}`)
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) }
}

/**
 * Starts PostgreSQL on a free port (about a second).
 * @throws Error with the install hint when the binaries are missing, or with the server's output
 *   when it does not come up.
 */
export async function startTestPostgres(): Promise<TestPostgres> {
  const bin = postgresBin()
  const user = serverUser()
  const dir = mkdtempSync(join(tmpdir(), 'svc-postgres-'))
  if (user) chownSync(dir, user.uid, user.gid)
  const options: SpawnOptions = user ? { uid: user.uid, gid: user.gid, cwd: dir } : { cwd: dir }
  const data = join(dir, 'data')
  await runSetup('initdb', join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'svc', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync'], options)

  let child: ChildProcess | null = null
  const killOnExit = () => child?.kill('SIGKILL')
  process.once('exit', killOnExit)
  let port = 0
  for (let attempt = 0; child === null; attempt++) {
    port = await freePort()
    try {
      child = await spawnServer({
        name: 'postgres',
        command: join(bin, 'postgres'),
        args: ['-D', data, '-p', String(port), '-h', '127.0.0.1', '-k', dir, '-F', '-c', 'full_page_writes=off', '-c', 'synchronous_commit=off', '-c', 'max_connections=200'],
        ready: /database system is ready to accept connections/,
        options,
      })
    } catch (error) {
      // Another process may have taken the port between probing and binding it.
      if (attempt >= 3 || !/already in use/.test(String((error as Error).message))) {
        rmSync(dir, { recursive: true, force: true })
        throw error
      }
    }
  }
  return {
    url: `postgres://svc@127.0.0.1:${port}/postgres`,
    port,
    async close() {
      await stopServer(child)
      process.off('exit', killOnExit)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
