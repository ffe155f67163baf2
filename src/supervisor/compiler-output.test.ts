/**
 * The start-up failure summary (issue 21: the `file:line` of a syntax error was lost): real Node
 * processes given a JavaScript and a TypeScript syntax error, and the output shapes of tsx (esbuild)
 * and Python.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { startupErrorLine } from './compiler-output.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-startup-error-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

/** Runs `node <file>` in `scratch` and returns its output lines (stdout, then stderr). */
function runNode(file: string, source: string): string[] {
  const path = join(scratch, file)
  mkdirSync(join(path, '..'), { recursive: true })
  writeFileSync(path, source)
  const run = spawnSync(process.execPath, [path], { cwd: scratch, encoding: 'utf8' })
  assert.notEqual(run.status, 0)
  return `${run.stdout}${run.stderr}`.split('\n')
}

describe('startupErrorLine', () => {
  it('a JavaScript syntax error keeps its file and line, relative to the worker directory', () => {
    const lines = runNode('src/worker.mjs', "console.log('loading')\nexport const x = {\n")
    assert.match(startupErrorLine(lines, scratch)!, /^SyntaxError: .+ \(src\/worker\.mjs:3\)$/)
  })

  it('a TypeScript syntax error (Node strips the types) keeps its file and line', () => {
    const lines = runNode('index.ts', 'interface A { a: number }\nconst x: A = { a: 1\nconsole.log(x)\n')
    assert.match(startupErrorLine(lines, scratch)!, /^SyntaxError.*: .+ \(index\.ts:\d+\)$/)
  })

  it('an error thrown at start names where it was thrown', () => {
    const lines = runNode('boom.mjs', "const f = () => { throw new Error('no config') }\nf()\n")
    assert.equal(startupErrorLine(lines, scratch), 'Error: no config (boom.mjs:1)')
    // Without Node's source header, the first stack frame outside node: and node_modules.
    const frames = ['Error: no config', '    at f (node:internal/x:1:1)', '    at g (/app/node_modules/lib/a.js:2:3)', '    at file:///app/src/main.mjs:7:9']
    assert.equal(startupErrorLine(frames, '/app'), 'Error: no config (src/main.mjs:7:9)')
  })

  it("tsx (esbuild): the diagnostic's message and place, not 'Transform failed'", () => {
    const lines = [
      'node:internal/modules/run_main:123',
      '    triggerUncaughtException(',
      '    ^',
      '',
      'Error: Transform failed with 1 error:',
      '/app/src/index.ts:3:0: ERROR: Expected "}" but found "console"',
      '    at failureErrorWithLog (/app/node_modules/esbuild/lib/main.js:1752:15)',
      "  name: 'TransformError'",
      '}',
      '',
      'Node.js v24.21.0',
    ]
    assert.equal(startupErrorLine(lines, '/app'), 'Expected "}" but found "console" (src/index.ts:3:0)')
  })

  it('Python: the last File line of the traceback', () => {
    const lines = ['Traceback (most recent call last):', '  File "/app/main.py", line 3, in <module>', '    import missing', "ModuleNotFoundError: No module named 'missing'"]
    assert.equal(startupErrorLine(lines, '/app'), "ModuleNotFoundError: No module named 'missing' (main.py:3)")
  })

  it('output without a place is quoted as it is; no output gives nothing', () => {
    assert.equal(startupErrorLine(['starting', 'cannot reach the database'], '/app'), 'cannot reach the database')
    assert.equal(startupErrorLine([], '/app'), undefined)
  })
})
