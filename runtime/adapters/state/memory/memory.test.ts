import assert from 'node:assert/strict'
import { it } from 'node:test'
import { runStateAdapterConformance } from '../conformance.ts'
import { MemoryStateAdapter, parseMemoryStateConfig } from './memory.ts'

runStateAdapterConformance('memory', () => new MemoryStateAdapter())

it('memory adapter config takes no options', () => {
  assert.deepEqual(parseMemoryStateConfig({}), {})
  assert.throws(() => parseMemoryStateConfig({ path: 'x' }), /adapter\.config\.path is not a memory adapter option/)
})

it('memory adapter keeps nothing across instances', async () => {
  const first = new MemoryStateAdapter()
  await first.set('s', 'k', 1)
  await first.close()
  const second = new MemoryStateAdapter()
  assert.equal(await second.get('s', 'k'), undefined)
  await second.close()
})
