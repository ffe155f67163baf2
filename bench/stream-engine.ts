/**
 * The engine side of the stream fan-out benchmark: an engine with the default built-ins (svc-stream
 * on the memory adapter), every port ephemeral. Prints `{engine_url, stream_url}`, then answers
 * each `mem` line on stdin with `{rss, heap}` in bytes after a full GC (run with --expose-gc).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { Engine } from '../runtime/engine/engine.ts'
import { silentLogger } from '../runtime/engine/logger.ts'
import { LISTENER_DEFAULTS, type EngineConfig } from '../runtime/engine/types.ts'
import { createBuiltins } from '../runtime/workers/index.ts'

const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-stream-'))
const config: EngineConfig = {
  listeners: [{ ...LISTENER_DEFAULTS, port: 0 }],
  registration_namespace_grace_ms: 250,
  internal_invocation_timeout_ms: 30_000,
  data_dir: dataDir,
  builtins: {
    'svc-http': { enabled: true, config: { port: 0 } },
    'svc-state': { enabled: true, config: { adapter: { name: 'memory' } } },
    'svc-stream': { enabled: true, config: { port: 0, adapter: { name: 'memory' } } },
  },
  local_workers: [],
}
const engine = new Engine(config, { log: silentLogger, builtins: createBuiltins(config) })
await engine.start()
console.log(JSON.stringify({ engine_url: engine.workerUrls[0], stream_url: engine.listenUrls('svc-stream')[0] }))

const gc = (globalThis as { gc?: () => void }).gc
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== 'mem') return
  gc?.()
  gc?.()
  const { rss, heapUsed } = process.memoryUsage()
  console.log(JSON.stringify({ rss, heap: heapUsed }))
})
process.stdin.on('end', async () => {
  await engine.stop()
  await rm(dataDir, { recursive: true, force: true })
  process.exit(0)
})
