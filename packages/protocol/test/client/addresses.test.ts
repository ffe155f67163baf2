/**
 * Several engine addresses (issue 19 §3): the checks every SDK shares (`engineAddresses`,
 * `splitAddressList`, `displayAddress`), with hostile lists (fast-check) whose credentials must
 * never reach an error; and the order in which a `ClientSession` tries them — the next address at
 * once after a failed attempt or a lost connection, the backoff only after a full round — driven
 * by scripted transports and a manual clock.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import fc from 'fast-check'
import {
  ClientSession,
  displayAddress,
  engineAddresses,
  MAX_ENGINE_ADDRESSES,
  splitAddressList,
  type ConnectionState,
  type ReconnectionConfig,
  type TimerHandle,
  type Timers,
} from '../../src/client/index.ts'
import { memoryConnector } from '../../src/transport/memory.ts'
import { connectWebSocket } from '../../src/transport/ws.ts'
import { ScriptedTransport } from './support.ts'

/**
 * Hostile engine addresses: secrets only where credentials travel — user, password, query,
 * fragment (percent-encoded so they cannot change how the URL parses) — in any scheme, broken
 * texts, and passwords with a character that ends the authority.
 */
const secret = fc.string({ minLength: 1, maxLength: 12 }).map((s) => `SECRET${encodeURIComponent(s)}X`)
const scheme = fc.constantFrom('ws:', 'wss:', 'http:', 'https:', 'javascript:', 'file:', 'WS:', 'ftp:')
const host = fc.constantFrom('127.0.0.1:1', '[::1]:2', 'svc.example', 'h', 'xn--nxasmq6b.example:443')
const hostileAddress = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(scheme, fc.option(secret), fc.option(secret), host, fc.constantFrom('', '/', '/ws', '/a/b'), fc.option(secret), fc.option(secret)).map(
    ([s, user, password, h, path, query, fragment]) =>
      `${s}//${user === null ? '' : `${user}${password === null ? '' : `:${password}`}@`}${h}${path}${query === null ? '' : `?token=${query}`}${fragment === null ? '' : `#${fragment}`}`,
  ) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', ',', 'ws://', 'ws:', '//h', 'ws://h/\ud800', ' ws://h/', 'ws://h:99999/', 'ws://SECRET:x@/?t=SECRET') },
  // A password with a character that ends the authority: the parser sees no user part.
  { weight: 1, arbitrary: fc.tuple(scheme, fc.constantFrom('?', '#', '/', '\\', '%', '[', ' ')).map(([s, c]) => `${s}//u:SECRET${c}x@h/`) },
)

