/**
 * End to end: `svc trigger` (cli.md §4.6) against a real engine started with the built CLI, with a
 * real SDK worker (this test process) serving test functions. Needs `npm run build`.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { cliEnv, runSvc, type Finished } from './support/cli.ts'
import { startEngineProcess } from './support/processes.ts'
import { waitFor } from './support/wait.ts'

const SVC_BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))

const dir = mkdtempSync(join(tmpdir(), 'svc-cli-trigger-'))
writeFileSync(
  join(dir, 'config.yaml'),
  'workers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n  - name: svc-http\n    config:\n      port: 0\n  - name: svc-stream\n    config:\n      port: 0\n',
)

let engine: ChildProcess | undefined
let engineExit: Promise<number | null>
let engineUrl = ''
let worker: SvcClient | undefined
let billing: SvcClient | undefined
const voidCalls: unknown[] = []
/** What test::cancellable saw: its start, and the reason its signal aborted with. */
const cancellable: { started?: () => void; reason?: unknown } = {}
let voidArrived: (() => void) | undefined

const cleanEnv = cliEnv

/** Runs `svc <args>` to completion in the project directory. */
function svc(args: string[], options: { env?: Record<string, string>; cwd?: string } = {}): Promise<Omit<Finished, 'signal'>> {
  return runSvc(args, { cwd: options.cwd ?? dir, env: cliEnv(options.env) }).then(({ code, stdout, stderr }) => ({ code, stdout, stderr }))
}

/** `svc trigger <args> --engine <url>` against the test engine. */
function trigger(...args: string[]): Promise<Omit<Finished, 'signal'>> {
  return svc(['trigger', ...args, '--engine', engineUrl])
}

/** A port nothing listens on: bound, read, released. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** Waits until `ids` are all listed by the engine (registrations are asynchronous). */
async function registered(client: SvcClient, ids: string[]): Promise<void> {
  await waitFor(async () => {
    const { functions } = (await client.trigger({ function_id: 'engine::functions::list', payload: {} })) as {
      functions: Array<{ function_id: string }>
    }
    return ids.every((id) => functions.some((f) => f.function_id === id))
  }, `${ids.join(', ')} registered`)
}

before(async () => {
  const child = spawn(process.execPath, [SVC_BIN, '--json'], { cwd: dir, env: cleanEnv(), stdio: ['ignore', 'pipe', 'inherit'] })
  engine = child
  engineExit = new Promise((resolve) => child.on('close', (code) => resolve(code)))
  engineUrl = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const event = JSON.parse(line) as { event: string; engine_url?: string }
      if (event.event === 'engine_ready') resolve(event.engine_url!)
    })
    void engineExit.then((code) => reject(new Error(`svc exited with ${code} before it was ready`)))
  })

  worker = registerWorker(engineUrl, { workerName: 'cli-trigger-test' })
  worker.registerFunction('test::echo', (data: unknown) => data)
  worker.registerFunction('test::nothing', () => undefined)
  worker.registerFunction('test::fail', () => {
    throw Object.assign(new Error('the ledger is closed'), { code: 'LEDGER_CLOSED' })
  })
  worker.registerFunction('test::slow', () => new Promise((resolve) => setTimeout(() => resolve('late'), 5000).unref()))
  worker.registerFunction('test::cancellable', (_data: unknown, _metadata: unknown, { signal }: { signal: AbortSignal }) => {
    cancellable.started?.()
    return new Promise((_resolve, reject) =>
      signal.addEventListener('abort', () => {
        cancellable.reason = signal.reason
        reject(signal.reason)
      }),
    )
  })
  worker.registerFunction('test::sink', (data: unknown) => {
    voidCalls.push(data)
    voidArrived?.()
    return undefined
  })
  billing = registerWorker(engineUrl, { workerName: 'cli-trigger-billing', namespace: 'billing' })
  billing.registerFunction('test::where', () => 'billing')
  await registered(worker, ['test::echo', 'test::nothing', 'test::fail', 'test::slow', 'test::cancellable', 'test::sink'])
})

