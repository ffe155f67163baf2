/**
 * End to end, slow: `isolation: microvm` (cli.md §5.7, issue 22) under software emulation
 * (`SVC_MICROVM_ACCEL=tcg`, so it runs on any Linux host with qemu-system-x86, virtiofsd and apt).
 * A TypeScript worker boots in a microVM, registers, answers `svc trigger`, restarts on a source
 * edit with the new code (the VM keeps running), its output reaches `.svc/logs`, it cannot reach
 * a host port other than the engine's, and stopping `svc` leaves no QEMU, virtiofsd or relay
 * behind. The first run downloads the guest kernel (apt-get download) into the user's cache.
 * Needs `npm run build`. Marked slow: a TCG boot takes 10–60 s on a loaded 2-core machine.
 */
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { chmodSync, chownSync, cpSync, existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createServer } from 'node:net'
import type { Server } from 'node:net'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import { findVmm } from '../src/supervisor/microvm/vm.ts'
import { ROOT, SVC_BIN, startEngineProcess, tempProject } from './support/processes.ts'
import { workerVenv } from './support/python.ts'
import { rustConformanceWorker } from './support/rust.ts'
import { cliEnv, runSvc } from './support/cli.ts'
import type { RunningEngine } from './support/processes.ts'
import { waitFor } from './support/wait.ts'
import { superviseWorker } from '../src/supervisor/supervisor.ts'
import type { SupervisedWorker } from '../src/supervisor/types.ts'
import type { Logger } from '../runtime/engine/types.ts'

/** Why this file cannot run here, or undefined. */
function missing(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') return 'needs Linux on x86-64'
  try {
    findVmm()
  } catch (err) {
    return (err as Error).message
  }
  if (!existsSync('/usr/bin/apt-get') || !existsSync('/usr/bin/dpkg-deb')) return 'needs apt-get and dpkg-deb for the guest kernel'
  return undefined
}
const skip = missing()

/** A TypeScript worker (Node 24 runs it without a build step) that says which version it is. */
function workerSource(version: number): string {
  return `import { connect } from 'node:net'
import { registerWorker } from 'svc-sdk'

/** Tries a TCP connection; resolves 'connected', or the error code, or 'timeout'. */
function reach(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port })
    const timer = setTimeout(() => { socket.destroy(); resolve('timeout') }, 3000)
    socket.once('connect', () => { clearTimeout(timer); socket.destroy(); resolve('connected') })
    socket.once('error', (err: NodeJS.ErrnoException) => { clearTimeout(timer); resolve(err.code ?? 'error') })
  })
}

const version: number = ${version}
const svc = registerWorker()
svc.registerFunction('vm::info', async ({ port }: { port: number }) => ({
  version,
  isolation: process.env.SVC_ISOLATION,
  url: process.env.SVC_URL,
  cwd: process.cwd(),
  hostLoopback: await reach('10.0.2.2', port),
  forwardedAddress: await reach('10.0.2.100', port),
  outside: await reach('1.1.1.1', 80),
}))
console.log('vm worker v' + version + ' up in ' + process.env.SVC_ISOLATION)
process.on('SIGTERM', async () => { await svc.shutdown(); process.exit(0) })
`
}

let dir = ''
let engine: RunningEngine | undefined
let other: Server | undefined
let otherPort = 0
let otherConnections = 0
/** Host processes of the worker's VM (QEMU, virtiofsd), found by its run directory. */
let vmPids: number[] = []

function events(of = engine): Array<Record<string, unknown>> {
  const parsed: Array<Record<string, unknown>> = []
  for (const line of of?.output ?? []) {
    try {
      const event = JSON.parse(line) as unknown
      if (event && typeof event === 'object') parsed.push(event as Record<string, unknown>)
    } catch {}
  }
  return parsed
}

/** Describes a wait with what svc printed so far, for its failure message. */
const svcPrinted = (what: string) => () => `${what}; svc printed:\n${engine?.output.join('\n')}`

/** {@link waitFor} every 100 ms, with what `of` (svc or the compose daemon) printed in its failure message. */
function until<T>(find: () => T | undefined | false, what: string, timeoutMs: number, of = engine): Promise<T> {
  return waitFor(find, () => `${what}; svc printed:\n${of?.output.join('\n')}`, timeoutMs, 100)
}

interface Info {
  version: number
  isolation: string
  url: string
  cwd: string
  hostLoopback: string
  forwardedAddress: string
  outside: string
}

