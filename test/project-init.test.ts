/**
 * End to end: `svc project init` as a user runs it (cli.md §4.1), the built CLI (bin/run.js) in a
 * child process with stdin not a TTY, in a temporary directory; then the new projects started with
 * `svc` and driven over real HTTP and `svc trigger`, as a newcomer would. Needs `npm run build`.
 *
 * The quickstart smoke test installs from the npm registry (tsx, typescript, @types/node); svc-sdk
 * comes from this checkout, packed into the project's vendor/ folder (a relative `file:` specifier).
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
// @ts-expect-error plain JavaScript without declarations (bin/ runs before any build)
import { compileCacheDirectory as cacheDirectory } from '../bin/compile-cache.js'
import { launchChromium } from './support/chromium.ts'
import { SVC_BIN, startEngineProcess, type RunningEngine } from './support/processes.ts'
import { freePort } from './support/redis.ts'
import { cliEnv, runSvc, type Finished } from './support/cli.ts'
import { waitFor } from './support/wait.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-project-init-'))
const children = new Set<ChildProcess>()
const engines = new Set<RunningEngine>()

after(async () => {
  for (const engine of engines) await stopEngine(engine)
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  rmSync(scratch, { recursive: true, force: true })
})

let dirs = 0
/** A fresh, empty working directory. */
function workdir(): string {
  const dir = join(scratch, `w${dirs++}`)
  mkdirSync(dir)
  return dir
}

/** The environment of a user who has set nothing svc-specific. */
const cleanEnv = cliEnv

