/**
 * Hostile inputs at the microVM's two boundaries (cli.md §5.7), with fast-check:
 * - host → guest: any environment (names, values with quotes, `$`, newlines, NUL), any cwd,
 *   command and worker host path (the guest's alias of /workspace) become a start program that the guest's `sh` runs with exactly those values, in a JSON
 *   line whose `sh` field the agent's `sed` extracts exactly (base64 only);
 * - guest → host: the guest is not trusted, so any line on `svc.ctl` is either one well-formed
 *   event or nothing, and an error message that reaches the svc console carries no control character.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import { GUEST_PATH, startLine, startProgram } from './agent.ts'
import { MAX_AGENT_LINE, parseAgentEvent } from './vm.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-agent-fuzz-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

const shellish = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: fc.constantFrom(...'ab\'"$`\\;|&<>(){}*?[]~!#= \n\t\u0000é🙂-'.split('')), maxLength: 30 }),
  fc.constantFrom("$(touch /tmp/pwned)", "'; touch /tmp/pwned; '", '`id`', '${HOME}', '\\', "'", '"', ''),
)
const name = fc.oneof(fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,10}$/), shellish)

describe('microVM agent boundaries (fast-check)', () => {
  it('any env value reaches the command exactly (NUL cut); names a shell cannot export are left out; PATH is the guest\'s', () => {
    fc.assert(
      fc.property(fc.dictionary(name, shellish, { maxKeys: 4 }), shellish, (env, value) => {
        const program = startProgram({ command: 'printf "%s|%s" "$SVC_FUZZ_VALUE" "$PATH"', cwd: scratch, env: { ...env, SVC_FUZZ_VALUE: value } })
        const run = spawnSync('/bin/sh', ['-c', program], { encoding: 'utf8', env: {} })
        assert.equal(run.status, 0, run.stderr)
        // As UTF-8 text: a lone surrogate arrives as U+FFFD, like any string written to a pipe.
        assert.equal(run.stdout, `${Buffer.from(value.replaceAll('\0', '')).toString()}|${GUEST_PATH}`)
        const line = startLine('start', 7, { command: 'true', cwd: '/workspace', env })
        assert.ok(line.endsWith('\n') && !line.slice(0, -1).includes('\n'))
        assert.match(JSON.parse(line).sh, /^[A-Za-z0-9+/=]*$/)
        // Byte for byte (a lone surrogate is U+FFFD in UTF-8 on both sides).
        assert.deepEqual(Buffer.from(JSON.parse(line).sh, 'base64'), Buffer.from(startProgram({ command: 'true', cwd: '/workspace', env })))
      }),
      { numRuns: 60 },
    )
  })

  it('any command and cwd are one word each for the shell: nothing else runs', () => {
    fc.assert(
      fc.property(shellish, shellish, (command, cwd) => {
        const program = startProgram({ command: `printf %s ${"'"}${command.replaceAll("'", '')}${"'"}`, cwd: cwd === '' ? scratch : join(scratch, cwd.replaceAll('/', '_')), env: {} })
        const run = spawnSync('/bin/sh', ['-c', program], { encoding: 'utf8', env: {} })
        // Either the directory does not exist (exit 126 from `cd … || exit 126`) or the command printed its text.
        if (run.status === 126) return
        assert.equal(run.status, 0, run.stderr)
      }),
      { numRuns: 60 },
    )
  })

  it('any worker host path becomes at most one symlink to /workspace at that path, and the command still runs', () => {
    let n = 0
    fc.assert(
      fc.property(shellish, fc.boolean(), (tail, absolute) => {
        // Each run in its own directory, so an earlier link never stands in the way.
        const base = join(scratch, `alias-${n++}`)
        mkdirSync(base)
        const hostPath = absolute ? join(base, 'w', tail.replaceAll('/', '_')) : tail
        const program = startProgram({ command: 'printf ran', cwd: scratch, env: {}, hostPath })
        const run = spawnSync('/bin/sh', ['-c', program], { encoding: 'utf8', env: {} })
        assert.equal(run.status, 0, run.stderr)
        assert.equal(run.stdout, 'ran')
        const made = readdirSync(base, { recursive: true }).map(String)
        // As the shell gets it: NUL cut, a lone surrogate as U+FFFD (UTF-8 on the way).
        const clean = Buffer.from(hostPath.replaceAll('\0', '')).toString()
        if (absolute && /^\/[^\n]*[^/\n]$/.test(clean) && !clean.endsWith('/.') && !clean.endsWith('/..')) {
          assert.equal(readlinkSync(clean), '/workspace')
        }
        // Nothing but the link's directories and the link itself.
        for (const entry of made) assert.ok(join(base, entry) === clean || clean.startsWith(`${join(base, entry)}/`), `unexpected ${entry} for ${JSON.stringify(hostPath)}`)
        assert.ok(!existsSync('/tmp/pwned'))
      }),
      { numRuns: 60 },
    )
  })

  it('any line from the guest is one checked event or nothing', () => {
    const event = fc.record(
      {
        event: fc.oneof(fc.constantFrom('ready', 'started', 'exit', 'error', 'poweroff'), fc.string({ maxLength: 8 })),
        gen: fc.oneof(fc.integer(), fc.double(), fc.string({ maxLength: 4 }), fc.constant(null)),
        pid: fc.oneof(fc.integer(), fc.double(), fc.constant(-1)),
        code: fc.oneof(fc.integer({ min: -5, max: 400 }), fc.double(), fc.string({ maxLength: 3 })),
        message: fc.oneof(shellish, fc.string({ unit: fc.constantFrom('\u001b', '[', '2', 'J', '\r', '\u0007', 'a', '\u2028'), maxLength: 300 })),
      },
      { requiredKeys: ['event'] },
    )
    fc.assert(
      fc.property(fc.oneof(event.map((e) => JSON.stringify(e)), fc.string({ maxLength: 60 }), fc.constant('x'.repeat(MAX_AGENT_LINE + 1))), (line) => {
        const parsed = parseAgentEvent(line)
        if (!parsed) return
        if (parsed.event === 'started') assert.ok(Number.isSafeInteger(parsed.gen) && parsed.gen >= 0 && Number.isSafeInteger(parsed.pid) && parsed.pid >= 0)
        if (parsed.event === 'exit') {
          assert.ok(Number.isSafeInteger(parsed.gen) && parsed.gen >= 0)
          assert.ok((parsed.code === null) !== (parsed.signal === null))
          if (parsed.code !== null) assert.ok(parsed.code >= 0 && parsed.code <= 128)
        }
        if (parsed.event === 'error') {
          assert.doesNotMatch(parsed.message, /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/)
          assert.ok(parsed.message.length <= 200)
        }
      }),
      { numRuns: 300 },
    )
  })
})
