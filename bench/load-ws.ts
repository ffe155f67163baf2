/**
 * WebSocket load generator, one process. `echo <port>`: talks to the baseline echo server (over
 * loopback with a zero masking key, as svc's client transport does there).
 * `svc <engine_url>`: invokes `bench::echo` through the engine with svc-sdk. Prints one JSON line.
 */
import WebSocket from 'ws'
import { registerWorker } from 'svc-sdk'
import { reportCaller, type Caller } from './measure.ts'
import { PAYLOAD } from './payload.ts'

const [mode, target] = process.argv.slice(2)

function zeroMask(mask: Buffer): void {
  mask.fill(0)
}

async function echoCaller(): Promise<Caller> {
  // The same masking as svc's client transport to a loopback address (zero key: ws then skips
  // XOR-ing on both ends), so the floor is not handicapped by work svc's clients no longer do.
  const ws = new WebSocket(`ws://127.0.0.1:${target}`, { perMessageDeflate: false, generateMask: zeroMask })
  await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)))
  const pending = new Map<number, (v: unknown) => void>()
  let next = 0
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString())
    const resolve = pending.get(frame.id)
    pending.delete(frame.id)
    resolve?.(frame.result)
  })
  return {
    call: () =>
      new Promise((resolve) => {
        const id = next++
        pending.set(id, resolve)
        ws.send(JSON.stringify({ id, data: PAYLOAD }))
      }),
    close: () => ws.close(),
  }
}

async function svcCaller(): Promise<Caller> {
  const client = registerWorker(target, { workerName: 'bench-caller' })
  const call = () => client.trigger({ function_id: 'bench::echo', payload: PAYLOAD })
  const deadline = Date.now() + 10000
  for (;;) {
    try {
      await call()
      break
    } catch (err) {
      if (Date.now() > deadline) throw err
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  return { call, close: () => void client.shutdown() }
}

await reportCaller(mode!, mode === 'echo' ? await echoCaller() : await svcCaller())
