/**
 * The supervisor's launch seam for `isolation: microvm` (cli.md §5.7): where a process worker gets
 * `runShell`, a microVM worker gets {@link MicrovmLauncher.run}, which returns the same
 * {@link ShellProcess} shape. The VM boots on the first run and keeps running across restarts
 * (the agent restarts the process inside it); {@link MicrovmLauncher.shutdown} powers it off.
 */
import type { Logger } from '../../../runtime/index.ts'
import type { CommandExit, ShellProcess } from '../process.ts'
import type { WorkerManifest } from '../types.ts'
import { existsSync, realpathSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { cargoBinaryName } from '../manifest.ts'
import { findProgram, MicrovmSetupError, projectNodeBinary } from './assets.ts'
import { ensureGuestAssets } from './roots.ts'
import type { RuntimeSpec } from './roots.ts'
import { microvmCacheDir } from './probe.ts'
import { startRegistryProxy } from './registry-proxy.ts'
import type { RunningRegistryProxy } from './registry-proxy.ts'
import { ENGINE_GUEST_ADDRESS, MicroVm, registryProxyGuestPort } from './vm.ts'
import type { MicroVmExit } from './vm.ts'

/** cli.md §2.2 `resources`: defaults and bounds. */
export const MICROVM_DEFAULTS = { cpus: 2, memoryMib: 2048, maxCpus: 4, maxMemoryMib: 4096, minMemoryMib: 128 } as const

/** How long a boot may take before it counts as failed: TCG boots take seconds, not minutes (ms). */
export const BOOT_TIMEOUT_MS = { kvm: 30_000, tcg: 180_000 } as const

/**
 * How many times a process worker's registration budget (`registrationNoteMs`, 15 s) a microVM
 * worker gets before svc notes that it has not registered. The clock starts once the VM is up, but
 * the runtime starts more slowly in the guest: about twice as slowly with KVM, and under TCG
 * 11–37 s for a TypeScript worker on a loaded 2-core host (docs/benchmarks.md), so 8× (120 s).
 */
export const REGISTRATION_NOTE_FACTOR = { kvm: 2, tcg: 8 } as const

/** Variables of the engine's environment that name host files, which the guest does not have. */
const HOST_PATH_VARIABLES = ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'TMPDIR', 'XDG_RUNTIME_DIR'] as const

/** Every VM of this process, powered off hard if svc exits without stopping them. */
const liveVms = new Set<MicroVm>()
let exitHook = false

export interface MicrovmLauncherOptions {
  name: string
  directory: string
  projectRoot: string
  /** The engine's URL as a host process would use it (`ws://127.0.0.1:49134`). */
  engineUrl: string
  accel: 'kvm' | 'tcg'
  log: Logger
  /**
   * Run `setup` and `install` steps in the guest, reaching the package registries through the
   * registry proxy ({@link startRegistryProxy}); default `SVC_MICROVM_INSTALL=guest` in svc's
   * environment. Off: they run on the host, as for a process worker.
   */
  guestInstall?: boolean
}

/** The guest's `SVC_URL`: the engine's port behind `10.0.2.100` (cli.md §5.7). */
export function guestEngineUrl(engineUrl: string): { url: string; port: number; host: string } {
  const parsed = new URL(engineUrl)
  const port = Number(parsed.port || (parsed.protocol === 'wss:' ? 443 : 80))
  let host = parsed.hostname.replace(/^\[|\]$/g, '')
  if (host === '0.0.0.0' || host === '::' || host === 'localhost') host = '127.0.0.1'
  const url = `${parsed.protocol}//${ENGINE_GUEST_ADDRESS}:${port}${parsed.pathname === '/' ? '' : parsed.pathname}${parsed.search}`
  return { url, port, host }
}

/**
 * The runtime root a worker's manifest needs (cli.md §5.7): `python` → the interpreter of the
 * worker's `.venv` (else the host's `python3`); `rust` → the libraries of its release binary
 * (`target/release/<entry or Cargo.toml's binary>`); anything else → the project's Node.
 *
 * @throws {MicrovmSetupError} `MICROVM_SETUP_FAILED` for a Python worker on a host without `python3`.
 */
export function runtimeSpec(manifest: WorkerManifest, directory: string, projectRoot: string, withNpm = false): RuntimeSpec {
  const kind = manifest.runtime.kind
  if (kind === 'python') {
    const venv = join(directory, '.venv', 'bin', 'python')
    const interpreter = existsSync(venv) ? venv : findProgram(['python3'])
    if (!interpreter) {
      throw new MicrovmSetupError('MICROVM_SETUP_FAILED', 'microVM Python root: no .venv in the worker directory and no python3 on PATH', 'install Python 3 (apt-get install -y python3 python3-venv), or use isolation: process')
    }
    return { kind: 'python', interpreter }
  }
  if (kind === 'rust') {
    const name = manifest.runtime.entry ?? cargoBinaryName(directory)
    return { kind: 'native', binary: name === undefined ? undefined : join(directory, 'target', 'release', name) }
  }
  const npm = withNpm ? npmPackage() : undefined
  return { kind: 'node', nodeBinary: projectNodeBinary(projectRoot), ...(npm === undefined ? {} : { npm }) }
}

