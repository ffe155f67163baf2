/**
 * The registry proxy of microVM installs (cli.md §5.7) on real sockets: a CONNECT to an allowed
 * registry on port 443 becomes a tunnel (to a local server standing in for the registry, through
 * the injectable resolver), anything else is refused without a connection anywhere, idle tunnels
 * close, connections are bounded, and the allow list takes the user's npmrc registry.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import type { Server, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { waitFor } from '../../../test/support/wait.ts'
import { DEFAULT_REGISTRIES, registryAllowList, startRegistryProxy } from './registry-proxy.ts'
import type { RunningRegistryProxy } from './registry-proxy.ts'

/** A stand-in registry: echoes what it gets, counts connections. */
let registry: Server
let registryPort = 0
let registryConnections = 0
const resolved: string[] = []
let proxy: RunningRegistryProxy

/** Opens a socket to the proxy, writes `text`, and collects what comes back until `until` matches or it closes. */
function exchange(port: number, text: string, until: RegExp = /\r\n\r\n/): Promise<{ socket: Socket; received: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port })
    let received = ''
    let done = false
    const finish = (closed: boolean) => {
      if (done) return
      done = true
      resolve({ socket, received, closed })
    }
    socket.on('data', (d) => {
      received += d.toString('latin1')
      if (until.test(received)) finish(false)
    })
    socket.on('close', () => finish(true))
    socket.on('error', (err) => (done ? undefined : received === '' ? reject(err) : finish(true)))
    socket.write(text)
  })
}

function closed(socket: Socket): Promise<void> {
  return socket.destroyed || socket.closed ? Promise.resolve() : new Promise((resolve) => socket.once('close', () => resolve()))
}

before(async () => {
  registry = createServer((socket) => {
    registryConnections++
    socket.on('error', () => {})
    socket.pipe(socket)
  })
  await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve))
  registryPort = (registry.address() as { port: number }).port
  proxy = await startRegistryProxy({
    allow: ['registry.npmjs.org', 'pypi.org'],
    resolve: (host, port) => {
      resolved.push(`${host}:${port}`)
      return { host: '127.0.0.1', port: registryPort }
    },
    limits: { idleTimeoutMs: 400 },
  })
})

after(async () => {
  await proxy?.close()
  registry?.close()
})

