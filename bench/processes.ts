/**
 * The benchmark's child processes: each side of a measurement runs in its own Node process (the
 * repository's Node), tracked in `children` so that `runMain` can kill what is left.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Starting, running and stopping Node scripts whose processes are pushed onto `children`. */
export function processes(children: ChildProcess[]) {
  /** Starts `node <args>` in `cwd`; its stdout as lines, its stderr passed through. */
  function start(args: string[], env: Record<string, string> = {}, cwd = ROOT): { child: ChildProcess; lines: AsyncIterableIterator<string> } {
    const child = spawn(process.execPath, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
    children.push(child)
    return { child, lines: createInterface({ input: child.stdout! })[Symbol.asyncIterator]() }
  }

  /** Runs a script to its end and returns the last JSON line it printed. */
  async function run(args: string[], env: Record<string, string> = {}): Promise<Record<string, any>> {
    const { lines } = start(args, env)
    let last: Record<string, any> | undefined
    for await (const line of lines) {
      try {
        last = JSON.parse(line)
      } catch {
        /* not the result */
      }
    }
    if (!last) throw new Error(`${args.join(' ')} printed no result`)
    return last
  }

  /** Runs a script that prints one JSON document (possibly over several lines) and parses it. */
  async function runDocument(args: string[]): Promise<Record<string, any>> {
    const { lines } = start(args)
    const out: string[] = []
    for await (const line of lines) out.push(line)
    return JSON.parse(out.join('\n'))
  }

  /** SIGTERM, resolved once the process exited. */
  function stop(child: ChildProcess): Promise<void> {
    return new Promise((resolve) => {
      if (child.exitCode !== null) return resolve()
      child.once('exit', () => resolve())
      child.kill('SIGTERM')
    })
  }

  return { start, run, runDocument, stop }
}
