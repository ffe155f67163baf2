import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BUILTIN_NAMES } from '../../runtime/config/catalogue.ts'
import { ADDABLE_BUILTINS, BUILTIN_REGISTRY, cannotAddMessage, disabledMessage, lookupBuiltin, suggestBuiltin, unknownWorkerMessage } from './registry.ts'

describe('built-in registry', () => {
  it('knows every built-in of the engine catalogue exactly once', () => {
    assert.deepEqual(BUILTIN_REGISTRY.map((b) => b.name).sort(), [...BUILTIN_NAMES].sort())
  })

  it('accepts names and the aliases of cli.md §4.3', () => {
    const cases: Record<string, string> = {
      http: 'svc-http',
      state: 'svc-state',
      stream: 'svc-stream',
      pubsub: 'svc-pubsub',
      cron: 'svc-cron',
      db: 'database',
      'svc-console': 'console',
      queue: 'queue',
      'svc-cron': 'svc-cron',
    }
    for (const [input, name] of Object.entries(cases)) assert.equal(lookupBuiltin(input)?.name, name, input)
    assert.equal(lookupBuiltin('svc-worker-manager'), undefined)
    assert.equal(lookupBuiltin('math-worker'), undefined)
  })

  it('marks what runs by default, what is optional and what is mandatory', () => {
    const modes = Object.fromEntries(BUILTIN_REGISTRY.map((b) => [b.name, b.mode]))
    assert.deepEqual(modes, {
      'svc-http': 'default',
      'svc-state': 'default',
      'svc-stream': 'default',
      'svc-pubsub': 'default',
      'svc-cron': 'default',
      queue: 'default',
      database: 'default',
      console: 'optional',
      configuration: 'mandatory',
      'svc-observability': 'mandatory',
    })
    assert.equal(lookupBuiltin('console')?.engineName, 'svc-console')
  })

  it('words its messages as cli.md §4.2 and §4.4 do', () => {
    assert.deepEqual(ADDABLE_BUILTINS, ['svc-http', 'svc-state', 'svc-stream', 'svc-pubsub', 'svc-cron', 'queue', 'database', 'console'])
    assert.equal(
      unknownWorkerMessage('x'),
      "Unknown worker 'x'. Built-in workers: svc-http, svc-state, svc-stream, svc-pubsub, svc-cron, queue, database, console. To add a local worker, pass a path such as ./workers/x",
    )
    assert.equal(cannotAddMessage('svc-observability'), 'svc-observability is injected by the engine and cannot be added')
    assert.equal(cannotAddMessage('configuration'), 'configuration always runs and cannot be added')
    assert.equal(disabledMessage(lookupBuiltin('cron')!), 'svc-cron disabled; its triggers will not fire until re-enabled with svc worker add svc-cron')
    assert.equal(disabledMessage(lookupBuiltin('db')!), 'database disabled; its functions are unavailable until re-enabled with svc worker add database')
  })

  it('suggests the built-in a typo meant, names and aliases alike (issue 11)', () => {
    assert.equal(suggestBuiltin('htpp'), 'svc-http')
    assert.equal(suggestBuiltin('databse'), 'database')
    assert.equal(suggestBuiltin('crn'), 'svc-cron')
    assert.equal(suggestBuiltin('consle'), 'console')
    assert.equal(suggestBuiltin('mathworker'), undefined)
    assert.equal(suggestBuiltin('svc-observabilty'), undefined, 'mandatory built-ins cannot be added, so they are not suggested')
  })
})