after(async () => {
  await worker?.shutdown()
  await billing?.shutdown()
  if (engine && engine.exitCode === null) {
    engine.kill('SIGTERM')
    await engineExit
  }
  rmSync(dir, { recursive: true, force: true })
})

describe('svc trigger and Ctrl-C (issue 21)', () => {
  it('the first SIGINT cancels the invocation, says so, and exits 130; the handler sees its signal abort', async () => {
    const started = new Promise<void>((resolve) => (cancellable.started = resolve))
    let child: ChildProcess | undefined
    const run = runSvc(['trigger', 'test::cancellable', '--engine', engineUrl], { cwd: dir, env: cliEnv(), onSpawn: (c) => (child = c) })
    await started
    child!.kill('SIGINT')
    const result = await run
    assert.equal(result.code, 130, result.stderr)
    assert.match(result.stderr, /Cancelling test::cancellable: sent cancel to the engine/)
    assert.match(result.stderr, /Cancelled test::cancellable/)
    assert.equal(result.stdout, '')
    await waitFor(() => cancellable.reason !== undefined, 'cancellable.reason !== undefined')
    assert.equal((cancellable.reason as { code?: string }).code, 'cancelled')
    assert.match((cancellable.reason as { message: string }).message, /interrupted \(Ctrl-C\)/)
  })
})

