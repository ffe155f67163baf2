import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, statSync, chmodSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { parse } from 'yaml'
import { parseConfig } from '../../runtime/config/loader.ts'
import { CliError } from '../lib/errors.ts'
import { appendEntry, readEntries, removeEntry, replaceEntry, setEnabled, writeConfigText } from './config-file.ts'

/** The commented config.yaml of cli.md §2.1, with its aligned comments and a flow mapping. */
const SPEC = `# config.yaml: svc engine configuration.
# \`svc\` reads this file at start and watches it; worker entries apply while it runs.

data_dir: .svc/data      # SQLite files of the builtin adapters

workers:
  # The worker listener; without this entry the engine listens on 127.0.0.1:49134.
  - name: svc-worker-manager
    config:
      host: 127.0.0.1    # 0.0.0.0 inside containers
      port: 49134        # workers connect to ws://<host>:<port> (SVC_URL)

  # Built-in workers run by default. An entry seeds their settings the first
  # time (after that, edit config/<name>.yaml) or turns one off.
  - name: svc-http
    config:
      port: \${HTTP_PORT:3111}
  - name: queue
    config:
      queue_configs:
        default: { type: standard, max_retries: 3, concurrency: 10 }
  - name: svc-cron
    enabled: false       # this project has no schedules

  # Local workers: started as child processes, watched, restarted on change.
  - name: math-worker
    worker_path: ./workers/math-worker
  - name: caller-worker
    worker_path: ./workers/caller-worker
    env:
      LOG_LEVEL: debug

  # svc-observability is injected by the engine; it must not be listed here.
`

/** SPEC with `lines` inserted after the line that starts with `after` (exact text match). */
function insertedAfter(text: string, after: string, lines: string): string {
  const at = text.indexOf(after)
  assert.ok(at >= 0, `${after} not found`)
  const end = text.indexOf('\n', at) + 1
  return text.slice(0, end) + lines + text.slice(end)
}

/** The file still loads with the engine's own validation. */
function valid(text: string): void {
  parseConfig(text, 'config.yaml', { cwd: '/project', env: {} })
}

