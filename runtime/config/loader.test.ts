import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { LISTENER_DEFAULTS } from '../engine/types.ts'
import { OBSERVABILITY_DECLARED_MESSAGE } from './catalogue.ts'
import { ConfigError } from './errors.ts'
import { loadConfig } from './loader.ts'
import type { LoadConfigOptions } from './loader.ts'
import { billionLaughs } from '../../test/support/hostile-yaml.ts'

const root = mkdtempSync(join(tmpdir(), 'svc-config-'))
after(() => rmSync(root, { recursive: true, force: true }))
let counter = 0

/** Writes `text` as config.yaml in a fresh project directory and loads it from there. */
function load(text: string, options: Omit<LoadConfigOptions, 'cwd'> = {}) {
  const dir = join(root, `p${counter++}`)
  mkdirSync(dir)
  writeFileSync(join(dir, 'config.yaml'), text)
  return { dir, config: loadConfig('config.yaml', { env: {}, ...options, cwd: dir }) }
}

/** Asserts that loading `text` fails with exactly `message` (location prefix included). */
function rejects(text: string, message: string | RegExp, options: Omit<LoadConfigOptions, 'cwd'> = {}) {
  assert.throws(
    () => load(text, options),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`)
      assert.equal(err.code, 'INVALID_CONFIG')
      if (typeof message === 'string') assert.equal(err.message, message)
      else assert.match(err.message, message)
      return true
    },
  )
}

describe('loadConfig defaults (protocol.md §12.2)', () => {
  it('without a file: one listener on 127.0.0.1:49134, data in <cwd>/.svc/data, every default built-in on', () => {
    const dir = join(root, 'nofile')
    const config = loadConfig(undefined, { cwd: dir, env: {} })
    assert.deepEqual(config.listeners, [LISTENER_DEFAULTS])
    assert.equal(config.data_dir, join(dir, '.svc/data'))
    assert.equal(config.registration_namespace_grace_ms, 250)
    assert.equal(config.internal_invocation_timeout_ms, 30000)
    assert.deepEqual(config.local_workers, [])
    assert.equal(config.file, undefined)
    assert.equal(config.project_root, dir)
    for (const name of ['svc-http', 'svc-state', 'svc-stream', 'queue', 'svc-pubsub', 'svc-cron', 'database', 'configuration']) {
      assert.deepEqual(config.builtins[name], { enabled: true }, name)
    }
    assert.equal(config.builtins.console, undefined, 'console runs only when declared')
    assert.deepEqual(config.http_functions, { url_allowlist: [], block_private_ips: true, require_https: true })
  })

  it('an empty file or a comment-only file gives the same defaults', () => {
    for (const text of ['', '# nothing here\n', 'workers:\n']) {
      const { dir, config } = load(text)
      assert.deepEqual(config.listeners, [LISTENER_DEFAULTS])
      assert.equal(config.data_dir, join(dir, '.svc/data'))
      assert.equal(config.file, join(dir, 'config.yaml'))
    }
  })

  it('data_dir is relative to the file directory, not the cwd', () => {
    const dir = join(root, 'nested')
    mkdirSync(join(dir, 'sub'), { recursive: true })
    writeFileSync(join(dir, 'sub', 'svc.yaml'), 'data_dir: ./store\n')
    const config = loadConfig('sub/svc.yaml', { cwd: dir, env: {} })
    assert.equal(config.data_dir, join(dir, 'sub', 'store'))
    assert.equal(config.project_root, join(dir, 'sub'))
  })

  it('keeps an absolute data_dir as it is', () => {
    assert.equal(load('data_dir: /var/lib/svc\n').config.data_dir, '/var/lib/svc')
  })

  it('reads the top-level numbers', () => {
    const { config } = load('registration_namespace_grace_ms: 0\ninternal_invocation_timeout_ms: 5000\n')
    assert.equal(config.registration_namespace_grace_ms, 0)
    assert.equal(config.internal_invocation_timeout_ms, 5000)
  })

  it('SVC_NAMESPACE_GRACE_MS overrides registration_namespace_grace_ms', () => {
    const { config } = load('registration_namespace_grace_ms: 100\n', { env: { SVC_NAMESPACE_GRACE_MS: '40' } })
    assert.equal(config.registration_namespace_grace_ms, 40)
    assert.throws(() => load('', { env: { SVC_NAMESPACE_GRACE_MS: 'soon' } }), /SVC_NAMESPACE_GRACE_MS: must be an integer >= 0/)
  })

  it('reads http_functions with defaults for missing keys', () => {
    const { config } = load('http_functions:\n  url_allowlist: [localhost, "*.example.com"]\n  require_https: false\n')
    assert.deepEqual(config.http_functions, {
      url_allowlist: ['localhost', '*.example.com'],
      block_private_ips: true,
      require_https: false,
    })
  })
})

describe('listeners (protocol.md §12.3)', () => {
  it('applies listener defaults to the keys an entry leaves out', () => {
    const { config } = load(
      'workers:\n  - name: svc-worker-manager\n    config:\n      host: 0.0.0.0\n      port: 4000\n      ping_interval_ms: 1000\n',
    )
    assert.deepEqual(config.listeners, [{ ...LISTENER_DEFAULTS, host: '0.0.0.0', port: 4000, ping_interval_ms: 1000 }])
  })

  it('keeps several listeners in file order, with middleware and rbac', () => {
    const { config } = load(`workers:
  - name: svc-worker-manager
    config:
      port: \${SVC_ENGINE_PORT:49134}
  - name: svc-worker-manager
    config:
      host: 0.0.0.0
      port: 49135
      middleware_function_id: gateway::middleware
      rbac:
        auth_function_id: gateway::auth
        expose_functions:
          - match("api::*")
          - engine::functions::list
          - metadata: { public: true }
          - match: "reports::*"
            namespace: analytics
`)
    assert.equal(config.listeners.length, 2)
    assert.equal(config.listeners[0]!.port, 49134)
    assert.equal(config.listeners[0]!.rbac, undefined)
    assert.equal(config.listeners[1]!.middleware_function_id, 'gateway::middleware')
    assert.deepEqual(config.listeners[1]!.rbac, {
      auth_function_id: 'gateway::auth',
      expose_functions: [
        'match("api::*")',
        'engine::functions::list',
        { metadata: { public: true } },
        { match: 'reports::*', namespace: 'analytics' },
      ],
    })
  })

  it('a listener entry without config listens on the defaults', () => {
    assert.deepEqual(load('workers:\n  - name: svc-worker-manager\n').config.listeners, [LISTENER_DEFAULTS])
  })

  it('a disabled listener is not opened, and no default replaces it', () => {
    const { config } = load(
      'workers:\n  - name: svc-worker-manager\n    enabled: false\n    config: { port: 1 }\n  - name: svc-worker-manager\n    config: { port: 2 }\n',
    )
    assert.deepEqual(
      config.listeners.map((l) => l.port),
      [2],
    )
  })

  it('--port and --host override the first listener only', () => {
    const { config } = load(
      'workers:\n  - name: svc-worker-manager\n    config: { port: 1000 }\n  - name: svc-worker-manager\n    config: { port: 2000 }\n',
      { overrides: { port: 0, host: '::1' } },
    )
    assert.deepEqual(
      config.listeners.map((l) => [l.host, l.port]),
      [
        ['::1', 0],
        ['127.0.0.1', 2000],
      ],
    )
  })

  it('--port overrides the default listener when none is declared; --data-dir resolves against cwd', () => {
    const { dir, config } = load('data_dir: elsewhere\n', { overrides: { port: 0, dataDir: 'run-data' } })
    assert.equal(config.listeners[0]!.port, 0)
    assert.equal(config.data_dir, join(dir, 'run-data'))
  })

  it('rejects unknown listener keys with a suggestion, and bad values', () => {
    rejects(
      'workers:\n  - name: svc-worker-manager\n    config:\n      prot: 1\n',
      "config.yaml:4:7: unknown key 'prot' in svc-worker-manager config (did you mean 'port'?)",
    )
    rejects(
      'workers:\n  - name: svc-worker-manager\n    config:\n      port: 70000\n',
      'config.yaml:4:13: port must be an integer between 0 and 65535 (got 70000)',
    )
    rejects(
      'workers:\n  - name: svc-worker-manager\n    config:\n      port: "abc"\n',
      "config.yaml:4:13: port must be an integer (got 'abc')",
    )
    rejects(
      'workers:\n  - name: svc-worker-manager\n    config:\n      idle_timeout_ms: 0\n',
      'config.yaml:4:24: idle_timeout_ms must be an integer >= 1 (got 0)',
    )
    rejects(
      'workers:\n  - name: svc-worker-manager\n    config:\n      host: [a]\n',
      'config.yaml:4:13: host must be a string (got a list)',
    )
    rejects(
      'workers:\n  - name: svc-worker-manager\n    config: 5\n',
      'config.yaml:3:13: svc-worker-manager config must be a mapping (got 5)',
    )
    rejects(
      'workers:\n  - name: svc-worker-manager\n    worker_path: ./x\n',
      "config.yaml:3:5: worker_path is not allowed for the listener 'svc-worker-manager'",
    )
  })

  it('rejects malformed rbac blocks', () => {
    rejects(
      'workers:\n  - name: svc-worker-manager\n    config:\n      rbac:\n        auth_fn: x\n',
      "config.yaml:5:9: unknown key 'auth_fn' in rbac",
    )
    rejects(
      'workers:\n  - name: svc-worker-manager\n    config:\n      rbac:\n        expose_functions:\n          - match: "a::*"\n            metadata: { a: 1 }\n',
      'config.yaml:6:13: an expose_functions rule needs exactly one of match or metadata',
    )
    rejects(
      'workers:\n  - name: svc-worker-manager\n    config:\n      rbac:\n        expose_functions:\n          - pattern: "a::*"\n',
      "config.yaml:6:13: unknown key 'pattern' in an expose_functions rule",
    )
  })
})

describe('built-in entries (builtins.md §1, cli.md §4.3)', () => {
  it('accepts aliases and stores entries under the canonical name', () => {
    const { config } = load(`workers:
  - name: http
    config: { port: 8080 }
  - name: state
  - name: stream
    enabled: false
  - name: pubsub
  - name: cron
    enabled: false
  - name: db
  - name: queue
  - name: svc-console
`)
    assert.deepEqual(config.builtins['svc-http'], { enabled: true, config: { port: 8080 }, raw_config: { port: 8080 } })
    assert.deepEqual(config.builtins['svc-state'], { enabled: true })
    assert.deepEqual(config.builtins['svc-stream'], { enabled: false })
    assert.deepEqual(config.builtins['svc-pubsub'], { enabled: true })
    assert.deepEqual(config.builtins['svc-cron'], { enabled: false })
    assert.deepEqual(config.builtins.database, { enabled: true })
    assert.deepEqual(config.builtins.queue, { enabled: true })
    assert.deepEqual(config.builtins.console, { enabled: true })
    for (const alias of ['http', 'state', 'stream', 'pubsub', 'cron', 'db', 'svc-console']) {
      assert.equal(config.builtins[alias], undefined, alias)
    }
  })

  it('keeps the seed as written in raw_config and expands config with the built-in types', () => {
    const { config } = load(
      `workers:
  - name: svc-http
    config:
      port: \${HTTP_PORT:3111}
      host: \${HTTP_HOST:-127.0.0.1}
      cors:
        allowed_origins: ["\${ORIGIN}"]
        allow_credentials: \${CREDENTIALS:false}
  - name: queue
    config:
      queue_configs:
        default: { type: standard, max_retries: "\${RETRIES:3}" }
`,
      { env: { HTTP_PORT: '9000', ORIGIN: 'https://app.example' } },
    )
    assert.deepEqual(config.builtins['svc-http']!.config, {
      port: 9000,
      host: '127.0.0.1',
      cors: { allowed_origins: ['https://app.example'], allow_credentials: false },
    })
    assert.deepEqual(config.builtins['svc-http']!.raw_config, {
      port: '${HTTP_PORT:3111}',
      host: '${HTTP_HOST:-127.0.0.1}',
      cors: { allowed_origins: ['${ORIGIN}'], allow_credentials: '${CREDENTIALS:false}' },
    })
    assert.deepEqual(config.builtins.queue!.config, {
      queue_configs: { default: { type: 'standard', max_retries: 3 } },
    })
  })

  it('points at the failing placeholder inside a seed', () => {
    rejects(
      'workers:\n  - name: database\n    config:\n      databases:\n        main:\n          url: postgres://app:${PG_PASSWORD}@db/app\n',
      'config.yaml:6:16: environment variable PG_PASSWORD is not set',
    )
  })

  it('validates the configuration entry own keys and expands them now', () => {
    const { config } = load(
      'workers:\n  - name: configuration\n    config:\n      directory: ${SETTINGS_DIR:settings}\n      debounce_ms: 100\n      watch: false\n',
    )
    assert.deepEqual(config.builtins.configuration!.config, { directory: 'settings', debounce_ms: 100, watch: false })
    rejects(
      'workers:\n  - name: configuration\n    config:\n      port: 1\n',
      /^config\.yaml:4:7: unknown key 'port' in configuration config; configuration takes only directory, watch and debounce_ms$/,
    )
    rejects('workers:\n  - name: configuration\n    enabled: false\n', 'config.yaml:3:14: configuration always runs and cannot be disabled')
  })

  it('refuses svc-observability with the message of builtins.md §1', () => {
    rejects('workers:\n  - name: svc-observability\n', `config.yaml:2:11: ${OBSERVABILITY_DECLARED_MESSAGE}`)
    assert.equal(
      OBSERVABILITY_DECLARED_MESSAGE,
      'svc-observability is injected by the engine and must not be declared in config.yaml; change its settings in config/svc-observability.yaml',
    )
  })

  it('suggests the closest built-in for an unknown name without worker_path', () => {
    rejects('workers:\n  - name: databse\n', "config.yaml:2:11: unknown built-in worker 'databse' (did you mean 'database'?)")
    rejects('workers:\n  - name: svc-htp\n', "config.yaml:2:11: unknown built-in worker 'svc-htp' (did you mean 'svc-http'?)")
    rejects('workers:\n  - name: cron2\n', "config.yaml:2:11: unknown built-in worker 'cron2' (did you mean 'cron'?)")
    rejects(
      'workers:\n  - name: billing\n',
      "config.yaml:2:11: unknown built-in worker 'billing'; a local worker needs worker_path",
    )
  })

  it('rejects worker_path and local keys on a built-in, and unknown keys', () => {
    rejects(
      'workers:\n  - name: svc-http\n    worker_path: ./http\n',
      "config.yaml:3:5: worker_path is not allowed for built-in worker 'svc-http'; give a local worker a name of its own",
    )
    rejects('workers:\n  - name: queue\n    env: {}\n', "config.yaml:3:5: env is not allowed for built-in worker 'queue'")
    rejects(
      'workers:\n  - name: queue\n    enable: false\n',
      "config.yaml:3:5: unknown key 'enable' in worker entry 'queue' (did you mean 'enabled'?)",
    )
  })

  it('rejects a built-in config block that is not a mapping', () => {
    rejects('workers:\n  - name: svc-http\n    config: 3111\n', "config.yaml:3:13: config of built-in worker 'svc-http' must be a mapping (got 3111)")
    rejects('workers:\n  - name: queue\n    config: [a]\n', "config.yaml:3:13: config of built-in worker 'queue' must be a mapping (got a list)")
  })

  it('rejects a built-in declared twice, under its alias too', () => {
    rejects(
      'workers:\n  - name: svc-http\n  - name: http\n',
      "config.yaml:3:11: worker 'svc-http' is declared twice (first at line 2)",
    )
  })

  it('enabled must be a boolean (a placeholder may give it)', () => {
    rejects('workers:\n  - name: queue\n    enabled: "no"\n', "config.yaml:3:14: enabled must be true or false (got 'no')")
    const { config } = load('workers:\n  - name: queue\n    enabled: ${QUEUE_ON:false}\n')
    assert.equal(config.builtins.queue!.enabled, false)
  })
})

describe('local worker entries (cli.md §2.1)', () => {
  it('reads every key, resolving worker_path against the project root', () => {
    const { dir, config } = load(
      `workers:
  - name: math-worker
    worker_path: ./workers/math-worker
  - name: caller-worker
    worker_path: /opt/caller
    enabled: false
    namespace: billing
    watch: false
    isolation: microvm
    env:
      LOG_LEVEL: debug
      PORT: 3000
      DEBUG: true
      TOKEN: \${TOKEN:-dev}
    config:
      greeting: "hello \${WHO:world}"
      nested: [1, { a: b }]
`,
    )
    assert.deepEqual(config.local_workers, [
      { name: 'math-worker', worker_path: join(dir, 'workers/math-worker'), enabled: true, env: {}, watch: true },
      {
        name: 'caller-worker',
        worker_path: '/opt/caller',
        enabled: false,
        env: { LOG_LEVEL: 'debug', PORT: '3000', DEBUG: 'true', TOKEN: 'dev' },
        watch: false,
        namespace: 'billing',
        isolation: 'microvm',
        config: { greeting: 'hello world', nested: [1, { a: 'b' }] },
      },
    ])
  })

  it('rejects duplicate local names', () => {
    rejects(
      'workers:\n  - name: w\n    worker_path: ./a\n  - name: w\n    worker_path: ./b\n',
      "config.yaml:4:11: worker 'w' is declared twice (first at line 2)",
    )
  })

  it('rejects invalid names, unknown keys and bad values', () => {
    rejects(
      'workers:\n  - name: Math_Worker\n    worker_path: ./w\n',
      "config.yaml:2:11: invalid worker name 'Math_Worker': use 1-64 characters a-z, 0-9, '_' and '-', starting with a letter or digit",
    )
    rejects(
      'workers:\n  - name: w\n    worker_pth: ./w\n',
      "config.yaml:3:5: unknown key 'worker_pth' in worker entry 'w' (did you mean 'worker_path'?)",
    )
    rejects('workers:\n  - name: w\n    worker_path: ./w\n    isolation: vm\n', "config.yaml:4:16: isolation must be 'process' or 'microvm' (got 'vm')")
    rejects('workers:\n  - name: w\n    worker_path: ./w\n    namespace: ""\n', 'config.yaml:4:16: namespace must not be empty')
    rejects('workers:\n  - name: w\n    worker_path: ./w\n    watch: 1\n', 'config.yaml:4:12: watch must be true or false (got 1)')
    rejects('workers:\n  - name: w\n    worker_path: ./w\n    env:\n      A: [1]\n', 'config.yaml:5:10: env.A must be a string, number or boolean')
    rejects('workers:\n  - name: w\n    worker_path: 5\n', 'config.yaml:3:18: worker_path must be a string (got 5)')
  })

  it('fails on a placeholder whose variable is unset, naming it and its place', () => {
    rejects(
      'workers:\n  - name: w\n    worker_path: ./w\n    env:\n      SECRET: ${API_SECRET}\n',
      'config.yaml:5:15: environment variable API_SECRET is not set',
    )
    const { config } = load('workers:\n  - name: w\n    worker_path: ./w\n    env:\n      SECRET: ${API_SECRET}\n', {
      env: { API_SECRET: 's3' },
    })
    assert.equal(config.local_workers[0]!.env.SECRET, 's3')
  })
})

describe('fleet (issue 19)', () => {
  it('is absent by default, and reads name, engine, NATS servers and heartbeat timings', () => {
    assert.equal(load('').config.fleet, undefined)
    const { config } = load('fleet:\n  name: shop\n  engine: eu-1\n  nats: [nats://10.0.0.1:4222, "nats://u:p@10.0.0.2:4222"]\n  heartbeat_interval_ms: 500\n')
    assert.deepEqual(config.fleet, { name: 'shop', engine: 'eu-1', nats: ['nats://10.0.0.1:4222', 'nats://u:p@10.0.0.2:4222'], heartbeat_interval_ms: 500, heartbeat_timeout_ms: 3000 })
  })

  it('names the engine after the host and process unless SVC_FLEET_ENGINE or fleet.engine does', () => {
    const text = 'fleet:\n  name: shop\n  nats: nats://127.0.0.1:4222\n'
    assert.match(load(text, { env: {} }).config.fleet!.engine, new RegExp(`-${process.pid}$`))
    assert.equal(load(text, { env: { SVC_FLEET_ENGINE: 'eu-2' } }).config.fleet!.engine, 'eu-2')
    rejects(text, /SVC_FLEET_ENGINE: must be 1 to 64 letters/, { env: { SVC_FLEET_ENGINE: 'a.b' } })
  })

  it('refuses a fleet without name or NATS, bad names and URLs (without printing the URL), and a timeout under two intervals', () => {
    rejects('fleet:\n  nats: nats://127.0.0.1:4222\n', /fleet.name is required/)
    rejects('fleet:\n  name: shop\n', /fleet.nats is required/)
    rejects('fleet:\n  name: shop.eu\n  nats: nats://127.0.0.1:4222\n', /fleet.name must be 1 to 64 letters/)
    assert.throws(() => load('fleet:\n  name: shop\n  nats: http://secret-user:secret-pass@host\n'), (err: Error) => /nats:\/\/ or tls:\/\/ URLs/.test(err.message) && !err.message.includes('secret-pass'))
    rejects('fleet:\n  name: shop\n  nats: nats://h:4222\n  heartbeat_interval_ms: 1000\n  heartbeat_timeout_ms: 1500\n', /at least twice heartbeat_interval_ms/)
    rejects('fleet:\n  name: shop\n  nats: nats://h:4222\n  heartbeat: 1\n', /unknown key 'heartbeat' in fleet/)
  })
})

describe('file-level errors', () => {
  it('reports YAML syntax errors with their position', () => {
    rejects('workers:\n  - name: a\n   worker_path: b\n', /^config\.yaml:3:\d+: invalid YAML: /)
    rejects('a: [1,\n', /^config\.yaml:2:1: invalid YAML: /)
  })

  it('reports duplicate keys as YAML errors', () => {
    rejects('data_dir: a\ndata_dir: b\n', 'config.yaml:2:1: invalid YAML: Map keys must be unique')
  })

  it('rejects unknown top-level keys with a suggestion', () => {
    rejects('worker:\n  - name: svc-http\n', "config.yaml:1:1: unknown top-level key 'worker' (did you mean 'workers'?)")
    rejects('data_dir: a\nversion: 2\n', "config.yaml:2:1: unknown top-level key 'version'")
  })

  it('rejects a non-mapping document and wrong top-level types', () => {
    rejects('- name: svc-http\n', /^config\.yaml:1:1: the top level must be a mapping/)
    rejects('workers: svc-http\n', "config.yaml:1:10: workers must be a list of entries (- name: …) (got 'svc-http')")
    rejects('workers:\n  - svc-http\n', 'config.yaml:2:5: each workers entry must be a mapping with a name')
    rejects('workers:\n  - enabled: true\n', "config.yaml:2:5: workers entry has no 'name'")
    rejects('internal_invocation_timeout_ms: 0\n', 'config.yaml:1:33: internal_invocation_timeout_ms must be an integer >= 1 (got 0)')
    rejects('registration_namespace_grace_ms: 1.5\n', 'config.yaml:1:34: registration_namespace_grace_ms must be an integer (got 1.5)')
    rejects('data_dir: ""\n', 'config.yaml:1:11: data_dir must not be empty')
    rejects('http_functions:\n  block_private_ip: false\n', "config.yaml:2:3: unknown key 'block_private_ip' in http_functions (did you mean 'block_private_ips'?)")
  })

  it('expands top-level placeholders at load time', () => {
    const { config } = load('data_dir: ${DATA:/srv/data}\ninternal_invocation_timeout_ms: ${TIMEOUT:1000}\n', {
      env: { TIMEOUT: '2500' },
    })
    assert.equal(config.data_dir, '/srv/data')
    assert.equal(config.internal_invocation_timeout_ms, 2500)
    rejects('data_dir: ${DATA}\n', 'config.yaml:1:11: environment variable DATA is not set')
    rejects('internal_invocation_timeout_ms: ${T:soon}\n', "config.yaml:1:33: internal_invocation_timeout_ms must be an integer (got 'soon')")
  })

  it('uses the file name as given in messages', () => {
    const dir = join(root, 'named')
    mkdirSync(join(dir, 'deploy'), { recursive: true })
    writeFileSync(join(dir, 'deploy', 'prod.yaml'), 'nope: 1\n')
    assert.throws(() => loadConfig('deploy/prod.yaml', { cwd: dir, env: {} }), {
      message: "deploy/prod.yaml:1:1: unknown top-level key 'nope'",
      file: 'deploy/prod.yaml',
      line: 1,
      column: 1,
    })
  })

  it('reports a missing file as CONFIG_NOT_FOUND with the message of cli.md §3', () => {
    assert.throws(() => loadConfig('missing.yaml', { cwd: root, env: {} }), {
      code: 'CONFIG_NOT_FOUND',
      message: 'Config file missing.yaml not found',
    })
  })

  it('follows YAML anchors and aliases, and reports unknown ones', () => {
    const anchored = load('workers:\n  - name: svc-worker-manager\n    config: &l { port: 4100 }\n  - name: svc-http\n    config: *l\n')
    assert.equal(anchored.config.listeners[0]!.port, 4100)
    assert.deepEqual(anchored.config.builtins['svc-http']!.config, { port: 4100 })
    rejects('workers:\n  - name: svc-worker-manager\n    config: { port: *port }\n', 'config.yaml:3:21: unknown alias *port')
  })
})

describe('hostile YAML (issue 16): refused quickly, at a place', () => {
  it("a billion-laughs document in a built-in's config block names the alias that crosses the limit", () => {
    rejects(`workers:\n  - name: svc-http\n    config:\n${billionLaughs('      ')}`, /^config\.yaml:8:\d+: alias \*lol4 expands the document too much/)
  })

  it("a billion-laughs document in a local worker's config block, and an alias of itself", () => {
    rejects(`workers:\n  - name: w\n    worker_path: ./w\n    config:\n${billionLaughs('      ')}`, /^config\.yaml:9:\d+: alias \*lol4 expands the document too much/)
    rejects('workers:\n  - name: w\n    worker_path: ./w\n    config: &c { self: *c }\n', 'config.yaml:4:24: alias *c refers to a node that contains it')
  })

  it('nesting deeper than 128 levels, and a file over 1 MiB', () => {
    rejects(`workers:\n  - name: svc-http\n    config: { x: ${'['.repeat(50_000)}${']'.repeat(50_000)} }\n`, /^config\.yaml:3:\d+: nests deeper than 128 levels$/)
    rejects(`# ${'x'.repeat(1024 * 1024)}\n`, /^config\.yaml: is 1048579 bytes, more than the 1048576-byte limit$/)
  })
})