describe('svc trigger (cli.md §4.6)', () => {
  it('prints the result as pretty JSON (2-space indent), payload built from key=value tokens', async () => {
    const result = await trigger('test::echo', 'a=10', 'ok=true', 'x=null', 'name=alice', 'zip=01234', 'o={"k":1}', 'l=[1,2]', 'e=', 'a.b=1')
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stderr, '')
    const expected = { a: 10, ok: true, x: null, name: 'alice', zip: '01234', o: { k: 1 }, l: [1, 2], e: '', 'a.b': 1 }
    assert.equal(result.stdout, `${JSON.stringify(expected, null, 2)}\n`)
  })

  it('merges tokens over --data, and sends {} with neither', async () => {
    const merged = await trigger('test::echo', '--data', '{"a":1,"b":2}', 'b=3')
    assert.deepEqual(JSON.parse(merged.stdout), { a: 1, b: 3 })
    const empty = await trigger('test::echo')
    assert.equal(empty.stdout, '{}\n')
    const array = await trigger('test::echo', '-d', '[1,"two"]')
    assert.deepEqual(JSON.parse(array.stdout), [1, 'two'])
  })

  it('prints nothing for a function without result', async () => {
    const result = await trigger('test::nothing')
    assert.deepEqual(result, { code: 0, stdout: '', stderr: '' })
  })

  it('invokes built-in functions: state::set then state::get', async () => {
    const set = await trigger('state::set', 'scope=cli', 'key=ada', 'value={"born":1815}')
    assert.equal(set.code, 0, set.stderr)
    const get = await trigger('state::get', 'scope=cli', 'key=ada')
    assert.equal(get.code, 0, get.stderr)
    assert.deepEqual(JSON.parse(get.stdout), { born: 1815 })
    const list = await trigger('engine::functions::list')
    const ids = (JSON.parse(list.stdout) as { functions: Array<{ function_id: string }> }).functions.map((f) => f.function_id)
    assert.ok(ids.includes('test::echo') && ids.includes('state::get'), ids.join(','))
  })

  it('a function error prints one line and a hint, and the stack only with --debug or DEBUG (issue 11), exit 1', async () => {
    const result = await trigger('test::fail')
    assert.equal(result.code, 1)
    assert.equal(result.stdout, '')
    assert.equal(result.stderr, 'Error: LEDGER_CLOSED: the ledger is closed\nHint: run again with --debug to see the stack trace\n')
    const debug = await trigger('test::fail', '--debug')
    assert.equal(debug.code, 1)
    assert.match(debug.stderr, /^Error: LEDGER_CLOSED: the ledger is closed\nError: the ledger is closed\n\s+at /)
    const env = await svc(['trigger', 'test::fail', '--engine', engineUrl], { env: { DEBUG: '1' } })
    assert.match(env.stderr, /^Error: LEDGER_CLOSED: the ledger is closed\nError: the ledger is closed\n\s+at /)
  })

  it('function_not_found: a typo gets did-you-mean, an unknown id says nothing registers it (issue 11), exit 1', async () => {
    const typo = await trigger('test::eco')
    assert.equal(typo.code, 1)
    assert.equal(typo.stderr, 'Error: function_not_found: Function test::eco not found\nHint: did you mean test::echo? (svc trigger test::echo)\n')
    const result = await trigger('nope::missing')
    assert.equal(result.code, 1)
    assert.equal(
      result.stderr,
      'Error: function_not_found: Function nope::missing not found\nHint: no connected worker registers nope::missing; svc worker list shows the workers and their functions\n',
    )
    const compose = await trigger('-n', 'no-daemon', 'compose::up')
    assert.match(compose.stderr, /\nHint: no compose daemon serves namespace no-daemon; start one with svc compose -n no-daemon\n$/)
  })

  it('--json prints one object per outcome', async () => {
    const ok = await trigger('test::echo', 'a=1', '--json')
    assert.equal(ok.code, 0)
    const okBody = JSON.parse(ok.stdout) as Record<string, unknown>
    assert.deepEqual({ ...okBody, duration_ms: 0 }, { ok: true, result: { a: 1 }, duration_ms: 0 })
    assert.equal(typeof okBody.duration_ms, 'number')

    const none = await trigger('test::nothing', '--json')
    assert.equal(JSON.parse(none.stdout).result, null)

    const failed = await trigger('test::fail', '--json')
    assert.equal(failed.code, 1)
    assert.equal(failed.stderr, '')
    const body = JSON.parse(failed.stdout) as { ok: boolean; error: { code: string; message: string; stacktrace?: string } }
    assert.equal(body.ok, false)
    assert.equal(body.error.code, 'LEDGER_CLOSED')
    assert.equal(body.error.message, 'the ledger is closed')
    assert.match(body.error.stacktrace ?? '', /^Error: the ledger is closed\n\s+at /)

    const usage = await trigger('test::echo', 'oops', '--json')
    assert.equal(usage.code, 2)
    assert.deepEqual(JSON.parse(usage.stdout), {
      ok: false,
      error: { code: 'INVALID_ARGUMENT', message: "Invalid argument 'oops': expected key=value" },
    })
  })

  it('times out after --timeout-ms with exit 4', async () => {
    const result = await trigger('test::slow', '--timeout-ms', '300')
    assert.equal(result.code, 4)
    assert.equal(result.stderr, 'Error: Timed out after 300 ms waiting for test::slow\n')
    const json = await trigger('test::slow', '--timeout-ms', '300', '--json')
    assert.equal(json.code, 4)
    assert.deepEqual(JSON.parse(json.stdout).error, { code: 'TIMEOUT', message: 'Timed out after 300 ms waiting for test::slow' })
  })

  it('--void sends without waiting and prints nothing; the function still runs', async () => {
    const arrived = new Promise<void>((resolve) => (voidArrived = resolve))
    const result = await trigger('test::sink', 'n=1', '--void')
    assert.deepEqual(result, { code: 0, stdout: '', stderr: '' })
    await arrived
    assert.deepEqual(voidCalls, [{ n: 1 }])
  })

  it('-n invokes in the given namespace', async () => {
    await registered(billing!, ['test::where'])
    const result = await trigger('test::where', '-n', 'billing')
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stdout, '"billing"\n')
  })

  it('--enqueue without a queue worker fails with enqueue_error, exit 1', async () => {
    const result = await trigger('test::sink', '--enqueue', 'default')
    assert.equal(result.code, 1)
    assert.match(result.stderr, /^Error: (enqueue_error|queue_not_found): /)
  })

  it('--enqueue with --idempotency-key and --delay-ms prints the first receipt again for a repeated key', async () => {
    await worker!.trigger({ function_id: 'queue::define', payload: { queue: 'cli-jobs', config: { max_retries: 0 } } })
    const first = await trigger('test::sink', 'n=1', '--enqueue', 'cli-jobs', '--idempotency-key', 'cli-k1', '--delay-ms', '10')
    assert.equal(first.code, 0, first.stderr)
    const receipt = (JSON.parse(first.stdout) as { messageReceiptId: string }).messageReceiptId
    assert.match(receipt, /^[0-9a-f-]{36}$/)
    const second = await trigger('test::sink', 'n=2', '--enqueue', 'cli-jobs', '--idempotency-key', 'cli-k1')
    assert.deepEqual(JSON.parse(second.stdout), { messageReceiptId: receipt })
    await waitFor(async () => {
      const stats = (await worker!.trigger({ function_id: 'engine::queue::topic_stats', payload: { topic: 'cli-jobs' } })) as { delivered: number; depth: number }
      return stats.delivered === 1 && stats.depth === 0
    }, 'one delivery of the enqueued message, nothing waiting')
    const bad = await trigger('test::sink', '--delay-ms', '5')
    assert.equal(bad.code, 2)
  })

  it('--describe prints the function details from engine::functions::info', async () => {
    const result = await trigger('state::get', '--describe')
    assert.equal(result.code, 0, result.stderr)
    const detail = JSON.parse(result.stdout) as { function_id: string }
    assert.equal(detail.function_id, 'state::get')
  })

  it('accepts the legacy --function-id/--payload form', async () => {
    const result = await trigger('--function-id=test::echo', '--payload={"legacy":true}')
    assert.equal(result.code, 0, result.stderr)
    assert.deepEqual(JSON.parse(result.stdout), { legacy: true })
    const noPayload = await trigger('--function-id', 'test::echo')
    assert.equal(noPayload.stdout, '{}\n')
  })

  it('finds the engine through SVC_URL and the --url alias', async () => {
    const viaEnv = await svc(['trigger', 'test::echo', 'via=env'], { env: { SVC_URL: engineUrl } })
    assert.equal(viaEnv.code, 0, viaEnv.stderr)
    assert.deepEqual(JSON.parse(viaEnv.stdout), { via: 'env' })
    const viaAlias = await svc(['t', 'test::echo', 'via=url', '--url', engineUrl])
    assert.deepEqual(JSON.parse(viaAlias.stdout), { via: 'url' })
  })

  it('finds the engine through the listener of the nearest config.yaml', async () => {
    const project = mkdtempSync(join(tmpdir(), 'svc-cli-trigger-project-'))
    try {
      const port = new URL(engineUrl).port
      writeFileSync(join(project, 'config.yaml'), `workers:\n  - name: svc-worker-manager\n    config:\n      host: 0.0.0.0\n      port: ${port}\n`)
      // An empty registry of running engines: nothing says the engine at that port is another project's.
      const result = await svc(['trigger', 'test::echo', 'via=config'], { cwd: project, env: { SVC_ENGINES_DIR: join(project, 'no-engines') } })
      assert.equal(result.code, 0, result.stderr)
      assert.deepEqual(JSON.parse(result.stdout), { via: 'config' })
    } finally {
      rmSync(project, { recursive: true, force: true })
    }
  })
})

