/**
 * A worker process for end-to-end channel tests (sdk.md §9): connects to the engine at argv[2] as
 * svc-sdk worker argv[3] (`producer` or `consumer`) and prints `{"ready": true}` once connected.
 *
 * producer
 * - `producer::send {consumer, items}`: creates a channel, invokes `consumer` with the reader ref
 *   nested in its payload, writes `items` (`{text}` → a Text item, `{size, seed}` → that many bytes
 *   of {@link pattern}), closes, and answers `{pid, consumer: <its result>}`.
 * - `producer::serve {sizes}`: answers a reader ref nested in its result, then writes one
 *   `pattern(size, i)` per size and closes.
 *
 * consumer
 * - `consumer::take {upload: {body}}`: reads `body` to its end and answers `{pid, items, runs}`:
 *   every item in arrival order (a Text item's text, a Binary item's byte length) and the sha256 of
 *   the bytes between Text items.
 * - `consumer::fetch {sizes}`: invokes `producer::serve` and reads the reader of its result with
 *   `readAll`: `{pid, bytes, sha256}`.
 */
import { createHash } from 'node:crypto'
import { registerWorker, type ChannelReader } from 'svc-sdk'

/** `size` bytes where byte i is `(seed + i) % 251`. */
function pattern(size: number, seed: number): Buffer {
  const bytes = Buffer.alloc(size)
  for (let i = 0; i < size; i++) bytes[i] = (seed + i) % 251
  return bytes
}

type Item = { text: string } | { size: number; seed: number }

const [url, role] = process.argv.slice(2)
const client = registerWorker(url, { workerName: role, otel: { enabled: false } })

if (role === 'producer') {
  client.registerFunction('producer::send', async ({ consumer, items }: { consumer: string; items: Item[] }) => {
    const { writer, readerRef } = await client.createChannel(8)
    const answer = client.trigger({ function_id: consumer, payload: { upload: { note: 'from producer', body: readerRef } } })
    for (const item of items) {
      if ('text' in item) writer.sendMessage(item.text)
      else await writer.write(pattern(item.size, item.seed))
    }
    await writer.close()
    return { pid: process.pid, consumer: await answer }
  })
  client.registerFunction('producer::serve', async ({ sizes }: { sizes: number[] }) => {
    const { writer, reader } = await client.createChannel(2)
    void (async () => {
      for (let i = 0; i < sizes.length; i++) await writer.write(pattern(sizes[i]!, i))
      await writer.close()
    })()
    return { streams: [{ body: reader }] }
  })
} else {
  client.registerFunction('consumer::take', async ({ upload }: { upload: { note: string; body: ChannelReader } }) => {
    const items: Array<string | number> = []
    const runs: string[] = []
    let run = createHash('sha256')
    upload.body.onMessage((text) => {
      items.push(text)
      runs.push(run.digest('hex'))
      run = createHash('sha256')
    })
    upload.body.onBinary((data) => {
      items.push(data.byteLength)
      run.update(data)
    })
    await upload.body.next() // the end: items went to the listeners
    runs.push(run.digest('hex'))
    return { pid: process.pid, note: upload.note, items, runs }
  })
  client.registerFunction('consumer::fetch', async ({ sizes }: { sizes: number[] }) => {
    const result = await client.trigger<unknown, { streams: Array<{ body: ChannelReader }> }>({ function_id: 'producer::serve', payload: { sizes } })
    const all = await result.streams[0]!.body.readAll()
    return { pid: process.pid, bytes: all.length, sha256: createHash('sha256').update(all).digest('hex') }
  })
}

client.addConnectionStateListener((state) => {
  if (state === 'connected') process.stdout.write(`${JSON.stringify({ ready: true })}\n`)
})
process.once('SIGTERM', () => void client.shutdown().then(() => process.exit(0)))