/** Runs the CLI to completion, stdin not a TTY. */
function svc(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Finished> {
  let spawned: ChildProcess | undefined
  return runSvc(args, { cwd, env: cliEnv(env), onSpawn: (child) => children.add((spawned = child)) }).finally(() => {
    if (spawned) children.delete(spawned)
  })
}

const PROJECT_FILES = ['.gitignore', '.svc/project.ini', 'README.md', 'config.yaml', 'worker-compose.yaml']
const tsWorker = (dir: string) => [`${dir}package.json`, `${dir}src/index.ts`, `${dir}svc.worker.yaml`, `${dir}tsconfig.json`]
/** The svc-sdk tarball a template that depends on svc-sdk vendors (issue 11). */
const SDK_TARBALL = `vendor/svc-sdk-${(JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version}.tgz`

describe('svc project init --list-templates (cli.md §4.1)', () => {
  it('prints the table of templates; --list is the same', async () => {
    const cwd = workdir()
    const listed = await svc(['project', 'init', '--list-templates'], cwd)
    assert.equal(listed.code, 0, listed.stderr)
    const lines = listed.stdout.trimEnd().split('\n')
    assert.match(lines[0]!, /^TEMPLATE\s+DESCRIPTION$/)
    assert.deepEqual(
      lines.slice(1).map((l) => l.split(/\s+/)[0]),
      ['bare', 'quickstart', 'starter', 'link-shortener', 'browser', 'python', 'rust', 'worker'],
    )
    const short = await svc(['project', 'init', '--list'], cwd)
    assert.equal(short.code, 0)
    assert.equal(short.stdout, listed.stdout)
    const json = await svc(['project', 'init', '--list', '--json'], cwd)
    assert.deepEqual(
      JSON.parse(json.stdout).templates.map((t: { name: string; kind: string }) => [t.name, t.kind]),
      [
        ['bare', 'project'],
        ['quickstart', 'project'],
        ['starter', 'project'],
        ['link-shortener', 'project'],
        ['browser', 'project'],
        ['python', 'project'],
        ['rust', 'project'],
        ['worker', 'worker'],
      ],
    )
  })
})

describe('svc project init: every template (cli.md §4.1)', () => {
  const expected: Record<string, string[]> = {
    bare: PROJECT_FILES,
    quickstart: [...PROJECT_FILES, SDK_TARBALL, ...tsWorker('workers/caller-worker/'), ...tsWorker('workers/math-worker/')].sort(),
    starter: [...PROJECT_FILES, ...tsWorker(''), SDK_TARBALL].sort(),
    'link-shortener': [
      ...PROJECT_FILES,
      SDK_TARBALL,
      'workers/links/package.json',
      'workers/links/src/links.js',
      'workers/links/src/worker.js',
      'workers/links/svc.worker.yaml',
    ].sort(),
    browser: [...PROJECT_FILES, ...tsWorker(''), 'public/index.html', 'public/svc-browser-sdk.js', SDK_TARBALL].sort(),
    worker: [...tsWorker(''), SDK_TARBALL].sort(),
  }

  for (const [template, files] of Object.entries(expected)) {
    it(`${template}: --json prints the result and the files exist`, async () => {
      const cwd = workdir()
      const run = await svc(['project', 'init', 'demo', '--template', template, '--no-install', '--json'], cwd)
      assert.equal(run.code, 0, run.stderr)
      assert.equal(run.stderr, '')
      const result = JSON.parse(run.stdout)
      assert.deepEqual(Object.keys(result), ['project', 'directory', 'template', 'files', 'installed', 'next_steps'])
      assert.equal(result.project, 'demo')
      assert.equal(result.directory, join(cwd, 'demo'))
      assert.equal(result.template, template)
      assert.equal(result.installed, false)
      assert.deepEqual(result.files, files)
      for (const file of files) assert.ok(existsSync(join(cwd, 'demo', file)), file)
      if (template === 'worker') {
        assert.deepEqual(result.next_steps, ['svc worker add ./demo'])
      } else {
        assert.deepEqual(result.next_steps.slice(0, 2), ['cd demo', 'svc'])
        const ini = readFileSync(join(cwd, 'demo', '.svc', 'project.ini'), 'utf8')
        assert.match(ini, new RegExp(`^project_id = [0-9a-f-]{36}\\nproject_name = demo\\ntemplate = ${template}\\ncreated_with = \\d+\\.\\d+\\.\\d+\\n$`))
      }
    })
  }

  it('shows each step, one line per finished step, then the next steps', async () => {
    const cwd = workdir()
    const run = await svc(['project', 'init', 'my-app', '-t', 'quickstart', '--no-install'], cwd)
    assert.equal(run.code, 0, run.stderr)
    const lines = run.stdout.split('\n')
    assert.deepEqual(
      lines.filter((l) => /^[✔↓] /.test(l)),
      ['✔ Check directory ./my-app', '✔ Copy template quickstart (13 files)', '✔ Write .svc/project.ini', '↓ Install dependencies (npm) [SKIPPED: --no-install]'],
    )
    assert.ok(
      run.stdout.endsWith(
        [
          'Next steps:',
          '  cd my-app',
          '  svc                                         # engine, built-ins and workers',
            '  svc trigger math::add_two_numbers a=1 b=2   # calls math::add in math-worker',
          '',
        ].join('\n'),
      ),
      run.stdout,
    )
  })

  it('-d/--dir chooses the directory; the template defaults to bare', async () => {
    const cwd = workdir()
    const run = await svc(['project', 'init', 'billing', '-d', 'services/billing', '--no-install', '--json'], cwd)
    assert.equal(run.code, 0, run.stderr)
    const result = JSON.parse(run.stdout)
    assert.equal(result.directory, join(cwd, 'services', 'billing'))
    assert.equal(result.template, 'bare')
    assert.deepEqual(result.next_steps, ['cd services/billing', 'svc'])
    assert.match(readFileSync(join(cwd, 'services/billing/README.md'), 'utf8'), /^# billing\n/)
  })
})

describe('svc project init: errors and exit codes (cli.md §1.1, §4.1)', () => {
  it('an invalid NAME exits 2', async () => {
    const run = await svc(['project', 'init', 'My_App'], workdir())
    assert.equal(run.code, 2)
    assert.match(run.stderr, /^Error: Invalid project name 'My_App': use lower-case letters, digits, '-' and '_' \(max 64\)\n/)
  })

  it('a missing NAME exits 2 when not interactive (stdin not a TTY, or --yes)', async () => {
    const cwd = workdir()
    for (const extra of [[], ['--yes'], ['--json']]) {
      const run = await svc(['project', 'init', '-t', 'bare', ...extra], cwd)
      assert.equal(run.code, 2, extra.join(' '))
      if (extra[0] === '--json') assert.deepEqual(JSON.parse(run.stdout), { error: { code: 'INVALID_ARGUMENT', message: 'Missing argument NAME' } })
      else assert.match(run.stderr, /^Error: Missing argument NAME\n/)
    }
  })

  it('an unknown template exits 2 listing the templates', async () => {
    const run = await svc(['project', 'init', 'demo', '--template', 'startr'], workdir())
    assert.equal(run.code, 2)
    assert.match(run.stderr, /^Error: Unknown template 'startr'\. Available templates: bare, quickstart, starter, link-shortener, browser, python, rust, worker\n/)
  })

  it('an unknown package manager exits 2', async () => {
    const run = await svc(['project', 'init', 'demo', '--package-manager', 'pip'], workdir())
    assert.equal(run.code, 2)
    assert.match(run.stderr, /^Error: .*--package-manager/)
  })

  it('a non-empty directory exits 1 unless --force; dotfiles do not count', async () => {
    const cwd = workdir()
    mkdirSync(join(cwd, 'my-app'))
    writeFileSync(join(cwd, 'my-app', 'notes.txt'), 'mine\n')
    const refused = await svc(['project', 'init', 'my-app', '--no-install'], cwd)
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /^(✖ Check directory \.\/my-app\n)?Error: Directory \.\/my-app is not empty; pass --force to scaffold into it anyway\n/)
    assert.equal(existsSync(join(cwd, 'my-app', 'config.yaml')), false)

    const json = await svc(['project', 'init', 'my-app', '--no-install', '--json'], cwd)
    assert.equal(json.code, 1)
    assert.deepEqual(JSON.parse(json.stdout), {
      error: { code: 'DIRECTORY_NOT_EMPTY', message: 'Directory ./my-app is not empty; pass --force to scaffold into it anyway' },
    })

    const forced = await svc(['project', 'init', 'my-app', '--no-install', '--force'], cwd)
    assert.equal(forced.code, 0, forced.stderr)
    assert.equal(readFileSync(join(cwd, 'my-app', 'notes.txt'), 'utf8'), 'mine\n')
    assert.ok(existsSync(join(cwd, 'my-app', 'config.yaml')))

    // Only dotfiles, such as a git repository and an earlier project identity: allowed.
    mkdirSync(join(cwd, 'dotted', '.git'), { recursive: true })
    mkdirSync(join(cwd, 'dotted', '.svc'), { recursive: true })
    writeFileSync(join(cwd, 'dotted', '.svc', 'project.ini'), 'project_id = 0b0c3f0e-56a2-4a5e-9a41-1f6c2d0e9b11\n')
    const dotted = await svc(['project', 'init', 'dotted', '--no-install', '--json'], cwd)
    assert.equal(dotted.code, 0, dotted.stdout)
    assert.match(readFileSync(join(cwd, 'dotted', '.svc', 'project.ini'), 'utf8'), /^project_id = 0b0c3f0e-56a2-4a5e-9a41-1f6c2d0e9b11\nproject_name = dotted\n/)
  })

  it('a failed install keeps the scaffold and exits 1 with the message of cli.md §4.1', async () => {
    // A registry that knows no package: npm fails for real, quickly, without the network.
    const registry = createServer((req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end('{"error":"not found"}')
    })
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve))
    try {
      const cwd = workdir()
      const env = {
        npm_config_registry: `http://127.0.0.1:${(registry.address() as AddressInfo).port}/`,
        npm_config_cache: join(cwd, '.npm-cache'),
        npm_config_fetch_retries: '0',
        npm_config_offline: 'false',
      }
      const run = await svc(['project', 'init', 'demo', '-t', 'quickstart'], cwd, env)
      assert.equal(run.code, 1, run.stdout + run.stderr)
      assert.match(
        run.stderr,
        /^Error: Project created, but installing dependencies failed in workers\/caller-worker \(npm exited with \d+\)\. Run npm install there\.$/m,
      )
      assert.ok(existsSync(join(cwd, 'demo', 'workers', 'math-worker', 'src', 'index.ts')), 'the scaffold is kept')
      assert.ok(existsSync(join(cwd, 'demo', '.svc', 'project.ini')))
      // Issue 11: the kept scaffold does not block the next try, which completes it.
      const retry = await svc(['project', 'init', 'demo', '-t', 'quickstart'], cwd, env)
      assert.doesNotMatch(retry.stderr, /not empty/)
      assert.match(retry.stderr, /installing dependencies failed/)
      const done = await svc(['project', 'init', 'demo', '-t', 'quickstart', '--no-install'], cwd, env)
      assert.equal(done.code, 0, done.stderr)
      assert.ok(!existsSync(join(cwd, 'demo', '.svc', 'init-incomplete')))
      const again = await svc(['project', 'init', 'demo', '-t', 'quickstart', '--no-install'], cwd, env)
      assert.match(again.stderr, /not empty/, 'a finished project is protected again')

      const json = await svc(['project', 'init', 'again', '-t', 'worker', '--json'], cwd, env)
      assert.equal(json.code, 1)
      assert.deepEqual(JSON.parse(json.stdout).error.code, 'INSTALL_FAILED')
      assert.match(JSON.parse(json.stdout).error.message, /^Worker created, but installing dependencies failed in \.\/again \(npm exited with \d+\)\. Run npm install there\.$/)
    } finally {
      registry.close()
    }
  })
})

