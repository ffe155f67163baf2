/**
 * What a handler leaves behind points at the user's code (issue 21): a real worker file, run as
 * its own process with svc-sdk and telemetry on, throws from a nested function; the span's
 * exception, the dead letter entry and `svc trigger --debug` show that file's frame first, not
 * svc-sdk's. `console.log` in a handler reaches the log store with the invocation's trace id, and
 * `svc logs --trace` shows it, printed once.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { cliEnv, runSvc } from './support/cli.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { ROOT } from './support/processes.ts'
import { waitFor } from './support/wait.ts'

/** Line of the `throw` in the worker file below (1-based). */
const THROW_LINE = 6

function workerSource(): string {
  const sdk = pathToFileURL(join(ROOT, 'packages', 'sdk', 'dist', 'index.js')).href
  return [
    `import { registerWorker } from ${JSON.stringify(sdk)}`,
    `const client = registerWorker(process.argv[2], { workerName: 'app', otel: { enabled: true, serviceName: 'app', fetchInstrumentationEnabled: false, logsFlushIntervalMs: 50 } })`,
    '',
    '// A nested function of the user: its frame must come first.',
    'function chargeCard(card) {',
    '  throw new Error(`card ${card} declined`)',
    '}',
    'client.registerFunction("app::fails", (data) => chargeCard(data.card))',
    'client.registerFunction("app::prints", (data) => {',
    '  console.log(`printed ${data.n}`)',
    '  console.error(`complained ${data.n}`)',
    '  return { ok: true }',
    '})',
    'client.addConnectionStateListener((state) => { if (state === "connected") console.log("READY") })',
    'process.on("SIGTERM", async () => { await client.shutdown(); process.exit(0) })',
    '',
  ].join('\n')
}

interface Span {
  name: string
  events: Array<{ name: string; attributes: Record<string, unknown> }>
  children: Span[]
}

/** The first `at …` line of a stack. */
function firstFrame(stack: string): string {
  return stack.split('\n').find((l) => /^\s*at /.test(l))?.trim() ?? ''
}