function trigger<T = Info>(functionId = 'vm::info', args = [`port=${otherPort}`], on = { engine: engine!, dir }): Promise<{ code: number | null; json: { ok: boolean; result?: T; error?: { code: string } } }> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env }
    delete env.SVC_URL
    const child = spawn(process.execPath, [SVC_BIN, 'trigger', functionId, ...args, '--engine', on.engine.engineUrl, '--json', '--timeout-ms', '60000'], {
      cwd: on.dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.on('error', reject)
    child.on('close', (code) => {
      try {
        resolve({ code, json: JSON.parse(stdout) })
      } catch {
        reject(new Error(`svc trigger printed no JSON (exit ${code}): ${stdout}`))
      }
    })
  })
}

/** Calls vm::info until it answers with `version` (a restarted worker registers a moment after it connects). */
async function infoOf(version: number, timeoutMs: number): Promise<Info> {
  let last: unknown
  return waitFor(
    async () => {
      const answer = await trigger()
      last = answer.json
      return answer.code === 0 && answer.json.result?.version === version && (answer.json.result as Info)
    },
    () => `vm::info to answer version ${version}; last: ${JSON.stringify(last)}\n${engine?.output.join('\n')}`,
    timeoutMs,
    500,
  )
}

/** Pids of live processes whose command line mentions `needle`. */
function processesWith(needle: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ')
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0]
      if (cmdline.includes(needle) && state !== 'Z') pids.push(Number(entry))
    } catch {}
  }
  return pids
}

describe('isolation: microvm under TCG (slow)', { skip, timeout: 600_000 }, () => {
  before(async () => {
    other = createServer((socket) => {
      otherConnections++
      socket.destroy()
    })
    await new Promise<void>((resolve) => other!.listen(0, '127.0.0.1', resolve))
    otherPort = (other.address() as { port: number }).port
    dir = await tempProject('  - name: vm\n    worker_path: ./workers/vm\n    isolation: microvm\n')
    const worker = join(dir, 'workers', 'vm')
    mkdirSync(join(worker, 'src'), { recursive: true })
    // Small: TCG boots are slow, and the workspace is what the guest reads over virtiofs.
    writeFileSync(
      join(worker, 'svc.worker.yaml'),
      'name: vm\nruntime:\n  kind: typescript\n  entry: src/index.ts\nscripts:\n  install: "true"\n  start: node src/index.ts\nresources:\n  cpus: 1\n  memory_mib: 512\n',
    )
    writeFileSync(join(worker, 'package.json'), '{ "type": "module", "private": true }\n')
    writeFileSync(join(worker, 'src', 'index.ts'), workerSource(1))
    // The SDK and its dependencies as installed packages (the guest sees only the worker
    // directory): copies, not the workspace symlinks, which point outside it.
    const copied = new Set<string>()
    const copy = (name: string) => {
      if (copied.has(name)) return
      copied.add(name)
      const source = realpathSync(join(ROOT, 'node_modules', name))
      cpSync(source, join(worker, 'node_modules', name), { recursive: true, dereference: true, filter: (p) => !/\/(src|test)$/.test(p.slice(source.length)) })
      const manifest = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> }
      for (const dependency of Object.keys(manifest.dependencies ?? {})) copy(dependency)
    }
    copy('svc-sdk')
    engine = await startEngineProcess(dir, [], { SVC_MICROVM_ACCEL: 'tcg' })
  }, { timeout: 120_000 })

  after(async () => {
    other?.close()
    if (engine && engine.child.exitCode === null && engine.child.signalCode === null) await engine.kill9()
    // Whatever is left of this test's VM, should the test fail midway.
    for (const pid of [...processesWith(dir), ...vmPids]) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
    rmSync(dir, { recursive: true, force: true })
  })

  it('boots, registers, answers, restarts on an edit inside the same VM, logs, is fenced off, and leaves nothing behind', { timeout: 540_000 }, async () => {
    const settled = await waitFor(
      () => events().find((e) => e.event === 'worker_state' && e.worker === 'vm' && (e.state === 'running' || e.state === 'failed' || e.state === 'crashed')),
      svcPrinted('the microVM worker to register'),
      300_000,
    )
    assert.equal(settled.state, 'running', `the worker ${String(settled.state)}: ${String(settled.error)}`)
    const first = await infoOf(1, 60_000)
    assert.equal(first.isolation, 'microvm')
    assert.match(first.url, /^ws:\/\/10\.0\.2\.100:\d+$/)
    assert.equal(first.cwd, '/workspace')
    // restrict=on: no host address but the engine's forward, and nothing outside.
    assert.notEqual(first.hostLoopback, 'connected')
    assert.notEqual(first.forwardedAddress, 'connected')
    assert.notEqual(first.outside, 'connected')
    assert.equal(otherConnections, 0)

    const state = JSON.parse(readFileSync(join(dir, '.svc', 'state', 'workers', 'vm.json'), 'utf8')) as { pid: number }
    vmPids = processesWith(readFileSync(`/proc/${state.pid}/cmdline`, 'utf8').split('\0').find((a) => a.startsWith('file:') && a.includes('svc-vm-'))!.slice(5).replace(/\/console\.log$/, ''))
    assert.ok(vmPids.includes(state.pid), `QEMU (pid ${state.pid}) is among ${vmPids.join(', ')}`)
    assert.ok(vmPids.length >= 3, `QEMU and two virtiofsd: ${vmPids.join(', ')}`)

    writeFileSync(join(dir, 'workers', 'vm', 'src', 'index.ts'), workerSource(2))
    const second = await infoOf(2, 300_000)
    assert.equal(second.isolation, 'microvm')
    // The VM kept running: the same QEMU serves the new process.
    const after = JSON.parse(readFileSync(join(dir, '.svc', 'state', 'workers', 'vm.json'), 'utf8')) as { pid: number }
    assert.equal(after.pid, state.pid)

    const log = readFileSync(join(dir, '.svc', 'logs', 'vm.log'), 'utf8')
    assert.match(log, /stdout vm worker v1 up in microvm/)
    assert.match(log, /stdout vm worker v2 up in microvm/)

    assert.equal(await engine!.stop(), 0)
    const left = vmPids.filter((pid) => {
      try {
        process.kill(pid, 0)
        return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z'
      } catch {
        return false
      }
    })
    assert.deepEqual(left, [], 'QEMU and virtiofsd are gone after svc stops')
    assert.deepEqual(processesWith(`nc 127.0.0.1 ${new URL(engine!.engineUrl).port}`), [], 'no engine relay is left')
  })
})

