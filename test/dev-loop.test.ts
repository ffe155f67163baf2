/**
 * End to end: the development loop (cli.md §5, §6) as a user lives it. `svc` (the built CLI, a
 * real process) launches the local workers of config.yaml; `svc trigger` reaches them; an edit
 * restarts a worker, a killed worker comes back, a namespaced entry answers in its namespace, and
 * a bad manifest fails that worker while the engine keeps running. Needs `npm run build`.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { processAlive } from '../src/lib/processes.ts'
import { ROOT, SVC_BIN, startEngineProcess, tempProject } from './support/processes.ts'
import type { RunningEngine } from './support/processes.ts'
import { waitFor } from './support/wait.ts'

const SDK = pathToFileURL(join(ROOT, 'packages', 'sdk', 'dist', 'index.js')).href

/** A worker answering `greet::hello` with `<greeting> <name>`. */
function greeterSource(greeting: string): string {
  return `import { registerWorker } from ${JSON.stringify(SDK)}
const svc = registerWorker()
svc.registerFunction('greet::hello', ({ name }) => ({ message: ${JSON.stringify(greeting)} + ' ' + name }))
console.log(process.env.SVC_WORKER_NAME + ' up in ' + process.env.SVC_NAMESPACE)
process.on('SIGTERM', async () => { await svc.shutdown(); process.exit(0) })
`
}

let dir = ''
let engine: RunningEngine | undefined

/** The JSON events `svc --json` has printed so far. */
function events(): Array<Record<string, unknown>> {
  const parsed: Array<Record<string, unknown>> = []
  for (const line of engine?.output ?? []) {
    try {
      const event = JSON.parse(line) as unknown
      if (event && typeof event === 'object') parsed.push(event as Record<string, unknown>)
    } catch {
      /* stderr text */
    }
  }
  return parsed
}

function states(worker: string): Array<Record<string, unknown>> {
  return events().filter((e) => e.event === 'worker_state' && e.worker === worker)
}

/** Waits for `find` (see waitFor), naming what svc printed when it times out. */
function until<T>(find: () => T | undefined | false, what: string, timeoutMs = 30_000): Promise<T> {
  return waitFor(find, () => `${what}; svc printed:\n${engine?.output.join('\n')}`, timeoutMs, 50)
}

interface TriggerResult {
  code: number | null
  json: { ok: boolean; result?: { message: string }; error?: { code: string; message: string } }
}

/** `svc trigger <args> --engine <url> --json` in the project directory. */
function trigger(...args: string[]): Promise<TriggerResult> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env }
    delete env.SVC_URL
    const child = spawn(process.execPath, [SVC_BIN, 'trigger', ...args, '--engine', engine!.engineUrl, '--json'], {
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => {
      try {
        resolve({ code, json: JSON.parse(stdout) })
      } catch {
        reject(new Error(`svc trigger printed no JSON (exit ${code}):\n${stdout}\n${stderr}`))
      }
    })
  })
}

/** Calls until the answer is `expected` (a restarted worker registers its function a moment after it announces). */
async function answers(expected: string, ...args: string[]): Promise<void> {
  let last: TriggerResult | undefined
  await waitFor(
    async () => {
      last = await trigger(...args)
      return last.code === 0 && last.json.result?.message === expected
    },
    () => `svc trigger ${args.join(' ')} to answer '${expected}'; last: ${JSON.stringify(last)}\n${engine?.output.join('\n')}`,
    30_000,
    200,
  )
}

before(async () => {
  dir = await tempProject(
    '  - name: greeter\n    worker_path: ./workers/greeter\n' +
      '  - name: shop-greeter\n    worker_path: ./workers/shop-greeter\n    namespace: shop\n' +
      '  - name: broken\n    worker_path: ./workers/broken\n',
  )
  for (const [name, greeting] of [
    ['greeter', 'hello'],
    ['shop-greeter', 'welcome to the shop,'],
  ] as const) {
    mkdirSync(join(dir, 'workers', name), { recursive: true })
    writeFileSync(join(dir, 'workers', name, 'svc.worker.yaml'), `name: ${name}\nscripts:\n  start: node index.mjs\n`)
    writeFileSync(join(dir, 'workers', name, 'index.mjs'), greeterSource(greeting))
  }
  mkdirSync(join(dir, 'workers', 'broken'), { recursive: true })
  writeFileSync(join(dir, 'workers', 'broken', 'svc.worker.yaml'), 'name: broken\nscirpts:\n  start: node index.mjs\n')
  engine = await startEngineProcess(dir)
})

