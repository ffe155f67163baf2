/**
 * How the supervisor starts a command (cli.md §5.1): a simple start command runs without a shell
 * in between (issue 20 "Engine start"), with the words, expansions and `PWD` the shell would have
 * given it; anything it cannot execute directly is still reported as the shell reports it.
 */
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, describe, it } from 'node:test'
import { runShell, type ShellProcess } from './process.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-process-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

const env = (extra: Record<string, string> = {}): Record<string, string> => ({ PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, PWD: '/', ...extra })

/** Runs `command` like a worker's start (`exec: true`); its output lines and the programs Node executed for it. */
async function run(command: string, extra: Record<string, string> = {}): Promise<{ lines: string[]; exit: Awaited<ShellProcess['done']>; programs: string[] }> {
  const children: ChildProcess[] = []
  const onChild = (message: unknown) => children.push((message as { process: ChildProcess }).process)
  subscribe('child_process', onChild)
  const lines: string[] = []
  let proc: ShellProcess
  try {
    proc = runShell(command, { cwd: scratch, env: env(extra), exec: true, onLine: (_stream, text) => lines.push(text) })
  } finally {
    unsubscribe('child_process', onChild)
  }
  const exit = await proc.done
  await proc.drained
  return { lines, exit, programs: children.map((child) => child.spawnfile) }
}

describe('runShell', () => {
  it('runs a simple start command without a shell, with the words, expansions and PWD sh would give it', async () => {
    writeFileSync(join(scratch, 'w.mjs'), 'console.log(JSON.stringify({ argv: process.argv.slice(2), pwd: process.env.PWD, pid: process.pid }))\n')
    const { lines, exit, programs } = await run(`node w.mjs 'a b' "\${GREETING:-hi}" "\${EMPTY:-x}" "\${NAME}" --flag=1`, { EMPTY: '', NAME: 'svc worker' })
    assert.equal(exit.code, 0, lines.join('\n'))
    const seen = JSON.parse(lines[0]!) as { argv: string[]; pwd: string }
    assert.deepEqual(seen.argv, ['a b', 'hi', 'x', 'svc worker', '--flag=1'])
    assert.equal(seen.pwd, realpathSync(scratch), 'PWD is the directory, as sh sets it')
    assert.deepEqual(programs, ['node'], 'node is executed directly: no /bin/sh in between')
  })

  it('reports a command it cannot execute as the shell does (exit 127, "not found")', async () => {
    const { lines, exit } = await run('svc-no-such-command-x1 --version')
    assert.equal(exit.code, 127)
    assert.match(lines.join('\n'), /not found/)
  })

  it('still runs a command with shell syntax through the shell', async () => {
    const { lines, exit, programs } = await run('echo one && echo "$((1 + 1))"')
    assert.equal(exit.code, 0)
    assert.deepEqual(lines, ['one', '2'])
    assert.equal(programs.length, 1)
    assert.match(programs[0]!, /sh$/)
  })
})
