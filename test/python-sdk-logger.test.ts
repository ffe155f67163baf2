/**
 * The iii Python SDK's logger (PyPI `iii-sdk`, its `Logger` from the `iii-helpers` dependency)
 * delivering logs that `engine::logs::list` returns (issue 9; builtins.md §12.2, §12.4,
 * protocol.md §10.2–§10.3).
 *
 * The SDK's `Logger` emits OpenTelemetry log records; its exporter sends them as `LOGS` frames
 * (OTLP/JSON) on a second WebSocket to `<engine>/otel`, batched by the OpenTelemetry SDK. Each
 * record carries the attributes `service.name` (the logger's, `""` when it has none) and
 * `log.data` (the data object as a `kvlistValue`, a scalar as itself), and the active span's
 * trace and span ids.
 *
 * The test builds a virtual environment once (`node_modules/.cache/svc-test-python/`, with
 * `python3 -m venv` and `pip install iii-sdk==0.25.0` from PyPI), runs a worker script in it against
 * a real engine, and reads the lines back. Without `python3` and its `venv` module it fails with
 * the command that installs them.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { ROOT } from './support/processes.ts'
import { RawWorker } from './support/raw-worker.ts'
import { waitFor } from './support/wait.ts'

/** The version read and tested against; bump it together with what the test expects. */
const III_SDK = '0.25.0'
const PYTHON = process.env.SVC_TEST_PYTHON ?? 'python3'
const INSTALL_HINT = 'install Python 3.10+ with its venv module (Debian: apt-get install -y python3 python3-venv), or point SVC_TEST_PYTHON at such an interpreter'
const VENV = join(ROOT, 'node_modules', '.cache', 'svc-test-python', `iii-sdk-${III_SDK}`)
const venvPython = (dir: string): string => join(dir, 'bin', 'python')

/**
 * A virtual environment with `iii-sdk` installed, built once and reused.
 * @throws AssertionError naming what is missing (python3, venv, PyPI) and how to install it.
 */
async function iiiVenv(): Promise<string> {
  if (existsSync(venvPython(VENV)) && spawnSync(venvPython(VENV), ['-c', 'import iii, iii_helpers.observability'], { stdio: 'ignore' }).status === 0) return venvPython(VENV)
  const probe = spawnSync(PYTHON, ['-c', 'import sys, venv, ensurepip; sys.exit(0 if sys.version_info >= (3, 10) else 3)'], { encoding: 'utf8' })
  if (probe.error !== undefined) assert.fail(`${PYTHON} was not found (${probe.error.message}): ${INSTALL_HINT}`)
  if (probe.status === 3) assert.fail(`${PYTHON} is older than 3.10, which iii-sdk needs: ${INSTALL_HINT}`)
  if (probe.status !== 0) assert.fail(`${PYTHON} has no venv/ensurepip module (${probe.stderr.trim().split('\n').at(-1)}): ${INSTALL_HINT}`)
  // Built beside its final place and renamed into it: an interrupted build is never reused.
  await mkdir(join(VENV, '..'), { recursive: true })
  const building = `${VENV}.${process.pid}`
  await rm(building, { recursive: true, force: true })
  const created = spawnSync(PYTHON, ['-m', 'venv', building], { encoding: 'utf8' })
  if (created.status !== 0) assert.fail(`${PYTHON} -m venv failed: ${created.stderr.trim()}\n${INSTALL_HINT}`)
  const pip = spawnSync(venvPython(building), ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '-q', `iii-sdk==${III_SDK}`], { encoding: 'utf8' })
  if (pip.status !== 0) assert.fail(`pip install iii-sdk==${III_SDK} failed (it needs the PyPI registry):\n${pip.stdout}${pip.stderr}`)
  await rm(VENV, { recursive: true, force: true })
  await rename(building, VENV)
  return venvPython(VENV)
}

/**
 * The worker: logs five lines at start (no trace context; with a data object, a scalar, its own
 * service name, an explicit trace context), serves `py::log`, which logs inside its handler span
 * and answers with that span's ids, prints `{"ready": true}`, and shuts down when stdin closes.
 */
const SCRIPT = `
import json, sys
from iii import InitOptions, register_worker
from iii_helpers.observability import Logger, current_span_id, current_trace_id

worker = register_worker(sys.argv[1], InitOptions(worker_name='py-logger', otel={'service_name': 'py-orders', 'metrics_enabled': False}))
logger = Logger()
logger.info('plain line')
logger.warn('order stored', {'order_id': 'ord_123', 'amount': 49.99, 'items': 3, 'paid': True, 'tags': ['a', 'b'], 'customer': {'tier': 'gold'}})
logger.error('payment failed', 'card_declined')
Logger(service_name='py-billing').debug('billing line', {'invoice': 'inv_9'})
Logger(trace_id=sys.argv[2], span_id=sys.argv[3]).info('explicit context')

def handle(data):
    Logger().info('inside handler', {'n': data['n']})
    return {'trace_id': current_trace_id(), 'span_id': current_span_id()}

worker.register_function('py::log', handle)
print(json.dumps({'ready': True}), flush=True)
sys.stdin.read()
worker.shutdown()
`

type Log = { body: string; severity_number: number; severity_text: string; service_name: string; trace_id: string | null; span_id: string | null; attributes: Record<string, unknown>; resource: Record<string, string> }

