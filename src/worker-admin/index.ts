/**
 * The library behind `svc worker add|remove|list` (cli.md §4.2–§4.5): config.yaml editing, the
 * built-in registry, and the add, remove and list operations the commands call.
 */
export { addWorkers, classifyWorker, DEFAULT_ADD_TIMEOUT_MS, entryPath } from './add.ts'
export type { AddContext, AddReport, AddRequest, AddResult, WorkerArgument } from './add.ts'
export { appendEntry, readConfigText, readEntries, removeEntry, replaceEntry, setEnabled, writeConfigText } from './config-file.ts'
export type { ConfigEntry, ConfigSnapshot, EntryFields } from './config-file.ts'
export { CLI_WORKER_NAME, EngineAccess, EngineSession } from './engine.ts'
export type { EngineFunction, EngineWorker } from './engine.ts'
export { followWorker, formatSeconds, WorkerFollower } from './follow.ts'
export type { FollowOptions, FollowOutcome, Observation } from './follow.ts'
export { formatTable, listWorkers } from './list.ts'
export type { ListContext, ListedWorker, ListStatus, WorkerListing } from './list.ts'
export { humanOutput, jsonError, silentOutput } from './output.ts'
export type { Output } from './output.ts'
export { createStepRunner } from './progress.ts'
export type { StepRunner } from './progress.ts'
export { openProject } from './project.ts'
export type { WorkerProject } from './project.ts'
export {
  ADDABLE_BUILTINS,
  BUILTIN_REGISTRY,
  cannotAddMessage,
  disabledMessage,
  lookupBuiltin,
  unknownWorkerMessage,
} from './registry.ts'
export type { BuiltinInfo } from './registry.ts'
export { printJsonReport } from './report.ts'
export { removeWorkers } from './remove.ts'
export type { RemoveContext, RemoveReport, RemoveResult } from './remove.ts'
export { readWorkerState } from './state-files.ts'
export type { WorkerStateView } from './state-files.ts'