describe('engine address lists (issue 19 §3)', () => {
  it('takes one address as given, or a list in order, frozen', () => {
    assert.deepEqual(engineAddresses('ws://a:1/?token=t,u'), ['ws://a:1/?token=t,u'])
    const list = engineAddresses(['wss://a.example/x', 'ws://[::1]:2'])
    assert.deepEqual(list, ['wss://a.example/x', 'ws://[::1]:2'])
    assert.ok(Object.isFrozen(list))
  })

  it('refuses empty lists, empty entries, other schemes and non-URLs, naming the entry by position', () => {
    assert.throws(() => engineAddresses([]), /engine address list is empty/)
    assert.throws(() => engineAddresses(['ws://a:1', '']), /engine address 2 of 2 is empty/)
    assert.throws(() => engineAddresses(['ws://a:1', '  ']), /engine address 2 of 2 is empty/)
    assert.throws(() => engineAddresses(['http://a:1/']), /engine address must be a ws:\/\/ or wss:\/\/ URL, got http:/)
    assert.throws(() => engineAddresses(['ws://a:1', 'ws://b:1', 'nope']), /engine address 3 of 3 is not a URL/)
    assert.throws(() => engineAddresses(['ws://a:1', 7]), /engine address 2 of 2 is not a string/)
    assert.throws(() => engineAddresses(7), /must be a ws:\/\/ or wss:\/\/ URL or a list of them/)
    assert.throws(() => engineAddresses(Array(MAX_ENGINE_ADDRESSES + 1).fill('ws://a:1')), /65 entries, at most 64/)
    assert.throws(() => engineAddresses(['ws://a', ''], 'SVC_URL'), /^TypeError: SVC_URL 2 of 2 is empty/)
  })

  it('never shows user, password, query or fragment of an address in an error', () => {
    assert.throws(
      () => engineAddresses(['ws://a:1', 'https://user:hunter2@svc.example/p?token=s3cret#frag']),
      (err: Error) => err instanceof TypeError && err.message.includes('https://svc.example/p') && !/hunter2|s3cret|user|frag/.test(err.message),
    )
    assert.throws(() => engineAddresses(['ws//user:hunter2@h']), (err: Error) => !err.message.includes('hunter2'))
    assert.equal(displayAddress('wss://u:p@svc.example:8443/ws?token=t#x'), 'wss://svc.example:8443/ws')
    assert.equal(displayAddress('not a url token=t'), '(not a URL)')
  })

  it('splits a comma-separated environment value, trimming spaces and keeping empty entries for the check', () => {
    assert.deepEqual(splitAddressList('ws://a:1'), ['ws://a:1'])
    assert.deepEqual(splitAddressList(' ws://a:1 ,wss://b/x?t=%2C '), ['ws://a:1', 'wss://b/x?t=%2C'])
    assert.deepEqual(splitAddressList('ws://a:1,'), ['ws://a:1', ''])
    assert.throws(() => engineAddresses(splitAddressList('ws://a:1,,ws://b:1'), 'SVC_URL'), /SVC_URL 2 of 3 is empty/)
  })

  it('accepts any list of ws:/wss: URLs and refuses any other list with a TypeError that keeps its credentials out (fast-check)', () => {
    const input = fc.oneof({ weight: 5, arbitrary: fc.array(hostileAddress, { maxLength: 6 }) }, { weight: 1, arbitrary: hostileAddress })
    fc.assert(
      fc.property(input, (value) => {
        let list: readonly string[]
        try {
          list = engineAddresses(value)
        } catch (err) {
          assert.ok(err instanceof TypeError, `unexpected ${String(err)}`)
          assert.ok(!err.message.includes('SECRET'), `credentials in ${err.message}`)
          return
        }
        const entries = typeof value === 'string' ? [value] : value
        assert.deepEqual(list, entries)
        for (const address of list) {
          assert.ok(['ws:', 'wss:'].includes(new URL(address).protocol))
          assert.ok(!displayAddress(address).includes('SECRET'))
        }
      }),
      { numRuns: 1000 },
    )
  })

  it("the transports' connectors refuse a hostile address with a TypeError that keeps its credentials out (fast-check)", () => {
    const memory = memoryConnector((server) => server.terminate())
    fc.assert(
      fc.property(hostileAddress, (address) => {
        let parsed: URL | undefined
        try {
          parsed = new URL(address)
        } catch {}
        const refused = parsed === undefined || (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:')
        // connectWebSocket only where it refuses: a ws: address would open a real socket.
        for (const connect of refused ? [memory, connectWebSocket] : [memory]) {
          let transport
          try {
            transport = connect(address, {})
          } catch (err) {
            assert.ok(refused, `refused a ws: URL: ${String(err)}`)
            assert.ok(err instanceof TypeError, `unexpected ${String(err)}`)
            assert.ok(!err.message.includes('SECRET'), `credentials in ${err.message}`)
            continue
          }
          assert.ok(!refused, 'took an address that is not a ws:/wss: URL')
          transport.terminate()
        }
      }),
      { numRuns: 1000 },
    )
  })
})

/** Timers that run only when the test says; `setTimeout` delays are recorded in order. */
class ManualTimers implements Timers {
  #next = 0
  readonly pending = new Map<number, { callback: () => void; ms: number }>()
  now(): number {
    return 0
  }
  setTimeout(callback: () => void, ms: number): TimerHandle {
    const id = ++this.#next
    this.pending.set(id, { callback, ms })
    return id
  }
  clearTimeout(handle: TimerHandle): void {
    this.pending.delete(handle as number)
  }
  setInterval(): TimerHandle {
    return 0 // the keepalive: not under test here
  }
  clearInterval(): void {}
  /** Runs the reconnect timer (the only timeout these sessions set) and returns its delay. */
  fire(): number {
    const [id, timer] = [...this.pending.entries()].find(() => true) ?? assert.fail('no timer pending')
    this.pending.delete(id)
    timer.callback()
    return timer.ms
  }
}

function rotatingSession(t: TestContext, addresses: string[], reconnection: Partial<ReconnectionConfig> = {}) {
  const timers = new ManualTimers()
  const attempts: Array<{ address: string; transport: ScriptedTransport }> = []
  const states: Array<[ConnectionState, string]> = []
  const warnings: string[] = []
  const client = new ClientSession({
    address: addresses,
    connector: (address) => {
      const transport = new ScriptedTransport()
      attempts.push({ address, transport })
      return transport
    },
    announce: { runtime: 'test' },
    reconnection: { initialDelayMs: 100, backoffMultiplier: 2, maxDelayMs: 1000, jitterFactor: 0, ...reconnection },
    timers,
    log: { warn: (m) => warnings.push(m) },
    hooks: { newId: () => 'id' },
  })
  client.addConnectionStateListener((state, address) => states.push([state, address]))
  t.after(async () => {
    const done = client.shutdown()
    while (timers.pending.size > 0) timers.fire() // the closing handshake's fallback
    await done
  })
  const last = () => attempts.at(-1)!
  /** The current attempt fails before opening (refused, or the handshake timed out). */
  const fail = () => last().transport.handlers!.close(1006, '')
  return { client, timers, attempts, states, warnings, last, fail }
}

describe('ClientSession with several engine addresses (issue 19 §3)', () => {
  it('tries the addresses in order, moves on at once after a failure, and waits the backoff only after a full round', (t) => {
    const s = rotatingSession(t, ['ws://a.test/?token=ta', 'ws://b.test/?token=tb', 'ws://c.test/?token=tc'])
    const order = () => s.attempts.map((a) => new URL(a.address).host)
    assert.deepEqual(order(), ['a.test'])
    s.fail()
    assert.equal(s.timers.fire(), 0) // b at once
    s.fail()
    assert.equal(s.timers.fire(), 0) // c at once
    s.fail()
    assert.equal(s.timers.fire(), 100) // a full round: backoff attempt 0
    s.fail()
    assert.equal(s.timers.fire(), 0)
    s.fail()
    assert.equal(s.timers.fire(), 0)
    s.fail()
    assert.equal(s.timers.fire(), 200) // second round: backoff attempt 1
    assert.deepEqual(order(), ['a.test', 'b.test', 'c.test', 'a.test', 'b.test', 'c.test', 'a.test'])

    // a opens: connected there, the listener hears which engine, the rotation settles.
    s.fail()
    s.timers.fire()
    s.last().transport.open()
    s.last().transport.deliver({ type: 'workerregistered', worker_id: 'w1', reattach_token: 'r1' })
    assert.equal(s.client.getConnectionState(), 'connected')
    assert.equal(s.client.getAddress(), 'ws://b.test/?token=tb')
    assert.deepEqual(s.states.at(-1), ['connected', 'ws://b.test/?token=tb'])
    assert.deepEqual(s.client.getAddresses(), ['ws://a.test/?token=ta', 'ws://b.test/?token=tb', 'ws://c.test/?token=tc'])
    assert.deepEqual(s.warnings, ['connected to ws://b.test/ (engine address 2 of 3)'])

    // b drops: c at once, with the backoff counter reset by the open.
    s.last().transport.handlers!.close(1006, '')
    assert.deepEqual(s.states.at(-1), ['reconnecting', 'ws://c.test/?token=tc'])
    assert.equal(s.timers.fire(), 0)
    s.fail()
    assert.equal(s.timers.fire(), 0) // a
    s.fail()
    assert.equal(s.timers.fire(), 100) // a round since the drop: backoff attempt 0 again
    assert.deepEqual(order().slice(-4), ['b.test', 'c.test', 'a.test', 'b.test'])
  })

  it('replays registrations and the reattach on the next engine after a drop', (t) => {
    const s = rotatingSession(t, ['ws://a.test/', 'ws://b.test/'])
    s.client.registerFunction('orders::get', () => 'ok')
    s.last().transport.open()
    s.last().transport.deliver({ type: 'workerregistered', worker_id: 'w-a', reattach_token: 'r-a' })
    s.last().transport.handlers!.close(1006, '')
    assert.equal(s.timers.fire(), 0)
    assert.equal(s.last().address, 'ws://b.test/')
    s.last().transport.open()
    const frames = s.last().transport.frames()
    assert.deepEqual(frames.map((f) => f.type), ['reattach', 'invokefunction', 'registerfunction'])
    assert.equal(frames[2]!.id, 'orders::get')
  })

  it('counts maxRetries in rounds: every address gets its turn before the client fails', (t) => {
    const s = rotatingSession(t, ['ws://a.test/', 'ws://b.test/'], { maxRetries: 1 })
    s.fail()
    assert.equal(s.timers.fire(), 0)
    s.fail()
    assert.equal(s.timers.fire(), 100)
    s.fail()
    assert.equal(s.timers.fire(), 0)
    s.fail()
    assert.equal(s.client.getConnectionState(), 'failed')
    assert.equal(s.attempts.length, 4)
    assert.equal(s.timers.pending.size, 0)
  })

  it('with one address waits the backoff after every failure and every drop, as before', (t) => {
    const s = rotatingSession(t, ['ws://a.test/'])
    s.fail()
    assert.equal(s.timers.fire(), 100)
    s.fail()
    assert.equal(s.timers.fire(), 200)
    s.last().transport.open()
    s.last().transport.deliver({ type: 'workerregistered', worker_id: 'w1', reattach_token: 'r1' })
    s.last().transport.handlers!.close(1006, '')
    assert.equal(s.timers.fire(), 100)
    assert.equal(s.warnings.length, 0)
    assert.deepEqual(new Set(s.attempts.map((a) => a.address)), new Set(['ws://a.test/']))
  })

  it('refuses an invalid list at construction', () => {
    const make = (address: string | string[]) =>
      new ClientSession({ address, connector: () => assert.fail('connected'), announce: { runtime: 'test' }, log: { warn: () => {} } })
    assert.throws(() => make([]), /list is empty/)
    assert.throws(() => make(['ws://a.test/', 'http://u:pw@b.test/']), (err: Error) => /2 of 2 must be a ws:\/\/ or wss:\/\/ URL/.test(err.message) && !err.message.includes('pw'))
  })
})