describe('svc trigger failures before any invocation', () => {
  it('an unreachable engine exits 3 with the message of cli.md §4.6', async () => {
    const port = await closedPort()
    const result = await svc(['trigger', 'math::add', 'a=1', '--engine', `ws://127.0.0.1:${port}`])
    assert.equal(result.code, 3)
    assert.equal(
      result.stderr,
      `Error: Cannot connect to the engine at ws://127.0.0.1:${port} (ECONNREFUSED). Is svc running?\n` +
        `Hint: check the address given with --engine (ws://127.0.0.1:${port}), or start that engine with svc\n`,
    )
    const json = await svc(['trigger', 'math::add', '--json', '--engine', `ws://127.0.0.1:${port}`])
    assert.equal(json.code, 3)
    assert.equal(JSON.parse(json.stdout).error.code, 'ENGINE_UNREACHABLE')
  })

  it('an address list (--engine, SVC_URL) uses the first engine that answers: [dead, live] (issue 19 §3)', async () => {
    const dead = `ws://127.0.0.1:${await closedPort()}`
    const flag = await svc(['trigger', 'test::echo', 'a=1', '--engine', `${dead},${engineUrl}`])
    assert.equal(flag.code, 0, flag.stderr)
    assert.equal(flag.stderr, '')
    assert.deepEqual(JSON.parse(flag.stdout), { a: 1 })
    // A shell that exports the fleet's list for its workers runs svc commands too.
    const env = { SVC_URL: `${dead}, ${engineUrl}` }
    const viaEnv = await svc(['trigger', 'test::echo', 'b=2'], { env })
    assert.equal(viaEnv.code, 0, viaEnv.stderr)
    assert.deepEqual(JSON.parse(viaEnv.stdout), { b: 2 })
    const functions = await svc(['functions', '--json'], { env })
    assert.equal(functions.code, 0, functions.stderr)
    assert.ok((JSON.parse(functions.stdout) as { functions: Array<{ function_id: string }> }).functions.some((f) => f.function_id === 'test::echo'))
  })

  it('no address of a list answering exits 3 naming every address tried, without credentials', async () => {
    const [one, two] = [await closedPort(), await closedPort()]
    const list = `ws://user:hunter2@127.0.0.1:${one}/?token=s3cret,ws://127.0.0.1:${two}`
    const result = await svc(['trigger', 'math::add', '--engine', list])
    assert.equal(result.code, 3, result.stderr)
    assert.equal(
      result.stderr,
      `Error: Cannot connect to the engine at any of 2 addresses: ws://127.0.0.1:${one} (ECONNREFUSED), ws://127.0.0.1:${two} (ECONNREFUSED). Is svc running?\n` +
        `Hint: check the address given with --engine (ws://127.0.0.1:${one}, ws://127.0.0.1:${two}), or start that engine with svc\n`,
    )
    const functions = await svc(['functions', '--json'], { env: { SVC_URL: list } })
    assert.equal(functions.code, 3, functions.stderr)
    assert.doesNotMatch(functions.stdout + functions.stderr, /hunter2|s3cret|user/)
    assert.match(functions.stdout + functions.stderr, /Cannot connect to the engine at any of 2 addresses: ws:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\), ws:/)
    // One address: the same message as before, its credentials left out too.
    const single = await svc(['trigger', 'math::add', '--json', '--engine', `ws://user:hunter2@127.0.0.1:${one}/?token=s3cret`])
    assert.equal(single.code, 3)
    assert.deepEqual(JSON.parse(single.stdout).error, {
      code: 'ENGINE_UNREACHABLE',
      message: `Cannot connect to the engine at ws://127.0.0.1:${one} (ECONNREFUSED). Is svc running?`,
    })
  })

  it('an invalid entry of an address list exits 2 naming it by position, without credentials', async () => {
    const result = await svc(['trigger', 'math::add', '--engine', `${engineUrl},https://user:hunter2@svc.example/ws?token=s3cret`])
    assert.equal(result.code, 2, result.stderr)
    assert.ok(
      result.stderr.startsWith('Error: Invalid engine URL: engine address 2 of 2 must be a ws:// or wss:// URL, got https: (https://svc.example/ws)\n'),
      result.stderr,
    )
    assert.doesNotMatch(result.stderr, /hunter2|s3cret|user/)
    const empty = await svc(['functions'], { env: { SVC_URL: `${engineUrl},,` } })
    assert.equal(empty.code, 2, empty.stderr)
    assert.match(empty.stderr, /^Error: Invalid engine URL: engine address 2 of 3 is empty/)
  })

  it("the project's engine not running: the Hint line says where to start it (issue 16)", async () => {
    const port = await closedPort()
    const project = mkdtempSync(join(tmpdir(), 'svc-cli-stopped-'))
    writeFileSync(join(project, 'config.yaml'), `workers:\n  - name: svc-worker-manager\n    config:\n      port: ${port}\n`)
    try {
      const result = await svc(['trigger', 'math::add', 'a=1'], { cwd: project })
      assert.equal(result.code, 3, result.stderr)
      assert.ok(
        result.stderr.endsWith(
          `Error: Cannot connect to the engine at ws://127.0.0.1:${port} (ECONNREFUSED). Is svc running?\n` +
            `Hint: start it with svc in ${project}, or pass --engine <url> of a running engine\n`,
        ),
        result.stderr,
      )
      const functions = await svc(['functions'], { cwd: project })
      assert.equal(functions.code, 3, functions.stderr)
      assert.match(functions.stderr, /\nHint: start it with svc in /)
    } finally {
      rmSync(project, { recursive: true, force: true })
    }
  })

  it('malformed key=value and bad --data exit 2 without contacting the engine', async () => {
    const cases: Array<[string[], string]> = [
      [['math::add', 'x'], "Error: Invalid argument 'x': expected key=value\n"],
      [['math::add', '=x'], "Error: Invalid argument '=x': empty key\n"],
      [['math::add', '--data', '{bad'], `Error: --data: invalid JSON (line 1 column 2: property name expected, found 'b')\n`],
      [['math::add', '--data', '[1]', 'a=1'], 'Error: --data must be a JSON object when key=value arguments are given\n'],
      [['--function-id=math::add', 'a=1'], 'Error: --function-id/--payload cannot be combined with positional arguments\n'],
      [['math::add', '--payload={}'], 'Error: --function-id/--payload cannot be combined with positional arguments\n'],
      [['--payload={}'], 'Error: --payload requires --function-id\n'],
    ]
    // An engine URL nothing listens on: reaching it would exit 3, not 2.
    const port = await closedPort()
    for (const [args, stderr] of cases) {
      const result = await svc(['trigger', ...args, '--engine', `ws://127.0.0.1:${port}`])
      assert.deepEqual({ args, code: result.code, stderr: result.stderr }, { args, code: 2, stderr })
    }
  })

  it('no FUNCTION_ID exits 2 with a hint', async () => {
    const result = await svc(['trigger'])
    assert.equal(result.code, 2)
    assert.equal(result.stderr, 'Error: Missing FUNCTION_ID\nHint: pass the function to invoke, e.g. svc trigger math::add a=1 b=2\n')
  })
})

