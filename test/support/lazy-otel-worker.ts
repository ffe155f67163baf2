/**
 * A svc-sdk worker with default settings (telemetry on) that records which `@opentelemetry`
 * packages its process has loaded, for `test/telemetry-sdk-lazy.test.ts` (and a worker with
 * telemetry on for `test/telemetry-sdk-baggage.test.ts`). The load hook is
 * registered before svc-sdk is imported, so every module svc-sdk loads, early or late, is seen.
 *
 * `node test/support/lazy-otel-worker.ts <engine url>` prints `{"ready":true,"modules":[…]}` once connected
 * (the `@opentelemetry` packages loaded by then).
 * Functions: `lazy::echo` (returns its input), `lazy::modules` (flushes telemetry, returns the
 * loaded package names), `lazy::undici` (Node's undici modules loaded, none expected), `lazy::log` (emits a `Logger` record with its input as data, flushes,
 * returns the loaded package names).
 */
import { registerHooks } from 'node:module'

const loaded = new Set<string>()
registerHooks({
  load(url, context, next) {
    const m = /node_modules\/(@opentelemetry\/[^/]+)\//.exec(url)
    if (m !== null) loaded.add(m[1]!)
    return next(url, context)
  },
})

const { registerWorker } = await import('svc-sdk')
const { flushOtel, getLogger } = await import('svc-sdk/telemetry')

const client = registerWorker(process.argv[2]!, { workerName: 'lazy-otel' })
const modules = (): string[] => [...loaded].sort()
client.registerFunction('lazy::echo', (data) => data)
client.registerFunction('lazy::modules', async () => {
  await flushOtel()
  return modules()
})
// Node's own modules loaded so far whose name has `undici` (its fetch and WebSocket).
client.registerFunction('lazy::undici', () => (process as unknown as { moduleLoadList: string[] }).moduleLoadList.filter((name) => name.includes('undici')))
client.registerFunction('lazy::log', async (data) => {
  getLogger().info('lazy log', data)
  await flushOtel()
  return modules()
})
client.addConnectionStateListener((state) => {
  if (state === 'connected') console.log(JSON.stringify({ ready: true, modules: modules() }))
})
process.on('SIGTERM', () => void client.shutdown().finally(() => process.exit(0)))
