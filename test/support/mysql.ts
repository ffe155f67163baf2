/**
 * A private MariaDB (MySQL) server for tests: `mariadb-install-db` into a temporary directory,
 * `mariadbd --no-defaults` on a free loopback port, user `root` without a password over TCP,
 * database `svc_test`; stopped by `close()` (and killed when the test process ends). Start one per
 * test file.
 *
 * Fails (never skips) when the binaries are missing, saying how to install them.
 */
import { spawnSync, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './redis.ts'
import { runSetup, spawnServer, stopServer } from './server.ts'

export interface TestMysql {
  /** `mysql://root@127.0.0.1:<port>/svc_test` */
  readonly url: string
  readonly port: number
  /** Stops the server and removes its directory. */
  close(): Promise<void>
}

const INSTALL_HINT = 'MariaDB is not installed; the database tests need it: apt-get install -y mariadb-server'

function which(names: string[]): string {
  for (const name of names) {
    const probe = spawnSync('sh', ['-c', `command -v ${name} || ls /usr/sbin/${name} 2>/dev/null`], { encoding: 'utf8' })
    const found = probe.stdout.trim().split('\n')[0]
    if (found) return found
  }
  throw new Error(INSTALL_HINT)
}

/**
 * Starts MariaDB on a free port (about a second) and creates the database `svc_test`.
 * @throws Error with the install hint when the binaries are missing, or with the server's output
 *   when it does not come up.
 */
export async function startTestMysql(): Promise<TestMysql> {
  const server = which(['mariadbd', 'mysqld'])
  const install = which(['mariadb-install-db', 'mysql_install_db'])
  const user = process.getuid?.() === 0 ? 'root' : (process.env.USER ?? 'root')
  const dir = mkdtempSync(join(tmpdir(), 'svc-mysql-'))
  const data = join(dir, 'data')
  // Its own temporary directory: two servers set up at once (another test run, another project's
  // tests) must not meet in /tmp (`Could not remove temporary table '/tmp/#sql-temptable-…'`).
  const temporary = join(dir, 'tmp')
  mkdirSync(temporary)
  try {
    await runSetup('mariadb-install-db', install, ['--no-defaults', `--datadir=${data}`, `--user=${user}`, `--tmpdir=${temporary}`, '--auth-root-authentication-method=normal', '--skip-test-db'])
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }

  let child: ChildProcess | null = null
  const killOnExit = () => child?.kill('SIGKILL')
  process.once('exit', killOnExit)
  let port = 0
  for (let attempt = 0; child === null; attempt++) {
    port = await freePort()
    try {
      child = await spawnServer({
        name: 'mariadbd',
        command: server,
        args: [
          '--no-defaults', `--datadir=${data}`, `--tmpdir=${temporary}`, `--socket=${join(dir, 'mysqld.sock')}`, `--pid-file=${join(dir, 'mysqld.pid')}`,
          `--port=${port}`, '--bind-address=127.0.0.1', `--user=${user}`, '--skip-log-bin', '--innodb-flush-log-at-trx-commit=0',
          '--innodb-buffer-pool-size=32M', '--max-connections=200',
          '--character-set-server=utf8mb4', '--collation-server=utf8mb4_unicode_ci',
        ],
        ready: /ready for connections/,
      })
    } catch (error) {
      if (attempt >= 3 || !/already in use|Can't start server/.test(String((error as Error).message))) {
        rmSync(dir, { recursive: true, force: true })
        throw error
      }
    }
  }
  const client = which(['mariadb', 'mysql'])
  await runSetup('create database', client, ['--no-defaults', '-h', '127.0.0.1', '-P', String(port), '-u', 'root', '-e', 'CREATE DATABASE svc_test'])
  return {
    url: `mysql://root@127.0.0.1:${port}/svc_test`,
    port,
    async close() {
      await stopServer(child)
      process.off('exit', killOnExit)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
