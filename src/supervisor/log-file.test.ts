import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { LogFile } from './log-file.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-logfile-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

describe('LogFile (cli.md §2: rotated at 10 MiB, 3 files kept)', () => {
  it('creates its directory and appends lines in order', async () => {
    const log = new LogFile(join(scratch, 'a', 'logs', 'w.log'))
    for (let i = 0; i < 100; i++) log.write(`line ${i}`)
    await log.flush()
    const lines = readFileSync(log.path, 'utf8').trimEnd().split('\n')
    assert.equal(lines.length, 100)
    assert.equal(lines[99], 'line 99')
  })

  it('rotates before a write would pass the limit, keeping <name>.log, .1 and .2', async () => {
    const log = new LogFile(join(scratch, 'r.log'), { rotateBytes: 100 })
    for (let i = 0; i < 8; i++) {
      log.write(`${String(i).repeat(59)}`) // 60 bytes with the newline
      await log.flush()
    }
    assert.equal(readFileSync(log.path, 'utf8'), `${'7'.repeat(59)}\n`)
    assert.equal(readFileSync(`${log.path}.1`, 'utf8'), `${'6'.repeat(59)}\n`)
    assert.equal(readFileSync(`${log.path}.2`, 'utf8'), `${'5'.repeat(59)}\n`)
    assert.equal(existsSync(`${log.path}.3`), false)
  })

  it('reports a write failure once and keeps going', async () => {
    const errors: Error[] = []
    const blocker = join(scratch, 'file-not-dir')
    const first = new LogFile(blocker)
    first.write('x')
    await first.flush()
    const log = new LogFile(join(blocker, 'w.log'), { onError: (err) => errors.push(err) })
    log.write('a')
    await log.flush()
    log.write('b')
    await log.flush()
    assert.equal(errors.length, 1)
  })
})
