/**
 * The one keepalive of svc (protocol.md §3.3; `svc-protocol/client` Heartbeat, used by the client
 * core and by the engine's listeners), driven by a manual clock: no real time passes.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Heartbeat, type Timers } from '../../src/client/index.ts'

/** Timers whose clock moves only when the test says; the interval timer is run by `advance`. */
class ManualTimers implements Timers {
  nowMs = 1_000_000
  intervals = new Map<number, { callback: () => void; ms: number; due: number }>()
  #next = 1
  now = (): number => this.nowMs
  setTimeout = (): unknown => {
    throw new Error('not used')
  }
  clearTimeout = (): void => {}
  setInterval = (callback: () => void, ms: number): unknown => {
    const id = this.#next++
    this.intervals.set(id, { callback, ms, due: this.nowMs + ms })
    return id
  }
  clearInterval = (handle: unknown): void => {
    this.intervals.delete(handle as number)
  }
  /** Moves the clock by `ms`, firing each interval as often as it falls due (in order). */
  advance(ms: number): void {
    const end = this.nowMs + ms
    for (;;) {
      const next = [...this.intervals.values()].sort((a, b) => a.due - b.due)[0]
      if (next === undefined || next.due > end) break
      this.nowMs = next.due
      next.due += next.ms
      next.callback()
    }
    this.nowMs = end
  }
  /** Moves the clock by `ms` without running anything: a blocked event loop. */
  block(ms: number): void {
    this.nowMs += ms
    for (const interval of this.intervals.values()) interval.due = Math.max(interval.due, this.nowMs)
  }
}

class Peer {
  pings = 0
  terminated = false
  ping(): void {
    this.pings++
  }
  terminate(): void {
    this.terminated = true
  }
}

describe('Heartbeat (protocol.md §3.3)', () => {
  it('does not count the silence of a peer whose reading is paused on purpose (a channel writer held by backpressure)', () => {
    const timers = new ManualTimers()
    const peer = Object.assign(new Peer(), { readingPaused: true })
    const heartbeat = new Heartbeat<Peer & { readingPaused: boolean }>({ pingIntervalMs: 100, idleTimeoutMs: 300, tickMs: 100, timers })
    heartbeat.track(peer)
    timers.advance(1_000)
    assert.equal(peer.terminated, false)
    peer.readingPaused = false
    timers.advance(500)
    assert.equal(peer.terminated, true)
    heartbeat.stop()
  })

  it('pings every pingIntervalMs and terminates a peer silent for idleTimeoutMs, reporting it first', () => {
    const timers = new ManualTimers()
    const idle: Array<[Peer, number]> = []
    const heartbeat = new Heartbeat<Peer>({ pingIntervalMs: 100, idleTimeoutMs: 300, timers, onIdle: (peer, ms) => idle.push([peer, ms]) })
    const peer = new Peer()
    heartbeat.track(peer)
    timers.advance(250)
    assert.equal(peer.pings, 2, 'pings at 100 and 200 ms')
    assert.equal(peer.terminated, false)
    timers.advance(100)
    assert.equal(peer.terminated, true, 'terminated once 300 ms passed without a frame')
    assert.deepEqual(idle, [[peer, 300]])
    assert.equal(heartbeat.size, 0)
    assert.equal(timers.intervals.size, 0, 'the timer stops with the last peer')
  })

  it('keeps a peer that is heard from, however quiet it is between frames', () => {
    const timers = new ManualTimers()
    const heartbeat = new Heartbeat<Peer>({ pingIntervalMs: 100, idleTimeoutMs: 300, timers })
    const peer = new Peer()
    const heard = heartbeat.track(peer)
    for (let i = 0; i < 20; i++) {
      timers.advance(250)
      heard()
    }
    assert.equal(peer.terminated, false)
    assert.ok(peer.pings >= 45, `pinged all along (${peer.pings})`)
  })

  it('does not terminate healthy peers after the event loop was blocked past the idle timeout', () => {
    const timers = new ManualTimers()
    const heartbeat = new Heartbeat<Peer>({ pingIntervalMs: 100, idleTimeoutMs: 300, timers })
    const peer = new Peer()
    const heard = heartbeat.track(peer)
    timers.advance(100)
    timers.block(10_000) // a long synchronous handler: the peer's frames wait unread
    timers.advance(1) // the late sweep runs first…
    assert.equal(peer.terminated, false, 'a late sweep counts at most two ticks of silence')
    heard() // …then the waiting frames are read
    timers.advance(250)
    assert.equal(peer.terminated, false)
  })

  it('watches each peer on its own and untrack stops watching one', () => {
    const timers = new ManualTimers()
    const heartbeat = new Heartbeat<Peer>({ pingIntervalMs: 50, idleTimeoutMs: 200, tickMs: 50, timers })
    const [a, b, c] = [new Peer(), new Peer(), new Peer()]
    const heardA = heartbeat.track(a)
    heartbeat.track(b)
    heartbeat.track(c)
    heartbeat.untrack(c)
    for (let i = 0; i < 6; i++) {
      timers.advance(50)
      heardA()
    }
    assert.equal(a.terminated, false)
    assert.equal(b.terminated, true)
    assert.equal(c.terminated, false)
    assert.equal(c.pings, 0)
    heartbeat.stop()
    assert.equal(timers.intervals.size, 0)
  })

  it('refuses intervals that are not positive', () => {
    assert.throws(() => new Heartbeat({ pingIntervalMs: 0, idleTimeoutMs: 10 }), RangeError)
    assert.throws(() => new Heartbeat({ pingIntervalMs: 10, idleTimeoutMs: Number.NaN }), RangeError)
    assert.throws(() => new Heartbeat({ pingIntervalMs: 10, idleTimeoutMs: 10, tickMs: -1 }), RangeError)
  })
})
