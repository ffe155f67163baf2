/**
 * Starting a service a test needs (redis-server, nats-server) and waiting until it says it is ready.
 */
import { spawn, type ChildProcess } from 'node:child_process'

/**
 * Spawns `command` (in `options.cwd`, with `options.env`) and resolves once its output (stdout or stderr) contains `ready`.
 * @throws Error with the output when it exits first or is not ready within 10 s (then killed).
 */
export function spawnUntilReady(command: string, args: string[], ready: string, options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<ChildProcess> {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${command} did not start within 10 s:\n${output}`))
    }, 10_000)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      if (!output.includes(ready)) return
      clearTimeout(timer)
      child.stdout!.off('data', onData)
      child.stderr!.off('data', onData)
      child.stdout!.resume()
      child.stderr!.resume()
      resolve(child)
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${command} exited with code ${code} before it was ready:\n${output}`))
    })
    child.once('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
  })
}

/** SIGTERM to `child` unless it already exited; resolves once it has. */
export async function stopProcess(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve())
    child.kill('SIGTERM')
  })
}
