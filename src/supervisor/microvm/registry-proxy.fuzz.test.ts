/**
 * Hostile CONNECT request lines at the microVM registry proxy (cli.md §5.7), with fast-check: the
 * guest decides what it sends, so any authority either parses to a canonical DNS name and port or
 * is refused, and on real sockets any request line gets a refusal (400/403/405, or a closed
 * socket) unless it names an allowed registry on 443, opens no other tunnel, and leaves the proxy
 * serving.
 */
import assert from 'node:assert/strict'
import { connect, createServer } from 'node:net'
import type { Server } from 'node:net'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { parseConnectTarget, startRegistryProxy } from './registry-proxy.ts'
import type { RunningRegistryProxy } from './registry-proxy.ts'

const ALLOWED = ['registry.npmjs.org', 'files.pythonhosted.org']

const authority = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: fc.constantFrom(...'aZ0.-:_@[]/ \t\r\n%\u0000é\u202e9'.split('')), maxLength: 40 }),
  fc.tuple(fc.constantFrom(...ALLOWED, 'Registry.npmjs.org.', 'evil.example', '127.0.0.1', '[::1]', 'registry.npmjs.org.evil.example', ''), fc.oneof(fc.integer({ min: -1, max: 70000 }), fc.constantFrom('443', '0443', '443 ', '+443', '4e2', ''))).map(([h, p]) => `${h}:${p}`),
  fc.constantFrom('registry.npmjs.org:443\r\nX: y', 'a'.repeat(300) + '.org:443', `${'a'.repeat(64)}.org:443`, 'xn--e1afmkfd.org:443'),
)

let registry: Server
let registryPort = 0
let proxy: RunningRegistryProxy
const resolved: string[] = []

before(async () => {
  registry = createServer((socket) => {
    socket.on('error', () => {})
    socket.end('registry')
  })
  await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve))
  registryPort = (registry.address() as { port: number }).port
  proxy = await startRegistryProxy({
    allow: ALLOWED,
    resolve: (host, port) => {
      resolved.push(`${host}:${port}`)
      return { host: '127.0.0.1', port: registryPort }
    },
  })
})

after(async () => {
  await proxy?.close()
  registry?.close()
})

/** Sends `text` and resolves with everything the proxy sent before closing (or the first 200 head). */
function send(text: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port: proxy.port })
    let received = ''
    const done = () => {
      socket.destroy()
      resolve(received)
    }
    socket.on('data', (d) => {
      received += d.toString('latin1')
      if (/^HTTP\/1\.1 200 [^]*registry$/.test(received)) done()
    })
    socket.on('close', done)
    socket.on('error', done)
    socket.end(text)
  })
}

describe('microVM registry proxy: hostile CONNECT lines (fast-check)', () => {
  it('any authority parses to a canonical lowercase DNS name and a port in 1–65535, or to nothing', () => {
    fc.assert(
      fc.property(authority, (text) => {
        const target = parseConnectTarget(text)
        if (!target) return
        assert.match(target.host, /^[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?$/)
        assert.ok(target.host.length <= 253)
        assert.ok(Number.isInteger(target.port) && target.port >= 1 && target.port <= 65535)
        assert.deepEqual(parseConnectTarget(`${target.host}:${target.port}`), target)
      }),
      { numRuns: 2000 },
    )
  })

  it('any request line on a real socket: a tunnel only to an allowed registry on 443, else a refusal; the proxy keeps serving', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('CONNECT', 'GET', 'connect', 'CONNECT ', 'POST'), authority, async (method, target) => {
        const before = resolved.length
        const answer = await send(`${method} ${target} HTTP/1.1\r\nhost: x\r\n\r\n`)
        if (answer.startsWith('HTTP/1.1 200 ')) {
          // Whatever HTTP's parser let through (it tolerates some spacing), the tunnel leads to an allowed registry on 443.
          assert.equal(resolved.length, before + 1)
          assert.ok(ALLOWED.map((h) => `${h}:443`).includes(resolved.at(-1)!), `tunnel for ${JSON.stringify(method)} ${JSON.stringify(target)} to ${resolved.at(-1)}`)
          assert.ok(method.trim() === 'CONNECT')
        } else {
          assert.ok(answer === '' || /^HTTP\/1\.1 (400|403|405|431) /.test(answer), `answer to ${JSON.stringify(method)} ${JSON.stringify(target)}: ${JSON.stringify(answer.slice(0, 80))}`)
          assert.equal(resolved.length, before, 'no tunnel was opened')
        }
      }),
      { numRuns: 150 },
    )
    assert.match(await send('CONNECT registry.npmjs.org:443 HTTP/1.1\r\n\r\n'), /^HTTP\/1\.1 200 [^]*registry$/)
  })
})
