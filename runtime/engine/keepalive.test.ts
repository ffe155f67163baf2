/**
 * A listener's keepalive (protocol.md §3.3) through the shared Heartbeat: silent connections are
 * terminated, live ones are not, and a blocked event loop (a long synchronous step, a GC pause, a
 * suspended machine) does not make live connections look silent. Before the Heartbeat, the sweep
 * that ran first after such a block measured the block as silence and terminated every connection
 * whose frames were still waiting to be read.
 */
import assert from 'node:assert/strict'
import { stat } from 'node:fs'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { Transport } from 'svc-protocol'
import { Keepalive } from './keepalive.ts'
import type { Logger } from './types.ts'
import { waitFor } from '../../test/support/wait.ts'

class FakeTransport {
  pings = 0
  terminated = false
  bufferedAmount = 0
  writtenBytes = 0
  ping(): void {
    this.pings++
  }
  terminate(): void {
    this.terminated = true
  }
}

const asTransport = (t: FakeTransport) => t as unknown as Transport

function recordingLog(): { log: Logger; warnings: string[] } {
  const warnings: string[] = []
  return { log: { debug() {}, info() {}, warn: (m) => warnings.push(m), error() {} }, warnings }
}

describe('listener keepalive', () => {
  it('pings every connection and terminates the silent one, logging it', async () => {
    const { log, warnings } = recordingLog()
    const keepalive = new Keepalive({ pingIntervalMs: 20, idleTimeoutMs: 100, drainTimeoutMs: 1000 }, log)
    try {
      const live = new FakeTransport()
      const silent = new FakeTransport()
      const heard = keepalive.track(asTransport(live))
      keepalive.track(asTransport(silent))
      const timer = setInterval(heard, 10)
      await waitFor(() => silent.terminated, 'the silent connection terminated', 10_000, 5)
      clearInterval(timer)
      assert.equal(live.terminated, false)
      assert.ok(live.pings >= 3, `the live connection was pinged (${live.pings})`)
      assert.deepEqual(warnings, ['closing a silent worker connection'])
    } finally {
      keepalive.stop()
    }
  })

  it('keeps connections whose frames wait unread behind a blocked event loop', async () => {
    const { log } = recordingLog()
    const keepalive = new Keepalive({ pingIntervalMs: 20, idleTimeoutMs: 150, drainTimeoutMs: 1000 }, log)
    try {
      const transport = new FakeTransport()
      const heard = keepalive.track(asTransport(transport))
      const frames = setInterval(heard, 5)
      await waitFor(() => transport.pings >= 2, 'pinged twice', 10_000, 5)
      clearInterval(frames)
      // One more sweep takes the last frame into account. Then a long synchronous step (in the
      // check phase, like any callback) blocks the loop past the idle timeout while a frame
      // arrives: its I/O completion is read in the next poll phase, after the timers that fell
      // due meanwhile have run.
      const pings = transport.pings
      await waitFor(() => transport.pings > pings, 'one more sweep', 10_000, 5)
      await new Promise<void>((resolve) =>
        setImmediate(() => {
          stat(fileURLToPath(import.meta.url), () => heard())
          const blockedUntil = Date.now() + 400
          while (Date.now() < blockedUntil) {
            /* a long synchronous step */
          }
          resolve()
        }),
      )
      await waitFor(() => transport.pings >= pings + 4 || transport.terminated, 'three more sweeps', 10_000, 5)
      assert.equal(transport.terminated, false)
    } finally {
      keepalive.stop()
    }
  })
})