describe('handler errors and console output from a real worker process', () => {
  let t: TestEngine
  let dir: string
  let file: string
  let worker: ChildProcess
  const stdout: string[] = []
  const stderr: string[] = []
  let supervised = false
  const svc = (...args: string[]) => runSvc(args, { cwd: dir, env: cliEnv({ SVC_URL: t.url, NO_COLOR: '1' }) })
  const call = (function_id: string, data: unknown, options: { action?: unknown } = {}) => t.engine.inject({ function_id, data, ...options } as Parameters<TestEngine['engine']['inject']>[0])

  before(async () => {
    t = await startTestEngine({
      settings: {
        'svc-observability': { store: 'memory' },
        queue: { adapter: { name: 'memory' }, queue_configs: { jobs: { max_retries: 0 } } },
      },
    })
    dir = mkdtempSync(join(tmpdir(), 'svc-handler-output-'))
    writeFileSync(join(dir, 'config.yaml'), 'workers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n')
    file = join(dir, 'worker.mjs')
    writeFileSync(file, workerSource())
    worker = spawn(process.execPath, [file, t.url], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
    // As svc's supervisor does (src/lib/start.ts): each output line becomes a log record, once `supervised`.
    createInterface({ input: worker.stdout!, crlfDelay: Infinity }).on('line', (l) => {
      stdout.push(l)
      if (supervised) t.engine.telemetry.output('app', 'stdout', l)
    })
    createInterface({ input: worker.stderr!, crlfDelay: Infinity }).on('line', (l) => {
      stderr.push(l)
      if (supervised) t.engine.telemetry.output('app', 'stderr', l)
    })
    await waitFor(() => stdout.includes('READY'), "stdout.includes('READY')", 30_000)
    await waitFor(async () => {
      const { functions } = (await call('engine::functions::list', {})) as { functions: Array<{ function_id: string }> }
      return functions.some((f) => f.function_id === 'app::prints')
    }, 'the condition', 30_000)
  })

  after(async () => {
    if (worker && worker.exitCode === null) {
      const exited = new Promise((resolve) => worker.once('exit', resolve))
      worker.kill('SIGTERM')
      await exited
    }
    await t?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it("svc trigger --debug shows the handler's stack, the user's frame first", async () => {
    const r = await svc('trigger', 'app::fails', 'card=4242', '--debug')
    assert.equal(r.code, 1)
    assert.match(r.stderr, /card 4242 declined/)
    assert.match(firstFrame(r.stderr), new RegExp(`at chargeCard \\(.*worker\\.mjs:${THROW_LINE}:\\d+\\)`), r.stderr)
  })

  it("the span's exception carries the user's stack, its first frame in the worker file", async () => {
    await assert.rejects(call('app::fails', { card: 1111 }))
    let exception: Record<string, unknown> | undefined
    await waitFor(async () => {
      const { traces } = (await call('engine::traces::list', { function_id: 'app::fails', status: 'error' })) as { traces: Array<{ trace_id: string }> }
      for (const trace of traces) {
        const { roots } = (await call('engine::traces::tree', { trace_id: trace.trace_id })) as { roots: Span[] }
        const all = (nodes: Span[]): Span[] => nodes.flatMap((n) => [n, ...all(n.children)])
        exception = all(roots).flatMap((s) => s.events).find((e) => e.name === 'exception' && String(e.attributes['exception.message']).includes('card 1111'))?.attributes
        if (exception !== undefined) return true
      }
      return false
    }, 'the condition', 15_000)
    const stack = String(exception!['exception.stacktrace'])
    assert.match(firstFrame(stack), new RegExp(`at chargeCard \\(.*worker\\.mjs:${THROW_LINE}:\\d+\\)`), stack)
    assert.doesNotMatch(stack.split('\n').slice(0, 2).join('\n'), /svc-sdk|tracing\.(ts|js)/)
  })

  it("a dead letter entry keeps the user's stack", async () => {
    await call('app::fails', { card: 9999 }, { action: { type: 'enqueue', queue: 'jobs' } })
    let entry: { error?: { stacktrace?: string; message?: string } } | undefined
    await waitFor(async () => {
      const messages = (await call('engine::queue::dlq_messages', { topic: 'jobs' })) as Array<{ error?: { stacktrace?: string; message?: string } }>
      entry = messages.find((m) => m.error?.message?.includes('card 9999'))
      return entry !== undefined
    }, 'the condition', 15_000)
    assert.match(firstFrame(entry!.error!.stacktrace ?? ''), new RegExp(`at chargeCard \\(.*worker\\.mjs:${THROW_LINE}:\\d+\\)`), JSON.stringify(entry))
  })

  /** The trace of the one `app::prints` call made with `n`, once its span is stored. */
  const printsTrace = async (n: number): Promise<string> => {
    let traceId = ''
    await waitFor(async () => {
      const { traces } = (await call('engine::traces::list', { function_id: 'app::prints', limit: 1000 })) as { traces: Array<{ trace_id: string }> }
      for (const trace of traces) {
        const { roots } = (await call('engine::traces::tree', { trace_id: trace.trace_id })) as { roots: Array<{ events: Array<{ name: string; attributes: Record<string, unknown> }> }> }
        const input = roots.flatMap((r) => r.events).find((e) => e.name === 'svc.invocation.input')
        if (input !== undefined && String(input.attributes['svc.payload.json']).includes(`"n":${n}`)) traceId = trace.trace_id
      }
      return traceId !== ''
    }, 'the condition', 15_000)
    return traceId
  }

  const logsOf = async (search: string) =>
    ((await call('engine::logs::list', { search, limit: 1000 })) as { logs: Array<{ body: string; trace_id: string | null; span_id: string | null; attributes: Record<string, unknown> }> }).logs

  it('console.log in a handler of a worker svc did not launch: svc logs --trace shows the lines, printed once', async () => {
    await call('app::prints', { n: 1 })
    const traceId = await printsTrace(1)
    let shown = ''
    await waitFor(async () => {
      const r = await svc('logs', '--trace', traceId)
      shown = r.stdout
      return r.code === 0 && shown.includes('printed 1') && shown.includes('complained 1')
    }, 'the condition', 15_000)
    assert.equal(shown.match(/printed 1/g)?.length, 1, shown)
    assert.deepEqual(stdout.filter((l) => l === 'printed 1'), ['printed 1'])
    assert.deepEqual(stderr.filter((l) => l === 'complained 1'), ['complained 1'])
    const [record] = await logsOf('printed 1')
    assert.equal(record!.trace_id, traceId)
    assert.match(record!.span_id ?? '', /^[0-9a-f]{16}$/)
  })

  it("under svc's supervisor the captured line gets the trace id and is stored once", async () => {
    supervised = true
    try {
      await call('app::prints', { n: 2 })
      const traceId = await printsTrace(2)
      // Paired once the SDK's record arrives: the captured line then carries the trace.
      await waitFor(async () => (await logsOf('printed 2')).some((l) => l.trace_id === traceId), "(await logsOf('printed 2')).some((l) => l.trace_id === traceId)", 15_000)
      await waitFor(async () => (await logsOf('complained 2')).some((l) => l.trace_id === traceId), "(await logsOf('complained 2')).some((l) => l.trace_id === traceId)", 15_000)
      const printed = await logsOf('printed 2')
      assert.equal(printed.length, 1, JSON.stringify(printed))
      assert.equal(printed[0]!.attributes['log.source'], 'stdout')
      assert.equal((await logsOf('complained 2')).length, 1)
      const r = await svc('logs', '--trace', traceId)
      assert.equal(r.stdout.match(/printed 2/g)?.length, 1, r.stdout)
      assert.equal(r.stdout.match(/complained 2/g)?.length, 1, r.stdout)
    } finally {
      supervised = false
    }
  })
})
