/**
 * The catalogue of built-in workers (builtins.md §1) that the engine starts by default.
 * Each one lives in its own folder and takes part through the LocalWorker interface.
 */
import type { BuiltinWorker, EngineConfig } from '../engine/types.ts'
import { CronWorker } from './cron/worker.ts'
import { HttpWorker } from './http/worker.ts'
import { PubSubWorker } from './pubsub/worker.ts'
import { StateWorker } from './state/worker.ts'

/** A fresh instance of every built-in worker of this release, in start order. */
export function createBuiltins(_config?: EngineConfig): BuiltinWorker[] {
  return [new StateWorker(), new HttpWorker(), new PubSubWorker(), new CronWorker()]
}
