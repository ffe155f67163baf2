/**
 * `builtin://console` under the compose daemon (cli.md §4.7; issue 16 item 1): the daemon gives the
 * console its access token in the environment and prints the address with it on its own output;
 * the token never reaches the container's log (which also goes to the engine's log).
 * Needs `npm run build` (bin/run.js runs dist/).
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, describe, it } from 'node:test'
import { cliEnv } from './support/cli.ts'
import { startEngineProcess, SVC_BIN, tempProject, type RunningEngine } from './support/processes.ts'
import { waitFor } from './support/wait.ts'

const NS = 'console-otter'

describe('compose: builtin://console', () => {
  let dir = ''
  let engine: RunningEngine | undefined
  let daemon: ChildProcess | undefined

  after(async () => {
    daemon?.kill('SIGKILL')
    await engine?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('draws the token, passes it in SVC_CONSOLE_TOKEN, and prints the token address on the daemon output only', async () => {
    dir = await tempProject()
    engine = await startEngineProcess(dir)
    writeFileSync(join(dir, 'worker-compose.yaml'), 'containers:\n  console:\n    worker: builtin://console\n    config: { port: 0 }\n')
    const events: Array<Record<string, any>> = []
    let stderr = ''
    daemon = spawn(process.execPath, [SVC_BIN, 'compose', 'up', '-n', NS, '--engine', engine.engineUrl, '--json'], { cwd: dir, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    createInterface({ input: daemon.stdout! }).on('line', (line) => {
      try {
        events.push(JSON.parse(line))
      } catch {
        stderr += `stdout: ${line}\n`
      }
    })
    daemon.stderr!.on('data', (d) => (stderr += String(d)))

    const printed = () => events.find((e) => e.event === 'log' && /console: svc console → /.test(String(e.message)))
    await waitFor(() => printed() !== undefined, 'printed() !== undefined', 60_000).catch(() => assert.fail(`no console address:\n${JSON.stringify(events)}\n${stderr}`))
    const token = /\?token=([A-Za-z0-9_-]+)/.exec(printed()!.message)![1]!
    assert.match(token, /^[A-Za-z0-9_-]{32}$/)

    // The console's own line names its real port and where its token came from.
    const logFile = join(dir, '.svc', 'logs', NS, 'console.log')
    let url = ''
    await waitFor(() => {
      const match = existsSync(logFile) ? /svc console → (http:\/\/\S+) \(access token from SVC_CONSOLE_TOKEN\)/.exec(readFileSync(logFile, 'utf8')) : null
      if (match) url = match[1]!
      return match !== null
    }, 'the condition', 20_000)
    assert.ok(!readFileSync(logFile, 'utf8').includes(token), 'the token is not in the container log')
    assert.equal((await fetch(`${url}/api/info`)).status, 401)
    assert.equal((await fetch(`${url}/api/info`, { headers: { authorization: `Bearer ${token}` } })).status, 200)

    daemon.kill('SIGINT')
    await new Promise((resolve) => daemon!.once('exit', resolve))
  })
})