describe('config.yaml editing keeps every untouched byte', () => {
  it('appends a local worker after the last entry, before the trailing comment', () => {
    const out = appendEntry(SPEC, [['name', 'new-worker'], ['worker_path', './workers/new-worker']])
    assert.equal(out, insertedAfter(SPEC, '      LOG_LEVEL: debug', '  - name: new-worker\n    worker_path: ./workers/new-worker\n'))
    valid(out)
  })

  it('quotes values that YAML would otherwise read differently', () => {
    const out = appendEntry(SPEC, [['name', 'w'], ['worker_path', './a: b #c'], ['namespace', 'true']])
    assert.equal(out, insertedAfter(SPEC, '      LOG_LEVEL: debug', '  - name: w\n    worker_path: "./a: b #c"\n    namespace: "true"\n'))
    assert.deepEqual(parse(out).workers.at(-1), { name: 'w', worker_path: './a: b #c', namespace: 'true' })
  })

  it('removes an entry with its lines; the section comment above it stays', () => {
    const out = removeEntry(SPEC, 4)
    assert.equal(out, SPEC.replace('  - name: math-worker\n    worker_path: ./workers/math-worker\n', ''))
    valid(out)
  })

  it('removes the last entry without touching the trailing comment', () => {
    const out = removeEntry(SPEC, 5)
    assert.equal(out, SPEC.replace('  - name: caller-worker\n    worker_path: ./workers/caller-worker\n    env:\n      LOG_LEVEL: debug\n', ''))
  })

  it('adds enabled: false below the name of an entry that has none', () => {
    const out = setEnabled(SPEC, 2, false)
    assert.equal(out, insertedAfter(SPEC, '  - name: queue', '    enabled: false\n'))
    valid(out)
  })

  it('rewrites an existing enabled value in place, keeping its comment', () => {
    const text = SPEC.replace('enabled: false       # this', 'enabled: true        # this')
    assert.equal(setEnabled(text, 3, false), text.replace('enabled: true        # this', 'enabled: false        # this'))
  })

  it('re-enabling deletes the enabled line (true is the default)', () => {
    const out = setEnabled(SPEC, 3, true)
    assert.equal(out, SPEC.replace('    enabled: false       # this project has no schedules\n', ''))
    valid(out)
  })

  it('re-enabling an entry whose first key is enabled rewrites the value', () => {
    const text = 'workers:\n  - enabled: false  # off\n    name: svc-cron\n'
    assert.equal(setEnabled(text, 0, true), 'workers:\n  - enabled: true  # off\n    name: svc-cron\n')
  })

  it('replaces an entry in place', () => {
    const out = replaceEntry(SPEC, 4, [['name', 'math-worker'], ['worker_path', './elsewhere'], ['isolation', 'process']])
    assert.equal(
      out,
      SPEC.replace('  - name: math-worker\n    worker_path: ./workers/math-worker\n', '  - name: math-worker\n    worker_path: ./elsewhere\n    isolation: process\n'),
    )
  })

  it('follows the layout of the existing entries (dash at column 0, wider key indent)', () => {
    const flush = 'workers:\n- name: svc-http\n  config:\n    port: 1\n# end\n'
    assert.equal(appendEntry(flush, [['name', 'a'], ['worker_path', './a']]), 'workers:\n- name: svc-http\n  config:\n    port: 1\n- name: a\n  worker_path: ./a\n# end\n')
    const wide = 'workers:\n    -   name: svc-http\n'
    assert.equal(appendEntry(wide, [['name', 'a'], ['worker_path', './a']]), 'workers:\n    -   name: svc-http\n    -   name: a\n        worker_path: ./a\n')
  })

  it('keeps CRLF line endings and adds a missing final newline', () => {
    const crlf = 'workers:\r\n  - name: x\r\n    worker_path: ./x\r\n'
    assert.equal(appendEntry(crlf, [['name', 'a'], ['worker_path', './a']]), `${crlf}  - name: a\r\n    worker_path: ./a\r\n`)
    assert.equal(appendEntry('workers:\n  - name: x\n    worker_path: ./x', [['name', 'a']]), 'workers:\n  - name: x\n    worker_path: ./x\n  - name: a\n')
  })

  it('creates the workers key when missing, and fills an empty one', () => {
    assert.equal(appendEntry('', [['name', 'a'], ['worker_path', './a']]), 'workers:\n  - name: a\n    worker_path: ./a\n')
    assert.equal(appendEntry('# hi\ndata_dir: x  # c', [['name', 'a']]), '# hi\ndata_dir: x  # c\nworkers:\n  - name: a\n')
    assert.equal(appendEntry('workers:   # none yet\ndata_dir: x\n', [['name', 'a']]), 'workers:   # none yet\n  - name: a\ndata_dir: x\n')
  })

  it('removing the only entry leaves an empty workers key', () => {
    const out = removeEntry('workers:\n  - name: a\n    worker_path: ./a\n# end\n', 0)
    assert.equal(out, 'workers:\n# end\n')
    valid(out)
  })

  it('handles an entry whose keys start on the line after its dash', () => {
    const text = 'workers:\n  -\n    name: x\n    worker_path: ./x\n  - name: y\n    worker_path: ./y\n'
    assert.equal(removeEntry(text, 0), 'workers:\n  - name: y\n    worker_path: ./y\n')
  })

  it('falls back to the Document API for flow sequences and workers: ~, keeping the data right', () => {
    const flow = appendEntry('workers: [{name: svc-http}]   # c\n', [['name', 'a'], ['worker_path', './a']])
    assert.deepEqual(parse(flow).workers, [{ name: 'svc-http' }, { name: 'a', worker_path: './a' }])
    assert.match(flow, /# c/)
    const tilde = appendEntry('workers: ~\ndata_dir: x\n', [['name', 'a']])
    assert.deepEqual(parse(tilde), { workers: [{ name: 'a' }], data_dir: 'x' })
    const flowItem = setEnabled('workers:\n  - { name: svc-cron }\n', 0, false)
    assert.deepEqual(parse(flowItem).workers, [{ name: 'svc-cron', enabled: false }])
  })
})

describe('readEntries', () => {
  it('lists entries with their kind, state and line', () => {
    const { entries } = readEntries(SPEC, 'config.yaml')
    assert.deepEqual(
      entries.map((e) => [e.name, e.listener, e.builtin?.name, e.enabled, e.workerPath, e.line]),
      [
        ['svc-worker-manager', true, undefined, true, undefined, 8],
        ['svc-http', false, 'svc-http', true, undefined, 15],
        ['queue', false, 'queue', true, undefined, 18],
        ['svc-cron', false, 'svc-cron', false, undefined, 22],
        ['math-worker', false, undefined, true, './workers/math-worker', 26],
        ['caller-worker', false, undefined, true, './workers/caller-worker', 28],
      ],
    )
  })

  it('reads aliases as their built-in', () => {
    const { entries } = readEntries('workers:\n  - name: cron\n    enabled: false\n', 'config.yaml')
    assert.equal(entries[0]!.builtin?.name, 'svc-cron')
  })

  it('reports structural problems with file, line and column (exit 2)', () => {
    const cases: Array<[string, RegExp]> = [
      ['workers: [a\n', /^c\.yaml:\d+:\d+: invalid YAML/],
      ['- a\n', /^c\.yaml:1:1: the top level must be a mapping/],
      ['workers:\n  name: x\n', /^c\.yaml:2:3: workers must be a list/],
      ['workers:\n  - just-a-string\n', /^c\.yaml:2:5: each workers entry must be a mapping/],
      ['workers:\n  - worker_path: ./x\n', /^c\.yaml:2:5: workers entry has no 'name'/],
    ]
    for (const [text, message] of cases) {
      assert.throws(
        () => readEntries(text, 'c.yaml'),
        (err: unknown) => err instanceof CliError && err.exitCode === 2 && err.code === 'INVALID_CONFIG' && message.test(err.message),
        text,
      )
    }
  })

  it('reads an empty file or empty workers as no entries', () => {
    assert.deepEqual(readEntries('', 'c.yaml').entries, [])
    assert.deepEqual(readEntries('workers:\n', 'c.yaml').entries, [])
  })
})

describe('writeConfigText', () => {
  it('replaces the file atomically and keeps its mode', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-config-write-'))
    try {
      const file = join(dir, 'config.yaml')
      writeFileSync(file, 'workers:\n')
      chmodSync(file, 0o640)
      writeConfigText(file, 'workers:\n  - name: a\n')
      assert.equal(readFileSync(file, 'utf8'), 'workers:\n  - name: a\n')
      assert.equal(statSync(file).mode & 0o777, 0o640)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
