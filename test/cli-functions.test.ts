/**
 * `svc functions` as a user runs it: the built CLI (bin/run.js) against a real engine. Internal
 * functions — every `engine::` id, `engine::queue::*` too — only with `--all`; outside a project,
 * one line on stderr names the engine used (svc compose's client verbs say it too). Needs
 * `npm run build`.
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { cliEnv, runSvc } from './support/cli.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'

let t: TestEngine
let outside: string

before(async () => {
  t = await startTestEngine()
  // A directory with no config.yaml in it or above (the system's temporary directory).
  outside = await mkdtemp(join(tmpdir(), 'svc-no-project-'))
})

after(async () => {
  await t?.stop()
  await rm(outside, { recursive: true, force: true })
})

/** The ids in the first column of `svc functions`' table. */
function ids(table: string): string[] {
  return table.split('\n').slice(1).filter(Boolean).map((line) => line.split(/\s+/)[0]!)
}

describe('svc functions', () => {
  it('hides every engine:: function (engine::queue::* too) unless --all', async () => {
    const listed = await runSvc(['functions', '--engine', t.url], { cwd: outside })
    assert.equal(listed.code, 0, listed.stderr)
    assert.ok(ids(listed.stdout).includes('state::get'), listed.stdout)
    assert.deepEqual(ids(listed.stdout).filter((id) => id.startsWith('engine::')), [], listed.stdout)
    const json = JSON.parse((await runSvc(['functions', '--json', '--engine', t.url], { cwd: outside })).stdout) as { functions: Array<{ function_id: string; internal: boolean }> }
    assert.deepEqual(json.functions.filter((f) => f.internal || f.function_id.startsWith('engine::')), [])

    const all = await runSvc(['functions', '--all', '--engine', t.url], { cwd: outside })
    assert.equal(all.code, 0, all.stderr)
    assert.ok(ids(all.stdout).includes('engine::queue::list_topics'), all.stdout)
    assert.ok(ids(all.stdout).includes('engine::functions::list'), all.stdout)
    const allJson = JSON.parse((await runSvc(['functions', '--all', '--json', '--engine', t.url], { cwd: outside })).stdout) as { functions: Array<{ function_id: string; internal: boolean }> }
    assert.equal(allJson.functions.find((f) => f.function_id === 'engine::queue::list_topics')?.internal, true)
  })

  it('outside a project names the engine it used and that no project was found, in one line on stderr', async () => {
    const viaEnv = await runSvc(['functions'], { cwd: outside, env: cliEnv({ SVC_URL: t.url }) })
    assert.equal(viaEnv.code, 0, viaEnv.stderr)
    assert.equal(viaEnv.stderr, `No svc project here (no config.yaml in this directory or above); using the engine at ${t.url} (SVC_URL)\n`)
    // With nothing set, the default address: the line comes before any answer (or failure to connect).
    const byDefault = await runSvc(['functions'], { cwd: outside })
    assert.equal(byDefault.stderr.split('\n')[0], 'No svc project here (no config.yaml in this directory or above); using the engine at ws://127.0.0.1:49134')
    // --json stays one document on stdout; --engine is the user's own choice and needs no line.
    const json = await runSvc(['functions', '--json'], { cwd: outside, env: cliEnv({ SVC_URL: t.url }) })
    assert.equal(json.stderr, '')
    assert.equal((await runSvc(['functions', '--engine', t.url], { cwd: outside })).stderr, '')
  })

  it('svc compose status outside a project names the engine it asks too', async () => {
    const result = await runSvc(['compose', 'status'], { cwd: outside, env: cliEnv({ SVC_URL: t.url }) })
    const [first, ...rest] = result.stderr.split('\n')
    assert.equal(first, `No svc project here (no config.yaml in this directory or above); using the engine at ${t.url} (SVC_URL)`)
    // Then the answer: no compose daemon is connected to this engine.
    assert.match(rest.join('\n'), /No compose daemon is connected to the engine at /)
  })
})
