/**
 * One microVM (cli.md §5.7): QEMU's `microvm` machine (q35 where it is missing) with two virtiofs
 * daemons (the runtime root, read-only in the guest under a tmpfs overlay, `cache=always`; the worker
 * directory at `/workspace`, `cache=none`), three virtio-serial ports (`svc.ctl`, `svc.out`,
 * `svc.err`) on unix sockets this process listens on, and user-mode networking with `restrict=on`
 * where only `10.0.2.100:<engine port>` leads anywhere: to the engine's loopback port.
 *
 * The VM outlives the worker process in it: {@link MicroVm.start} and {@link MicroVm.restart}
 * drive the guest agent ({@link AGENT_SCRIPT}), {@link MicroVm.shutdown} powers it off and reaps
 * QEMU and the daemons (SIGTERM, then SIGKILL).
 */
import { execFileSync, spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { EventEmitter } from 'node:events'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import type { Server, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { startLine } from './agent.ts'
import type { GuestCommand } from './agent.ts'
import type { GuestAssets } from './assets.ts'
import { findProgram, MicrovmSetupError } from './assets.ts'
import { confinedCommand, hostIdentity, ownerOf } from './privileges.ts'
import type { Confinement } from './privileges.ts'

/** The guest address that leads to the engine (cli.md §5.7). */
export const ENGINE_GUEST_ADDRESS = '10.0.2.100'

export interface MicroVmOptions {
  name: string
  assets: GuestAssets
  /** Absolute worker directory, shared at `/workspace`. */
  workspace: string
  accel: 'kvm' | 'tcg'
  /** `resources.cpus` (1–4) and `resources.memory_mib` (128–4096). */
  cpus: number
  memoryMib: number
  /** The engine's loopback port, forwarded from `10.0.2.100:<port>`. */
  enginePort: number
  /** Host address the forward connects to. Default `127.0.0.1`. */
  engineHost?: string
  /** How long the guest may take to report `ready` (ms). */
  bootTimeoutMs: number
  /**
   * The machine to boot, with no fallback; default: `microvm` where this QEMU has it
   * ({@link machineAvailable}), and `q35` when it has not or when QEMU fails with it.
   */
  machine?: QemuMachine
  /**
   * The registry proxy's loopback port, forwarded from `10.0.2.100:`{@link registryProxyGuestPort}
   * (guest installs only); undefined forwards nothing more than the engine.
   */
  registryProxyPort?: number
}

/**
 * The guest port of the registry proxy on `10.0.2.100`: 3128 (`HTTPS_PROXY=http://10.0.2.100:3128`),
 * or 3129 when the engine itself listens on 3128.
 */
export function registryProxyGuestPort(enginePort: number): number {
  return enginePort === 3128 ? 3129 : 3128
}

/** QEMU's machine types svc boots: `microvm` (virtio-mmio devices), or `q35` (virtio-pci devices). */
export type QemuMachine = 'microvm' | 'q35'

/** QEMU, the daemons and the agent as the host sees them. */
export interface MicroVmExit {
  gen: number
  /** Exit code; a code above 128 is reported as the signal 128 less. */
  code: number | null
  signal: NodeJS.Signals | null
}

/** The three programs a microVM needs on the host, or the error naming the package to install. */
export function findVmm(): { qemu: string; virtiofsd: string; busyboxNc?: string } {
  const qemu = findProgram(['qemu-system-x86_64'])
  if (!qemu) {
    throw new MicrovmSetupError(
      'MICROVM_RUNTIME_NOT_FOUND',
      'microVM runtime not found: install qemu-system-x86 (apt-get install -y qemu-system-x86) or use isolation: process',
    )
  }
  const virtiofsd = findProgram(['virtiofsd'], ['/usr/libexec/virtiofsd', '/usr/lib/qemu/virtiofsd'])
  if (!virtiofsd) {
    throw new MicrovmSetupError(
      'MICROVM_RUNTIME_NOT_FOUND',
      'microVM runtime not found: virtiofsd is missing; install virtiofsd (apt-get install -y virtiofsd) or qemu-system-x86 7.2, which carries it, or use isolation: process',
    )
  }
  return { qemu, virtiofsd }
}

const SIGNALS: Record<number, NodeJS.Signals> = { 1: 'SIGHUP', 2: 'SIGINT', 9: 'SIGKILL', 15: 'SIGTERM', 6: 'SIGABRT', 11: 'SIGSEGV' }

/**
 * A booted (or booting) microVM. Events: `line` (stream: 'stdout' | 'stderr', text: string) for
 * every line the worker prints; `exit` ({@link MicroVmExit}) when a worker process ends; `down`
 * (reason: string) when QEMU exits.
 */
export class MicroVm extends EventEmitter {
  readonly options: MicroVmOptions
  #runDir: string
  /** The machine QEMU was started with last (`q35` after a fallback). */
  machine: QemuMachine | undefined
  /** True once the agent's control port connected: QEMU exiting before that is an early failure. */
  #connected = false
  #qemu: ChildProcess | undefined
  #daemons: ChildProcess[] = []
  #servers: Server[] = []
  #sockets: Socket[] = []
  #ctl: Socket | undefined
  #ready: Promise<void> | undefined
  #down = false
  #gen = 0
  /** Generation → pid of the worker's process group leader in the guest. */
  readonly pids = new Map<number, number>()
  /** How QEMU and each virtiofsd (by share tag) run on the host, once started ({@link confinedCommand}). */
  readonly confinement: { qemu?: Confinement; runtime?: Confinement; workspace?: Confinement } = {}

  constructor(options: MicroVmOptions) {
    super()
    this.options = options
    // Unix socket paths are limited to 107 bytes: a short directory under the temp dir.
    this.#runDir = mkdtempSync(join(tmpdir(), 'svc-vm-'))
  }

  /** This VM's directory of sockets and the console log (a new one after a fallback). */
  get runDir(): string {
    return this.#runDir
  }

  /** Pid of QEMU while it runs. */
  get pid(): number | undefined {
    return this.#down ? undefined : this.#qemu?.pid
  }

  /** True until QEMU has exited. */
  get alive(): boolean {
    return !this.#down && this.#qemu !== undefined
  }

  /**
   * Resident memory of QEMU and the virtiofs daemons on the host, bytes (from `/proc/<pid>/status`
   * VmRSS); 0 when the VM is down.
   */
  hostRssBytes(): number {
    let total = 0
    for (const child of [this.#qemu, ...this.#daemons]) {
      if (!child?.pid || child.exitCode !== null || child.signalCode !== null) continue
      try {
        const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))
        if (m) total += Number(m[1]) * 1024
      } catch {}
    }
    return total
  }

  /** Pids of every host process of this VM (QEMU and the daemons), for checks that nothing is left. */
  hostPids(): number[] {
    return [this.#qemu, ...this.#daemons].map((c) => c?.pid).filter((p): p is number => p !== undefined)
  }

  /**
   * Starts the daemons and QEMU and resolves once the agent reports `ready`. With `microvm`, a QEMU
   * that exits before the guest's agent connects (the machine type is refused, or the guest kernel
   * cannot use it) is tried once more with `q35`: event `fallback` (reason: string) first.
   *
   * @throws {MicrovmSetupError} `MICROVM_RUNTIME_NOT_FOUND` (no QEMU or virtiofsd), `MICROVM_BOOT_FAILED`
   *   (QEMU exited, or no `ready` within `bootTimeoutMs`; the message quotes the guest console).
   */
  boot(): Promise<void> {
    this.#ready ??= this.#bootWithFallback()
    return this.#ready
  }

  async #bootWithFallback(): Promise<void> {
    const { qemu } = findVmm()
    const first = this.options.machine ?? (machineAvailable(qemu, 'microvm') ? 'microvm' : 'q35')
    try {
      await this.#boot(first)
    } catch (err) {
      if (this.options.machine !== undefined || first !== 'microvm' || !this.#earlyExit) throw err
      this.emit('fallback', (err as Error).message)
      // A fresh start: shutdown() removed the run directory and reaped the daemons.
      this.#runDir = mkdtempSync(join(tmpdir(), 'svc-vm-'))
      this.#qemu = undefined
      this.#earlyExit = false
      this.#stopping = false
      this.#daemons = []
      this.#servers = []
      this.#sockets = []
      this.#ctl = undefined
      this.#down = false
      await this.#boot('q35')
    }
  }

  /** QEMU exited by itself before the agent connected (not stopped by svc, not after a timeout). */
  #earlyExit = false
  #stopping = false

  async #boot(machine: QemuMachine): Promise<void> {
    const o = this.options
    const { qemu, virtiofsd } = findVmm()
    const dir = this.runDir
    this.machine = machine
    const identity = hostIdentity()
    const shares = (
      [
        ['runtime', o.assets.root, 'always'],
        ['workspace', o.workspace, 'none'],
      ] as const
    ).map(([tag, source, cache]) => {
      const socket = join(dir, `${tag}.fs.sock`)
      const daemonArgs = [`--socket-path=${socket}`, '-o', `source=${source}`, '-o', `cache=${cache}`, '-o', `log_level=${process.env.SVC_MICROVM_DEBUG ? 'debug' : 'err'}`]
      // Throws before anything starts when this host cannot run virtiofsd without root.
      return { tag, source, socket, command: confinedCommand('virtiofsd', virtiofsd, daemonArgs, identity, ownerOf(source)) }
    })
    const ready = new Promise<void>((resolve, reject) => {
      this.once('ready', resolve)
      this.once('down', (reason: string) => reject(new MicrovmSetupError('MICROVM_BOOT_FAILED', `${o.name}: the microVM stopped while booting (${reason})${this.#consoleTail()}`)))
    })
    ready.catch(() => {})
    // The ports: QEMU connects to these as a client.
    await this.#listen(join(dir, 'ctl.sock'), (socket) => this.#onControl(socket))
    await this.#listen(join(dir, 'out.sock'), (socket) => this.#onOutput(socket, 'stdout'))
    await this.#listen(join(dir, 'err.sock'), (socket) => this.#onOutput(socket, 'stderr'))
    for (const { tag, source, socket, command } of shares) {
      const daemon = spawn(command.file, command.args, { stdio: ['ignore', 'ignore', 'pipe'] })
      this.confinement[tag] = command.confinement
      let stderr = ''
      daemon.stderr?.on('data', (chunk: Buffer) => {
        stderr = (stderr + chunk.toString()).slice(-2000)
        if (process.env.SVC_MICROVM_DEBUG) process.stderr.write(`[virtiofsd ${tag}] ${chunk.toString()}`)
      })
      this.#daemons.push(daemon)
      await waitUntil(() => existsSync(socket) || daemon.exitCode !== null, 10_000)
      if (!existsSync(socket)) {
        await this.shutdown(0)
        const said = stderr.trim().split('\n').at(-1)
        throw new MicrovmSetupError('MICROVM_BOOT_FAILED', `${o.name}: virtiofsd did not start for ${tag} (${source})${said ? `: ${said}` : ''}`)
      }
    }
    const host = o.engineHost ?? '127.0.0.1'
    const relay = `${join(o.assets.root, 'bin', 'busybox')} nc ${host} ${o.enginePort}`
    const args = [
      '-M', `${machine},memory-backend=mem`,
      '-accel', o.accel,
      '-cpu', o.accel === 'kvm' ? 'host' : 'max',
      '-m', `${o.memoryMib}M`,
      '-smp', String(o.cpus),
      '-object', `memory-backend-memfd,id=mem,size=${o.memoryMib}M,share=on`,
      // virtio 1.0 transport: vhost-user (virtiofsd) refuses legacy virtio-mmio devices.
      ...(machine === 'microvm' ? ['-global', 'virtio-mmio.force-legacy=false'] : []),
      '-nodefaults', '-no-user-config', '-nographic', '-no-reboot',
      '-kernel', o.assets.kernel,
      '-initrd', o.assets.initrd,
      '-append', kernelCommandLine(o.accel),
      '-serial', `file:${join(dir, 'console.log')}`,
      '-device', machine === 'microvm' ? 'virtio-serial-device' : 'virtio-serial-pci',
      '-chardev', `socket,id=ctl,path=${join(dir, 'ctl.sock')}`, '-device', 'virtserialport,chardev=ctl,name=svc.ctl',
      '-chardev', `socket,id=out,path=${join(dir, 'out.sock')}`, '-device', 'virtserialport,chardev=out,name=svc.out',
      '-chardev', `socket,id=err,path=${join(dir, 'err.sock')}`, '-device', 'virtserialport,chardev=err,name=svc.err',
      '-chardev', `socket,id=runtimefs,path=${join(dir, 'runtime.fs.sock')}`,
      '-device', `${machine === 'microvm' ? 'vhost-user-fs-device' : 'vhost-user-fs-pci'},chardev=runtimefs,tag=runtime`,
      '-chardev', `socket,id=workspacefs,path=${join(dir, 'workspace.fs.sock')}`,
      '-device', `${machine === 'microvm' ? 'vhost-user-fs-device' : 'vhost-user-fs-pci'},chardev=workspacefs,tag=workspace`,
      '-netdev',
      `user,id=net0,restrict=on,guestfwd=tcp:${ENGINE_GUEST_ADDRESS}:${o.enginePort}-cmd:${relay}${
        o.registryProxyPort === undefined ? '' : `,guestfwd=tcp:${ENGINE_GUEST_ADDRESS}:${registryProxyGuestPort(o.enginePort)}-cmd:${join(o.assets.root, 'bin', 'busybox')} nc 127.0.0.1 ${o.registryProxyPort}`
      }`,
      '-device', machine === 'microvm' ? 'virtio-net-device,netdev=net0' : 'virtio-net-pci,netdev=net0',
      '-sandbox', 'on',
    ]
    if (process.env.SVC_MICROVM_DEBUG) console.error(qemu, args.join(' '))
    const vmm = confinedCommand('qemu', qemu, args, identity)
    const child = spawn(vmm.file, vmm.args, { stdio: ['ignore', 'ignore', 'pipe'] })
    this.confinement.qemu = vmm.confinement
    this.#qemu = child
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-2000)
      if (process.env.SVC_MICROVM_DEBUG) process.stderr.write(`[qemu] ${chunk.toString()}`)
    })
    child.once('exit', (code, signal) => {
      this.#down = true
      if (!this.#connected && !this.#stopping) this.#earlyExit = true
      const reason = stderr.trim().split('\n').at(-1) || (signal ? `killed by ${signal}` : `exit code ${code}`)
      this.emit('down', reason)
    })
    const timer = setTimeout(() => this.emit('down', `no ready from the guest agent within ${Math.round(o.bootTimeoutMs / 1000)} s`), o.bootTimeoutMs)
    try {
      await ready
    } catch (err) {
      await this.shutdown(0)
      throw err
    } finally {
      clearTimeout(timer)
    }
  }

  /** Starts the worker's command in the guest (after stopping the current one); returns its generation. */
  start(command: GuestCommand): number {
    const gen = ++this.#gen
    this.#send(startLine('start', gen, command))
    return gen
  }

  /** Asks the agent to stop the current process (SIGTERM to its group, 5 s, SIGKILL). */
  stopProcess(): void {
    this.#send('{"op":"stop"}\n')
  }

  /**
   * Powers the VM off and reaps every host process: `poweroff` to the agent, up to `graceMs` for
   * QEMU to exit, then SIGTERM, 2 s, SIGKILL to QEMU and the daemons. Removes the sockets.
   */
  async shutdown(graceMs = 5000): Promise<void> {
    this.#stopping = true
    const qemu = this.#qemu
    if (qemu && qemu.exitCode === null && qemu.signalCode === null && graceMs > 0 && this.#ctl) {
      this.#send('{"op":"poweroff"}\n')
      await waitUntil(() => qemu.exitCode !== null || qemu.signalCode !== null, graceMs)
    }
    for (const child of [qemu, ...this.#daemons]) {
      if (!child || child.exitCode !== null || child.signalCode !== null) continue
      child.kill('SIGTERM')
    }
    for (const child of [qemu, ...this.#daemons]) {
      if (!child) continue
      if (!(await waitUntil(() => child.exitCode !== null || child.signalCode !== null, 2000))) {
        child.kill('SIGKILL')
        await waitUntil(() => child.exitCode !== null || child.signalCode !== null, 2000)
      }
    }
    for (const socket of this.#sockets) socket.destroy()
    for (const server of this.#servers) server.close()
    this.#down = true
    rmSync(this.runDir, { recursive: true, force: true })
  }

  #send(line: string): void {
    if (!this.#ctl || this.#ctl.destroyed) throw new MicrovmSetupError('MICROVM_BOOT_FAILED', `${this.options.name}: the microVM's control port is closed`)
    this.#ctl.write(line)
  }

  #listen(path: string, onConnection: (socket: Socket) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      const server = createServer((socket) => {
        this.#sockets.push(socket)
        socket.on('error', () => {})
        onConnection(socket)
      })
      this.#servers.push(server)
      server.once('error', reject)
      server.listen(path, () => resolve())
    })
  }

  #onControl(socket: Socket): void {
    this.#ctl = socket
    this.#connected = true
    const lines = createInterface({ input: socket, crlfDelay: Infinity })
    lines.on('line', (text) => {
      const event = parseAgentEvent(text)
      if (!event) return
      if (event.event === 'ready') this.emit('ready')
      else if (event.event === 'started') {
        this.pids.set(event.gen, event.pid)
        this.emit('started', event.gen, event.pid)
      } else if (event.event === 'exit') {
        this.pids.delete(event.gen)
        this.emit('exit', { gen: event.gen, code: event.code, signal: event.signal } satisfies MicroVmExit)
      } else if (event.event === 'error') this.emit('guest-error', event.message)
    })
  }

  #onOutput(socket: Socket, stream: 'stdout' | 'stderr'): void {
    const lines = createInterface({ input: socket, crlfDelay: Infinity })
    lines.on('line', (text) => this.emit('line', stream, text))
  }

  #consoleTail(): string {
    try {
      const lines = readFileSync(join(this.runDir, 'console.log'), 'utf8').trim().split('\n').slice(-5)
      return lines.length > 0 && lines[0] !== '' ? `; guest console: ${lines.join(' | ')}` : ''
    } catch {
      return ''
    }
  }
}

