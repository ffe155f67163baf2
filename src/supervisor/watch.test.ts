import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { globToRegExp, ignoreMatcher } from './watch.ts'

describe('globToRegExp', () => {
  const cases: Array<[string, string[], string[]]> = [
    ['*.log', ['a.log', '.log'], ['a/b.log', 'a.logs']],
    ['fixtures/**', ['fixtures', 'fixtures/a', 'fixtures/a/b.json'], ['fixture', 'src/fixtures']],
    ['**/gen', ['gen', 'a/gen', 'a/b/gen'], ['gen2', 'a/gen/x']],
    ['src/*.ts', ['src/a.ts'], ['src/a/b.ts', 'a.ts']],
    ['a?.{js,ts}', ['ab.js', 'ac.ts'], ['abc.js', 'ab.py']],
    ['[!a]x', ['bx'], ['ax']],
    ['a+b(1).txt', ['a+b(1).txt'], ['aab1.txt']],
  ]
  for (const [glob, yes, no] of cases) {
    it(glob, () => {
      const re = globToRegExp(glob)
      for (const path of yes) assert.ok(re.test(path), `${glob} should match ${path}`)
      for (const path of no) assert.ok(!re.test(path), `${glob} should not match ${path}`)
    })
  }
})

describe('ignoreMatcher (cli.md §5.4)', () => {
  const root = '/p/workers/w'
  const ignored = ignoreMatcher({
    directory: root,
    patterns: ['fixtures/**', '*.tmp', 'src/generated/**'],
    paths: ['/p/config.yaml', '/p/config'],
  })

  it('ignores the default names at any depth, and *.log', () => {
    for (const rel of ['node_modules', 'node_modules/x/index.js', 'a/.git/HEAD', 'dist/a.js', 'target/release/x', '.venv/bin/python', 'pkg/__pycache__/a.pyc', '.svc/logs/w.log', 'out.log', 'deep/debug.log', '.next/x', '.turbo', '.cache/x', 'coverage/lcov.info', 'build', 'out/x', 'venv/x', '.pytest_cache/x', '.mypy_cache/x']) {
      assert.ok(ignored(join(root, rel)), rel)
    }
  })

  it('ignores the manifest patterns', () => {
    for (const rel of ['fixtures', 'fixtures/a.json', 'a.tmp', 'src/b.tmp', 'src/generated/x.ts']) assert.ok(ignored(join(root, rel)), rel)
  })

  it('ignores the given paths and everything below them', () => {
    assert.ok(ignored('/p/config.yaml'))
    assert.ok(ignored('/p/config/queue.yaml'))
  })

  it('keeps sources', () => {
    for (const rel of ['', 'index.js', 'src/index.ts', 'package.json', 'svc.worker.yaml', 'src/fixtures.ts', 'distribution/a.js', 'log.txt']) {
      assert.ok(!ignored(join(root, rel)), rel)
    }
    assert.ok(!ignored('/p/configuration.yaml'))
  })
})
