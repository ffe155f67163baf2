/**
 * End to end (issue 11, "The CLI is the product"): projects side by side each reach their own
 * engine, a project whose engine is stopped never answers from another project's engine, help and
 * version forms, did-you-mean for commands and function ids, errors without stacks unless --debug.
 * Real `svc` processes from bin/run.js; needs `npm run build`.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { cliEnv, runSvc, type Finished } from './support/cli.ts'
import { SVC_BIN } from './support/processes.ts'
import { waitFor } from './support/wait.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-cli-projects-'))
// A registry of running engines of this test alone.
const env = cliEnv({ SVC_ENGINES_DIR: join(scratch, 'engines') })
const children = new Set<ChildProcess>()
const clients: SvcClient[] = []

function svc(args: string[], cwd: string): Promise<Finished> {
  return runSvc(args, { cwd, env, onSpawn: (child) => children.add(child) })
}

interface Engine {
  child: ChildProcess
  url: string
  exited: Promise<number | null>
}

async function startEngine(cwd: string): Promise<Engine> {
  const child = spawn(process.execPath, [SVC_BIN, '--json', '--no-watch'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const event = JSON.parse(line) as { event: string; engine_url?: string }
      if (event.event === 'engine_ready') resolve(event.engine_url!)
    })
    void exited.then((code) => reject(new Error(`svc exited with ${code} before it was ready\n${stderr}`)))
  })
  return { child, url, exited }
}

/** A worker in the engine at `url` serving `p::where` (answers `project`) and `p::fail`. */
async function serve(url: string, project: string): Promise<void> {
  const client = registerWorker(url, { workerName: `where-${project}`, otel: { enabled: false } } as Parameters<typeof registerWorker>[1])
  clients.push(client)
  client.registerFunction('p::where', () => ({ project }))
  client.registerFunction('p::fail', () => {
    throw new Error('the ledger is closed')
  })
  await waitFor(async () => {
    const { functions } = (await client.trigger({ function_id: 'engine::functions::list', payload: {} })) as { functions: Array<{ function_id: string }> }
    return functions.some((f) => f.function_id === 'p::fail')
  }, 'p::fail registered')
}

let a = ''
let b = ''
let engineA: Engine
let engineB: Engine | undefined
let portsA: { engine: number; http: number; stream: number }
let portsB: { engine: number; http: number; stream: number }

before(async () => {
  for (const name of ['a', 'b']) {
    const result = await svc(['project', 'init', name, '--ports', 'auto', '--no-install', '--json'], scratch)
    assert.equal(result.code, 0, result.stderr)
    const ports = (JSON.parse(result.stdout) as { ports: typeof portsA }).ports
    if (name === 'a') [a, portsA] = [join(scratch, 'a'), ports]
    else [b, portsB] = [join(scratch, 'b'), ports]
  }
  engineA = await startEngine(a)
  engineB = await startEngine(b)
  await serve(engineA.url, 'a')
  await serve(engineB.url, 'b')
})

after(async () => {
  await Promise.all(clients.map((c) => c.shutdown().catch(() => undefined)))
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  rmSync(scratch, { recursive: true, force: true })
})

describe('project-scoped engine address (issue 11)', () => {
  it('svc project init --ports auto writes free ports, different per project, into config.yaml', () => {
    assert.notDeepEqual(portsA, portsB)
    for (const [dir, ports] of [[a, portsA], [b, portsB]] as const) {
      const text = readFileSync(join(dir, 'config.yaml'), 'utf8')
      assert.match(text, new RegExp(`port: ${ports.engine}\\n`))
      assert.match(text, new RegExp(`port: \\$\\{HTTP_PORT:${ports.http}\\}`))
      assert.match(text, new RegExp(`port: ${ports.stream}\\n`))
    }
    assert.equal(engineA.url, `ws://127.0.0.1:${portsA.engine}`)
    assert.equal(engineB!.url, `ws://127.0.0.1:${portsB.engine}`)
  })

  it('two projects running side by side each reach their own engine, and say which', async () => {
    const inA = await svc(['trigger', 'p::where'], a)
    assert.equal(inA.code, 0, inA.stderr)
    assert.deepEqual(JSON.parse(inA.stdout), { project: 'a' })
    assert.equal(inA.stderr, `Engine ${engineA.url} (project a)\n`)
    const inB = await svc(['trigger', 'p::where'], join(b, '.svc'))
    assert.equal(inB.code, 0, inB.stderr)
    assert.deepEqual(JSON.parse(inB.stdout), { project: 'b' })
    const list = await svc(['worker', 'list', '--all', '--json'], b)
    const names = (JSON.parse(list.stdout) as { workers: Array<{ name: string }> }).workers.map((w) => w.name)
    assert.ok(names.includes('where-b') && !names.includes('where-a'), names.join(','))
  })

  it('a typo in a function id gets a suggestion; an ordinary error has no stack unless --debug', async () => {
    const typo = await svc(['trigger', 'p::wher'], a)
    assert.equal(typo.code, 1)
    assert.match(typo.stderr, /\nError: function_not_found: Function p::wher not found\nHint: did you mean p::where\? \(svc trigger p::where\)\n$/)
    const failed = await svc(['trigger', 'p::fail', 'a=1', 'b=x'], a)
    assert.equal(failed.code, 1)
    assert.match(failed.stderr, /\nError: [\w_]+: the ledger is closed\nHint: run again with --debug to see the stack trace\n$/)
    assert.doesNotMatch(failed.stderr, /\n\s+at /)
    const debug = await svc(['trigger', 'p::fail', '--debug'], a)
    assert.match(debug.stderr, /\n\s+at /)
  })

  it("a command in project B while only A runs does not answer from A's engine", async () => {
    engineB!.child.kill('SIGTERM')
    assert.equal(await engineB!.exited, 0)
    engineB = undefined
    // B's config.yaml now names the address A's engine holds (e.g. both kept the default port).
    const config = join(b, 'config.yaml')
    writeFileSync(config, readFileSync(config, 'utf8').replace(`port: ${portsB.engine}\n`, `port: ${portsA.engine}\n`))

    const trigger = await svc(['trigger', 'p::where'], b)
    assert.equal(trigger.code, 3)
    assert.equal(trigger.stdout, '')
    assert.equal(
      trigger.stderr,
      `Error: The engine of project b is not running (${engineA.url} is the engine of project a at ${a})\n` +
        `Hint: start it with svc in ${b}, or pass --engine ${engineA.url} to use a's engine\n`,
    )
    const list = await svc(['worker', 'list', '--json'], b)
    assert.equal(list.code, 0, list.stderr)
    const listing = JSON.parse(list.stdout) as { engine_running: boolean; workers: Array<{ status: string }> }
    assert.equal(listing.engine_running, false)
    assert.ok(listing.workers.every((w) => w.status === 'engine not running' || w.status === 'disabled'))

    // Aimed at A's engine on purpose: it answers, with a warning.
    const explicit = await svc(['trigger', 'p::where', '--engine', engineA.url], b)
    assert.equal(explicit.code, 0, explicit.stderr)
    assert.deepEqual(JSON.parse(explicit.stdout), { project: 'a' })
    assert.equal(explicit.stderr, `Warning: ${engineA.url} is the engine of project a (${a}), not of this project (b)\n`)

    // And B cannot start on the port A's engine holds: the message names project a.
    const start = await svc([], b)
    assert.equal(start.code, 1)
    assert.match(start.stderr, new RegExp(`^Error: Port ${portsA.engine} \\(svc-worker-manager\\) is already in use by the svc engine of project a \\(${a}, pid ${engineA.child.pid}\\)\\n`, 'm'))
  })
})

