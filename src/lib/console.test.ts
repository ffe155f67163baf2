/**
 * `svc console`'s engine address (runConsole): named in its errors and its banner without the
 * credentials it may carry (user, password, `?token=`).
 */
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { describe, it } from 'node:test'
import { runConsole } from './console.ts'
import { CliError } from './errors.ts'

const base = { port: 0, host: '127.0.0.1', open: false, json: false, version: '0.0.0-test', stdout: () => {}, stderr: () => {} }

/** A port nothing listens on: bound, read, released. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

describe('svc console engine address', () => {
  it('refuses an address that is not ws:// or wss:// without showing its credentials (exit 2)', async () => {
    for (const engineUrl of ['https://user:hunter2@svc.example/ws?token=s3cret', 'ws://user:hunter2@/?token=s3cret']) {
      await assert.rejects(runConsole({ ...base, engineUrl }), (err: unknown) => {
        assert.ok(err instanceof CliError)
        assert.equal(err.exitCode, 2)
        assert.doesNotMatch(`${err.message} ${err.hint ?? ''}`, /hunter2|s3cret|user/)
        return true
      })
    }
  })

  it('names the engine in its banner without user, password or query', async (t) => {
    const port = await closedPort()
    let out = ''
    const running = await runConsole({ ...base, token: false, engineUrl: `ws://user:hunter2@127.0.0.1:${port}/?token=s3cret`, stdout: (text) => (out += text) })
    t.after(() => running.close())
    assert.match(out, new RegExp(`\\n  engine  ws://127\\.0\\.0\\.1:${port}\\n`))
    assert.doesNotMatch(out, /hunter2|s3cret/)
  })
})
