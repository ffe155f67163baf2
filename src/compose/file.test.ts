import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { YamlError } from '../../runtime/yaml/index.ts'
import { loadComposeFile, parseComposeFile, parseDuration, startOrder } from './file.ts'
import type { BuiltinContainer, PathContainer } from './file.ts'

/** Asserts that parsing fails with `code` and a message matching `pattern`. */
function fails(text: string, pattern: RegExp, code = 'INVALID_COMPOSE_FILE', env: Record<string, string> = {}): void {
  assert.throws(
    () => parseComposeFile(text, { env }),
    (err: unknown) => {
      assert.ok(err instanceof YamlError, String(err))
      assert.equal(err.code, code, err.message)
      assert.match(err.message, pattern)
      return true
    },
  )
}

describe('parseComposeFile', () => {
  it('reads the example of cli.md §2.3 with defaults and overrides', () => {
    const file = parseComposeFile(
      [
        'namespace: shop                  # optional',
        'startup_timeout: 60s',
        'stop_timeout: 10s',
        'containers:',
        '  api:',
        '    worker: path://./workers/api',
        '    depends_on: [database]',
        '    environment: { LOG_LEVEL: debug, RETRIES: 3 }',
        '    env_file: [.env]',
        '    startup_timeout: 30s',
        '    config: { greeting: hello }',
        '    scripts:',
        '      pre_run: npm run migrate',
        '      pre_run_timeout: 2m',
        '      run: npm start',
        '      post_run: ./cleanup.sh',
        '  database:',
        '    worker: builtin://database',
        '    config:',
        '      databases:',
        '        primary: { url: "sqlite:./.svc/data/shop.db" }',
        '',
      ].join('\n'),
      { env: {} },
    )
    assert.equal(file.namespace, 'shop')
    assert.equal(file.startupTimeoutMs, 60_000)
    assert.equal(file.stopTimeoutMs, 10_000)
    assert.deepEqual(file.startOrder, ['database', 'api'])
    const api = file.containers[0] as PathContainer
    assert.equal(api.kind, 'path')
    assert.equal(api.path, './workers/api')
    assert.deepEqual(api.dependsOn, ['database'])
    assert.deepEqual(api.environment, { LOG_LEVEL: 'debug', RETRIES: '3' })
    assert.deepEqual(api.envFiles.map((f) => [f.path, f.place.line]), [['.env', 9]])
    assert.equal(api.startupTimeoutMs, 30_000)
    assert.deepEqual(api.config, { greeting: 'hello' })
    assert.deepEqual(api.scripts, { preRun: 'npm run migrate', preRunTimeoutMs: 120_000, run: 'npm start', postRun: './cleanup.sh' })
    assert.equal(api.watch, true)
    const db = file.containers[1] as BuiltinContainer
    assert.equal(db.kind, 'builtin')
    assert.equal(db.builtin, 'database')
    assert.equal(db.startupTimeoutMs, 60_000)
    assert.deepEqual(db.config, { databases: { primary: { url: 'sqlite:./.svc/data/shop.db' } } })
  })

  it('accepts an empty project', () => {
    const file = parseComposeFile('containers: {}\n')
    assert.deepEqual(file.containers, [])
    assert.deepEqual(file.startOrder, [])
    assert.equal(parseComposeFile('containers:\n').containers.length, 0)
  })

  it('rejects an empty file, a non-mapping top level and missing containers', () => {
    fails('', /^worker-compose\.yaml:1:1: the file is empty/)
    fails('- a\n', /^worker-compose\.yaml:1:1: the top level must be a mapping/)
    fails('namespace: x\n', /containers is required/)
    fails('containers: [a]\n', /^worker-compose\.yaml:1:13: containers must be a mapping/)
  })

  it('reports YAML syntax errors with their place', () => {
    fails('containers:\n  api: {worker: "path://x"\n', /^worker-compose\.yaml:\d+:\d+: invalid YAML: /)
  })

  it('rejects unknown keys at every level with a suggestion', () => {
    fails('containrs: {}\n', /^worker-compose\.yaml:1:1: unknown top-level key 'containrs' \(did you mean 'containers'\?\)/)
    fails(
      'containers:\n  api:\n    worker: path://./a\n    enviroment: {}\n',
      /^worker-compose\.yaml:4:5: unknown key 'enviroment' in container 'api' \(did you mean 'environment'\?\)/,
    )
    fails(
      'containers:\n  api:\n    worker: path://./a\n    scripts: { prerun: x }\n',
      /^worker-compose\.yaml:4:16: unknown key 'prerun' in scripts of container 'api' \(did you mean 'pre_run'\?\)/,
    )
  })

  it('rejects duplicate keys, naming them', () => {
    fails('containers: {}\ncontainers: {}\n', /^worker-compose\.yaml:2:1: duplicate key 'containers'/)
    fails(
      'containers:\n  api:\n    worker: path://./a\n  api:\n    worker: path://./b\n',
      /^worker-compose\.yaml:4:3: duplicate container key 'api'/,
    )
    fails('containers:\n  api:\n    worker: path://./a\n    worker: path://./b\n', /^worker-compose\.yaml:4:5: duplicate key 'worker' in container 'api'/)
    fails('containers:\n  api:\n    worker: path://./a\n    environment:\n      A: 1\n      A: 2\n', /^worker-compose\.yaml:6:7: duplicate key 'A' in environment/)
    fails('containers:\n  api:\n    worker: path://./a\n    config:\n      x: 1\n      x: 2\n', /^worker-compose\.yaml:6:7: duplicate key 'x'/)
  })

  it('checks the container key pattern', () => {
    fails('containers:\n  My_Api:\n    worker: path://./a\n', /^worker-compose\.yaml:2:3: container key 'My_Api' is invalid/)
    fails('containers:\n  -api:\n    worker: path://./a\n', /container key '-api' is invalid/)
    fails(`containers:\n  ${'a'.repeat(65)}:\n    worker: path://./a\n`, /is invalid/)
    assert.equal(parseComposeFile(`containers:\n  ${'a'.repeat(64)}:\n    worker: path://./a\n`).containers.length, 1)
  })

  it('requires worker to be path://<dir> or a catalogue builtin://<name>', () => {
    fails('containers:\n  api: {}\n', /^worker-compose\.yaml:2:3: container 'api' has no worker/)
    fails('containers:\n  api: x\n', /container 'api' must be a mapping/)
    fails('containers:\n  api:\n    worker: ./workers/api\n', /^worker-compose\.yaml:3:13: worker of container 'api' must be path:\/\/<dir> or builtin:\/\/<name>, got '\.\/workers\/api'/)
    fails('containers:\n  api:\n    worker: "path://"\n', /names no directory/)
    fails('containers:\n  api:\n    worker: 42\n', /worker must be a string, got 42/)
    fails('containers:\n  db:\n    worker: builtin://databse\n', /^worker-compose\.yaml:3:13: unknown built-in worker 'databse' \(did you mean 'database'\?\)/)
  })

  it('resolves built-in aliases', () => {
    const file = parseComposeFile('containers:\n  kv:\n    worker: builtin://state\n  web:\n    worker: builtin://svc-http\n')
    assert.deepEqual(
      file.containers.map((c) => (c as BuiltinContainer).builtin),
      ['svc-state', 'svc-http'],
    )
  })

  it('refuses svc-observability with the builtins.md §1 explanation and configuration as reserved', () => {
    fails(
      'containers:\n  obs:\n    worker: builtin://svc-observability\n',
      /^worker-compose\.yaml:3:13: svc-observability is injected by the engine and must not be declared in worker-compose\.yaml; change its settings in config\/svc-observability\.yaml$/,
    )
    fails('containers:\n  conf:\n    worker: builtin://configuration\n', /^worker-compose\.yaml:3:13: configuration always runs/, 'RESERVED_WORKER')
  })

  it('accepts only worker, depends_on and config in builtin:// containers', () => {
    fails(
      'containers:\n  db:\n    worker: builtin://database\n    environment: { A: b }\n',
      /^worker-compose\.yaml:4:5: environment is not allowed in built-in container 'db' \(builtin:\/\/ containers accept only worker, depends_on and config\)/,
    )
    fails('containers:\n  db:\n    worker: builtin://database\n    config: [1]\n', /config of built-in container 'db' must be a mapping/)
  })

  it('checks depends_on targets, self-references and cycles', () => {
    fails('containers:\n  api:\n    worker: path://./a\n    depends_on: db\n', /^worker-compose\.yaml:4:17: depends_on must be a list/)
    fails(
      'containers:\n  api:\n    worker: path://./a\n    depends_on: [databse]\n  database:\n    worker: builtin://database\n',
      /^worker-compose\.yaml:4:18: container 'api' depends on unknown container 'databse' \(did you mean 'database'\?\)/,
    )
    fails('containers:\n  api:\n    worker: path://./a\n    depends_on: [api]\n', /^worker-compose\.yaml:4:18: container 'api' depends on itself/)
    fails(
      [
        'containers:',
        '  a:',
        '    worker: path://./a',
        '    depends_on: [b]',
        '  b:',
        '    worker: path://./b',
        '    depends_on: [c]',
        '  c:',
        '    worker: path://./c',
        '    depends_on: [a]',
        '',
      ].join('\n'),
      /^worker-compose\.yaml:4:18: dependency cycle: a -> b -> c -> a$/,
    )
  })

  it('parses durations and rejects bad ones with the key named', () => {
    const file = parseComposeFile('startup_timeout: 1500\nstop_timeout: 0\ncontainers:\n  a:\n    worker: path://./a\n    startup_timeout: 1h\n')
    assert.equal(file.startupTimeoutMs, 1500)
    assert.equal(file.stopTimeoutMs, 0)
    assert.equal(file.containers[0]!.startupTimeoutMs, 3_600_000)
    fails('startup_timeout: 5 minutes\ncontainers: {}\n', /^worker-compose\.yaml:1:18: startup_timeout must be a duration greater than 0: .*got "5 minutes"/)
    fails('stop_timeout: 1.5s\ncontainers: {}\n', /^worker-compose\.yaml:1:15: stop_timeout must be a duration/)
    fails('startup_timeout: 0\ncontainers: {}\n', /startup_timeout must be a duration greater than 0/)
    fails('containers:\n  a:\n    worker: path://./a\n    scripts: { pre_run_timeout: soon }\n', /pre_run_timeout must be a duration/)
  })

  it('expands placeholders from the environment, except in built-in config', () => {
    const env = { WORKERS: './w', LEVEL: 'debug', T: '45s' }
    const file = parseComposeFile(
      [
        'startup_timeout: ${T}',
        'containers:',
        '  api:',
        '    worker: path://${WORKERS}/api',
        '    environment: { LOG_LEVEL: "${LEVEL}", PORT: "${PORT:3000}", HOST: "${HOST:-localhost}", RAW: "$${KEEP}" }',
        '    config: { url: "${URL:http://x}" }',
        '  db:',
        '    worker: builtin://database',
        '    config: { url: "${DB_URL}" }',
        '',
      ].join('\n'),
      { env },
    )
    assert.equal(file.startupTimeoutMs, 45_000)
    const api = file.containers[0] as PathContainer
    assert.equal(api.path, './w/api')
    assert.deepEqual(api.environment, { LOG_LEVEL: 'debug', PORT: '3000', HOST: 'localhost', RAW: '${KEEP}' })
    assert.deepEqual(api.config, { url: 'http://x' })
    assert.deepEqual((file.containers[1] as BuiltinContainer).config, { url: '${DB_URL}' })
  })

  it('reports an unset variable at its place', () => {
    fails('containers:\n  api:\n    worker: path://${DIR}\n', /^worker-compose\.yaml:3:13: environment variable DIR is not set$/)
    fails('containers:\n  api:\n    worker: path://./a\n    config:\n      deep: { x: "${NOPE}" }\n', /^worker-compose\.yaml:5:18: environment variable NOPE is not set$/)
  })

  it('refuses reserved variables in environment', () => {
    fails('containers:\n  api:\n    worker: path://./a\n    environment: { SVC_URL: x }\n', /^worker-compose\.yaml:4:20: environment of container 'api' sets SVC_URL/, 'RESERVED_ENV_OVERRIDE')
  })

  it('checks the types of isolation, watch, env_file and scripts', () => {
    fails('containers:\n  a:\n    worker: path://./a\n    isolation: vm\n', /isolation must be process or microvm, got 'vm'/)
    fails('containers:\n  a:\n    worker: path://./a\n    watch: maybe\n', /watch must be true or false/)
    fails('containers:\n  a:\n    worker: path://./a\n    env_file: [1]\n', /env_file must be a file path/)
    fails('containers:\n  a:\n    worker: path://./a\n    scripts: { run: "" }\n', /scripts\.run must be a non-empty command/)
    const file = parseComposeFile('containers:\n  a:\n    worker: path://./a\n    env_file: .env\n    watch: false\n    isolation: microvm\n')
    const a = file.containers[0] as PathContainer
    assert.deepEqual(a.envFiles.map((f) => f.path), ['.env'])
    assert.equal(a.watch, false)
    assert.equal(a.isolation, 'microvm')
  })

  it('uses the given label in messages', () => {
    assert.throws(() => parseComposeFile('x: 1\n', { label: 'deploy/compose.yaml' }), /^ComposeFileError: deploy\/compose\.yaml:1:1: unknown top-level key 'x'/)
  })
})