describe('svc trigger input: --data @file, --data - and the JSON-looking warning', () => {
  const big = 'x'.repeat(1024 * 1024)

  it('reads --data @file (a 1 MB value, beyond what an argument can carry)', async () => {
    writeFileSync(join(dir, 'big.json'), JSON.stringify({ big, n: 1 }))
    const result = await trigger('test::echo', '--data', '@big.json', 'm=2')
    assert.equal(result.code, 0, result.stderr)
    assert.deepEqual(JSON.parse(result.stdout), { big, n: 1, m: 2 })
  })

  it('reads --data - from standard input (a 1 MB value)', async () => {
    const result = await runSvc(['trigger', 'test::echo', '--data', '-', '--json', '--engine', engineUrl], { cwd: dir, env: cliEnv(), input: JSON.stringify({ big }) })
    assert.equal(result.code, 0, result.stderr)
    const body = JSON.parse(result.stdout) as { ok: boolean; result: { big: string } }
    assert.equal(body.ok, true)
    assert.equal(body.result.big.length, big.length)
  })

  it('a missing @file exits 2 naming it', async () => {
    const result = await trigger('test::echo', '--data', '@nope.json')
    assert.deepEqual([result.code, result.stderr], [2, 'Error: --data: cannot read nope.json (no such file)\n'])
  })

  it('warns when a key=value value starts with { or [ but is not JSON, and sends the text', async () => {
    const result = await trigger('test::echo', 'o={k:1}', 'l=[1,2]')
    assert.equal(result.code, 0, result.stderr)
    assert.deepEqual(JSON.parse(result.stdout), { o: '{k:1}', l: [1, 2] })
    assert.match(result.stderr, /^Warning: the value of 'o' starts with '\{' but is not valid JSON \(.*\); sending it as text\n$/)
  })
})

