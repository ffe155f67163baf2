/**
 * The example application end to end, started the way the README does: `svc --config
 * examples/link-shortener/config.yaml` (ports 0, a temporary data directory). svc launches the
 * links worker as its own process; the test drives both with real HTTP requests.
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { ROOT, startEngineProcess, type RunningEngine } from './support/processes.ts'
import { waitFor } from './support/wait.ts'

let dataDir: string
let engine: RunningEngine

/** Waits until the worker's routes answer (svc starts it after the engine is up). */
async function waitForRoutes(base: string): Promise<void> {
  await waitFor(
    async () => {
      const res = await fetch(`${base}/links/__probe__`).catch(() => undefined)
      return res !== undefined && res.status === 404 && (await json(res)).error?.startsWith?.('no link') === true
    },
    () => `the link routes; svc output:\n${engine.output.join('\n')}`,
    30_000,
    100,
  )
}

const json = (res: Response): Promise<any> => res.json()

const post = (base: string, path: string, body: unknown, method = 'POST') =>
  fetch(base + path, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), redirect: 'manual' })

describe('examples/link-shortener', () => {
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-example-'))
    engine = await startEngineProcess(ROOT, ['--config', 'examples/link-shortener/config.yaml', '--data-dir', dataDir], {
      SVC_ENGINE_PORT: '0',
      HTTP_PORT: '0',
      STREAM_PORT: '0',
    })
    await waitForRoutes(engine.httpUrl)
  })
  after(async () => {
    assert.equal(await engine?.stop(), 0)
    await rm(dataDir, { recursive: true, force: true })
  })

  it('creates a link with a chosen code, redirects, counts visits', async () => {
    const base = engine.httpUrl
    const created = await post(base, '/links', { url: 'https://example.com/docs?page=1', code: 'docs' })
    assert.equal(created.status, 201)
    assert.deepEqual(await json(created), { code: 'docs', url: 'https://example.com/docs?page=1' })

    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${base}/s/docs`, { redirect: 'manual' })
      assert.equal(res.status, 302)
      assert.equal(res.headers.get('location'), 'https://example.com/docs?page=1')
    }
    const shown = await fetch(`${base}/links/docs`)
    assert.equal(shown.status, 200)
    const link = await json(shown)
    assert.equal(link.code, 'docs')
    assert.equal(link.url, 'https://example.com/docs?page=1')
    assert.equal(link.visits, 3)
  })

  it('generates a code when none is given', async () => {
    const res = await post(engine.httpUrl, '/links', { url: 'https://example.org/' })
    assert.equal(res.status, 201)
    const body = await json(res)
    assert.match(body.code, /^[A-Za-z0-9]{7}$/)
    const redirect = await fetch(`${engine.httpUrl}/s/${body.code}`, { redirect: 'manual' })
    assert.equal(redirect.headers.get('location'), 'https://example.org/')
  })

  it('answers 400 with error when url is missing or not a URL, 409 when the code exists', async () => {
    const missing = await post(engine.httpUrl, '/links', { code: 'x1' })
    assert.equal(missing.status, 400)
    assert.deepEqual(await json(missing), { error: 'url is required' })
    const bad = await post(engine.httpUrl, '/links', { url: 'not a url' })
    assert.equal(bad.status, 400)
    assert.equal(typeof (await json(bad)).error, 'string')
    await post(engine.httpUrl, '/links', { url: 'https://a.example/', code: 'taken' })
    const again = await post(engine.httpUrl, '/links', { url: 'https://b.example/', code: 'taken' })
    assert.equal(again.status, 409)
    assert.equal(typeof (await json(again)).error, 'string')
  })

  it('updates a link with PUT, and refuses an update without url', async () => {
    await post(engine.httpUrl, '/links', { url: 'https://old.example/', code: 'moving' })
    const updated = await post(engine.httpUrl, '/links/moving', { url: 'https://new.example/' }, 'PUT')
    assert.equal(updated.status, 200)
    assert.deepEqual(await json(updated), { code: 'moving', url: 'https://new.example/' })
    const redirect = await fetch(`${engine.httpUrl}/s/moving`, { redirect: 'manual' })
    assert.equal(redirect.headers.get('location'), 'https://new.example/')
    const noUrl = await post(engine.httpUrl, '/links/moving', {}, 'PUT')
    assert.equal(noUrl.status, 400)
    assert.deepEqual(await json(noUrl), { error: 'url is required' })
  })

  it('answers 404 for unknown codes', async () => {
    const res = await fetch(`${engine.httpUrl}/s/nope`, { redirect: 'manual' })
    assert.equal(res.status, 404)
    assert.equal(typeof (await json(res)).error, 'string')
  })
})