/** A Python worker (svc-sdk from the worker's own .venv) that says where it runs. */
const PYTHON_WORKER = `import os, signal, sys, threading
from svc import register_worker

svc = register_worker()

def through_proxy(host):
    """The status line the registry proxy answers a CONNECT to host:443 with, or the error."""
    import socket
    try:
        with socket.create_connection(("10.0.2.100", int(os.environ.get("PROXY_PORT", "3128"))), timeout=20) as s:
            s.sendall(("CONNECT %s:443 HTTP/1.1\\r\\nhost: %s:443\\r\\n\\r\\n" % (host, host)).encode())
            return s.recv(200).decode("latin-1").split("\\r\\n")[0]
    except OSError as e:
        return type(e).__name__

def info(_data):
    return {
        "proxy_env": os.environ.get("HTTPS_PROXY"),
        "proxy_for_worker": through_proxy("pypi.org"),
        "isolation": os.environ.get("SVC_ISOLATION"),
        "cwd": os.getcwd(),
        "prefix": sys.prefix,
        "executable": sys.executable,
        "sdk": sys.modules["svc"].__file__,
        "version": "%d.%d" % sys.version_info[:2],
    }

svc.register_function("vm::py", info)
print("python vm worker up in", os.environ.get("SVC_ISOLATION"), flush=True)
stopped = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stopped.set())
stopped.wait()
svc.shutdown()
`

/** The install step of the Python worker in the guest: what the registry proxy answers it. */
const PROXY_PROBE = `import os, socket
print("install HTTPS_PROXY=%s" % os.environ.get("HTTPS_PROXY"), flush=True)
port = int(os.environ["HTTPS_PROXY"].rsplit(":", 1)[1])
for host in ["evil.example.com", "pypi.org"]:
    try:
        with socket.create_connection(("10.0.2.100", port), timeout=30) as s:
            s.sendall(("CONNECT %s:443 HTTP/1.1\\r\\nhost: %s:443\\r\\n\\r\\n" % (host, host)).encode())
            print("install %s -> %s" % (host, s.recv(200).decode("latin-1").split("\\r\\n")[0]), flush=True)
    except OSError as e:
        print("install %s -> %s" % (host, type(e).__name__), flush=True)
`

interface PyInfo {
  proxy_env: string | null
  proxy_for_worker: string
  isolation: string
  cwd: string
  prefix: string
  executable: string
  sdk: string
  version: string
}

