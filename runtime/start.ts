/**
 * The runtime's engine entry: what `svc` itself (`src/lib/start.ts`) needs to run an engine in its
 * process — the `Engine`, the built-in workers (`createBuiltins`) and the seeding of their settings
 * entries (`storeSeed`, builtins.md §11).
 *
 * Importing it loads the engine and every built-in, so only the command that starts an engine
 * imports it; everything else the CLI takes from the runtime comes from the light `runtime/index.ts`
 * (`test/layering.test.ts` holds `src/` to the two).
 */
export { Engine } from './engine/engine.ts'
export { createBuiltins } from './workers/index.ts'
export { storeSeed } from './workers/shared/configured.ts'
