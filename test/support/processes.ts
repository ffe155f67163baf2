/**
 * Real processes for end-to-end tests: the `svc` CLI (built, from bin/run.js) and Node workers,
 * each in its own process, with their output captured.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const SVC_BIN = join(ROOT, 'bin', 'run.js')

export interface RunningEngine {
  child: ChildProcess
  engineUrl: string
  httpUrl: string
  output: string[]
  /** SIGTERM and wait for exit; resolves with the exit code. */
  stop(): Promise<number | null>
  /** SIGKILL and wait for exit. */
  kill9(): Promise<void>
}

/** A project folder with a config.yaml whose listener and HTTP ports are 0. */
export async function tempProject(extraYaml = ''): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-e2e-'))
  await writeFile(
    join(dir, 'config.yaml'),
    `workers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n  - name: svc-http\n    config:\n      port: 0\n  - name: svc-stream\n    config:\n      port: 0\n${extraYaml}`,
  )
  return dir
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode)
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)))
}

/**
 * Runs `svc --json` in `cwd` (with `env` added to the environment) and waits for its `engine_ready` event.
 * `SVC_TEST_ENGINE_NODE_ARGS` (space-separated) goes to the engine's `node`, e.g.
 * `SVC_TEST_ENGINE_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"` to profile the engine of a test
 * (`NODE_OPTIONS` refuses `--cpu-prof`).
 */
export async function startEngineProcess(cwd: string, args: string[] = [], env: Record<string, string> = {}): Promise<RunningEngine> {
  const nodeArgs = process.env.SVC_TEST_ENGINE_NODE_ARGS?.split(' ').filter(Boolean) ?? []
  const child = spawn(process.execPath, [...nodeArgs, SVC_BIN, '--json', ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  const output: string[] = []
  child.stderr!.on('data', (d) => output.push(String(d)))
  const ready = await new Promise<{ engine_url: string; http_url: string }>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! })
    lines.on('line', (line) => {
      output.push(line)
      try {
        const event = JSON.parse(line)
        if (event.event === 'engine_ready') resolve(event)
      } catch {
        /* not JSON */
      }
    })
    child.once('exit', (code) => reject(new Error(`svc exited with ${code} before it was ready:\n${output.join('\n')}`)))
  })
  return {
    child,
    engineUrl: ready.engine_url,
    httpUrl: ready.http_url,
    output,
    stop() {
      child.kill('SIGTERM')
      return exited(child)
    },
    async kill9() {
      child.kill('SIGKILL')
      await exited(child)
    },
  }
}