/** `svc compose up` in `cwd` as a daemon: its JSON events, and its exit. */
function composeUp(cwd: string, engineUrl: string, namespace: string): { child: ChildProcess; events: Array<Record<string, unknown>>; output: string[]; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [SVC_BIN, 'compose', 'up', '-n', namespace, '--engine', engineUrl, '--json'], {
    cwd,
    // Guest installs: the install step runs in the VM behind the registry proxy.
    env: cliEnv({ SVC_MICROVM_ACCEL: 'tcg', SVC_MICROVM_INSTALL: 'guest' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const events: Array<Record<string, unknown>> = []
  const output: string[] = []
  createInterface({ input: child.stdout! }).on('line', (line) => {
    output.push(line)
    try {
      events.push(JSON.parse(line))
    } catch {}
  })
  child.stderr!.on('data', (d) => output.push(String(d)))
  return { child, events, output, exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))) }
}

describe('isolation: microvm for a Python worker under svc compose, TCG (slow)', { skip, timeout: 600_000 }, () => {
  let pyDir = ''
  let pyEngine: RunningEngine | undefined
  let daemon: ReturnType<typeof composeUp> | undefined
  let pyVmPids: number[] = []
  const NS = 'vm-py'

  before(async () => {
    pyDir = await tempProject('')
    const worker = join(pyDir, 'workers', 'py')
    mkdirSync(worker, { recursive: true })
    writeFileSync(
      join(worker, 'svc.worker.yaml'),
      'name: py\nruntime:\n  kind: python\n  entry: main.py\nscripts:\n  install: .venv/bin/python probe.py\n  start: .venv/bin/python main.py\nresources:\n  cpus: 1\n  memory_mib: 512\n',
    )
    writeFileSync(join(worker, 'main.py'), PYTHON_WORKER)
    writeFileSync(join(worker, 'probe.py'), PROXY_PROBE)
    // A venv made on the host as svc's inferred install makes it (its bin/python links to the
    // host interpreter by absolute path), with svc-sdk and its dependencies copied in.
    await workerVenv(worker)
    // A TCG boot on a loaded machine takes minutes, not the default 30 s.
    writeFileSync(join(pyDir, 'worker-compose.yaml'), 'startup_timeout: 400s\ncontainers:\n  py:\n    worker: path://./workers/py\n    isolation: microvm\n    watch: false\n')
    pyEngine = await startEngineProcess(pyDir)
  }, { timeout: 300_000 })

  after(async () => {
    if (daemon && daemon.child.exitCode === null && daemon.child.signalCode === null) daemon.child.kill('SIGKILL')
    if (pyEngine && pyEngine.child.exitCode === null && pyEngine.child.signalCode === null) await pyEngine.stop()
    for (const pid of [...processesWith(pyDir), ...pyVmPids]) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
    rmSync(pyDir, { recursive: true, force: true })
  })

  it('registers from its .venv in the guest, answers, shows its VM in compose status, logs, and leaves nothing behind', { timeout: 540_000 }, async () => {
    daemon = composeUp(pyDir, pyEngine!.engineUrl, NS)
    const up = await until(() => daemon!.events.find((e) => e.event === 'project_up') ?? (daemon!.child.exitCode !== null && { status: `exited ${daemon!.child.exitCode}` }), 'svc compose up', 420_000, { output: daemon.output } as RunningEngine)
    assert.equal(up.status, 'ok', `${JSON.stringify(up)}\n${daemon.output.join('\n')}`)
    const answer = await trigger<PyInfo>('vm::py', ['-n', NS], { engine: pyEngine!, dir: pyDir })
    assert.equal(answer.code, 0, JSON.stringify(answer.json))
    const info = answer.json.result!
    assert.equal(info.isolation, 'microvm')
    assert.equal(info.cwd, '/workspace')
    // The venv's interpreter, found through its pyvenv.cfg; the SDK from its site-packages.
    assert.equal(info.prefix, '/workspace/.venv')
    assert.equal(info.executable, '/workspace/.venv/bin/python')
    assert.match(info.sdk, /^\/workspace\/\.venv\/lib\/python3\.\d+\/site-packages\/svc\/__init__\.py$/)
    // The install step ran in the guest behind the registry proxy: another host refused, PyPI let
    // through (200, or 502 where this host has no route to it); the worker itself gets no proxy.
    const installLog = readFileSync(join(pyDir, '.svc', 'logs', NS, 'py.log'), 'utf8')
    assert.match(installLog, /install HTTPS_PROXY=http:\/\/10\.0\.2\.100:3128/)
    assert.match(installLog, /install evil\.example\.com -> HTTP\/1\.1 403 Forbidden/)
    assert.match(installLog, /install pypi\.org -> HTTP\/1\.1 (200|502) /)
    assert.equal(info.proxy_env, null)
    assert.match(info.proxy_for_worker, /^HTTP\/1\.1 403 /)

    // svc compose status: the isolation and the VM's host RSS, in the table and in --json.
    const json = await runSvc(['compose', 'status', '-n', NS, '--json', '--engine', pyEngine!.engineUrl], { cwd: pyDir })
    assert.equal(json.code, 0, json.stderr)
    const status = JSON.parse(json.stdout) as { containers: Array<{ container: string; pid: number; isolation?: string; vm_rss_bytes?: number }> }
    const py = status.containers.find((c) => c.container === 'py')!
    assert.equal(py.isolation, 'microvm')
    assert.ok(py.vm_rss_bytes! > 16 * 1048576, `host RSS of QEMU and virtiofsd: ${py.vm_rss_bytes}`)
    const human = await runSvc(['compose', 'status', '-n', NS, '--engine', pyEngine!.engineUrl], { cwd: pyDir })
    assert.match(human.stdout, /^py +path:\/\/\.\/workers\/py \(microvm, \d+ MiB\) +ready/m)

    pyVmPids = processesWith(readFileSync(`/proc/${py.pid}/cmdline`, 'utf8').split('\0').find((a) => a.startsWith('file:') && a.includes('svc-vm-'))!.slice(5).replace(/\/console\.log$/, ''))
    assert.ok(pyVmPids.length >= 3, `QEMU and two virtiofsd: ${pyVmPids.join(', ')}`)
    const log = join(pyDir, '.svc', 'logs', NS, 'py.log')
    await until(() => existsSync(log) && /python vm worker up in microvm/.test(readFileSync(log, 'utf8')), `the worker's line in ${log}`, 30_000, { output: daemon.output } as RunningEngine)

    daemon.child.kill('SIGTERM')
    assert.equal(await daemon.exited, 0)
    const left = pyVmPids.filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z'
      } catch {
        return false
      }
    })
    assert.deepEqual(left, [], 'QEMU and virtiofsd are gone after the compose daemon stops')
  })
})