describe('payloads the engine cannot take, files that are not JSON (issue 16 item 14)', () => {
  const limitHint = 'Hint: send a reference to the data (a path, a URL, a state key) instead, or raise max_message_bytes of the svc-worker-manager entry in config.yaml\n'

  it('a 100 MB file is refused before anything is sent, naming its size and the limit; the engine keeps serving', { timeout: 120_000 }, async () => {
    // A JSON document of 100 MB (one long string), and a sparse file of the same size.
    writeFileSync(join(dir, 'huge.json'), Buffer.concat([Buffer.from('{"blob":"'), Buffer.alloc(100 * 1024 * 1024, 'x'), Buffer.from('"}')]))
    writeFileSync(join(dir, 'sparse.bin'), '')
    truncateSync(join(dir, 'sparse.bin'), 100 * 1024 * 1024)
    try {
      const huge = await trigger('test::echo', '--data', '@huge.json')
      assert.deepEqual(
        [huge.code, huge.stderr],
        [2, `Error: --data @huge.json is 104857611 bytes (100.0 MiB); the engine accepts at most 67108864 bytes (64.0 MiB) in one message (max_message_bytes), so it was not sent\n${limitHint}`],
      )
      const sparse = await trigger('test::echo', '--data', '@sparse.bin', '--json')
      assert.equal(sparse.code, 2, sparse.stderr)
      assert.deepEqual(JSON.parse(sparse.stdout), {
        ok: false,
        error: { code: 'MESSAGE_TOO_LARGE', message: '--data @sparse.bin is 104857600 bytes (100.0 MiB); the engine accepts at most 67108864 bytes (64.0 MiB) in one message (max_message_bytes), so it was not sent' },
      })
      const after = await trigger('test::echo', 'still=1')
      assert.deepEqual([after.code, JSON.parse(after.stdout)], [0, { still: 1 }])
    } finally {
      rmSync(join(dir, 'huge.json'), { force: true })
      rmSync(join(dir, 'sparse.bin'), { force: true })
    }
  })

  it("a file that is not JSON: where it fails, never its bytes", async () => {
    writeFileSync(join(dir, 'secret.bin'), '\u001b]52;c;aGVsbG8=\u0007 password=hunter2\n')
    writeFileSync(join(dir, 'broken.json'), '{"a": 1,\n "b": [1, 2,\n   nope]}\n')
    try {
      const secret = await trigger('test::echo', '--data', '@secret.bin')
      assert.deepEqual([secret.code, secret.stderr], [2, "Error: --data @secret.bin: invalid JSON (line 1 column 1: value expected, found '\\x1b')\n"])
      const broken = await trigger('test::echo', '--data', '@broken.json')
      assert.deepEqual([broken.code, broken.stderr], [2, "Error: --data @broken.json: invalid JSON (line 3 column 4: value expected, found 'n')\n"])
      const piped = await runSvc(['trigger', 'test::echo', '--data', '-', '--engine', engineUrl], { cwd: dir, env: cliEnv(), input: 'token=abc123\n' })
      assert.deepEqual([piped.code, piped.stderr], [2, "Error: --data -: invalid JSON (line 1 column 1: value expected, found 't')\n"])
    } finally {
      rmSync(join(dir, 'secret.bin'), { force: true })
      rmSync(join(dir, 'broken.json'), { force: true })
    }
  })

  it("the limit is the engine's own max_message_bytes (1 MiB here), for files, standard input and key=value", { timeout: 120_000 }, async () => {
    const project = mkdtempSync(join(tmpdir(), 'svc-cli-limit-'))
    writeFileSync(join(project, 'config.yaml'), 'workers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n      max_message_bytes: 1048576\n  - name: svc-http\n    config:\n      port: 0\n  - name: svc-stream\n    config:\n      port: 0\n')
    const small = await startEngineProcess(project)
    const echo = registerWorker(small.engineUrl, { workerName: 'cli-limit-test' })
    try {
      echo.registerFunction('test::echo', (data: unknown) => data)
      await registered(echo, ['test::echo'])
      const run = (args: string[], input?: string) => runSvc(['trigger', 'test::echo', ...args], { cwd: project, env: cliEnv(), ...(input === undefined ? {} : { input }) })
      const json = (text: number) => JSON.stringify({ blob: 'x'.repeat(text) })
      writeFileSync(join(project, 'two.json'), json(2 * 1024 * 1024))
      const file = await run(['--data', '@two.json'])
      assert.equal(file.code, 2, file.stderr)
      assert.match(file.stderr, /^Error: --data @two\.json is 2097163 bytes \(2\.0 MiB\); the engine accepts at most 1048576 bytes \(1\.0 MiB\) in one message/)
      const piped = await run(['--data', '-'], json(2 * 1024 * 1024))
      assert.equal(piped.code, 2, piped.stderr)
      assert.match(piped.stderr, /^Error: --data - \(standard input\) is more than 1048576 bytes \(1\.0 MiB\); the engine accepts at most 1048576 bytes/)
      // Under the limit as a file, over it as a message once key=value adds to it.
      writeFileSync(join(project, 'near.json'), json(1024 * 1024 - 2000))
      const near = await run(['--data', '@near.json', `pad=${'y'.repeat(1000)}`])
      assert.equal(near.code, 2, near.stderr)
      assert.match(near.stderr, /^Error: the payload of --data @near\.json is 1047596 bytes; the engine accepts at most 1048576 bytes/)
      const fits = await run(['--data', '@near.json'])
      assert.equal(fits.code, 0, fits.stderr)
      assert.equal((JSON.parse(fits.stdout) as { blob: string }).blob.length, 1024 * 1024 - 2000)
    } finally {
      await echo.shutdown()
      await small.stop()
      rmSync(project, { recursive: true, force: true })
    }
  })
})

