/**
 * microVM isolation (issue 22): boot-to-registered, restart-to-registered and host RSS per VM of a
 * TypeScript (default) or Python (`MICROVM_BENCH_LANG=python`: a host-made .venv with svc-sdk)
 * worker with `isolation: microvm`, through the built `svc` as a user runs it.
 *
 *   npm run build && node bench/microvm.ts            # hardware KVM
 *   SVC_MICROVM_ACCEL=tcg node bench/microvm.ts       # software emulation (any Linux host)
 *   SVC_MICROVM_ACCEL=tcg MICROVM_BENCH_LANG=python node bench/microvm.ts
 *
 * Boot-to-registered: from `svc` logging "booting its microVM" to the worker's `running` state
 * (the guest assets are built first, untimed). Restart-to-registered: from the source edit's
 * "changed; restarting" to `running` again (the VM keeps running). Host RSS: VmRSS of QEMU and its
 * two virtiofsd daemons while the worker idles; their CPU time over the whole run; the load average
 * at the end (other work on the host stretches TCG times). Prints one JSON line.
 */
import { spawn } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { ROOT } from './processes.ts'
import { workerVenv } from '../test/support/python.ts'

const RUNS = Number(process.env.MICROVM_BENCH_RESTARTS ?? 3)
const PYTHON = process.env.MICROVM_BENCH_LANG === 'python'

const pythonSource = (version: number) => `import signal, threading
from svc import register_worker
svc = register_worker()
svc.register_function("vm::version", lambda _data: {"version": ${version}})
stopped = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stopped.set())
stopped.wait()
svc.shutdown()
`

const source = (version: number) => `import { registerWorker } from 'svc-sdk'
const svc = registerWorker()
svc.registerFunction('vm::version', () => ({ version: ${version} }))
process.on('SIGTERM', async () => { await svc.shutdown(); process.exit(0) })
`

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-microvm-'))
writeFileSync(
  join(dir, 'config.yaml'),
  'workers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n  - name: svc-http\n    config:\n      port: 0\n  - name: svc-stream\n    config:\n      port: 0\n  - name: vm\n    worker_path: ./workers/vm\n    isolation: microvm\n',
)
const worker = join(dir, 'workers', 'vm')
mkdirSync(join(worker, 'src'), { recursive: true })
const entry = PYTHON ? join(worker, 'main.py') : join(worker, 'src', 'index.ts')
const write = (version: number) => writeFileSync(entry, PYTHON ? pythonSource(version) : source(version))
if (PYTHON) {
  writeFileSync(join(worker, 'svc.worker.yaml'), 'name: vm\nruntime:\n  kind: python\n  entry: main.py\nscripts:\n  install: "true"\n  start: .venv/bin/python main.py\nresources:\n  cpus: 1\n  memory_mib: 512\n')
  await workerVenv(worker)
} else {
  writeFileSync(join(worker, 'svc.worker.yaml'), 'name: vm\nruntime:\n  kind: typescript\n  entry: src/index.ts\nscripts:\n  install: "true"\n  start: node src/index.ts\nresources:\n  cpus: 1\n  memory_mib: 512\n')
  writeFileSync(join(worker, 'package.json'), '{ "type": "module", "private": true }\n')
}
write(0)
const copied = new Set<string>()
const copy = (name: string) => {
  if (copied.has(name)) return
  copied.add(name)
  const from = realpathSync(join(ROOT, 'node_modules', name))
  cpSync(from, join(worker, 'node_modules', name), { recursive: true, dereference: true, filter: (p) => !/\/(src|test)$/.test(p.slice(from.length)) })
  const manifest = JSON.parse(readFileSync(join(from, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> }
  for (const dependency of Object.keys(manifest.dependencies ?? {})) copy(dependency)
}
if (!PYTHON) copy('svc-sdk')

const child = spawn(process.execPath, [join(ROOT, 'bin', 'run.js'), '--json'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] })
const waiters: Array<{ test: (e: Record<string, unknown>) => boolean; resolve: (t: number) => void }> = []
createInterface({ input: child.stdout! }).on('line', (line) => {
  let event: Record<string, unknown>
  try {
    event = JSON.parse(line)
  } catch {
    return
  }
  const now = performance.now()
  for (const w of [...waiters]) if (w.test(event)) (waiters.splice(waiters.indexOf(w), 1), w.resolve(now))
})
const next = (test: (e: Record<string, unknown>) => boolean) => new Promise<number>((resolve) => waiters.push({ test, resolve }))
const message = (e: Record<string, unknown>) => (e.event === 'log' ? String(e.message) : '')
const running = (e: Record<string, unknown>) => e.event === 'worker_state' && e.worker === 'vm' && e.state === 'running'

/** RSS (bytes) and CPU time (ms, user + system, from /proc/<pid>/stat at 100 ticks/s) of QEMU and its virtiofsd daemons. */
function vmUsage(): { rss: number; cpuMs: number } {
  const state = JSON.parse(readFileSync(join(dir, '.svc', 'state', 'workers', 'vm.json'), 'utf8')) as { pid: number }
  const args = readFileSync(`/proc/${state.pid}/cmdline`, 'utf8').split('\0')
  const runDir = args.find((a) => a.startsWith('file:') && a.includes('svc-vm-'))!.slice(5).replace(/\/console\.log$/, '')
  let rss = 0
  let ticks = 0
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(runDir)) continue
      rss += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1] ?? 0) * 1024
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {}
  }
  return { rss, cpuMs: ticks * 10 }
}

try {
  const bootStart = await next((e) => message(e).includes('booting its microVM'))
  const bootEnd = await next(running)
  const restarts: number[] = []
  for (let i = 1; i <= RUNS; i++) {
    const changed = next((e) => message(e).includes('changed; restarting'))
    const up = next(running)
    write(i)
    const start = await changed
    restarts.push((await up) - start)
  }
  await new Promise((resolve) => setTimeout(resolve, 2000))
  const usage = vmUsage()
  const result = {
    accel: process.env.SVC_MICROVM_ACCEL === 'tcg' ? 'tcg' : 'kvm',
    language: PYTHON ? 'python' : 'typescript',
    boot_to_registered_ms: Math.round(bootEnd - bootStart),
    restart_to_registered_ms: restarts.map(Math.round),
    host_rss_mib: Math.round(usage.rss / 1048576),
    // Host CPU of QEMU and virtiofsd over the boot and the restarts (TCG: the guest's whole work).
    vm_cpu_ms: usage.cpuMs,
    vm: { cpus: 1, memory_mib: 512 },
    load_average: loadavg().map((n) => Number(n.toFixed(2))),
  }
  console.log(JSON.stringify(result))
} finally {
  child.kill('SIGTERM')
  await new Promise((resolve) => child.once('exit', resolve))
  rmSync(dir, { recursive: true, force: true })
}