describe('svc project init interrupted (issue 11)', () => {
  it('Ctrl-C during the install stops it, removes the new directory (exit 130); the next try succeeds', { timeout: 60_000 }, async () => {
    // A registry that never answers: npm waits until it is stopped.
    let asked = false
    const registry = createServer(() => {
      asked = true // and never answers: the install hangs
    })
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve))
    try {
      const cwd = workdir()
      const env = cliEnv({ npm_config_registry: `http://127.0.0.1:${(registry.address() as AddressInfo).port}/`, npm_config_cache: join(cwd, '.npm-cache') })
      let child: ChildProcess | undefined
      const run = runSvc(['project', 'init', 'demo', '-t', 'quickstart'], { cwd, env, onSpawn: (c) => children.add((child = c)) })
      await waitFor(async () => existsSync(join(cwd, 'demo', 'workers', 'math-worker', 'package.json')) || undefined, () => 'no scaffold', 20_000, 250)
      await waitFor(() => asked, 'the install asking the registry', 20_000)
      child!.kill('SIGINT')
      const finished = await run
      assert.equal(finished.code, 130, finished.stdout + finished.stderr)
      assert.match(finished.stderr, /Interrupted; removed \.\/demo/)
      assert.ok(!existsSync(join(cwd, 'demo')), 'nothing left behind')
      const next = await svc(['project', 'init', 'demo', '-t', 'quickstart', '--no-install'], cwd)
      assert.equal(next.code, 0, next.stderr)
    } finally {
      registry.closeAllConnections()
      registry.close()
    }
  })
})

