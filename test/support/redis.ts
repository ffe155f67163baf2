/**
 * A private `redis-server` for tests: a free loopback port, a temporary directory, no persistence,
 * killed when the test process ends. Start one per test file.
 *
 * Fails (never skips) when `redis-server` is missing, saying how to install it.
 */
import { spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnUntilReady, stopProcess } from './server-process.ts'

export interface TestRedis {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string
  readonly port: number
  /** Stops the server (SIGTERM, waits for the exit); `start()` brings it back on the same port. */
  stop(): Promise<void>
  /** Starts the server again after `stop()`, empty, on the same port. */
  start(): Promise<void>
  /** Freezes the server (SIGSTOP): connections stay open but nothing is answered, as in a network partition. */
  pause(): void
  /** Lets a paused server go on (SIGCONT). */
  resume(): void
  /** Stops the server for good and removes its directory. */
  close(): Promise<void>
}

const INSTALL_HINT = 'redis-server is not installed; the redis tests need it: apt-get install -y redis-server'

/** A port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/**
 * Starts `redis-server` on a free port.
 * @throws Error with the install hint when the binary is missing, or with the server's output when
 *   it does not come up within 10 s.
 */
export async function startTestRedis(): Promise<TestRedis> {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' })
  if (probe.error) throw new Error(INSTALL_HINT, { cause: probe.error })
  const dir = mkdtempSync(join(tmpdir(), 'svc-redis-'))
  let port = await freePort()
  let child: ChildProcess | null = null
  const killOnExit = () => child?.kill('SIGKILL')
  process.once('exit', killOnExit)

  const launch = async (): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      try {
        child = await spawnRedis(port, dir)
        return
      } catch (error) {
        // Another process may have taken the port between probing and binding it.
        if (attempt >= 3 || !/Address already in use/.test(String((error as Error).message))) throw error
        port = await freePort()
      }
    }
  }
  await launch()

  const stop = async (): Promise<void> => {
    const running = child
    child = null
    await stopProcess(running)
  }

  return {
    get url() {
      return `redis://127.0.0.1:${port}`
    },
    get port() {
      return port
    },
    stop,
    async start() {
      if (child) return
      child = await spawnRedis(port, dir)
    },
    pause() {
      child?.kill('SIGSTOP')
    },
    resume() {
      child?.kill('SIGCONT')
    },
    async close() {
      child?.kill('SIGCONT')
      await stop()
      process.off('exit', killOnExit)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

function spawnRedis(port: number, dir: string): Promise<ChildProcess> {
  return spawnUntilReady(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
    'Ready to accept connections',
  )
}
