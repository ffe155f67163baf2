/**
 * The engine's V8 heap settings (bin/engine-heap.js, issue 20: engine memory with defaults): `svc`
 * replaces itself in place — same pid, so signals, exit codes and `svc` stopping its workers are
 * unchanged — with a Node running ENGINE_V8_FLAGS; the user's own choice in NODE_OPTIONS wins, and
 * commands that host no engine are not started again.
 */
import assert from 'node:assert/strict'
import { readFile, rm } from 'node:fs/promises'
import { after, before, describe, it } from 'node:test'
import { ENGINE_V8_FLAGS, heapChosen, hostsEngine } from '../bin/engine-heap.js'
import { startEngineProcess, tempProject, type RunningEngine } from './support/processes.ts'

/** The command line of a running process, as the kernel has it (Linux). */
async function commandLine(pid: number): Promise<string[]> {
  return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter(Boolean)
}

describe('svc runs its engine with a smaller V8 heap', () => {
  let project: string
  before(async () => {
    project = await tempProject()
  })
  after(async () => {
    await rm(project, { recursive: true, force: true })
  })

  it('svc re-executes itself in place with the engine heap flags, and still stops on SIGTERM', async () => {
    const engine: RunningEngine = await startEngineProcess(project)
    try {
      const argv = await commandLine(engine.child.pid!)
      for (const flag of ENGINE_V8_FLAGS) assert.ok(argv.includes(flag), `${flag} in ${argv.join(' ')}`)
      assert.ok(argv.includes('--json'), 'the arguments are kept')
      // The engine answers on its port: the process that replaced itself is the engine.
      const health = await fetch(`${engine.httpUrl.replace(/\/$/, '')}/__svc_does_not_exist`)
      assert.equal(health.status, 404)
    } finally {
      assert.equal(await engine.stop(), 0)
    }
  })

  it("NODE_OPTIONS that choose the young generation win: svc keeps the user's settings", async () => {
    const engine = await startEngineProcess(project, [], { NODE_OPTIONS: '--max-semi-space-size=16' })
    try {
      const argv = await commandLine(engine.child.pid!)
      for (const flag of ENGINE_V8_FLAGS) assert.ok(!argv.includes(flag), `${flag} not in ${argv.join(' ')}`)
    } finally {
      assert.equal(await engine.stop(), 0)
    }
  })

  it('only engine-hosting commands are started again', () => {
    for (const argv of [[], ['start'], ['--port', '0'], ['--json'], ['start', '--workers', 'a']]) assert.equal(hostsEngine(argv), true, argv.join(' '))
    for (const argv of [['--version'], ['-v'], ['--help'], ['trigger', 'a::b'], ['functions'], ['console'], ['compose', 'up'], ['worker', 'list']]) assert.equal(hostsEngine(argv), false, argv.join(' '))
  })

  it('recognises a heap already chosen on the command line or in NODE_OPTIONS', () => {
    assert.equal(heapChosen([], undefined), false)
    assert.equal(heapChosen(['--cpu-prof'], '--enable-source-maps'), false)
    assert.equal(heapChosen(ENGINE_V8_FLAGS, undefined), true)
    assert.equal(heapChosen([], '--enable-source-maps --max_semi_space_size=32'), true)
    assert.equal(heapChosen([], '--optimize-for-size'), true)
  })
})