after(async () => {
  const pids = events()
    .filter((e) => e.event === 'worker_state' && typeof e.pid === 'number')
    .map((e) => e.pid as number)
  if (engine && engine.child.exitCode === null && engine.child.signalCode === null) await engine.stop()
  for (const pid of pids) {
    try {
      process.kill(-pid, 'SIGKILL')
    } catch {
      /* gone, as it should be */
    }
  }
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('the development loop (cli.md §5, §6)', () => {
  it('launches the local workers; svc trigger reaches them; their output is logged under their name', async () => {
    await until(() => states('greeter').some((e) => e.state === 'running'), 'greeter running')
    await answers('hello Ada', 'greet::hello', 'name=Ada')
    const up = await until(() => events().find((e) => e.event === 'log' && e.source === 'greeter' && e.message === 'greeter up in default'), 'the log line')
    assert.equal(up.level, 'info')
  })

  it('a namespace entry answers in its namespace', async () => {
    await until(() => states('shop-greeter').some((e) => e.state === 'running'), 'shop-greeter running')
    await answers('welcome to the shop, Ada', '-n', 'shop', 'greet::hello', 'name=Ada')
    // ... and the default namespace still has its own greeter
    await answers('hello Ada', 'greet::hello', 'name=Ada')
  })

  it('a bad manifest fails that worker with the manifest error; the engine keeps running', async () => {
    const failed = await until(() => states('broken').find((e) => e.state === 'failed'), 'broken failed')
    assert.equal(failed.error, `${join('workers', 'broken', 'svc.worker.yaml')}:2:1: unknown field 'scirpts' (did you mean 'scripts'?)`)
    assert.equal(failed.error_code, 'INVALID_MANIFEST')
    const ready = events().find((e) => e.event === 'engine_ready')!
    assert.deepEqual(
      (ready.workers as Array<{ name: string }>).map((w) => w.name),
      ['greeter', 'shop-greeter', 'broken'],
    )
    assert.equal(engine!.child.exitCode, null)
  })

  it('editing the source restarts the worker and changes the answer', async () => {
    const runningBefore = states('greeter').filter((e) => e.state === 'running').length
    writeFileSync(join(dir, 'workers', 'greeter', 'index.mjs'), greeterSource('hi'))
    await until(() => states('greeter').filter((e) => e.state === 'running').length > runningBefore, 'greeter running again')
    assert.ok(states('greeter').some((e) => e.state === 'restarting'))
    await answers('hi Ada', 'greet::hello', 'name=Ada')
  })

  it('kill -9 of the worker → restarted with backoff, and it answers again', async () => {
    const pid = [...states('greeter')].reverse().find((e) => typeof e.pid === 'number')!.pid as number
    const runningBefore = states('greeter').filter((e) => e.state === 'running').length
    process.kill(pid, 'SIGKILL')
    const restarted = await until(
      () => states('greeter').filter((e) => e.state === 'running').length > runningBefore && states('greeter').at(-1),
      'greeter restarted',
    )
    assert.equal(restarted.state, 'running')
    assert.notEqual(restarted.pid, pid)
    assert.ok(
      events().some((e) => e.event === 'log' && e.source === 'svc' && e.message === 'greeter was killed by SIGKILL; restarting in 1 s (1/5)'),
    )
    await answers('hi Ada', 'greet::hello', 'name=Ada')
  })

  it('config.yaml reload starts an added worker, stops a removed one, and survives a broken file', async () => {
    const late = join(dir, 'workers', 'late')
    mkdirSync(late, { recursive: true })
    writeFileSync(join(late, 'svc.worker.yaml'), 'name: late\nscripts:\n  start: node index.mjs\n')
    writeFileSync(join(late, 'index.mjs'), greeterSource('late').replace("'greet::hello'", "'late::hello'"))
    const config = join(dir, 'config.yaml')
    const original = readFileSync(config, 'utf8')
    writeFileSync(config, original + '  - name: late\n    worker_path: ./workers/late\n')
    await until(() => events().find((e) => e.event === 'config_reloaded' && (e.started as string[]).includes('late')), 'config_reloaded')
    await answers('late Ada', 'late::hello', 'name=Ada')

    writeFileSync(config, original + '  - name: late\n    worker_path: [oops\n')
    const error = await until(() => events().find((e) => e.event === 'config_error'), 'config_error')
    assert.match(String(error.error), /^config\.yaml:\d+:\d+: /)
    await answers('late Ada', 'late::hello', 'name=Ada')

    writeFileSync(config, original)
    await until(() => events().find((e) => e.event === 'config_reloaded' && (e.stopped as string[]).includes('late')), 'late removed')
    const latePid = [...states('late')].reverse().find((e) => typeof e.pid === 'number')!.pid as number
    await until(() => !processAlive(latePid), 'late stopped')
  })

  it('a changed built-in config block in config.yaml applies while svc runs', async () => {
    const config = join(dir, 'config.yaml')
    const original = readFileSync(config, 'utf8')
    const edited = original.replace('  - name: svc-http\n    config:\n      port: 0\n', '  - name: svc-http\n    config:\n      port: 0\n      max_body_bytes: 64\n')
    assert.notEqual(edited, original)
    writeFileSync(config, edited)
    const read = async () => {
      const result = await trigger('configuration::get', 'id=svc-http')
      return (result.json.result as unknown as { value: Record<string, unknown> } | undefined)?.value
    }
    await waitFor(async () => (await read())?.max_body_bytes === 64, () => `config/svc-http.yaml to get max_body_bytes 64\n${engine?.output.join('\n')}`, 20_000, 200)
    assert.match(readFileSync(join(dir, 'config', 'svc-http.yaml'), 'utf8'), /max_body_bytes: 64/)
    writeFileSync(config, original)
  })

  it('SIGTERM stops every worker, then the engine, exit 0', async () => {
    const pids = ['greeter', 'shop-greeter'].map((w) => [...states(w)].reverse().find((e) => typeof e.pid === 'number')!.pid as number)
    assert.equal(await engine!.stop(), 0)
    for (const pid of pids) assert.equal(processAlive(pid), false, `worker ${pid} is gone`)
  })
})
