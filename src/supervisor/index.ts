/**
 * The worker supervisor (cli.md §5): the orchestrator `svc` and `svc compose` launch workers
 * through, its engine views, `superviseWorker`, the crash policy, manifests and the KVM check.
 */
export * from './types.ts'
export { superviseWorker, SupervisorError, SUPERVISOR_TIMINGS } from './supervisor.ts'
export { Orchestrator } from './orchestrator.ts'
export type { OrchestratorOptions } from './orchestrator.ts'
export { inProcessEngine, listedEngine } from './engine-view.ts'
export { CrashWindow, exitAction } from './crash-policy.ts'
export type { CrashDecision, CrashWindowLimits, ExitFacts, RestartPolicy } from './crash-policy.ts'
export {
  loadManifest,
  parseManifest,
  detectManifest,
  inferScripts,
  isDependencyManifest,
  workerNameFor,
  ManifestError,
  MANIFEST_FILE,
  WORKER_NAME_PATTERN,
  DEPENDENCY_MANIFESTS,
  RUNTIME_KINDS,
  PACKAGE_MANAGERS,
} from './manifest.ts'
export type { LoadManifestOptions, ManifestErrorCode, RuntimeKind, PackageManager, InferredScripts } from './manifest.ts'
export { checkKvm, KVM_MESSAGES, microvmCacheDir } from './microvm/probe.ts'
export type { KvmCheck, KvmCheckOptions } from './microvm/probe.ts'
export { RESERVED_ENV, BASELINE_ENV, buildWorkerEnv, reservedNamesIn } from './env.ts'
export { readWorkerState, stateFilePath, logFilePath, dependencyHash } from './state-file.ts'
