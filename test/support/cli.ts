/**
 * Running the built `svc` CLI (bin/run.js, on the Node running the tests) as a user would, stdin
 * not a TTY.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { SVC_BIN } from './processes.ts'

export interface Finished {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/** Variables of the test's own environment that would steer svc; tests set them explicitly. */
const STEERING = ['SVC_URL', 'SVC_MICROVM_ACCEL', 'SVC_NAMESPACE', 'SVC_WORKER_NAME', 'SVC_NAMESPACE_GRACE_MS', 'SVC_LOG_LEVEL', 'SVC_CONSOLE_TOKEN', 'HTTP_PORT', 'DEBUG', 'CI']

/** The test's environment without the variables that steer svc, then `extra`. */
export function cliEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env }
  for (const key of STEERING) delete env[key]
  return { ...env, ...extra }
}

/**
 * Runs `svc <args>` to completion (`input`, when given, is piped to its stdin). `onSpawn` sees the child (to kill it if a test fails midway).
 */
export function runSvc(
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; onSpawn?: (child: ChildProcess) => void; input?: string | Buffer },
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC_BIN, ...args], { cwd: options.cwd, env: options.env ?? cliEnv(), stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] })
    options.onSpawn?.(child)
    if (options.input !== undefined) {
      // svc may stop reading early (an input over a limit) and exit: not the test's failure.
      child.stdin!.on('error', () => {})
      child.stdin!.end(options.input)
    }
    let stdout = ''
    let stderr = ''
    child.stdout!.on('data', (d) => (stdout += d))
    child.stderr!.on('data', (d) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
}
