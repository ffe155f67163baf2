/**
 * End to end (issue 16, item 4): a billion-laughs document in each kind of YAML file svc reads —
 * config.yaml, a settings file, a worker's svc.worker.yaml, worker-compose.yaml — is refused at
 * the alias that crosses the limit, with `file:line:col`, by the built CLI in a child process
 * (bin/run.js; needs `npm run build`, which npm test does). Before, `svc` spun at 100% CPU for
 * minutes. Every listener is on port 0.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, describe, it } from 'node:test'
import { cliEnv, runSvc } from './support/cli.ts'
import { billionLaughs } from './support/hostile-yaml.ts'
import { SVC_BIN } from './support/processes.ts'

const PORT0 = 'workers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n  - name: svc-http\n    config:\n      port: 0\n  - name: svc-stream\n    config:\n      port: 0\n'
/** What every refusal says after its place. */
const ALIAS = 'alias \\*lol4 expands the document too much \\(aliases may add at most 10000 nodes and 1048576 bytes\\)'

const scratch = mkdtempSync(join(tmpdir(), 'svc-yaml-limits-'))
const children = new Set<ChildProcess>()
after(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  rmSync(scratch, { recursive: true, force: true })
})

let projects = 0
function project(config: string): string {
  const dir = join(scratch, `p${projects++}`)
  mkdirSync(dir)
  writeFileSync(join(dir, 'config.yaml'), config)
  return dir
}

const run = (args: string[], cwd: string) => runSvc(args, { cwd, onSpawn: (child) => children.add(child) })

describe('a billion-laughs document in a YAML file svc reads', () => {
  it("in a worker's config block of config.yaml: svc exits 2 naming config.yaml:line:col", async () => {
    const dir = project(`${PORT0}  - name: queue\n    config:\n${billionLaughs('      ')}`)
    const result = await run([], dir)
    assert.equal(result.code, 2, result.stderr)
    assert.match(result.stderr, new RegExp(`^Error: config\\.yaml:17:\\d+: ${ALIAS}; write the values out, or use fewer aliases\\n$`))
  })

  it("in a worker's svc.worker.yaml: svc worker add exits 2 naming the manifest's line and column", async () => {
    const dir = project(PORT0)
    mkdirSync(join(dir, 'workers', 'bomb'), { recursive: true })
    writeFileSync(join(dir, 'workers', 'bomb', 'svc.worker.yaml'), `name: bomb\nscripts:\n  start: node index.js\nenv:\n${billionLaughs('  ')}`)
    const result = await run(['worker', 'add', './workers/bomb'], dir)
    assert.equal(result.code, 2, result.stderr)
    assert.match(result.stderr, new RegExp(`^Error: workers/bomb/svc\\.worker\\.yaml:9:\\d+: ${ALIAS}`))
    assert.equal(readFileSync(join(dir, 'config.yaml'), 'utf8'), PORT0, 'config.yaml is not edited')
  })

  it('in worker-compose.yaml: svc compose up exits 2 naming the line and column, before connecting', async () => {
    const dir = project(PORT0)
    writeFileSync(join(dir, 'worker-compose.yaml'), `containers:\n  http:\n    worker: builtin://svc-http\n    config:\n${billionLaughs('      ')}`)
    const result = await run(['compose', 'up', '-n', 'yaml-limits', '--engine', 'ws://127.0.0.1:9'], dir)
    assert.equal(result.code, 2, result.stderr)
    assert.match(result.stderr, new RegExp(`^Error: worker-compose\\.yaml:9:\\d+: ${ALIAS}`))
  })

  it('in a settings file: svc starts on the config.yaml block, logs the place, and leaves the file as it is', async () => {
    const dir = project(PORT0)
    mkdirSync(join(dir, 'config'))
    const file = join(dir, 'config', 'svc-http.yaml')
    const text = `id: svc-http\nname: HTTP\ndescription: ''\nvalue:\n  port: 0\n${billionLaughs('  ')}`
    writeFileSync(file, text)
    const child = spawn(process.execPath, [SVC_BIN, '--json'], { cwd: dir, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    children.add(child)
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
    const events: Array<Record<string, unknown>> = []
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const event = JSON.parse(line) as Record<string, unknown>
        events.push(event)
        if (event.event === 'engine_ready') resolve()
      })
      void exited.then((code) => reject(new Error(`svc exited with ${code} before it was ready\n${events.map((e) => JSON.stringify(e)).join('\n')}`)))
    })
    const place = new RegExp(`^settings file not read: ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:10:\\d+: ${ALIAS}`)
    assert.ok(
      events.some((e) => e.event === 'log' && e.level === 'error' && place.test(String(e.message))),
      events.map((e) => JSON.stringify(e)).join('\n'),
    )
    assert.equal(readFileSync(file, 'utf8'), text, 'the seed is not written over the file')
    child.kill('SIGTERM')
    assert.equal(await exited, 0)
  })
})
