/**
 * `svc traces` and `svc logs --trace` against a real engine (issue 21): a worker over a real
 * WebSocket with telemetry on makes traces (one failing in a nested call, one slow, one fast); the
 * built CLI lists them with each filter, draws one as a waterfall with the failure's message, and
 * prints only that trace's log records. Span names sent on `/otel` by a hostile worker reach the
 * terminal escaped.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import WebSocket from 'ws'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { flushOtel, getLogger } from 'svc-sdk/telemetry'
import { cliEnv, runSvc } from './support/cli.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { waitFor } from './support/wait.ts'

interface Listed {
  traces: Array<{ trace_id: string; name: string; status: string; duration_ms: number; span_count: number }>
  total: number
}

// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/

describe('svc traces and svc logs --trace', () => {
  let t: TestEngine
  let client: SvcClient
  let dir: string
  const svc = (...args: string[]) => runSvc(args, { cwd: dir, env: cliEnv({ SVC_URL: t.url, NO_COLOR: '1' }) })
  const listed = async (...args: string[]): Promise<Listed> => {
    const r = await svc('traces', '--json', ...args)
    assert.equal(r.code, 0, r.stderr)
    return JSON.parse(r.stdout) as Listed
  }

  before(async () => {
    t = await startTestEngine({ settings: { 'svc-observability': { store: 'memory' } } })
    dir = mkdtempSync(join(tmpdir(), 'svc-cli-traces-'))
    // A project whose engine is the test engine (svc logs reads config.yaml; SVC_URL wins).
    writeFileSync(join(dir, 'config.yaml'), 'workers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n')
    client = registerWorker(t.url, { workerName: 'shop', otel: { enabled: true, serviceName: 'shop', fetchInstrumentationEnabled: false } })
    client.registerFunction('shop::checkout', async (data: { fail?: boolean; order: string }) => {
      getLogger().info(`checking out ${data.order}`)
      return client.trigger({ function_id: 'shop::charge', payload: data })
    })
    client.registerFunction('shop::charge', (data: { fail?: boolean }) => {
      if (data.fail) throw new Error('card declined')
      return { charged: true }
    })
    // Far slower than a checkout can be even on a loaded machine, so --min-duration tells them apart.
    client.registerFunction('shop::slow', async () => {
      await new Promise((resolve) => setTimeout(resolve, 2000))
      return { slow: true }
    })
    await waitFor(async () => ((await client.trigger({ function_id: 'engine::functions::list', payload: {} })) as { functions: Array<{ function_id: string }> }).functions.some((f) => f.function_id === 'shop::slow'), 'the condition')
    await client.trigger({ function_id: 'shop::checkout', payload: { order: 'o-1' } })
    await assert.rejects(client.trigger({ function_id: 'shop::checkout', payload: { order: 'o-2', fail: true } }))
    await client.trigger({ function_id: 'shop::slow', payload: {} })
    await flushOtel()
  })

  after(async () => {
    await client?.shutdown()
    await t?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('lists recent traces newest first, as a table and as JSON', async () => {
    let all!: Listed
    await waitFor(async () => (all = await listed()).traces.filter((tr) => tr.name.startsWith('execute shop::')).length >= 3, "(all = await listed()).traces.filter((tr) => tr.name.startsWith('execute shop::')).length >= 3", 15_000)
    const names = all.traces.map((tr) => tr.name).filter((n) => n.startsWith('execute shop::'))
    assert.deepEqual(names.slice(0, 3), ['execute shop::slow', 'execute shop::checkout', 'execute shop::checkout'])
    const table = await svc('traces')
    assert.equal(table.code, 0, table.stderr)
    const [header, ...rows] = table.stdout.trimEnd().split('\n')
    assert.match(header!, /^TRACE ID +STATUS +DURATION +SPANS +STARTED +NAME$/)
    assert.match(rows[0]!, new RegExp(`^${all.traces[0]!.trace_id} +ok +\\d+(\\.\\d+)?(ms|s) +\\d+ +[\\d:]+ +execute shop::slow$`))
    for (const line of table.stdout.split('\n')) assert.ok(line.length <= 100, line)
  })

  it('filters by status, minimum duration, name and function, on the engine', async () => {
    const failed = await listed('--status', 'error')
    assert.deepEqual(failed.traces.map((tr) => tr.name), ['execute shop::checkout'])
    const slow = await listed('--min-duration', '1.5s')
    assert.deepEqual(slow.traces.map((tr) => tr.name), ['execute shop::slow'])
    const byName = await listed('--name', 'SLOW')
    assert.deepEqual(byName.traces.map((tr) => tr.name), ['execute shop::slow'])
    const charged = await listed('--function', 'shop::charge')
    assert.equal(charged.total, 2, 'both checkouts called shop::charge')
    assert.equal((await listed('--limit', '1')).traces.length, 1)
    const bad = await svc('traces', '--min-duration', 'soon')
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /Invalid value for --min-duration: 'soon'/)
  })

  it('draws a trace as a waterfall: the nested call indented, its error message under it', async () => {
    const [failed] = (await listed('--status', 'error')).traces
    let out = ''
    await waitFor(async () => {
      const r = await svc('traces', failed!.trace_id)
      out = r.stdout
      return r.code === 0 && /card declined/.test(out)
    }, 'the condition', 15_000)
    const lines = out.trimEnd().split('\n')
    assert.match(lines[0]!, new RegExp(`^Trace ${failed!.trace_id} +\\d+ms +\\d+ spans, \\d+ failed`))
    const root = lines.findIndex((l) => l.startsWith('execute shop::checkout'))
    const charge = lines.findIndex((l) => /^ {2,}execute shop::charge /.test(l))
    assert.ok(root >= 1 && charge > root, out)
    assert.match(lines[charge]!, /█+ +[\d.]+ms +error$/)
    assert.match(lines[charge + 1]!, /^ +! invocation_failed: card declined$/)
    const json = JSON.parse((await svc('traces', failed!.trace_id, '--json')).stdout) as { trace_id: string; spans: Array<{ name: string; depth: number }> }
    assert.equal(json.trace_id, failed!.trace_id)
    assert.ok(json.spans.some((s) => s.name === 'execute shop::charge' && s.depth > 0))
    const missing = await svc('traces', '0'.repeat(31) + '1')
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /Trace 0{31}1 not found/)
  })

  it('svc logs --trace prints only the log records of that trace', async () => {
    const checkouts = (await listed('--name', 'checkout')).traces
    assert.equal(checkouts.length, 2)
    for (const [i, order] of ['o-2', 'o-1'].entries()) {
      const r = await svc('logs', '--trace', checkouts[i]!.trace_id)
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, new RegExp(`checking out ${order}`))
      assert.doesNotMatch(r.stdout, new RegExp(`checking out ${order === 'o-1' ? 'o-2' : 'o-1'}`))
    }
    const bad = await svc('logs', '--trace', 'nope')
    assert.equal(bad.code, 2)
  })

  it('escapes span names and messages a worker sent on /otel', async () => {
    const traceId = 'f'.repeat(32)
    const ws = new WebSocket(`${t.url}/otel`)
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject))
    const now = String(BigInt(Date.now()) * 1_000_000n)
    const later = String(BigInt(Date.now() + 5) * 1_000_000n)
    const spans = [
      { traceId, spanId: '1'.repeat(16), name: 'evil\u001b]52;c;aGk=\u0007\u001b[2J', kind: 2, startTimeUnixNano: now, endTimeUnixNano: later, status: { code: 1 } },
      { traceId, spanId: '2'.repeat(16), parentSpanId: '1'.repeat(16), name: 'a\u202eb\rforged', kind: 1, startTimeUnixNano: now, endTimeUnixNano: later, status: { code: 2, message: 'bad\u001b[31m\nnext' } },
    ]
    ws.send(Buffer.concat([Buffer.from('OTLP'), Buffer.from(JSON.stringify({ resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'evil' } }] }, scopeSpans: [{ spans }] }] }))]))
    let out = ''
    await waitFor(async () => {
      const r = await svc('traces', traceId)
      out = r.stdout
      return r.code === 0 && out.includes('forged')
    }, 'the condition', 15_000)
    ws.close()
    assert.ok(!UNSAFE.test(out), JSON.stringify(out))
    assert.match(out, /evil\\x1b\]52;c;aGk=\\x07\\x1b\[2J/)
    assert.match(out, /a\\u202eb\\rforged/)
    assert.match(out, /! bad\\x1b\[31m\\nnext/)
    const table = await svc('traces', '--name', 'evil')
    assert.ok(!UNSAFE.test(table.stdout), JSON.stringify(table.stdout))
  })
})
