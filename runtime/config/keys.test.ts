import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { stringify } from 'yaml'
import { CONFIG_BLOCKS, type ConfigBlock, type ConfigKey } from './keys.ts'
import { parseConfig } from './loader.ts'

/** A valid sample value for a documented key, from its type and bounds. */
function sample(key: ConfigKey): unknown {
  if (key.type === 'integer') return key.min ?? 1
  if (key.type === 'boolean') return true
  if (key.type === 'string[]') return ['api.example.com']
  if (key.type === 'mapping') return {}
  if (key.type === 'list') return []
  if (key.type.includes('`process`')) return 'process'
  if (key.type === 'string') return key.key === 'name' ? 'local-one' : 'sample'
  return { any: 'value' }
}

/** Every key of a block with a sample value. */
function every(block: ConfigBlock, skip: readonly string[] = []): Record<string, unknown> {
  return Object.fromEntries(block.keys.filter((k) => !skip.includes(k.key)).map((k) => [k.key, sample(k)]))
}

const parse = (doc: unknown) => parseConfig(stringify(doc), 'config.yaml', { cwd: '/tmp/svc-keys', env: {} })

describe('config.yaml key description (keys.ts)', () => {
  it('the loader accepts every documented key of every block', () => {
    const { match, metadata, namespace } = CONFIG_BLOCKS.exposeRule.keys.reduce<Record<string, ConfigKey>>((acc, k) => ({ ...acc, [k.key]: k }), {})
    assert.ok(match && metadata && namespace, 'expose rule keys changed: update this test')
    const config = parse({
      ...every(CONFIG_BLOCKS.top, ['workers']),
      http_functions: every(CONFIG_BLOCKS.httpFunctions),
      fleet: { ...every(CONFIG_BLOCKS.fleet), nats: ['nats://127.0.0.1:4222'] },
      workers: [
        {
          ...every(CONFIG_BLOCKS.entry, ['name']),
          name: 'svc-worker-manager',
          config: {
            ...every(CONFIG_BLOCKS.listener),
            rbac: { ...every(CONFIG_BLOCKS.rbac), expose_functions: ['api::*', { match: 'x::*', namespace: 'n' }, { metadata: { public: true } }] },
          },
        },
        { ...every(CONFIG_BLOCKS.entry), ...every(CONFIG_BLOCKS.local), name: 'local-one', env: { A: 'b' } },
      ],
    })
    assert.equal(config.local_workers.length, 1)
    assert.equal(config.fleet?.engine, 'sample')
    assert.equal(config.listeners[0]!.rbac?.expose_functions.length, 3)
  })

  it('the loader refuses a key no block documents, and names the closest documented one', () => {
    for (const block of Object.values(CONFIG_BLOCKS) as ConfigBlock[]) {
      for (const k of block.keys) assert.ok(k.description.length > 0, `${block.title}: ${k.key} has no description`)
    }
    assert.throws(() => parse({ data_dri: 'x' }), /unknown top-level key 'data_dri' \(did you mean 'data_dir'\?\)/)
    assert.throws(() => parse({ workers: [{ name: 'svc-worker-manager', config: { prot: 1 } }] }), /did you mean 'port'/)
    assert.throws(() => parse({ workers: [{ name: 'w', worker_path: '.', watc: true }] }), /did you mean 'watch'/)
  })

  it('integer bounds of the description are enforced', () => {
    assert.throws(() => parse({ workers: [{ name: 'svc-worker-manager', config: { port: 70000 } }] }), /port must be an integer between 0 and 65535/)
    assert.throws(() => parse({ internal_invocation_timeout_ms: 0 }), /internal_invocation_timeout_ms must be an integer >= 1/)
  })
})