/** The directory of the host's npm package (`…/node_modules/npm`), for guest installs; undefined without npm. */
function npmPackage(): string | undefined {
  const npm = findProgram(['npm'])
  if (!npm) return undefined
  try {
    const cli = realpathSync(npm)
    const dir = dirname(dirname(cli))
    return existsSync(join(dir, 'bin', 'npm-cli.js')) ? dir : undefined
  } catch {
    return undefined
  }
}

/** Runs one worker's processes in one microVM. */
export class MicrovmLauncher {
  readonly #o: MicrovmLauncherOptions
  #vm: MicroVm | undefined
  /** The registry proxy of guest installs; open only while an install step runs. */
  #proxy: RunningRegistryProxy | undefined
  #proxyOpen = false

  constructor(options: MicrovmLauncherOptions) {
    this.#o = options
  }

  /** QEMU's pid while the VM runs. */
  get vmPid(): number | undefined {
    return this.#vm?.pid
  }

  /**
   * The registration note's budget for this worker, from a process worker's `processMs`
   * ({@link REGISTRATION_NOTE_FACTOR}): `ms`, and `label`, which the warning quotes, e.g.
   * `a microVM worker under software emulation gets 120 s`.
   */
  registrationNote(processMs: number): { ms: number; label: string } {
    const ms = processMs * REGISTRATION_NOTE_FACTOR[this.#o.accel]
    return { ms, label: `a microVM worker under ${this.#o.accel === 'tcg' ? 'software emulation' : 'KVM'} gets ${Math.round(ms / 1000)} s` }
  }

  /** Host RSS of the VM (QEMU and its virtiofs daemons), bytes; 0 when none runs. */
  hostRssBytes(): number {
    return this.#vm?.alive ? this.#vm.hostRssBytes() : 0
  }

  /** Host pids of the VM, for tests that check nothing is left behind. */
  hostPids(): number[] {
    return this.#vm?.hostPids() ?? []
  }

  /**
   * Boots the VM when none runs (building the guest assets on first use), then starts `command` in
   * it with `env` (its `SVC_URL` pointed at `10.0.2.100`).
   *
   * @throws {MicrovmSetupError} a missing host tool, a failed download or a failed boot.
   */
  async run(
    command: string,
    env: Record<string, string>,
    manifest: WorkerManifest,
    onLine: (stream: 'stdout' | 'stderr', text: string) => void,
  ): Promise<ShellProcess> {
    const o = this.#o
    const engine = guestEngineUrl(o.engineUrl)
    await this.#boot(manifest, engine)
    return this.#start(command, env, onLine, engine)
  }

  /** True when `setup` and `install` run in the guest ({@link MicrovmLauncherOptions.guestInstall}). */
  get guestInstall(): boolean {
    return this.#o.guestInstall ?? process.env.SVC_MICROVM_INSTALL === 'guest'
  }

  /**
   * Runs an install step in the guest (booting the VM when none runs): the registry proxy is open
   * while it runs, and the step gets `HTTPS_PROXY`/`HTTP_PROXY` (and npm's and pip's own names for
   * them) pointing at it. The worker's own process never has the proxy open.
   *
   * @throws {MicrovmSetupError} as {@link run}.
   */
  async runTask(
    command: string,
    env: Record<string, string>,
    manifest: WorkerManifest,
    onLine: (stream: 'stdout' | 'stderr', text: string) => void,
  ): Promise<ShellProcess> {
    const engine = guestEngineUrl(this.#o.engineUrl)
    await this.#boot(manifest, engine)
    const proxy = `http://${ENGINE_GUEST_ADDRESS}:${registryProxyGuestPort(engine.port)}`
    const proxied = { ...env, HTTPS_PROXY: proxy, HTTP_PROXY: proxy, https_proxy: proxy, http_proxy: proxy, npm_config_proxy: proxy, npm_config_https_proxy: proxy, PIP_PROXY: proxy, NO_PROXY: ENGINE_GUEST_ADDRESS, no_proxy: ENGINE_GUEST_ADDRESS }
    this.#proxyOpen = true
    const proc = await this.#start(command, proxied, onLine, engine)
    void proc.done.finally(() => (this.#proxyOpen = false))
    return proc
  }

  async #boot(manifest: WorkerManifest, engine: { url: string; port: number; host: string }): Promise<void> {
    const o = this.#o
    if (!this.#vm?.alive) {
      const assets = await ensureGuestAssets({
        cacheDir: microvmCacheDir(),
        runtime: runtimeSpec(manifest, o.directory, o.projectRoot, this.guestInstall),
        onProgress: (text) => o.log.info(`${o.name}: microVM guest: ${text}`),
      })
      if (this.guestInstall && this.#proxy === undefined) {
        this.#proxy = await startRegistryProxy({
          isOpen: () => this.#proxyOpen,
          onDenied: (target) => o.log.warn(`${o.name}: the registry proxy refused ${target} (REGISTRY_NOT_ALLOWED)`),
        })
      }
      const cpus = Math.min(Math.max(1, manifest.resources?.cpus ?? MICROVM_DEFAULTS.cpus), MICROVM_DEFAULTS.maxCpus)
      const memoryMib = Math.min(Math.max(MICROVM_DEFAULTS.minMemoryMib, manifest.resources?.memory_mib ?? MICROVM_DEFAULTS.memoryMib), MICROVM_DEFAULTS.maxMemoryMib)
      const vm = new MicroVm({
        name: o.name,
        assets,
        workspace: o.directory,
        accel: o.accel,
        cpus,
        memoryMib,
        enginePort: engine.port,
        engineHost: engine.host,
        bootTimeoutMs: BOOT_TIMEOUT_MS[o.accel],
        ...(this.#proxy === undefined ? {} : { registryProxyPort: this.#proxy.port }),
      })
      vm.on('guest-error', (message: string) => o.log.warn(`${o.name}: microVM agent: ${message}`))
      vm.on('fallback', (reason: string) => o.log.warn(`${o.name}: QEMU's microvm machine failed (${reason}); booting with q35 instead (virtio over PCI, a slower boot)`))
      installExitHook()
      liveVms.add(vm)
      const started = Date.now()
      o.log.info(`${o.name}: booting its microVM (${o.accel === 'tcg' ? 'software emulation, slow' : 'KVM'}, ${cpus} vCPU, ${memoryMib} MiB)`)
      try {
        await vm.boot()
      } catch (err) {
        liveVms.delete(vm)
        throw err
      }
      vm.once('down', () => liveVms.delete(vm))
      o.log.info(`${o.name}: microVM up in ${((Date.now() - started) / 1000).toFixed(1)} s (pid ${vm.pid}${vm.machine === 'q35' ? ', q35' : ''})`)
      this.#vm = vm
    }
  }

  #start(command: string, env: Record<string, string>, onLine: (stream: 'stdout' | 'stderr', text: string) => void, engine: { url: string }): ShellProcess {
    const o = this.#o
    const vm = this.#vm!
    const guestEnv: Record<string, string> = { ...env, SVC_URL: engine.url, III_URL: engine.url, SVC_ISOLATION: 'microvm', SVC_PROJECT_ROOT: '/workspace' }
    // Host files the guest cannot see (the engine's own environment passes through, cli.md §5.2).
    for (const name of HOST_PATH_VARIABLES) delete guestEnv[name]
    const startedAtMs = Date.now()
    const onOutput = (stream: 'stdout' | 'stderr', text: string) => onLine(stream, text)
    vm.on('line', onOutput)
    let gen = 0
    let resolveDone!: (exit: CommandExit) => void
    const done = new Promise<CommandExit>((resolve) => (resolveDone = resolve))
    const onExit = (exit: MicroVmExit) => {
      if (exit.gen === gen) finish({ code: exit.code, signal: exit.signal })
    }
    const onDown = (reason: string) => finish({ code: null, signal: 'SIGKILL', spawnError: `the microVM stopped (${reason})` })
    const finish = (exit: CommandExit) => {
      if (proc.exited) return
      proc.exited = true
      vm.off('exit', onExit)
      vm.off('down', onDown)
      // The output of a later start is that process's.
      setImmediate(() => vm.off('line', onOutput))
      resolveDone(exit.spawnError !== undefined ? { code: exit.code, signal: exit.signal } : exit)
    }
    const proc: ShellProcess = {
      pid: vm.pid,
      startedAtMs,
      exited: false,
      requested: false,
      drained: done.then(() => {}),
      done,
      stop: async (timeoutMs: number) => {
        proc.requested = true
        if (proc.exited) return false
        if (!vm.alive) return false
        vm.stopProcess()
        // The agent gives 5 s and then SIGKILLs the group; allow for that and a slow guest.
        const killed = await Promise.race([done.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), timeoutMs + 10_000))])
        if (killed) await this.shutdown()
        return killed
      },
    }
    vm.on('exit', onExit)
    vm.once('down', onDown)
    gen = vm.start({ command, cwd: '/workspace', env: guestEnv, hostPath: o.directory })
    return proc
  }

  /** Powers the VM off (agent `poweroff`, 5 s, then SIGTERM/SIGKILL of QEMU and the daemons). */
  async shutdown(): Promise<void> {
    const vm = this.#vm
    this.#vm = undefined
    const proxy = this.#proxy
    this.#proxy = undefined
    await proxy?.close()
    if (!vm) return
    await vm.shutdown(5000)
    liveVms.delete(vm)
  }
}

function installExitHook(): void {
  if (exitHook) return
  exitHook = true
  process.on('exit', () => {
    for (const vm of liveVms) for (const pid of vm.hostPids()) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
  })
}

export { MicrovmSetupError }
