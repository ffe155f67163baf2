/**
 * The svc Python SDK's own suite (packages/sdk-python, issue 18): `mypy --strict` over both
 * packages, then pytest (tests against real engines started from this repository's CLI,
 * Hypothesis tests of hostile frames, the iii engine's recorded frames), run in the virtual
 * environment of `test/support/python.ts` with the SDK installed from its built wheels. Also checks
 * that every error code the Python SDK uses is the catalogue's (`packages/protocol/src/errors.ts`).
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'
import { Codes } from 'svc-protocol/errors'
import { ROOT } from './support/processes.ts'
import { HELPERS_PYTHON_DIR, SDK_PYTHON_DIR, svcPython } from './support/python.ts'

function runPython(python: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d) => (output += d))
    child.stderr.on('data', (d) => (output += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, output }))
  })
}

describe('svc-sdk for Python', () => {
  // The first run builds the virtual environment from PyPI: longer than one test's default timeout.
  before(() => svcPython(), { timeout: 600_000 })

  it('type-checks with mypy --strict (both packages, Python 3.10 rules)', async () => {
    const python = await svcPython()
    const cache = join(ROOT, 'node_modules', '.cache', 'svc-test-python', 'mypy')
    const { code, output } = await runPython(
      python,
      ['-m', 'mypy', '--strict', '--python-version', '3.10', '--cache-dir', cache, '-p', 'svc', '-p', 'svc_helpers'],
      ROOT,
      { MYPYPATH: `${join(SDK_PYTHON_DIR, 'src')}:${join(HELPERS_PYTHON_DIR, 'src')}` },
    )
    assert.equal(code, 0, output)
  })

  it('uses only error codes of the catalogue, spelled as the catalogue spells them', async () => {
    const python = await svcPython()
    const r = spawnSync(python, ['-c', 'import json, svc; print(json.dumps({k: v for k, v in vars(svc.ErrorCode).items() if k.isupper()}))'], { encoding: 'utf8' })
    assert.equal(r.status, 0, r.stderr)
    const codes = JSON.parse(r.stdout) as Record<string, string>
    const catalogue = new Set(Object.values(Codes) as string[])
    for (const [name, value] of Object.entries(codes)) assert.ok(catalogue.has(value), `svc.ErrorCode.${name} = ${value} is not in the catalogue`)
  })

  it('passes its pytest suite against real engines', async () => {
    const python = await svcPython()
    const { code, output } = await runPython(python, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', '-p', 'no:asyncio', 'tests'], SDK_PYTHON_DIR, {
      SVC_TEST_NODE: process.execPath,
      PYTHONDONTWRITEBYTECODE: '1',
    })
    const summary = output.trim().split('\n').at(-1) ?? ''
    assert.equal(code, 0, output)
    assert.match(summary, /\d+ passed/)
  })
})
