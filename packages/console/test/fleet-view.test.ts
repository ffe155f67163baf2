/**
 * How the Fleet page reads `engine::fleet::list` (packages/console/app/src/pages/fleet/fleet.ts):
 * other engines' rows come over NATS, so any JSON is read into rows of bounded text and finite
 * counts, never throwing (fast-check), and what reaches the page is what the user should see.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { cutText, enginesOf, inFleet, lastHeardText, MAX_DETAIL, MAX_FLEET_ROWS, MAX_TEXT, MAX_URLS_SHOWN, readFleet } from '../app/src/pages/fleet/fleet.ts'

const row = (engine: string, extra: Record<string, unknown> = {}) => ({
  engine,
  instance: 'a1b2c3d4',
  self: false,
  urls: ['ws://127.0.0.1:49134'],
  started_at_ms: 1_764_000_000_000,
  last_heard_ms: 150,
  workers: 3,
  functions: 9,
  ...extra,
})

describe('the Fleet page reads engine::fleet::list defensively', () => {
  it('a healthy fleet: this engine first, every field as the engine sent it', () => {
    const view = readFleet({ fleet: 'shop', engine: 'alpha', status: 'healthy', detail: 'fleet shop, engine alpha: 2 engines', engines: [row('bravo'), row('alpha', { self: true, last_heard_ms: 0 })] })
    assert.equal(inFleet(view), true)
    assert.deepEqual([view.fleet, view.engine, view.status, view.detail, view.hidden], ['shop', 'alpha', 'healthy', 'fleet shop, engine alpha: 2 engines', 0])
    assert.deepEqual(view.engines.map((e) => [e.engine, e.self]), [['alpha', true], ['bravo', false]])
    assert.deepEqual(view.engines[1], { engine: 'bravo', instance: 'a1b2c3d4', self: false, urls: ['ws://127.0.0.1:49134'], moreUrls: 0, startedAtMs: 1_764_000_000_000, lastHeardMs: 150, workers: 3, functions: 9 })
  })

  it('an engine alone, or an answer that is not a fleet list, is not shown as a fleet', () => {
    assert.equal(inFleet(readFleet({ fleet: null, engine: null, status: 'alone', engines: [] })), false)
    for (const junk of [null, 'healthy', 42, [], { status: 'up' }]) assert.equal(inFleet(readFleet(junk)), false, JSON.stringify(junk))
    assert.equal(inFleet(undefined), false)
  })

  it('fields of the wrong shape become null or are left out; long text and long lists are cut', () => {
    const urls = Array.from({ length: 10 }, (_, i) => `ws://10.0.0.${i}:49134`)
    const view = readFleet({
      fleet: 'f'.repeat(5000),
      engine: 'alpha',
      status: 'degraded',
      detail: 'd'.repeat(50_000),
      engines: [
        row('x'.repeat(300), { urls: [...urls, 7, null], workers: -1, functions: 1.5, last_heard_ms: 'soon', started_at_ms: Number.MAX_VALUE }),
        { engine: '', self: true },
        { engine: { toString: 'alpha' } },
        'bravo',
        null,
      ],
    })
    assert.equal(view.status, 'degraded')
    assert.equal(view.fleet, `${'f'.repeat(MAX_TEXT)}…`)
    assert.equal(view.detail, `${'d'.repeat(MAX_DETAIL)}…`)
    assert.equal(view.engines.length, 1, 'rows without an engine name are left out')
    const [e] = view.engines
    assert.equal(e!.engine, `${'x'.repeat(MAX_TEXT)}…`)
    assert.deepEqual(e!.urls, urls.slice(0, MAX_URLS_SHOWN))
    assert.equal(e!.moreUrls, 10 - MAX_URLS_SHOWN)
    assert.deepEqual([e!.workers, e!.functions, e!.lastHeardMs, e!.startedAtMs], [null, null, null, null])
  })

  it(`shows at most ${MAX_FLEET_ROWS} engines and counts the rest`, () => {
    const view = readFleet({ fleet: 'big', engine: 'e0', status: 'healthy', engines: Array.from({ length: MAX_FLEET_ROWS + 25 }, (_, i) => row(`e${i}`, { self: i === 0 })) })
    assert.equal(view.engines.length, MAX_FLEET_ROWS)
    assert.equal(view.hidden, 25)
    assert.equal(view.engines[0]!.engine, 'e0')
  })

  it('cutText never splits a surrogate pair', () => {
    const text = '😀'.repeat(MAX_TEXT + 1)
    assert.equal(cutText(text), `${'😀'.repeat(MAX_TEXT)}…`)
  })

  it('"last heard" moves on between reads: this engine, just now, seconds, minutes', () => {
    assert.equal(lastHeardText({ self: true, lastHeardMs: 0 }, 5000), 'this engine')
    assert.equal(lastHeardText({ self: false, lastHeardMs: 200 }, 300), 'just now')
    assert.equal(lastHeardText({ self: false, lastHeardMs: 200 }, 4000), '4 s ago')
    assert.equal(lastHeardText({ self: false, lastHeardMs: 200_000 }, 0), '3 min ago')
    assert.equal(lastHeardText({ self: false, lastHeardMs: null }, 0), '—')
    assert.equal(lastHeardText({ self: false, lastHeardMs: 1500 }, -10_000), '1 s ago', 'a clock that went back does not make it younger')
  })

  it('the engines of a worker list, sorted and distinct; none for an engine alone', () => {
    assert.deepEqual(enginesOf([{ engine: 'bravo' }, { engine: 'alpha' }, { engine: 'bravo' }, {}, { engine: 7 }, { engine: '' }]), ['alpha', 'bravo'])
    assert.deepEqual(enginesOf([{}, { engine: undefined }]), [])
  })

  it('fuzz: any JSON, and hostile fleet lists, read into bounded rows without throwing', () => {
    const hostileText = fc.oneof(
      fc.string(),
      fc.string({ unit: 'grapheme', maxLength: 400 }),
      fc.constantFrom('<img src=x onerror=alert(1)>', 'javascript:alert(1)', '"><script>alert(1)</script>', '\u202eevil', '\u0000', '\ud800', 'ws://127.0.0.1:1/<b>', ''),
      fc.string({ minLength: 1, maxLength: 3 }).map((s) => s.repeat(2000)),
      fc.constantFrom('😀', 'e\u0301', '\ud83d').map((s) => s.repeat(MAX_TEXT + 1)),
    )
    const number = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(Number.NaN, Infinity, -Infinity, -0, Number.MAX_SAFE_INTEGER + 2))
    const anything = fc.oneof(hostileText, number, fc.boolean(), fc.constant(null), fc.jsonValue())
    const engineRow = fc.record(
      {
        engine: fc.oneof(hostileText, anything),
        instance: fc.oneof(hostileText, anything),
        self: fc.oneof(fc.boolean(), anything),
        urls: fc.oneof(fc.array(fc.oneof(hostileText, anything), { maxLength: 80 }), anything),
        started_at_ms: fc.oneof(number, anything),
        last_heard_ms: fc.oneof(number, anything),
        workers: fc.oneof(number, anything),
        functions: fc.oneof(number, anything),
      },
      { requiredKeys: [] },
    )
    const list = fc.record(
      {
        fleet: fc.oneof(hostileText, anything),
        engine: fc.oneof(hostileText, anything),
        status: fc.oneof(fc.constantFrom('healthy', 'degraded', 'alone'), anything),
        detail: fc.oneof(hostileText, anything),
        engines: fc.oneof(fc.array(fc.oneof(engineRow, anything), { maxLength: 30 }), anything),
      },
      { requiredKeys: [] },
    )
    const textOk = (text: string | null, max: number) => text === null || Array.from(text).length <= max + 1
    fc.assert(
      fc.property(fc.oneof(list, fc.jsonValue(), anything), fc.integer({ min: -10_000, max: 10_000_000 }), (value, elapsed) => {
        const view = readFleet(value)
        assert.ok(['healthy', 'degraded', 'alone', 'unknown'].includes(view.status))
        assert.ok(textOk(view.fleet, MAX_TEXT) && textOk(view.engine, MAX_TEXT) && textOk(view.detail, MAX_DETAIL))
        assert.ok(view.engines.length <= MAX_FLEET_ROWS && view.hidden >= 0)
        let seenOther = false
        for (const e of view.engines) {
          assert.equal(typeof e.engine, 'string')
          assert.ok(e.engine !== '' && textOk(e.engine, MAX_TEXT) && textOk(e.instance, MAX_TEXT))
          assert.ok(e.urls.length <= MAX_URLS_SHOWN && e.urls.every((u) => typeof u === 'string' && textOk(u, MAX_TEXT)))
          for (const n of [e.workers, e.functions, e.lastHeardMs, e.startedAtMs]) assert.ok(n === null || (Number.isSafeInteger(n) && n >= 0))
          if (!e.self) seenOther = true
          else assert.ok(!seenOther, 'this engine comes first')
          assert.equal(typeof lastHeardText(e, elapsed), 'string')
        }
      }),
      { numRuns: 500 },
    )
  })
})