/** Rewrites the listener and svc-http ports of a scaffolded config.yaml to 0 (free ports). */
function useFreePorts(project: string): void {
  const file = join(project, 'config.yaml')
  const text = readFileSync(file, 'utf8')
  let patched = text.replace(/^(\s+port:) 49134$/m, '$1 0').replace('${HTTP_PORT:3111}', '0').replace('${STREAM_PORT:3112}', '0')
  assert.notEqual(patched, text)
  // svc-stream runs on its default port (3112) when config.yaml does not list it.
  if (!/^\s+- name: svc-stream$/m.test(patched)) patched += '\n  - name: svc-stream\n    config:\n      port: 0\n'
  writeFileSync(file, patched)
}

/** Starts `svc` in a new project, remembering it (and its workers' process groups) for cleanup. */
async function startProject(project: string, env: Record<string, string> = {}): Promise<RunningEngine> {
  const engine = await startEngineProcess(project, [], env)
  engines.add(engine)
  return engine
}

/** SIGTERM, then SIGKILL for svc and any worker process group it reported, should it hang. */
async function stopEngine(engine: RunningEngine): Promise<void> {
  if (!engines.delete(engine)) return
  const workerPids = new Set<number>()
  for (const line of engine.output) {
    try {
      const event = JSON.parse(line)
      if (event.event === 'worker_state' && typeof event.pid === 'number') workerPids.add(event.pid)
    } catch {
      /* not an event */
    }
  }
  const stopped = await Promise.race([engine.stop(), new Promise<'hung'>((r) => setTimeout(() => r('hung'), 15000))])
  if (stopped === 'hung') await engine.kill9()
  for (const pid of workerPids) {
    try {
      process.kill(-pid, 'SIGKILL')
    } catch {
      /* already gone */
    }
  }
}