describe('svc functions', () => {
  it('prints a table of id, worker, namespace and description; internal ids only with --all', async () => {
    const result = await svc(['functions', '--engine', engineUrl])
    assert.equal(result.code, 0, result.stderr)
    const lines = result.stdout.trimEnd().split('\n')
    assert.match(lines[0]!, /^ID\s+WORKER\s+NAMESPACE\s+DESCRIPTION$/)
    assert.ok(lines.some((l) => /^test::echo\s+cli-trigger-test\s+default\s+-$/.test(l)), result.stdout)
    assert.ok(lines.some((l) => /^test::where\s+cli-trigger-billing\s+billing\s/.test(l)), result.stdout)
    assert.ok(lines.some((l) => /^state::get\s+svc-state\s+default\s+\S/.test(l)), result.stdout)
    assert.ok(!lines.some((l) => l.startsWith('engine::functions::list')), 'internal ids are hidden')
    const all = await svc(['functions', '--all', '--engine', engineUrl])
    assert.ok(all.stdout.split('\n').some((l) => l.startsWith('engine::functions::list ')), all.stdout)
  })

  it('--json prints {functions: [...]}, filtered by -n', async () => {
    const result = await svc(['functions', '--json', '-n', 'billing', '--engine', engineUrl])
    assert.equal(result.code, 0, result.stderr)
    const { functions } = JSON.parse(result.stdout) as { functions: Array<Record<string, unknown>> }
    assert.deepEqual(functions, [{ function_id: 'test::where', worker: 'cli-trigger-billing', namespace: 'billing', description: null, internal: false, replica_count: 1 }])
    const all = JSON.parse((await svc(['functions', '--json', '--all', '--engine', engineUrl])).stdout) as { functions: Array<{ function_id: string; internal: boolean }> }
    assert.equal(all.functions.find((f) => f.function_id === 'engine::functions::list')?.internal, true)
  })

  it('exits 3 when the engine is not reachable', async () => {
    const port = await closedPort()
    const result = await svc(['functions', '--engine', `ws://127.0.0.1:${port}`])
    assert.equal(result.code, 3)
    assert.match(result.stderr, /^Error: Cannot connect to the engine/)
  })
})
