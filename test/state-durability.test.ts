/**
 * State written through the engine survives a clean restart and a `kill -9` of the engine process
 * once `state::set` has answered (builtins.md §13.2: every write is committed before the answer).
 */
import assert from 'node:assert/strict'
import { rm } from 'node:fs/promises'
import { after, describe, it } from 'node:test'
import { registerWorker } from 'svc-sdk'
import { startEngineProcess, tempProject } from './support/processes.ts'

describe('state durability', () => {
  let project: string
  after(() => rm(project, { recursive: true, force: true }))

  it('keeps acknowledged writes across kill -9 and a clean restart', async () => {
    project = await tempProject()
    let engine = await startEngineProcess(project)
    let client = registerWorker(engine.engineUrl, { workerName: 'durability-test' })
    for (let i = 0; i < 50; i++) {
      await client.trigger({ function_id: 'state::set', payload: { scope: 'orders', key: `o${i}`, value: { n: i, note: 'é✓' } } })
    }
    await client.trigger({ function_id: 'state::update', payload: { scope: 'counters', key: 'hits', ops: [{ type: 'increment', path: 'n', by: 5 }] } })
    await engine.kill9()
    await client.shutdown()

    engine = await startEngineProcess(project)
    client = registerWorker(engine.engineUrl, { workerName: 'durability-test' })
    assert.deepEqual(await client.trigger({ function_id: 'state::get', payload: { scope: 'orders', key: 'o49' } }), { n: 49, note: 'é✓' })
    const all = (await client.trigger({ function_id: 'state::list', payload: { scope: 'orders' } })) as unknown[]
    assert.equal(all.length, 50)
    assert.deepEqual(await client.trigger({ function_id: 'state::get', payload: { scope: 'counters', key: 'hits' } }), { n: 5 })
    assert.equal(await engine.stop(), 0)
    await client.shutdown()

    engine = await startEngineProcess(project)
    client = registerWorker(engine.engineUrl, { workerName: 'durability-test' })
    const groups = (await client.trigger({ function_id: 'state::list_groups', payload: {} })) as { groups: string[] }
    assert.deepEqual(groups.groups, ['counters', 'orders'])
    await client.shutdown()
    assert.equal(await engine.stop(), 0)
  })
})
