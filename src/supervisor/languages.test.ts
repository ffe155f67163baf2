/**
 * Python and Rust workers under the supervisor with the real tool chains (issue 18, cli.md §2.2
 * and §5): a virtual environment per Python worker, `cargo build --release` for a Rust worker, the
 * worker process itself as the supervised pid, restarts on a source change, a Rust rebuild beside
 * the serving binary and a failed build reported with the compiler's first error.
 *
 * The Rust worker has no dependencies (the SDK's build is test/project-languages.test.ts's), so a
 * build takes a second or two; the Python worker's requirements are empty, so pip needs no index.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, describe, it } from 'node:test'
import type { Logger } from '../../runtime/engine/types.ts'
import { superviseWorker } from './supervisor.ts'
import type { OutputLine, SupervisedWorker, WorkerState } from './types.ts'
import { waitFor } from '../../test/support/wait.ts'

const root = mkdtempSync(join(tmpdir(), 'svc-languages-'))
const started: SupervisedWorker[] = []
after(async () => {
  await Promise.all(started.map((w) => w.stop().catch(() => {})))
  rmSync(root, { recursive: true, force: true })
})

function has(command: string, args: string[]): boolean {
  try {
    execFileSync(command, args, { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** Alive and not a zombie. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!)
  } catch {
    return false
  }
}

interface Harness {
  worker: SupervisedWorker
  dir: string
  lines: OutputLine[]
  logs: Array<{ level: string; message: string }>
  states: WorkerState[]
  until(check: () => boolean, what: string, timeoutMs?: number): Promise<void>
  /** `ready <tag> <pid>` lines the worker printed, as [tag, pid]. */
  readies(): Array<[string, number]>
  write(file: string, content: string): void
}

let count = 0
function supervise(files: Record<string, string>, env: Record<string, string> = {}): Harness {
  const dir = join(root, 'workers', `w${count++}`)
  const write = (file: string, content: string) => {
    mkdirSync(dirname(join(dir, file)), { recursive: true })
    writeFileSync(join(dir, file), content)
  }
  for (const [file, content] of Object.entries(files)) write(file, content)
  const lines: OutputLine[] = []
  const logs: Array<{ level: string; message: string }> = []
  const states: WorkerState[] = []
  const readyAt: number[] = []
  const log = Object.fromEntries(
    (['debug', 'info', 'warn', 'error'] as const).map((level) => [level, (message: string) => void logs.push({ level, message })]),
  ) as unknown as Logger
  const worker = superviseWorker(
    {
      name: `w${count}`,
      directory: dir,
      namespace: 'default',
      engineUrl: 'ws://127.0.0.1:1',
      projectRoot: root,
      envBase: 'engine',
      env,
      watch: true,
      isRegistered: (probe) => readyAt.some((t) => t >= probe.startedAtMs),
    },
    { log },
  )
  worker.on('output', (line: OutputLine) => {
    lines.push(line)
    if (line.phase === 'run' && line.text.startsWith('ready ')) readyAt.push(Date.now())
  })
  worker.on('state', (state: WorkerState) => states.push(state))
  started.push(worker)
  const story = () =>
    `state ${worker.state}, states ${states.join(' → ')}\nlogs:\n${logs.map((l) => `  ${l.level} ${l.message}`).join('\n')}\noutput:\n${lines
      .slice(-60)
      .map((l) => `  ${l.phase} ${l.stream} ${l.text}`)
      .join('\n')}`
  return {
    worker,
    dir,
    lines,
    logs,
    states,
    write,
    async until(check, what, timeoutMs = 120_000) {
      await waitFor(check, () => `${what}\n${story()}`, timeoutMs, 50)
    },
    readies: () =>
      lines
        .filter((l) => l.phase === 'run' && l.text.startsWith('ready '))
        .map((l) => {
          const [, tag, pid] = l.text.split(' ')
          return [tag!, Number(pid)]
        }),
  }
}

const python = (tag: string) => `import os, time\nimport helper\nprint('ready', helper.TAG + '${tag}', os.getpid())\nwhile True:\n    time.sleep(1)\n`

