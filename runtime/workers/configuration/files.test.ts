/**
 * The settings directory's watcher against our own writes (./files.ts): a hand edit read before
 * one of our writes must never put its older value back over ours (seen as `queue::define`'s
 * queue vanishing on a loaded machine).
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { formatSettingsFile, SettingsFiles, type SettingsFileEvent } from './files.ts'
import { waitFor } from '../../../test/support/wait.ts'

const file = (value: unknown) => formatSettingsFile({ id: 'queue', name: 'queue', description: '', value })

test('a hand edit that waited behind one of our writes is no longer current; one after it is', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-settings-files-'))
  const files = new SettingsFiles(dir)
  const events: SettingsFileEvent[] = []
  try {
    await files.loadAll()
    files.watch(60, (event) => events.push(event))
    await files.ready()
    await writeFile(files.pathOf('queue'), file({ queue_configs: { edited: {} } }))
    const edit = await waitFor(() => events.find((e) => e.kind === 'changed'), 'the hand edit reported', 20_000)
    assert.equal(files.isCurrent(edit), true, 'nothing of ours came after the edit')

    await files.write('queue', file({ queue_configs: { edited: {}, defined: {} } }))
    assert.equal(files.isCurrent(edit), false, 'applying the edit now would drop the queue our write added')

    events.length = 0
    await writeFile(files.pathOf('queue'), file({ queue_configs: { again: {} } }))
    const later = await waitFor(() => events.find((e) => e.kind === 'changed'), 'the second hand edit reported', 20_000)
    assert.equal(files.isCurrent(later), true, 'a hand edit after our write applies')
  } finally {
    await files.close()
    await rm(dir, { recursive: true, force: true })
  }
})
