/**
 * `svc console` (runConsole): its engine address, named in its errors and its banner without the
 * credentials it may carry (user, password, `?token=`); its port when the default one is taken.
 */
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { describe, it } from 'node:test'
import { runConsole, untilSignal } from './console.ts'
import type { RunningConsole } from 'svc-console'
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

describe('svc console port', () => {
  /** A port some other program listens on, until `close`. */
  async function heldPort(): Promise<{ port: number; close: () => Promise<void> }> {
    const server = createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return { port: (server.address() as { port: number }).port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
  }

  it('listens on a free port, printed, when its default port is taken', async (t) => {
    const held = await heldPort()
    t.after(() => held.close())
    let out = ''
    let err = ''
    const running = await runConsole({ ...base, port: held.port, portFallback: true, token: false, engineUrl: 'ws://127.0.0.1:9', stdout: (text) => (out += text), stderr: (text) => (err += text) })
    t.after(() => running.close())
    const port = Number(new URL(running.url).port)
    assert.notEqual(port, held.port)
    assert.match(err, new RegExp(`^Port ${held.port} is already in use; the console listens on port ${port} instead \\(pass --port to choose one\\)\n`, 'm'))
    assert.match(out, new RegExp(`^svc console → http://127\\.0\\.0\\.1:${port}\n`))
    assert.equal((await fetch(`${running.url}/api/info`)).status, 200, 'the printed address serves the console')
  })

  it('a port the user named (--port) that is taken still fails with PORT_IN_USE (cli.md §4.8)', async (t) => {
    const held = await heldPort()
    t.after(() => held.close())
    await assert.rejects(runConsole({ ...base, port: held.port, token: false, engineUrl: 'ws://127.0.0.1:9' }), (err: unknown) => {
      assert.ok(err instanceof CliError)
      assert.equal(err.code, 'PORT_IN_USE')
      assert.equal(err.exitCode, 1)
      return true
    })
  })
})

describe('svc console signals', () => {
  it('a SIGTERM that arrives while the console is still starting stops it once started, exit 0', async () => {
    let started!: (running: RunningConsole) => void
    const starting = new Promise<RunningConsole>((resolve) => (started = resolve))
    let closed = false
    let err = ''
    const done = untilSignal(starting, { json: false, stderr: (text) => (err += text), exit: (code) => assert.fail(`exit(${code}) called`) })
    // What a supervisor does as soon as it reads the address: signal at once.
    process.emit('SIGTERM', 'SIGTERM')
    started({ close: async () => void (closed = true) } as RunningConsole)
    assert.equal(await done, 0)
    assert.equal(closed, true)
    assert.match(err, /Received SIGTERM; stopping the console/)
    assert.equal(process.listenerCount('SIGTERM'), 0, 'its handlers are removed')
  })

  it('a console that fails to start rejects with its error, its handlers removed', async () => {
    const failure = new Error('port in use')
    await assert.rejects(untilSignal(Promise.reject(failure), { json: false, stderr: () => {} }), failure)
    assert.equal(process.listenerCount('SIGINT'), 0)
    assert.equal(process.listenerCount('SIGTERM'), 0)
  })
})
