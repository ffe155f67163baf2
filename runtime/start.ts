/**
 * The runtime's engine entry: what `svc` itself (`src/lib/start.ts`) needs to run an engine in its
 * process — the `Engine`, the built-in workers (`loadBuiltins`) and the seeding of their settings
 * entries (`storeSeed`, builtins.md §11).
 *
 * Importing it loads the engine (the built-ins' modules load when `loadBuiltins` is called), so
 * only the command that starts an engine imports it; everything else the CLI takes from the runtime
 * comes from the light `runtime/index.ts` (`test/layering.test.ts` holds `src/` to the two).
 */
import type { BuiltinWorker } from './engine/types.ts'
import type { BuiltinsConfig } from './workers/index.ts'

export { Engine } from './engine/engine.ts'
export { storeSeed } from './workers/shared/configured.ts'

/**
 * Loads the built-in workers' code and makes a fresh instance of each (`createBuiltins` of
 * `runtime/workers/index.ts`, in start order). Pass it to `new Engine(config, { builtins: () =>
 * loadBuiltins(config) })`: the engine calls it once its listeners accept, so the built-ins' modules
 * load while `svc`'s workers start rather than before the listener (issue 20 "Engine start").
 *
 * @throws what loading the modules throws (the start then fails)
 */
export async function loadBuiltins(config: BuiltinsConfig): Promise<BuiltinWorker[]> {
  const { createBuiltins } = await import('./workers/index.ts')
  return createBuiltins(config)
}