describe('the iii Python SDK logger (iii-sdk from PyPI)', () => {
  let t: TestEngine
  let dir: string
  let python: ChildProcess | undefined
  before(async () => {
    t = await startTestEngine({ settings: { 'svc-observability': { store: 'builtin' } } })
    dir = await mkdtemp(join(tmpdir(), 'svc-py-logger-'))
  })
  after(async () => {
    python?.kill('SIGKILL')
    await t.stop()
    await rm(dir, { recursive: true, force: true })
  })

  it('delivers log lines over /otel that engine::logs::list returns with severity, service, body, log.data.* and trace ids', async () => {
    const interpreter = await iiiVenv()
    await writeFile(join(dir, 'worker.py'), SCRIPT)
    const explicitTrace = randomBytes(16).toString('hex')
    const explicitSpan = randomBytes(8).toString('hex')
    const child = spawn(interpreter, [join(dir, 'worker.py'), t.url, explicitTrace, explicitSpan], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, PYTHONUNBUFFERED: '1' } })
    python = child
    const stderr: string[] = []
    child.stderr!.on('data', (d) => stderr.push(String(d)))
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => line.includes('"ready"') && resolve())
      child.once('exit', (code) => reject(new Error(`the Python worker exited with ${code}:\n${stderr.join('')}`)))
    })

    // A call with a trace context: the SDK runs the handler in a span of that trace.
    const w = await RawWorker.connect(t.url)
    const trace = randomBytes(16).toString('hex')
    await waitFor(async () => ((await w.call('engine::functions::list', { prefix: 'py::' })).result?.functions ?? []).length === 1, "((await w.call('engine::functions::list', { prefix: 'py::' })).result?.functions ?? []).length === 1", 10_000)
    const answer = await w.call('py::log', { n: 7 }, { traceparent: `00-${trace}-${randomBytes(8).toString('hex')}-01` })
    assert.equal(answer.error, undefined, JSON.stringify(answer.error))
    assert.equal(answer.result.trace_id, trace)

    let logs: Log[] = []
    await waitFor(async () => {
      // The Python worker's records (the engine's own, service svc, are stored too).
      logs = ((await w.call('engine::logs::list', { limit: 100 })).result.logs as Log[]).filter((l) => l.attributes['log.source'] !== 'engine')
      return logs.length >= 6
    }, 'the condition', 20_000)
    const byBody = new Map(logs.map((l) => [l.body, l]))
    assert.deepEqual([...byBody.keys()].sort(), ['billing line', 'explicit context', 'inside handler', 'order stored', 'payment failed', 'plain line'])

    // No data, no trace context; the service is the SDK's resource service.name (Logger() sends "").
    const plain = byBody.get('plain line')!
    assert.deepEqual([plain.severity_number, plain.severity_text, plain.service_name, plain.trace_id, plain.span_id], [9, 'INFO', 'py-orders', null, null])
    assert.equal(Object.keys(plain.attributes).filter((k) => k.startsWith('log.data')).length, 0)
    assert.equal(plain.resource['service.name'], 'py-orders')
    assert.equal(plain.resource['telemetry.sdk.language'], 'python')

    // A data object: each top-level field its own attribute, objects and arrays kept as JSON values.
    const order = byBody.get('order stored')!
    assert.deepEqual([order.severity_number, order.severity_text, order.service_name], [13, 'WARN', 'py-orders'])
    assert.deepEqual(
      Object.fromEntries(Object.entries(order.attributes).filter(([k]) => k.startsWith('log.data'))),
      { 'log.data.order_id': 'ord_123', 'log.data.amount': 49.99, 'log.data.items': 3, 'log.data.paid': true, 'log.data.tags': ['a', 'b'], 'log.data.customer': { tier: 'gold' } },
    )

    // Non-object data: the single attribute log.data.
    const failed = byBody.get('payment failed')!
    assert.deepEqual([failed.severity_number, failed.severity_text, failed.attributes['log.data']], [17, 'ERROR', 'card_declined'])

    // The logger's own service name wins over the resource's.
    const billing = byBody.get('billing line')!
    assert.deepEqual([billing.severity_number, billing.severity_text, billing.service_name, billing.attributes['log.data.invoice']], [5, 'DEBUG', 'py-billing', 'inv_9'])

    // Trace context: given to the logger, or the active span's inside a handler.
    const explicit = byBody.get('explicit context')!
    assert.deepEqual([explicit.trace_id, explicit.span_id], [explicitTrace, explicitSpan])
    const inside = byBody.get('inside handler')!
    assert.deepEqual([inside.trace_id, inside.span_id, inside.attributes['log.data.n']], [trace, answer.result.span_id, 7])

    // The query filters see them as well.
    const byTrace = (await w.call('engine::logs::list', { trace_id: trace })).result as { logs: Log[] }
    assert.deepEqual(byTrace.logs.map((l) => l.body), ['inside handler'])
    const billingOnly = (await w.call('engine::logs::list', { service_name: 'PY-BILLING' })).result as { total: number }
    assert.equal(billingOnly.total, 1)
    const warnings = (await w.call('engine::logs::list', { service_name: 'py-orders', severity_min: 13 })).result as { logs: Log[] }
    assert.deepEqual(warnings.logs.map((l) => l.body), ['payment failed', 'order stored'])

    await w.close()
    child.stdin!.end()
    const code = await new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', resolve)))
    python = undefined
    assert.equal(code, 0, stderr.join(''))
  })
})