describe('isolation: microvm for a Rust release binary under TCG (slow)', { skip, timeout: 1_200_000 }, () => {
  let rsDir = ''
  let rsEngine: RunningEngine | undefined
  let rsVmPids: number[] = []

  before(async () => {
    // The Rust conformance worker (test/conformance/README.md) is the release binary: built once by
    // test/support/rust.ts (minutes on the first run), copied where cargo would leave it.
    const binary = await rustConformanceWorker()
    rsDir = await tempProject('  - name: conf-rust-a\n    worker_path: ./workers/rs\n    isolation: microvm\n')
    const worker = join(rsDir, 'workers', 'rs')
    mkdirSync(join(worker, 'target', 'release'), { recursive: true })
    cpSync(binary, join(worker, 'target', 'release', 'conformance-worker'))
    // It shuts down at the end of stdin, which the guest closes: a pipe that never ends keeps it up.
    writeFileSync(
      join(worker, 'svc.worker.yaml'),
      'name: conf-rust-a\nruntime:\n  kind: rust\n  entry: conformance-worker\nscripts:\n  install: "true"\n  start: /bin/busybox tail -f /dev/null | target/release/conformance-worker\nenv:\n  CONF_PREFIX: conf-rust\n  CONF_WORKER: a\nresources:\n  cpus: 1\n  memory_mib: 256\nwatch:\n  enabled: false\n',
    )
    rsEngine = await startEngineProcess(rsDir, [], { SVC_MICROVM_ACCEL: 'tcg' })
  }, { timeout: 900_000 })

  after(async () => {
    if (rsEngine && rsEngine.child.exitCode === null && rsEngine.child.signalCode === null) await rsEngine.kill9()
    for (const pid of [...processesWith(rsDir), ...rsVmPids]) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
    rmSync(rsDir, { recursive: true, force: true })
  })

  it('runs target/release/<bin> from /workspace on a root of its libraries, answers, and leaves nothing behind', { timeout: 540_000 }, async () => {
    const settled = await until(
      () => events(rsEngine).find((e) => e.event === 'worker_state' && e.worker === 'conf-rust-a' && (e.state === 'running' || e.state === 'failed' || e.state === 'crashed')),
      'the Rust microVM worker to register',
      420_000,
      rsEngine,
    )
    assert.equal(settled.state, 'running', `the worker ${String(settled.state)}: ${String(settled.error)}`)
    const answer = await trigger<{ sdk: string; worker: string }>('conf-rust::whoami', [], { engine: rsEngine!, dir: rsDir })
    assert.equal(answer.code, 0, JSON.stringify(answer.json))
    assert.deepEqual(answer.json.result, { sdk: 'rust', worker: 'a' })
    const state = JSON.parse(readFileSync(join(rsDir, '.svc', 'state', 'workers', 'conf-rust-a.json'), 'utf8')) as { pid: number }
    const args = readFileSync(`/proc/${state.pid}/cmdline`, 'utf8').split('\0')
    rsVmPids = processesWith(args.find((a) => a.startsWith('file:') && a.includes('svc-vm-'))!.slice(5).replace(/\/console\.log$/, ''))
    assert.ok(args.some((a) => /root-native-[0-9a-f]{16}/.test(a)), 'the VM shares a native root')
    assert.equal(await rsEngine!.stop(), 0)
    const left = rsVmPids.filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z'
      } catch {
        return false
      }
    })
    assert.deepEqual(left, [], 'QEMU and virtiofsd are gone after svc stops')
  })
})

