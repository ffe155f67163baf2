import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { CliError } from './errors.ts'
import { lockDataDir } from './lock.ts'

const root = mkdtempSync(join(tmpdir(), 'svc-lock-'))
after(() => rmSync(root, { recursive: true, force: true }))

/** A pid that surely belongs to no running process: one that has just exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'])
  return Number(String(child.stdout))
}

describe('data directory lock (builtins.md §13.2)', () => {
  it('creates the directory and a .lock file holding the pid, removed on release', () => {
    const dir = join(root, 'a', 'data')
    const lock = lockDataDir(dir)
    assert.equal(lock.path, join(dir, '.lock'))
    assert.equal(readFileSync(lock.path, 'utf8').trim(), String(process.pid))
    lock.release()
    assert.equal(existsSync(lock.path), false)
    lock.release() // idempotent
  })

  it('refuses a directory locked by a live process, naming it (exit 1)', () => {
    const dir = join(root, 'b')
    // The parent of this test process is alive for the whole test.
    const first = lockDataDir(dir, process.ppid)
    assert.throws(
      () => lockDataDir(dir),
      (err: unknown) => {
        assert.ok(err instanceof CliError)
        assert.equal(err.exitCode, 1)
        assert.equal(err.code, 'DATA_DIR_LOCKED')
        assert.equal(err.message, `data directory ${dir} is in use by another svc engine (pid ${process.ppid})`)
        return true
      },
    )
    // Release by the holder leaves the file alone when it is not the holder's any more.
    first.release()
  })

  it('takes over a lock left by a process that no longer exists', () => {
    const dir = join(root, 'c')
    lockDataDir(dir) // create the directory
    writeFileSync(join(dir, '.lock'), `${deadPid()}\n`)
    const lock = lockDataDir(dir)
    assert.equal(readFileSync(lock.path, 'utf8').trim(), String(process.pid))
    lock.release()
  })

  it('takes over an unreadable (garbage) lock file', () => {
    const dir = join(root, 'd')
    lockDataDir(dir).release()
    writeFileSync(join(dir, '.lock'), 'not a pid')
    const lock = lockDataDir(dir)
    assert.equal(readFileSync(lock.path, 'utf8').trim(), String(process.pid))
    lock.release()
  })

  it('does not remove a lock that another engine has taken since', () => {
    const dir = join(root, 'e')
    const lock = lockDataDir(dir)
    writeFileSync(lock.path, `${process.ppid}\n`)
    lock.release()
    assert.equal(readFileSync(lock.path, 'utf8').trim(), String(process.ppid))
  })
})