/**
 * Starts a TypeScript worker's entry as `svc` does (`node src/index.ts`, svc's compile cache), with
 * an `--import` that reports at exit whether Node loaded its type stripper; stops it with SIGTERM
 * once its code ran (it reports its engine connection, to an address nothing listens on).
 */
const compileCacheDirectory = cacheDirectory as (env: NodeJS.ProcessEnv, platform: NodeJS.Platform, home: string) => string

async function firstStartReport(worker: string): Promise<{ amaro: boolean }> {
  const probe = "process.on('exit', () => console.log(JSON.stringify({ amaro: process.moduleLoadList.some((name) => name.includes('amaro')) })))"
  const env = cleanEnv({ SVC_URL: `ws://127.0.0.1:${await freePort()}` })
  env.NODE_COMPILE_CACHE ??= compileCacheDirectory(env, process.platform, homedir())
  const child = spawn(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(probe)}`, 'src/index.ts'], { cwd: worker, env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  await waitFor(() => output.includes('engine connection'), () => `the worker's connection report: ${output}`, 30_000)
  child.kill('SIGTERM')
  await exited
  children.delete(child)
  const report = output.split('\n').find((line) => line.startsWith('{"amaro"'))
  assert.ok(report, output)
  return JSON.parse(report) as { amaro: boolean }
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), redirect: 'manual' })