describe('help, version and did-you-mean (issue 11)', () => {
  it('svc help, -h and --help list the commands; svc trigger -h and help trigger show its usage', async () => {
    for (const args of [['help'], ['-h'], ['--help']]) {
      const result = await svc(args, scratch)
      assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`)
      assert.match(result.stdout, /USAGE\n {2}\$ svc \[COMMAND\]/)
      assert.match(result.stdout, /\n {2}trigger +Invoke a function of the running engine/)
    }
    for (const args of [['trigger', '-h'], ['trigger', '--help'], ['help', 'trigger'], ['t', '-h']]) {
      const result = await svc(args, scratch)
      assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`)
      assert.match(result.stdout, /USAGE\n {2}\$ svc t(rigger)? \[FUNCTION_ID\] \[KEY=VALUE\.\.\.\]/)
      assert.match(result.stdout, /--debug/)
    }
  })

  it('svc -v and --version print svc/<version> <platform>-<arch> node-<version>', async () => {
    const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version
    for (const flag of ['-v', '--version']) {
      const result = await svc([flag], scratch)
      assert.equal(result.code, 0)
      assert.equal(result.stdout, `svc/${version} ${process.platform}-${process.arch} node-${process.version}\n`)
    }
  })

  it('a typo in a command suggests the command, keeping the arguments, exit 2', async () => {
    const result = await svc(['triger', 'math::add', 'a=1', 'b=2'], scratch)
    assert.equal(result.code, 2)
    assert.equal(result.stderr, "Error: 'triger' is not a svc command\nHint: did you mean svc trigger math::add a=1 b=2? (svc help lists every command)\n")
    const sub = await svc(['worker', 'lst'], scratch)
    assert.equal(sub.code, 2)
    assert.match(sub.stderr, /Hint: did you mean svc worker list\?/)
    const none = await svc(['xyzzy'], scratch)
    assert.equal(none.stderr, "Error: 'xyzzy' is not a svc command\nHint: run svc help for the list of commands\n")
  })
})

describe('svc worker add console while svc runs (issue 11)', () => {
  it('the running svc starts the console entry when config.yaml gains it, as the message says', async () => {
    const dir = join(scratch, 'c')
    const init = await svc(['project', 'init', 'c', '--ports', 'auto', '--no-install', '--json'], scratch)
    assert.equal(init.code, 0, init.stderr)
    // Watching config.yaml (no --no-watch), so the reload applies the entry.
    const child = spawn(process.execPath, [SVC_BIN, '--json'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] })
    children.add(child)
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if ((JSON.parse(line) as { event: string }).event === 'engine_ready') resolve()
      })
      void exited.then((code) => reject(new Error(`svc exited with ${code}`)))
    })
    const added = await svc(['worker', 'add', 'console', '--json'], dir)
    assert.equal(added.code, 0, added.stderr)
    // A free port instead of 3113, which something else may hold on this machine.
    const config = join(dir, 'config.yaml')
    writeFileSync(config, readFileSync(config, 'utf8').replace(/- name: console\n/, '- name: console\n    config: { port: 0 }\n'))
    let status = ''
    await waitFor(
      async () => {
        const list = await svc(['worker', 'list', '--json'], dir)
        status = (JSON.parse(list.stdout) as { workers: Array<{ name: string; status: string }> }).workers.find((w) => w.name === 'console')?.status ?? ''
        return status === 'running'
      },
      () => `the console worker running (last status: ${status})`,
      20_000,
      200,
    )
    child.kill('SIGTERM')
    assert.equal(await exited, 0)
  })
})
