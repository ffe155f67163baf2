/**
 * Starts a private nats-server for the Moleculer and raw NATS rows: loopback only, on a port the
 * server picks itself, which it reports through a ports file in a temporary directory.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

export interface NatsServer {
  child: ChildProcess
  /** `nats://127.0.0.1:<port>` */
  url: string
  /** `http://127.0.0.1:<port>` of the monitoring endpoint (`/varz`), when started with `monitor`. */
  monitorUrl?: string
  /** Stops the server and removes its directory. */
  stop: () => Promise<void>
}

/** The nats-server executable on PATH; throws with the install command when there is none. */
export function natsServerPath(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, 'nats-server')
    try {
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {
      /* not in this directory */
    }
  }
  throw new Error('nats-server is not on PATH; the Moleculer and NATS rows need it: apt-get install -y nats-server')
}

/**
 * Starts nats-server and resolves once it accepts connections; `onSpawn` sees the child first.
 * `monitor`: also serve the monitoring endpoint (`/varz`: messages and bytes in and out) on a free
 * port, for counting NATS messages per operation.
 */
export async function startNatsServer(onSpawn: (child: ChildProcess) => void = () => {}, monitor = false): Promise<NatsServer> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-nats-'))
  // -p -1: a free port chosen by the server, so two runs never collide; no JetStream, monitoring on request.
  const args = ['-a', '127.0.0.1', '-p', '-1', '--ports_file_dir', dir]
  if (monitor) args.push('-m', '-1')
  const child = spawn(natsServerPath(), args, { stdio: ['ignore', 'ignore', 'pipe'] })
  onSpawn(child)
  let log = ''
  child.stderr!.on('data', (chunk: Buffer) => (log += chunk))
  child.on('error', (err) => (log += String(err)))
  const running = () => child.exitCode === null && child.signalCode === null
  const stop = async () => {
    if (running() && child.pid !== undefined) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
    await rm(dir, { recursive: true, force: true })
  }
  const deadline = Date.now() + 10000
  // The ports file is written once the client listener is up.
  for (;;) {
    if (!running()) {
      await stop()
      throw new Error(`nats-server exited (${child.exitCode ?? child.signalCode}):\n${log}`)
    }
    const file = (await readdir(dir)).find((name) => name.endsWith('.ports'))
    if (file) {
      try {
        const ports = JSON.parse(await readFile(join(dir, file), 'utf8')) as { nats: string[]; monitoring?: string[] }
        if (monitor && ports.monitoring?.[0] === undefined) throw new Error('monitoring port not written yet')
        const server: NatsServer = { child, url: ports.nats[0]!, stop }
        if (ports.monitoring?.[0] !== undefined) server.monitorUrl = ports.monitoring[0]
        return server
      } catch {
        /* read while being written */
      }
    }
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`nats-server did not report its port within 10 s:\n${log}`)
    }
    await sleep(20)
  }
}