describe('a new user: init, start, use (issue 3)', () => {
  it('quickstart: installs, svc serves POST /math/add-two-numbers, svc trigger math::add answers {"c": 3}', { timeout: 360_000 }, async () => {
    const cwd = workdir()
    const init = await svc(['project', 'init', 'demo', '--template', 'quickstart'], cwd)
    assert.equal(init.code, 0, init.stdout + init.stderr)
    assert.match(init.stdout, /✔ workers\/math-worker: npm install/)
    assert.match(init.stdout, /✔ workers\/caller-worker: npm install/)
    const demo = join(cwd, 'demo')
    assert.ok(existsSync(join(demo, 'workers', 'math-worker', 'node_modules', 'svc-sdk', 'package.json')))
    assert.ok(existsSync(join(demo, 'workers', 'caller-worker', 'node_modules', '.bin', 'tsx')))
    // init recorded its installs as svc's own, so the first start does not install again.
    for (const worker of ['math-worker', 'caller-worker']) {
      const state = JSON.parse(readFileSync(join(demo, '.svc', 'state', 'workers', `${worker}.json`), 'utf8')) as { install_command?: string; install_hash?: string }
      assert.match(state.install_command ?? '', /^npm install/, worker)
      assert.match(state.install_hash ?? '', /^sha256:/, worker)
    }
    // …and primed Node's compile cache (src/supervisor/prime.ts, issue 20): the worker's first start
    // strips no types itself, so amaro (~17 MiB of RSS) is not in it.
    assert.deepEqual(await firstStartReport(join(demo, 'workers', 'math-worker')), { amaro: false })

    useFreePorts(demo)
    const engine = await startProject(demo)
    try {
      // The workers install (already done) and start under the supervisor; poll until the route answers.
      const answer = await waitFor(
        async () => {
          const res = await post(`${engine.httpUrl}/math/add-two-numbers`, { a: 1, b: 2 })
          if (res.status !== 200) return undefined
          return res.json()
        },
        () => engine.output.join('\n'),
        120_000,
        250,
      )
      assert.deepEqual(answer, { c: 3 })

      const trigger = await svc(['trigger', 'math::add', 'a=1', 'b=2', '--engine', engine.engineUrl], demo)
      assert.equal(trigger.code, 0, `signal ${trigger.signal}; ${trigger.stdout}${trigger.stderr}`)
      assert.deepEqual(JSON.parse(trigger.stdout), { c: 3 })

      const bad = await post(`${engine.httpUrl}/math/add-two-numbers`, { a: 'one' })
      assert.equal(bad.status, 400)

      // The workers' logs hold no npm warning (their install at this first start, cli.md §5.3, and
      // npx's start): the templates declare their install-script policy (allowScripts), and their
      // dependencies agree on their peers.
      for (const worker of ['math-worker', 'caller-worker']) {
        const log = readFileSync(join(demo, '.svc', 'logs', `${worker}.log`), 'utf8')
        assert.doesNotMatch(log, /npm warn/i, log)
      }
      assert.doesNotMatch(engine.output.join('\n'), /installing: npm install/, 'the first start installed again')
    } finally {
      await stopEngine(engine)
    }
  })

  it('starter: installs, GET /hello counts in state and records in the activity stream, the cron schedule runs', { timeout: 360_000 }, async () => {
    const cwd = workdir()
    const init = await svc(['project', 'init', 'hello-app', '--template', 'starter'], cwd)
    assert.equal(init.code, 0, init.stdout + init.stderr)
    const project = join(cwd, 'hello-app')
    assert.ok(existsSync(join(project, 'node_modules', 'svc-sdk', 'package.json')))
    useFreePorts(project)
    // Every second instead of every minute, so that the test sees a run.
    const source = join(project, 'src', 'index.ts')
    const code = readFileSync(source, 'utf8')
    assert.ok(code.includes("expression: '0 * * * * *'"))
    writeFileSync(source, code.replace("expression: '0 * * * * *'", "expression: '* * * * * *'"))

    const engine = await startProject(project)
    try {
      const first = await waitFor(
        async () => {
          const res = await fetch(`${engine.httpUrl}/hello?name=Ada`)
          return res.status === 200 ? res.json() : undefined
        },
        () => engine.output.join('\n'),
        120_000,
        250,
      )
      assert.deepEqual(first, { message: 'Hello, Ada!', count: 1 })
      assert.deepEqual(await (await fetch(`${engine.httpUrl}/hello?name=Bo`)).json(), { message: 'Hello, Bo!', count: 2 })

      const read = async (args: string[]) => {
        const run = await svc(['trigger', ...args, '--engine', engine.engineUrl], project)
        assert.equal(run.code, 0, run.stdout + run.stderr)
        return run.stdout.trim() === '' ? undefined : JSON.parse(run.stdout)
      }
      assert.deepEqual(await read(['state::get', 'scope=counters', 'key=hello']), { greetings: 2 })
      const last = await read(['stream::get', 'stream_name=activity', 'group_id=hello', 'item_id=last-greeting'])
      assert.equal(last.name, 'Bo')
      assert.equal(last.count, 2)
      const tick = await waitFor(
        () => read(['stream::get', 'stream_name=activity', 'group_id=cron', 'item_id=last-tick']),
        () => engine.output.join('\n'),
        30_000,
        250,
      )
      assert.match(tick.scheduled_time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/)
      // The stream trigger logs every change of the activity stream under the worker's name.
      await waitFor(async () => (engine.output.some((line) => line.includes('activity hello/last-greeting: update')) ? true : undefined), () => engine.output.join('\n'), 30_000, 250)
    } finally {
      await stopEngine(engine)
    }
  })

  it('browser: installs; svc serves the page, which the rbac listener admits with the printed token, calls api::hello and answers GET /ask-browser; a wrong token is refused', { timeout: 360_000 }, async () => {
    const browser = await launchChromium()
    try {
      const cwd = workdir()
      const init = await svc(['project', 'init', 'web-app', '--template', 'browser'], cwd)
      assert.equal(init.code, 0, init.stdout + init.stderr)
      const project = join(cwd, 'web-app')
      assert.ok(existsSync(join(project, 'node_modules', 'svc-sdk', 'package.json')))
      assert.ok(existsSync(join(project, 'public', 'svc-browser-sdk.js')))
      useFreePorts(project)
      // The browser listener's port reaches both the listener and the worker through config.yaml.
      const engine = await startProject(project, { BROWSER_PORT: String(await freePort()) })
      try {
        // The worker prints the page's address with the token it made (and keeps in the state worker).
        const token = await waitFor(
          async () => engine.output.join('\n').match(/open http:\/\/localhost:\S+\/\?token=([0-9a-f]{32})/)?.[1],
          () => engine.output.join('\n'),
          120_000,
          250,
        )
        const page = await browser.newPage()
        const pageErrors: string[] = []
        page.on('pageerror', (error) => pageErrors.push(String(error)))
        await page.goto(`${engine.httpUrl}/?token=${token}`)
        await page.locator('#state', { hasText: 'connected' }).waitFor({ timeout: 30_000 })

        // The page calls the Node worker (api:: is exposed on the rbac listener).
        await page.getByRole('button', { name: 'Call api::hello' }).click()
        await page.locator('#answer', { hasText: '"visits": 1' }).waitFor({ timeout: 10_000 })
        assert.deepEqual(JSON.parse(await page.locator('#answer').textContent() ?? ''), { message: 'Hello, Ada, from Node!', visits: 1 })

        // The Node worker calls the page: its `greet` is stored as browser::greet.
        const asked = await waitFor(
          async () => {
            const res = await fetch(`${engine.httpUrl}/ask-browser?name=Ada`)
            return res.status === 200 ? res.json() : undefined
          },
          () => engine.output.join('\n'),
          30_000,
          250,
        )
        assert.deepEqual(asked, { greeting: 'Hello, Ada, from the browser' })
        await page.locator('#asked', { hasText: '1' }).waitFor()

        // A page with a wrong token is refused by gate::auth, and says so.
        const intruder = await browser.newPage()
        await intruder.goto(`${engine.httpUrl}/?token=wrong`)
        await intruder.locator('#problem', { hasText: 'AUTH_ERROR' }).waitFor({ timeout: 30_000 })
        assert.notEqual(await intruder.locator('#state').textContent(), 'connected')
        const withoutToken = await browser.newPage()
        await withoutToken.goto(`${engine.httpUrl}/`)
        await withoutToken.locator('#problem', { hasText: 'Open the address the worker printed' }).waitFor()
        assert.deepEqual(pageErrors, [])
      } finally {
        await stopEngine(engine)
      }
    } finally {
      await browser.close()
    }
  })

  it('link-shortener: installs, svc serves POST /links and GET /s/:code, GET /links/:code counts visits', { timeout: 240_000 }, async () => {
    const cwd = workdir()
    const init = await svc(['project', 'init', 'links', '--template', 'link-shortener', '--json'], cwd)
    assert.equal(init.code, 0, init.stdout + init.stderr)
    assert.equal(JSON.parse(init.stdout).installed, true)
    const project = join(cwd, 'links')

    useFreePorts(project)
    const engine = await startProject(project)
    try {
      const created = await waitFor(
        async () => {
          const res = await post(`${engine.httpUrl}/links`, { url: 'https://nodejs.org/en', code: 'node' })
          return res.status === 404 || res.status === 503 ? undefined : res
        },
        () => engine.output.join('\n'),
        120_000,
        250,
      )
      assert.equal(created.status, 201)
      assert.deepEqual(await created.json(), { code: 'node', url: 'https://nodejs.org/en' })

      const visit = await fetch(`${engine.httpUrl}/s/node`, { redirect: 'manual' })
      assert.equal(visit.status, 302)
      assert.equal(visit.headers.get('location'), 'https://nodejs.org/en')

      const shown = await fetch(`${engine.httpUrl}/links/node`)
      assert.equal(shown.status, 200)
      const link = (await shown.json()) as { visits: number; url: string }
      assert.equal(link.visits, 1)
      assert.equal(link.url, 'https://nodejs.org/en')

      const renamed = await fetch(`${engine.httpUrl}/links/node`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: 'https://nodejs.org/docs' }),
      })
      assert.equal(renamed.status, 200)
      assert.deepEqual(await renamed.json(), { code: 'node', url: 'https://nodejs.org/docs' })
    } finally {
      await stopEngine(engine)
    }
  })
})
