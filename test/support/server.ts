/**
 * Launching a private database server for tests (PostgreSQL, MariaDB): spawn it, wait for the line
 * that says it is ready, stop it with SIGTERM and wait for the exit.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'

export interface ServerLaunch {
  /** Name in error messages (`postgres`). */
  name: string
  command: string
  args: string[]
  /** Matched against stdout and stderr together. */
  ready: RegExp
  /** Default 20 000 ms. */
  timeoutMs?: number
  options?: SpawnOptions
}

/**
 * Spawns a server and resolves once its output matches `ready`.
 * @throws Error with the server's output when it exits first or does not get ready in time.
 */
export function spawnServer(launch: ServerLaunch): Promise<ChildProcess> {
  const child = spawn(launch.command, launch.args, { ...launch.options, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  const timeoutMs = launch.timeoutMs ?? 20_000
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${launch.name} did not start within ${timeoutMs} ms:\n${output}`))
    }, timeoutMs)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      if (!launch.ready.test(output)) return
      clearTimeout(timer)
      child.off('exit', onExit)
      // Keep draining so that a chatty server never blocks on a full pipe.
      child.stdout!.off('data', onData).resume()
      child.stderr!.off('data', onData).resume()
      resolve(child)
    }
    const onExit = (code: number | null) => {
      clearTimeout(timer)
      reject(new Error(`${launch.name} exited with code ${code} before it was ready:\n${output}`))
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.once('exit', onExit)
    child.once('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
  })
}

/** Sends SIGTERM and waits for the exit (SIGKILL after `graceMs`, default 10 000). */
export async function stopServer(child: ChildProcess | null, graceMs = 10_000): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill('SIGTERM')
  })
}

/** Runs a set-up command to completion; rejects with its output when it fails. */
export function runSetup(name: string, command: string, args: string[], options: SpawnOptions = {}): Promise<void> {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${name} failed with code ${code}:\n${output}`))))
  })
}