describe('a python worker (runtime.kind python)', { skip: has('python3', ['-c', 'import venv, ensurepip']) ? false : 'python3 with venv is not installed' }, () => {
  it('installs into its own .venv, runs the venv interpreter as the worker process, restarts on a .py change and reinstalls on a requirements change', async () => {
    const h = supervise({
      'svc.worker.yaml': 'name: py\nruntime:\n  kind: python\n  entry: main.py\n',
      'requirements.txt': '# nothing from an index\n',
      'main.py': python('1'),
      'helper.py': "TAG = 'v'\n",
      // Empty: Python writes __pycache__/ even where the machine's environment turns that off.
    }, { PYTHONDONTWRITEBYTECODE: '' })
    await h.worker.start()
    await h.worker.waitUntilRunning(120_000)
    assert.ok(existsSync(join(h.dir, '.venv', 'bin', 'python')), 'the worker has its own .venv')
    assert.deepEqual(h.states.slice(0, 3), ['installing', 'starting', 'running'])
    // Printed at once (PYTHONUNBUFFERED) by the process svc supervises: no shell in between.
    const [[tag, pid]] = h.readies() as [[string, number]]
    assert.equal(tag, 'v1')
    assert.equal(h.worker.pid, pid)
    assert.equal(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0], '.venv/bin/python')
    // importing helper wrote __pycache__/, which must not restart it; a .py change does
    assert.ok(existsSync(join(h.dir, '__pycache__')), 'the import wrote __pycache__/')
    h.write('main.py', python('2'))
    await h.until(() => h.readies().some(([t]) => t === 'v2') && h.worker.state === 'running', 'the edited worker to run')
    assert.ok(!alive(pid))
    assert.equal(h.worker.restarts, 1)
    // a change of a module it imports restarts it too
    h.write('helper.py', "TAG = 'w'\n")
    await h.until(() => h.readies().some(([t]) => t === 'w2') && h.worker.state === 'running', 'the worker with the edited module to run')
    const installs = () => h.logs.filter((l) => l.message.includes('installing: python3 -m venv .venv')).length
    assert.equal(installs(), 1)
    h.write('requirements.txt', '# still nothing\n\n')
    await h.until(() => installs() === 2 && h.readies().length === 4 && h.worker.state === 'running', 'the reinstall and restart')
    assert.equal(h.worker.restarts, 3)
  })
})

const cargoToml = '[package]\nname = "rusty"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
const cargoLock = '# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = "rusty"\nversion = "0.1.0"\n'
const rust = (tag: string, extra = '') =>
  `fn main() {\n    ${extra}println!("ready {} {}", "${tag}", std::process::id());\n    loop {\n        std::thread::sleep(std::time::Duration::from_secs(1));\n    }\n}\n`

describe('a rust worker (Cargo.toml, no svc.worker.yaml)', { skip: has('cargo', ['--version']) ? false : 'cargo is not installed' }, () => {
  it('builds and runs the release binary; a change rebuilds beside it; a compile error is reported with its place and the old binary keeps running', async () => {
    const h = supervise({ 'Cargo.toml': cargoToml, 'Cargo.lock': cargoLock, 'src/main.rs': rust('v1') })
    await h.worker.start()
    await h.worker.waitUntilRunning(120_000)
    const [[tag, pid]] = h.readies() as [[string, number]]
    assert.equal(tag, 'v1')
    assert.equal(h.worker.pid, pid, 'the binary is the supervised process')
    assert.ok(existsSync(join(h.dir, 'target', 'release', 'rusty')))
    assert.ok(h.lines.some((l) => l.phase === 'install' && /Compiling rusty/.test(l.text)))

    h.write('src/main.rs', rust('v2'))
    await h.until(() => h.readies().some(([t]) => t === 'v2') && h.worker.state === 'running', 'the rebuilt binary to run')
    assert.ok(h.lines.some((l) => l.phase === 'build' && /Compiling rusty/.test(l.text)))
    // built beside the serving process: it never went back to `installing`
    assert.deepEqual(h.states.slice(3), ['restarting', 'starting', 'running'])
    const [, pid2] = h.readies().find(([t]) => t === 'v2')!

    h.write('src/main.rs', rust('v3', 'let x: u32 = "three";\n    '))
    await h.until(() => h.logs.some((l) => l.level === 'error' && l.message.includes('build failed')), 'the failed build to be reported')
    const report = h.logs.find((l) => l.level === 'error' && l.message.includes('build failed'))!.message
    assert.match(report, /the previous build keeps running:\nerror\[E0308\]: mismatched types\n {2}--> src\/main\.rs:2:18$/)
    assert.equal(h.worker.state, 'running')
    assert.equal(h.worker.pid, pid2)
    assert.ok(alive(pid2))
    assert.match(h.worker.lastError ?? '', /^build 'cargo build --release' exited with code 101: error\[E0308\]: mismatched types \(src\/main\.rs:2:18\)$/)

    h.write('src/main.rs', rust('v4'))
    await h.until(() => h.readies().some(([t]) => t === 'v4') && h.worker.state === 'running', 'the fixed binary to run')
    assert.ok(!alive(pid2))

    // A broken Cargo.toml fails the install (cargo build): reported, and v4 keeps running.
    const [, pid4] = h.readies().find(([t]) => t === 'v4')!
    h.write('Cargo.toml', cargoToml.replace('[dependencies]', '[dependencies\n'))
    await h.until(() => h.logs.some((l) => l.level === 'error' && l.message.includes('install failed')), 'the failed install to be reported')
    const install = h.logs.find((l) => l.level === 'error' && l.message.includes('install failed'))!.message
    assert.match(install, /the previous build keeps running:\nerror: /)
    assert.equal(h.worker.pid, pid4)
    assert.ok(alive(pid4))
    // Restored as it was built: nothing to install, v4 stays; the next edit builds and runs again.
    h.write('Cargo.toml', cargoToml)
    h.write('src/main.rs', rust('v5'))
    await h.until(() => h.readies().some(([t]) => t === 'v5') && h.worker.state === 'running', 'the next edit to build and run')
    assert.ok(!alive(pid4))
  })
})