/**
 * svc as a normal user (issue 22: "the VMM and the file-sharing daemons run without root where the
 * host allows"): a child Node process as `nobody` with no supplementary groups boots a MicroVm under
 * TCG (no /dev/kvm needed) from assets it can read, runs a command in the guest that reads and
 * writes /workspace, and reports how QEMU and virtiofsd ran. Needs root to become `nobody`.
 */
describe('a microVM booted by a user without root, TCG (slow)', { skip: skip ?? (process.getuid?.() !== 0 ? 'needs root to start a process as nobody' : undefined), timeout: 600_000 }, () => {
  const NOBODY = 65534
  let scratch = ''
  let hostPids: number[] = []
  let runner: ChildProcess | undefined

  after(() => {
    runner?.kill('SIGKILL')
    for (const pid of hostPids) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
    if (scratch) rmSync(scratch, { recursive: true, force: true })
  })

  it('runs QEMU as the user and virtiofsd in a user namespace; the guest reads and writes the workspace as that user', { timeout: 540_000 }, async () => {
    const { ensureGuestAssets } = await import('../src/supervisor/microvm/roots.ts')
    const { microvmCacheDir } = await import('../src/supervisor/microvm/probe.ts')
    const built = await ensureGuestAssets({ cacheDir: microvmCacheDir(), runtime: { kind: 'native', binary: undefined } })
    // root's cache (~/.cache is 0700) is out of nobody's reach: the kernel and initramfs as hard
    // links in a directory it can read, the root as nobody's own copy, as in a user's own cache
    // (files of an owner the namespace does not map show as nobody in the guest, and do not execute).
    scratch = mkdtempSync(join(tmpdir(), 'svc-vm-nobody-'))
    chmodSync(scratch, 0o755)
    const assets = { kernel: join(scratch, 'vmlinuz'), initrd: join(scratch, 'initrd.img'), root: join(scratch, 'root') }
    linkSync(built.kernel, assets.kernel)
    linkSync(built.initrd, assets.initrd)
    execFileSync('cp', ['-a', built.root, assets.root])
    execFileSync('chown', ['-R', `${NOBODY}:${NOBODY}`, assets.root])
    const workspace = join(scratch, 'workspace')
    mkdirSync(workspace)
    writeFileSync(join(workspace, 'marker'), 'from-the-host\n')
    chownSync(workspace, NOBODY, NOBODY)
    const vmModule = join(ROOT, 'src', 'supervisor', 'microvm', 'vm.ts')
    const script = `
      import { readFileSync } from 'node:fs'
      const { MicroVm } = await import(${JSON.stringify(vmModule)})
      const vm = new MicroVm({ name: 'nobody', assets: ${JSON.stringify(assets)}, workspace: ${JSON.stringify(workspace)}, accel: 'tcg', cpus: 1, memoryMib: 256, enginePort: 9, bootTimeoutMs: 480000 })
      const report = (what) => console.log(JSON.stringify(what))
      try {
        const booting = vm.boot()
        const announce = setInterval(() => { if (vm.hostPids().length === 3) { report({ pids: vm.hostPids() }); clearInterval(announce) } }, 20)
        await booting
        const uids = vm.hostPids().map((pid) => Number(/^Uid:\\s+(\\d+)/m.exec(readFileSync('/proc/' + pid + '/status', 'utf8'))[1]))
        const lines = []
        vm.on('line', (stream, text) => lines.push(stream + ' ' + text))
        const exited = new Promise((resolve) => vm.once('exit', resolve))
        vm.start({ command: 'echo guest: $(cat marker) && echo from-the-guest > written', cwd: '/workspace', env: {} })
        const exit = await exited
        // The output ports may trail the exit event on the control port.
        for (let i = 0; i < 100 && lines.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
        report({ lines, exit, uids, confinement: vm.confinement })
      } catch (err) {
        report({ error: String(err.message) })
      }
      await vm.shutdown()
      process.exit(0)
    `
    const child = (runner = spawn('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--', process.execPath, '--input-type=module', '-e', script], {
      cwd: scratch,
      stdio: ['ignore', 'pipe', 'pipe'],
    }))
    let stderr = ''
    child.stderr!.on('data', (d) => (stderr += d))
    const reports: Array<Record<string, unknown>> = []
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const report = JSON.parse(line) as Record<string, unknown>
      if (Array.isArray(report.pids)) hostPids = report.pids as number[]
      reports.push(report)
    })
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    const result = reports.find((r) => 'lines' in r || 'error' in r)
    assert.ok(result && !('error' in result), `the VM booted as nobody: ${JSON.stringify(result)} (exit ${code}); stderr: ${stderr}`)
    assert.deepEqual(result.lines, ['stdout guest: from-the-host'])
    assert.deepEqual(result.exit, { gen: 1, code: 0, signal: null })
    assert.deepEqual(result.uids, [NOBODY, NOBODY, NOBODY], 'QEMU and both virtiofsd run as nobody')
    assert.deepEqual(result.confinement, { runtime: 'userns-user', workspace: 'userns-user', qemu: 'user' })
    // The guest's root wrote through virtiofsd in the namespace: on the host, the file is nobody's.
    assert.equal(readFileSync(join(workspace, 'written'), 'utf8'), 'from-the-guest\n')
    assert.equal(statSync(join(workspace, 'written')).uid, NOBODY)
    assert.equal(code, 0)
  })
})

