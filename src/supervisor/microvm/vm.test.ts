/**
 * The microVM's host processes do not outlive svc (cli.md §5.7, issue 22: "nothing left behind
 * after Ctrl-C or kill -9 of svc"). A child Node process starts a MicroVm (QEMU and two virtiofsd;
 * the guest need not finish booting) and is killed with SIGKILL: no chance to run an exit hook.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, describe, it } from 'node:test'
import { createInterface } from 'node:readline'
import { findVmm, machineAvailable } from './vm.ts'
import { waitFor } from '../../../test/support/wait.ts'

function missing(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') return 'needs Linux on x86-64'
  try {
    findVmm()
  } catch (err) {
    return (err as Error).message
  }
  return undefined
}

const scratch = mkdtempSync(join(tmpdir(), 'svc-vm-kill-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z'
  } catch {
    return false
  }
}

/** Live processes whose command line mentions `text`. */
function sharing(text: string): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text) && alive(Number(entry))) found.push(Number(entry))
    } catch {}
  }
  return found
}

describe('microVM host processes', { skip: missing() }, () => {
  it('run in user namespaces under a root svc, and die with svc when it is killed with SIGKILL', async () => {
    // Assets that need no download, and a QEMU that stays up without a kernel (the real one exits at
    // once on an empty kernel, which raced with the checks below); the virtiofsd are the real ones.
    writeFileSync(join(scratch, 'vmlinuz'), '')
    writeFileSync(join(scratch, 'initrd.img'), '')
    const bin = join(scratch, 'bin')
    mkdirSync(bin, { recursive: true })
    writeFileSync(join(bin, 'qemu-system-x86_64'), '#!/bin/sh\nif [ "$1" = -M ] && [ "$2" = help ]; then echo "microvm              microvm (i386)"; exit 0; fi\nexec sleep 600\n', { mode: 0o755 })
    const vm = fileURLToPath(new URL('./vm.ts', import.meta.url))
    const script = `
      const { MicroVm } = await import(${JSON.stringify(vm)})
      const vm = new MicroVm({ name: 't', assets: { kernel: ${JSON.stringify(join(scratch, 'vmlinuz'))}, initrd: ${JSON.stringify(join(scratch, 'initrd.img'))}, root: ${JSON.stringify(scratch)} },
        workspace: ${JSON.stringify(scratch)}, accel: 'tcg', cpus: 1, memoryMib: 128, enginePort: 9, bootTimeoutMs: 600000 })
      vm.boot().catch(() => {})
      const timer = setInterval(() => { if (vm.hostPids().length === 3) { console.log(JSON.stringify(vm.hostPids())); clearInterval(timer) } }, 20)
      setInterval(() => {}, 1000)
    `
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` } })
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve)
      child.once('exit', (code) => reject(new Error(`the VM host exited (${code}) before it started QEMU`)))
    })
    const pids = JSON.parse(line) as number[]
    assert.equal(pids.length, 3)
    try {
      if (process.getuid?.() === 0) {
        // svc as root: QEMU and both virtiofsd hold uid 0 only inside user namespaces of their own (privileges.ts).
        const own = readlinkSync('/proc/self/ns/user')
        await waitFor(() => pids.every((pid) => readlinkSync(`/proc/${pid}/ns/user`) !== own), () => `QEMU and virtiofsd in user namespaces: ${pids.map((pid) => readlinkSync(`/proc/${pid}/ns/user`))} (svc: ${own})`, 20_000, 50)
      }
      child.kill('SIGKILL')
      await waitFor(() => !pids.some(alive), () => `QEMU and virtiofsd gone after kill -9 of their parent; alive: ${pids.filter(alive)}`, 20_000, 50)
      // virtiofsd's own sandboxed child too (its command line names the shared directory).
      await waitFor(() => sharing(scratch).length === 0, () => `no process sharing the directory; still: ${sharing(scratch)}`, 20_000, 50)
    } finally {
      child.kill('SIGKILL')
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL')
        } catch {}
      }
    }
  })
})

describe("QEMU's machine types", () => {
  it('microvm where -M help lists it, q35 first where it does not, and the boot decides where -M help fails', () => {
    const fake = (name: string, body: string) => {
      const path = join(scratch, name)
      writeFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 })
      return path
    }
    const both = fake('qemu-both', 'printf "Supported machines are:\\nmicrovm              microvm (i386)\\nq35                  Standard PC (Q35 + ICH9, 2009)\\n"')
    const old = fake('qemu-old', 'printf "Supported machines are:\\npc                   Standard PC\\nq35                  Standard PC (Q35 + ICH9, 2009)\\nmicrovm-ish          not it\\n"')
    const broken = fake('qemu-broken', 'exit 1')
    assert.equal(machineAvailable(both, 'microvm'), true)
    assert.equal(machineAvailable(both, 'q35'), true)
    assert.equal(machineAvailable(old, 'microvm'), false)
    assert.equal(machineAvailable(old, 'q35'), true)
    assert.equal(machineAvailable(broken, 'microvm'), true)
  })
})