describe('microVM registry proxy (real sockets)', () => {
  it('tunnels a CONNECT to an allowed registry on 443, bytes sent with the request included', async () => {
    const before = registryConnections
    const { socket, received } = await exchange(proxy.port, 'CONNECT Registry.NPMJS.org.:443 HTTP/1.1\r\nhost: registry.npmjs.org:443\r\n\r\nearly', /early/)
    assert.match(received, /^HTTP\/1\.1 200 Connection Established\r\n\r\n/)
    assert.equal(registryConnections, before + 1)
    assert.equal(resolved.at(-1), 'registry.npmjs.org:443')
    const echoed = new Promise<string>((resolve) => socket.once('data', (d) => resolve(d.toString())))
    socket.write('hello registry')
    assert.equal(await echoed, 'hello registry')
    socket.destroy()
  })

  it('refuses another host, another port, an IP address and a plain request, and connects nowhere', async () => {
    const before = { connections: registryConnections, resolved: resolved.length }
    for (const [line, status] of [
      ['CONNECT evil.example.com:443 HTTP/1.1', 403],
      ['CONNECT registry.npmjs.org:22 HTTP/1.1', 403],
      ['CONNECT registry.npmjs.org.evil.example:443 HTTP/1.1', 403],
      ['CONNECT 127.0.0.1:443 HTTP/1.1', 403],
      ['CONNECT [::1]:443 HTTP/1.1', 400],
      ['CONNECT user@pypi.org:443 HTTP/1.1', 400],
      ['CONNECT pypi.org HTTP/1.1', 400],
    ] as const) {
      const { received, closed: wasClosed } = await exchange(proxy.port, `${line}\r\nhost: x\r\n\r\n`, /\n\n|\r\n\r\n[^]*\n$/)
      assert.match(received, new RegExp(`^HTTP/1\\.1 ${status} `), `${line}: ${received}`)
      assert.match(received, /REGISTRY_NOT_ALLOWED: svc registry proxy: .* is not an allowed package registry \(allowed, port 443: registry\.npmjs\.org, pypi\.org\)/)
      void wasClosed
    }
    const plain = await exchange(proxy.port, 'GET http://registry.npmjs.org/left-pad HTTP/1.1\r\nhost: registry.npmjs.org\r\n\r\n', /only CONNECT/)
    assert.match(plain.received, /^HTTP\/1\.1 405 /)
    plain.socket.destroy()
    assert.deepEqual({ connections: registryConnections, resolved: resolved.length }, before, 'no tunnel was opened')
  })

  it('closes a tunnel that stays idle', async () => {
    const { socket, received } = await exchange(proxy.port, 'CONNECT pypi.org:443 HTTP/1.1\r\n\r\n')
    assert.match(received, /^HTTP\/1\.1 200 /)
    await closed(socket)
  })

  it('accepts at most maxConnections at a time, and serves again once they close', async () => {
    // Its own proxy, whose tunnels never idle out while the test holds them.
    const bounded = await startRegistryProxy({ allow: ['pypi.org'], resolve: () => ({ host: '127.0.0.1', port: registryPort }), limits: { maxConnections: 4 } })
    try {
      const held: Socket[] = []
      for (let i = 0; i < 4; i++) {
        const { socket, received } = await exchange(bounded.port, 'CONNECT pypi.org:443 HTTP/1.1\r\n\r\n')
        assert.match(received, /^HTTP\/1\.1 200 /)
        held.push(socket)
      }
      const refused = await exchange(bounded.port, 'CONNECT pypi.org:443 HTTP/1.1\r\n\r\n')
      assert.equal(refused.closed, true)
      assert.doesNotMatch(refused.received, /200/)
      for (const socket of held) socket.destroy()
      await waitFor(() => bounded.connections() === 0, 'the closed tunnels to leave the count')
      const again = await exchange(bounded.port, 'CONNECT pypi.org:443 HTTP/1.1\r\n\r\n')
      assert.match(again.received, /^HTTP\/1\.1 200 /)
      again.socket.destroy()
    } finally {
      await bounded.close()
    }
  })

  it('refuses even an allowed registry while closed (between install steps)', async () => {
    let open = false
    const gated = await startRegistryProxy({ allow: ['pypi.org'], resolve: () => ({ host: '127.0.0.1', port: registryPort }), isOpen: () => open })
    try {
      const shut = await exchange(gated.port, 'CONNECT pypi.org:443 HTTP/1.1\r\n\r\n', /\n$/)
      assert.match(shut.received, /^HTTP\/1\.1 403 /)
      open = true
      const { socket, received } = await exchange(gated.port, 'CONNECT pypi.org:443 HTTP/1.1\r\n\r\n')
      assert.match(received, /^HTTP\/1\.1 200 /)
      socket.destroy()
    } finally {
      await gated.close()
    }
  })

  it('answers 502 when the registry cannot be reached', async () => {
    const dead = await startRegistryProxy({ allow: ['pypi.org'], resolve: () => ({ host: '127.0.0.1', port: 9 }) })
    try {
      const { received } = await exchange(dead.port, 'CONNECT pypi.org:443 HTTP/1.1\r\n\r\n')
      assert.match(received, /^HTTP\/1\.1 502 /)
    } finally {
      await dead.close()
    }
  })

  it("the allow list: the defaults, the npmrc's registry and SVC_MICROVM_REGISTRIES (host names only)", () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-npmrc-'))
    try {
      writeFileSync(join(dir, '.npmrc'), '; comment\nregistry = https://npm.corp.example:8443/repo/\n//npm.corp.example/:_authToken=secret\n')
      const list = registryAllowList({ HOME: dir, SVC_MICROVM_REGISTRIES: 'Mirror.Example.org, not a host,,bad_host, evil.example:22' })
      assert.deepEqual(list, [...DEFAULT_REGISTRIES, 'npm.corp.example', 'mirror.example.org'])
      assert.deepEqual(registryAllowList({ HOME: join(dir, 'none') }), [...DEFAULT_REGISTRIES])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