describe('startOrder', () => {
  it('is topological and keeps the written order among ready containers', () => {
    assert.deepEqual(
      startOrder([
        { key: 'web', dependsOn: ['api'] },
        { key: 'api', dependsOn: ['db', 'cache'] },
        { key: 'worker', dependsOn: [] },
        { key: 'db', dependsOn: [] },
        { key: 'cache', dependsOn: [] },
      ]),
      ['worker', 'db', 'cache', 'api', 'web'],
    )
  })
})

describe('parseDuration', () => {
  it('reads integers as ms and unit strings', () => {
    assert.equal(parseDuration(250), 250)
    assert.equal(parseDuration('250'), 250)
    assert.equal(parseDuration('500ms'), 500)
    assert.equal(parseDuration('30s'), 30_000)
    assert.equal(parseDuration('2m'), 120_000)
    assert.equal(parseDuration('1h'), 3_600_000)
    assert.equal(parseDuration(-1), undefined)
    assert.equal(parseDuration(1.5), undefined)
    assert.equal(parseDuration('1d'), undefined)
    assert.equal(parseDuration(true), undefined)
  })
})

describe('loadComposeFile', () => {
  it('fails with NO_COMPOSE_FILE when the file is missing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-compose-file-'))
    try {
      assert.throws(() => loadComposeFile(join(dir, 'worker-compose.yaml'), { label: 'worker-compose.yaml' }), {
        code: 'NO_COMPOSE_FILE',
        message: 'No compose file at worker-compose.yaml',
      })
      writeFileSync(join(dir, 'worker-compose.yaml'), 'containers: {}\n')
      assert.deepEqual(loadComposeFile(join(dir, 'worker-compose.yaml')).startOrder, [])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