/**
 * "has not registered after 15 s" (issue 22): under TCG the runtime starts slowly in the guest, so a
 * microVM worker's note comes after 8× a process worker's budget (REGISTRATION_NOTE_FACTOR), counted
 * from the VM being up, and says which budget it had. The supervisor alone, with a 1 s budget and
 * a guest process that never registers.
 */
describe('the registration note of a microVM worker under TCG (slow)', { skip, timeout: 600_000 }, () => {
  let project = ''
  let worker: SupervisedWorker | undefined
  const accel = process.env.SVC_MICROVM_ACCEL

  after(async () => {
    await worker?.stop().catch(() => {})
    if (accel === undefined) delete process.env.SVC_MICROVM_ACCEL
    else process.env.SVC_MICROVM_ACCEL = accel
    for (const pid of project ? processesWith(project) : []) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
    if (project) rmSync(project, { recursive: true, force: true })
  })

  it('comes after 8× the process budget, from the boot, naming the budget', { timeout: 540_000 }, async () => {
    process.env.SVC_MICROVM_ACCEL = 'tcg'
    project = mkdtempSync(join(tmpdir(), 'svc-vm-note-'))
    const dir = join(project, 'workers', 'quiet')
    mkdirSync(dir, { recursive: true })
    writeFileSync(
      join(dir, 'svc.worker.yaml'),
      'name: quiet\nruntime:\n  kind: javascript\n  entry: index.js\nisolation: microvm\nscripts:\n  install: "true"\n  start: exec /bin/busybox sleep 600\nresources:\n  cpus: 1\n  memory_mib: 256\nwatch:\n  enabled: false\n',
    )
    const logs: Array<{ at: number; level: string; message: string }> = []
    const log = Object.fromEntries((['debug', 'info', 'warn', 'error'] as const).map((level) => [level, (message: string) => void logs.push({ at: Date.now(), level, message })])) as unknown as Logger
    worker = superviseWorker(
      { name: 'quiet', directory: dir, namespace: 'default', engineUrl: 'ws://127.0.0.1:9', projectRoot: project, envBase: 'engine', env: {}, watch: false, isRegistered: () => false },
      { log, timings: { registrationNoteMs: 1000 } },
    )
    await worker.start()
    const story = () => logs.map((l) => `${l.level} ${l.message}`).join('\n')
    const started = await waitFor(() => logs.find((l) => l.message.startsWith('quiet starting: ')), () => `the guest process to start:\n${story()}`, 420_000, 100)
    const note = await waitFor(() => logs.find((l) => l.message.includes('has not registered after')), () => `the registration note:\n${story()}`, 120_000, 100)
    assert.equal(note.level, 'warn')
    assert.match(note.message, /^quiet has not registered after \d+(\.\d+)? ?s \(a microVM worker under software emulation gets 8 s\); it must connect to SVC_URL/)
    // The process budget (1 s) would have noted it within a second or two of the start.
    assert.ok(note.at - started.at >= 7000, `the note came ${note.at - started.at} ms after the start`)
  })
})

