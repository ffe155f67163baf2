/**
 * A stream subscriber in its own process, killed (SIGKILL) and started again, keeps receiving
 * `stream` trigger events: the new process's binding gets the fan-out, the dead one's is gone.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, before, it } from 'node:test'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { ROOT } from './support/processes.ts'
import { waitFor } from './support/wait.ts'

interface Subscriber {
  child: ChildProcess
  events: Array<Record<string, any>>
  ready: Promise<void>
}

function startSubscriber(url: string): Subscriber {
  const child = spawn(process.execPath, [join(ROOT, 'test/support/stream-subscriber.ts')], {
    env: { ...process.env, SVC_URL: url, STREAM_NAME: 'feed' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const events: Array<Record<string, any>> = []
  let markReady!: () => void
  const ready = new Promise<void>((resolve) => (markReady = resolve))
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const message = JSON.parse(line)
    if (message.ready) markReady()
    else events.push(message.event)
  })
  return { child, events, ready }
}

let test: TestEngine
const children: ChildProcess[] = []
before(async () => {
  test = await startTestEngine()
})
after(async () => {
  for (const child of children) child.kill('SIGKILL')
  await test.stop()
})

/** Writes until the subscriber has the event of item `id` (the binding may register a moment after `ready`). */
async function deliveredTo(subscriber: Subscriber, id: string): Promise<void> {
  let n = 0
  await waitFor(async () => {
    if (subscriber.events.some((e) => e.id === id)) return true
    await test.engine.inject({ function_id: 'stream::set', data: { stream_name: 'feed', group_id: 'g', item_id: id, data: n++ } })
    return false
  }, `${id} at the subscriber`, 10_000, 50)
}

it('a subscriber killed and restarted still receives stream events, in order', async () => {
  const first = startSubscriber(test.url)
  children.push(first.child)
  await first.ready
  await deliveredTo(first, 'warm-up-1')

  first.child.kill('SIGKILL')
  await new Promise((resolve) => first.child.once('exit', resolve))

  const second = startSubscriber(test.url)
  children.push(second.child)
  await second.ready
  await deliveredTo(second, 'warm-up-2')
  const start = second.events.length
  for (let i = 0; i < 20; i++) {
    await test.engine.inject({ function_id: 'stream::set', data: { stream_name: 'feed', group_id: 'g', item_id: 'seq', data: i } })
  }
  await waitFor(() => second.events.length >= start + 20, '20 events at the restarted subscriber')
  assert.deepEqual(second.events.slice(start).map((e) => e.event.data), Array.from({ length: 20 }, (_, i) => i))
  assert.equal(second.events[start]!.event.type, 'create')
  second.child.kill('SIGKILL')
  await new Promise((resolve) => second.child.once('exit', resolve))
  await waitFor(() => !test.engine.openSessions().some((s) => s.name === 'stream-subscriber'), 'the session to close')
})

it('a subscriber whose connection drops reconnects, replays its binding (same trigger id) and keeps receiving', async () => {
  const subscriber = startSubscriber(test.url)
  children.push(subscriber.child)
  await subscriber.ready
  await deliveredTo(subscriber, 'before-drop')
  const sessions = test.engine.openSessions().filter((s) => s.name === 'stream-subscriber')
  assert.equal(sessions.length, 1)
  sessions[0]!.transport.terminate()
  await waitFor(() => test.engine.openSessions().some((s) => s.name === 'stream-subscriber' && !sessions.includes(s)), 'the reconnect')
  await deliveredTo(subscriber, 'after-drop')
  const start = subscriber.events.length
  await test.engine.inject({ function_id: 'stream::set', data: { stream_name: 'feed', group_id: 'g', item_id: 'once', data: 1 } })
  await waitFor(() => subscriber.events.slice(start).some((e) => e.id === 'once'), 'the event after the reconnect')
  // A marker after it: a second binding would have delivered 'once' before its marker arrives.
  await test.engine.inject({ function_id: 'stream::set', data: { stream_name: 'feed', group_id: 'g', item_id: 'marker', data: 1 } })
  await waitFor(() => subscriber.events.slice(start).some((e) => e.id === 'marker'), 'the marker after the reconnect')
  assert.equal(subscriber.events.filter((e) => e.id === 'once').length, 1, 'delivered once, not once per binding')
})
