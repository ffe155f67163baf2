/**
 * A private `nats-server` for tests: a free loopback port, a temporary directory, killed when the
 * test process ends. `stop()` and `start()` bring it down and back on the same port (a NATS
 * restart). Start one per test file.
 *
 * Fails (never skips) when `nats-server` is missing, saying how to install it.
 */
import { spawnSync, type ChildProcess } from 'node:child_process'
import { freePort } from './redis.ts'
import { spawnUntilReady, stopProcess } from './server-process.ts'

export interface TestNats {
  /** `nats://127.0.0.1:<port>` */
  readonly url: string
  /** Stops the server (SIGTERM, waits for the exit); `start()` brings it back on the same port. */
  stop(): Promise<void>
  start(): Promise<void>
  /** Stops the server for good. */
  close(): Promise<void>
}

const INSTALL_HINT = 'nats-server is not installed; the fleet tests need it: apt-get install -y nats-server'

export async function startTestNats(): Promise<TestNats> {
  const probe = spawnSync('nats-server', ['--version'], { encoding: 'utf8' })
  if (probe.error) throw new Error(INSTALL_HINT, { cause: probe.error })
  let port = await freePort()
  let child: ChildProcess | null = null
  const killOnExit = () => child?.kill('SIGKILL')
  process.once('exit', killOnExit)
  for (let attempt = 0; ; attempt++) {
    try {
      child = await spawnNats(port)
      break
    } catch (error) {
      if (attempt >= 3 || !/address already in use/i.test(String((error as Error).message))) throw error
      port = await freePort()
    }
  }
  const stop = async (): Promise<void> => {
    const running = child
    child = null
    await stopProcess(running)
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    stop,
    async start() {
      if (child) return
      child = await spawnNats(port)
    },
    async close() {
      await stop()
      process.off('exit', killOnExit)
    },
  }
}

function spawnNats(port: number): Promise<ChildProcess> {
  return spawnUntilReady('nats-server', ['-a', '127.0.0.1', '-p', String(port)], 'Server is ready')
}