/**
 * The q35 fallback (cli.md §5.7, issue 22: "`-M microvm` (q35 fallback)"): a QEMU that refuses the
 * microvm machine at start (a wrapper on PATH around the real one, which says what an old or
 * stripped QEMU says) gets a second boot with `-M q35` and virtio-pci devices; the guest mounts
 * both shares and runs a command. One real TCG boot (plus the refused start, which fails at once).
 */
describe('the q35 fallback, TCG (slow)', { skip, timeout: 600_000 }, () => {
  let scratch = ''
  let vm: import('../src/supervisor/microvm/vm.ts').MicroVm | undefined
  const path = process.env.PATH

  after(async () => {
    process.env.PATH = path
    await vm?.shutdown(0).catch(() => {})
    if (scratch) rmSync(scratch, { recursive: true, force: true })
  })

  it('boots with -M q35 when QEMU refuses -M microvm, and the guest works', { timeout: 540_000 }, async () => {
    const { ensureGuestAssets } = await import('../src/supervisor/microvm/roots.ts')
    const { microvmCacheDir } = await import('../src/supervisor/microvm/probe.ts')
    const { MicroVm } = await import('../src/supervisor/microvm/vm.ts')
    const real = findVmm().qemu
    const assets = await ensureGuestAssets({ cacheDir: microvmCacheDir(), runtime: { kind: 'native', binary: undefined } })
    scratch = mkdtempSync(join(tmpdir(), 'svc-vm-q35-'))
    const bin = join(scratch, 'bin')
    mkdirSync(bin)
    writeFileSync(
      join(bin, 'qemu-system-x86_64'),
      `#!/bin/sh\nfor a in "$@"; do case "$a" in microvm,*) echo "qemu-system-x86_64: -M microvm: unsupported machine type" >&2; exit 1 ;; esac; done\nexec ${real} "$@"\n`,
      { mode: 0o755 },
    )
    const workspace = join(scratch, 'workspace')
    mkdirSync(workspace)
    writeFileSync(join(workspace, 'marker'), 'from-the-host\n')
    process.env.PATH = `${bin}:${path}`
    vm = new MicroVm({ name: 'q35', assets, workspace, accel: 'tcg', cpus: 1, memoryMib: 256, enginePort: 9, bootTimeoutMs: 480_000 })
    const fallbacks: string[] = []
    vm.on('fallback', (reason: string) => fallbacks.push(reason))
    await vm.boot()
    assert.equal(fallbacks.length, 1)
    assert.match(fallbacks[0]!, /unsupported machine type/)
    assert.equal(vm.machine, 'q35')
    const cmdline = readFileSync(`/proc/${vm.pid}/cmdline`, 'utf8').split('\0')
    assert.ok(cmdline.includes('q35,memory-backend=mem'), cmdline.join(' '))
    assert.ok(cmdline.includes('virtio-net-pci,netdev=net0'), cmdline.join(' '))
    const lines: string[] = []
    vm.on('line', (stream: string, text: string) => lines.push(`${stream} ${text}`))
    const exited = new Promise((resolve) => vm!.once('exit', resolve))
    vm.start({ command: 'echo guest: $(cat marker) && echo from-the-guest > written', cwd: '/workspace', env: {} })
    assert.deepEqual(await exited, { gen: 1, code: 0, signal: null })
    await waitFor(() => lines.length > 0, () => 'the guest output', 10_000, 50)
    assert.deepEqual(lines, ['stdout guest: from-the-host'])
    assert.equal(readFileSync(join(workspace, 'written'), 'utf8'), 'from-the-guest\n')
    const pids = vm.hostPids()
    await vm.shutdown()
    assert.deepEqual(pids.filter((pid) => existsSync(`/proc/${pid}`) && readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z'), [], 'nothing left after the shutdown')
  })
})
