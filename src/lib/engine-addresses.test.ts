/**
 * The CLI's engine address option (`--engine`, `SVC_URL`; issue 19 §3): one URL or a comma-separated
 * list, checked by the client core, shown without credentials in every message the CLI makes of it
 * — with hostile lists (fast-check).
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { addressList, oneAddress, shownAddress, shownAddresses } from './engine-addresses.ts'
import { CliError, formatHumanError } from './errors.ts'
import { engineNotice, resolveEngine, resolveEngineUrl, unreachableHint, type EngineTarget } from './project.ts'
import { unreachableAtAll, unreachableError } from './trigger.ts'

describe('engine address lists of the CLI (issue 19 §3)', () => {
  it('splits --engine/SVC_URL at commas, in order, and shows addresses without credentials', () => {
    assert.deepEqual(addressList('ws://a:1'), ['ws://a:1'])
    assert.deepEqual(addressList(' ws://a:1 , wss://b/x?t=%2C '), ['ws://a:1', 'wss://b/x?t=%2C'])
    assert.equal(oneAddress('ws://a:1/?t=1,2'), 'ws://a:1/?t=1,2')
    assert.equal(shownAddress('ws://127.0.0.1:49134'), 'ws://127.0.0.1:49134')
    assert.equal(shownAddress('ws://u:pw@127.0.0.1:49134/?token=t#f'), 'ws://127.0.0.1:49134')
    assert.equal(shownAddress('wss://u:pw@svc.example/ws/?token=t'), 'wss://svc.example/ws/')
    assert.equal(shownAddress('no url'), '(not a URL)')
    assert.equal(shownAddresses('ws://u:pw@a:1/?token=t, ws://b:2'), 'ws://a:1, ws://b:2')
  })

  it('refuses a list with an empty or non-ws entry: INVALID_ARGUMENT, exit 2, the entry by position', () => {
    assert.throws(
      () => addressList('ws://a:1,,ws://b:1'),
      (err: unknown) => err instanceof CliError && err.code === 'INVALID_ARGUMENT' && err.exitCode === 2 && err.message === 'Invalid engine URL: engine address 2 of 3 is empty: give a ws:// or wss:// URL',
    )
    assert.throws(() => oneAddress('http://u:hunter2@h/'), (err: unknown) => err instanceof CliError && !err.message.includes('hunter2'))
  })

  it('the address of --engine and SVC_URL stays the text as given; resolveEngineUrl takes its first address', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-addresses-'))
    try {
      const env = { SVC_URL: 'ws://a:1, ws://b:2' }
      assert.equal(resolveEngine({ env, cwd: dir }).url, 'ws://a:1, ws://b:2')
      assert.equal(resolveEngine({ env, cwd: dir, flag: 'ws://c:3,ws://d:4' }).url, 'ws://c:3,ws://d:4')
      // svc console and the compose daemon stay on one address: the first.
      assert.equal(resolveEngineUrl({ env, cwd: dir }), 'ws://a:1')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('no message made of a hostile address list shows its credentials (fast-check)', () => {
    // Secrets where credentials travel (user, password, query, fragment), percent-encoded so they
    // cannot change how the URL parses; entries broken in the ways a shell variable can be.
    const secret = fc.string({ minLength: 1, maxLength: 12 }).map((s) => `SECRET${encodeURIComponent(s)}X`)
    const scheme = fc.constantFrom('ws:', 'wss:', 'http:', 'WS:', 'javascript:', 'file:')
    const host = fc.constantFrom('127.0.0.1:1', '[::1]:2', 'svc.example', 'h', 'localhost:49134')
    const entry = fc.oneof(
      { weight: 4, arbitrary: fc.tuple(scheme, fc.option(secret), fc.option(secret), host, fc.constantFrom('', '/', '/ws'), fc.option(secret), fc.option(secret)).map(
        ([s, user, password, h, path, query, fragment]) =>
          `${s}//${user === null ? '' : `${user}${password === null ? '' : `:${password}`}@`}${h}${path}${query === null ? '' : `?token=${query}`}${fragment === null ? '' : `#${fragment}`}`,
      ) },
      { weight: 1, arbitrary: fc.constantFrom('', ' ', 'ws://', 'ws:', '//h', ' ws://h/ ', 'ws://h:99999/', '\u0000', 'ws://h/\u001b[31m', 'ws://SECRET@/') },
      { weight: 1, arbitrary: fc.tuple(scheme, fc.constantFrom('?', '#', '/', '\\', '%', '[', ' ', ';')).map(([s, c]) => `${s}//u:SECRET${c}x@h/`) },
    )
    const separator = fc.constantFrom(',', ', ', ' ,', ',,')
    const list = fc.tuple(fc.array(entry, { minLength: 1, maxLength: 5 }), separator).map(([entries, sep]) => entries.join(sep))
    const hidden = (text: string) => !text.includes('SECRET')
    fc.assert(
      fc.property(list, fc.constantFrom<EngineTarget['source']>('flag', 'env'), (text, source) => {
        let addresses: readonly string[]
        try {
          addresses = addressList(text)
        } catch (err) {
          assert.ok(err instanceof CliError, `unexpected ${String(err)}`)
          assert.equal(err.code, 'INVALID_ARGUMENT')
          assert.equal(err.exitCode, 2)
          assert.ok(hidden(formatHumanError(err)), formatHumanError(err))
          return
        }
        for (const address of addresses) assert.ok(['ws:', 'wss:'].includes(new URL(address).protocol))
        const target: EngineTarget = { url: text, source, project: { root: '/p', name: 'p' }, foreign: undefined }
        const attempts = addresses.map((address) => ({ address, cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) }))
        for (const message of [
          shownAddresses(text),
          formatHumanError(unreachableAtAll(attempts, unreachableHint(target))),
          formatHumanError(unreachableError(text, undefined, unreachableHint(target))),
          engineNotice({ ...target, foreign: { project_name: 'q', project_root: '/q' } as EngineTarget['foreign'] }) ?? '',
          // Outside a project the address (SVC_URL) is named in the notice.
          engineNotice({ ...target, project: undefined }) ?? '',
        ]) {
          assert.ok(hidden(message), message)
          // One line each (terminal safety): URL serialisation escapes control characters.
          assert.doesNotMatch(message.replace(/\n(Hint: )?/g, ' '), /[\u0000-\u001f\u007f]/)
        }
      }),
      { numRuns: 500 },
    )
  })
})