/**
 * The guest kernel's command line. Under TCG the microvm machine has no timer the kernel can
 * calibrate the TSC against (no PIT, HPET or PM timer): the TSC frequency comes from the host's
 * `cpu MHz` (TCG's TSC runs at the host's rate) and the delay-loop calibration is skipped.
 */
export function kernelCommandLine(accel: 'kvm' | 'tcg'): string {
  const base = `console=ttyS0 ${process.env.SVC_MICROVM_DEBUG ? '' : 'quiet '}panic=-1 reboot=t`
  if (accel === 'kvm') return base
  let khz = 2_000_000
  try {
    const mhz = /^cpu MHz\s*:\s*([\d.]+)/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))
    if (mhz) khz = Math.round(Number(mhz[1]) * 1000)
  } catch {}
  return `${base} tsc=reliable tsc_early_khz=${khz} lpj=${Math.round(khz * 2)}`
}

/** An event of the guest agent, checked: the guest is not trusted (cli.md §5.7). */
export type AgentEvent =
  | { event: 'ready' }
  | { event: 'started'; gen: number; pid: number }
  | { event: 'exit'; gen: number; code: number | null; signal: NodeJS.Signals | null }
  | { event: 'error'; message: string }

/** Longest agent line read; a longer one is dropped (the guest decides what it sends). */
export const MAX_AGENT_LINE = 4096

