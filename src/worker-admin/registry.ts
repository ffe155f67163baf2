/**
 * The built-in worker registry shipped in the CLI (cli.md §4.3, builtins.md §1): which names
 * `svc worker add|remove` accept, what runs by default, what can never be added or removed, and
 * the words used when one is turned off.
 *
 * Everything here is derived from the built-in worker descriptors (runtime/workers/catalogue.ts),
 * the same data config.yaml validation uses, so the CLI and the engine can never disagree.
 */
import { type BuiltinName, builtinsInListOrder, canonicalBuiltinName, closestMatch, LISTENER_NAME, type RunMode } from '../../runtime/index.ts'

/** One built-in worker as the CLI knows it. */
export interface BuiltinInfo {
  /** Canonical name, as written in config.yaml and shown by `svc worker list`. */
  name: BuiltinName
  /** Other accepted spellings (cli.md §4.3). */
  aliases: readonly string[]
  /**
   * `default`: runs inside the engine unless its entry has `enabled: false`; `optional`: runs only
   * when declared (`console`); `mandatory`: always runs, cannot be added, removed or disabled.
   */
  mode: RunMode
  /** Worker name under which the engine lists it (`engine::workers::list`). */
  engineName: string
  /**
   * What stops working while it is disabled, completing `<name> disabled; …` (cli.md §4.4).
   * Undefined for workers that cannot be disabled or are removed instead.
   */
  disabledEffect?: string
}

/** The catalogue in the order of cli.md §4.3 (the order `svc worker list` shows them in). */
export const BUILTIN_REGISTRY: readonly BuiltinInfo[] = builtinsInListOrder().map((d) => {
  const entry: BuiltinInfo = { name: d.name as BuiltinName, aliases: d.aliases, mode: d.mode, engineName: d.engineName }
  if (d.disabledEffect !== undefined) entry.disabledEffect = d.disabledEffect
  return entry
})

/** Built-ins `svc worker add` accepts, in catalogue order (the list of the "Unknown worker" message). */
export const ADDABLE_BUILTINS: readonly BuiltinName[] = BUILTIN_REGISTRY.filter((b) => b.mode !== 'mandatory').map((b) => b.name)

/**
 * The registry entry for a name or alias, or undefined when it names no built-in. The listener
 * (`svc-worker-manager`) is not a worker and is not in the registry.
 *
 * @example lookupBuiltin('cron')?.name // 'svc-cron'
 */
export function lookupBuiltin(nameOrAlias: string): BuiltinInfo | undefined {
  const canonical = canonicalBuiltinName(nameOrAlias)
  return canonical === undefined ? undefined : BUILTIN_REGISTRY.find((b) => b.name === canonical)
}

/** True for `svc-worker-manager`, the listener entry of config.yaml (protocol.md §12.3). */
export function isListenerName(name: string): boolean {
  return name === LISTENER_NAME
}

/** The exact refusal of cli.md §4.2 for a WORKER that is neither a path nor a built-in (exit 2). */
export function unknownWorkerMessage(worker: string): string {
  return (
    `Unknown worker '${worker}'. Built-in workers: ${ADDABLE_BUILTINS.join(', ')}. ` +
    `To add a local worker, pass a path such as ./workers/${worker}`
  )
}

/**
 * The built-in a mistyped WORKER most likely meant (`htpp` → `svc-http`), with the config loader's
 * suggester, so config.yaml and the CLI suggest the same way; undefined when nothing is close.
 */
export function suggestBuiltin(worker: string): string | undefined {
  const spellings = BUILTIN_REGISTRY.filter((b) => b.mode !== 'mandatory').flatMap((b) => [b.name, ...b.aliases])
  const match = closestMatch(worker, spellings)
  return match === undefined ? undefined : lookupBuiltin(match)?.name
}

/** Why a mandatory built-in cannot be added (cli.md §4.2; exit 1). */
export function cannotAddMessage(name: BuiltinName): string {
  return name === 'svc-observability'
    ? 'svc-observability is injected by the engine and cannot be added'
    : `${name} always runs and cannot be added`
}

/** `svc-cron disabled; its triggers will not fire until re-enabled with svc worker add svc-cron` (cli.md §4.4). */
export function disabledMessage(builtin: BuiltinInfo): string {
  const effect = builtin.disabledEffect ?? 'it does not run'
  return `${builtin.name} disabled; ${effect} until re-enabled with svc worker add ${builtin.name}`
}

/** Local worker names (cli.md §2.1, §2.2). */
export const LOCAL_WORKER_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/
