/**
 * A private redis-server for the queue benches (bench/queue.ts, bench/queue-redis-adapter.ts):
 * loopback only, on a free port, in a temporary directory, with AOF (`appendfsync everysec`,
 * BullMQ's usual durable setting) and no RDB snapshots; and its per-command call counts.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../measure.ts'

export interface RedisServer {
  port: number
  server: ChildProcess
  /** Stops the server (SIGTERM, waits for its exit) and removes its directory. */
  close: () => Promise<void>
}

/** Starts redis-server and resolves once it accepts connections; `children` gets the process (for the bench's exit clean-up). */
export async function startRedis(children: ChildProcess[]): Promise<RedisServer> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-redis-'))
  const port = await freePort()
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.push(server)
  await new Promise<void>((resolve, reject) => {
    let out = ''
    server.stdout!.on('data', (chunk: Buffer) => {
      out += chunk
      if (out.includes('Ready to accept connections')) resolve()
    })
    server.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)))
  })
  return {
    port,
    server,
    close: async () => {
      if (server.exitCode === null && server.signalCode === null) {
        const exited = new Promise((resolve) => server.once('exit', resolve))
        server.kill('SIGTERM')
        await exited
      }
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** Calls per command name of the redis-server on `port` so far (`INFO commandstats`); undefined without redis-cli or a server. */
export function commandStats(port: number | undefined): Map<string, number> | undefined {
  if (port === undefined) return undefined
  try {
    const text = execFileSync('redis-cli', ['-p', String(port), 'INFO', 'commandstats'], { encoding: 'utf8' })
    const calls = new Map<string, number>()
    for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(match[1]!, Number(match[2]))
    return calls
  } catch {
    return undefined
  }
}