/**
 * Reads one JSON line of the guest agent. Anything that is not one of the {@link AgentEvent}
 * shapes with safe non-negative integers is undefined; an error message is cut to 200 characters
 * without control characters, since it reaches the svc console.
 */
export function parseAgentEvent(text: string): AgentEvent | undefined {
  if (text.length > MAX_AGENT_LINE) return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const v = value as Record<string, unknown>
  const count = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0
  if (v.event === 'ready') return { event: 'ready' }
  if (v.event === 'started' && count(v.gen) && count(v.pid)) return { event: 'started', gen: v.gen, pid: v.pid }
  if (v.event === 'exit' && count(v.gen) && count(v.code) && v.code <= 255) {
    return v.code > 128 ? { event: 'exit', gen: v.gen, code: null, signal: SIGNALS[v.code - 128] ?? 'SIGKILL' } : { event: 'exit', gen: v.gen, code: v.code, signal: null }
  }
  if (v.event === 'error' && typeof v.message === 'string') {
    // eslint-disable-next-line no-control-regex
    return { event: 'error', message: v.message.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, ' ').slice(0, 200) }
  }
  return undefined
}

const machines = new Map<string, string | undefined>()
/**
 * True when the QEMU at `qemu` lists `machine` in `-M help` (asked once per QEMU path and
 * process); true as well when `-M help` fails, so the boot itself decides (and falls back).
 */
export function machineAvailable(qemu: string, machine: QemuMachine): boolean {
  if (!machines.has(qemu)) {
    let listed: string | undefined
    try {
      listed = execFileSync(qemu, ['-M', 'help'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 })
    } catch {}
    machines.set(qemu, listed)
  }
  const listed = machines.get(qemu)
  return listed === undefined || new RegExp(`^${machine}\\s`, 'm').test(listed)
}

async function waitUntil(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() >= deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return true
}
