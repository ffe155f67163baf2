/**
 * Names of the built-in workers as config.yaml may spell them (builtins.md §1, cli.md §4.3), and
 * the "did you mean" helper used for misspelt names and keys. Names, aliases, run modes and seed
 * schemas all come from the worker descriptors (runtime/workers/catalogue.ts).
 */
import { BUILTIN_DESCRIPTORS, builtinDescriptor, type BuiltinDescriptor, type BuiltinName } from '../workers/catalogue.ts'
import type { SchemaHint } from './placeholders.ts'

export type { BuiltinName } from '../workers/catalogue.ts'

/** Name of a listener entry in config.yaml (protocol.md §12.3). */
export const LISTENER_NAME = 'svc-worker-manager'

/** Canonical built-in names, in catalogue order. `console` is off unless declared (cli.md §4.3). */
export const BUILTIN_NAMES: readonly BuiltinName[] = Object.freeze(BUILTIN_DESCRIPTORS.map((d) => d.name))

/** Accepted aliases → canonical name (cli.md §4.3). */
export const BUILTIN_ALIASES: Readonly<Record<string, BuiltinName>> = Object.freeze(
  Object.fromEntries(BUILTIN_DESCRIPTORS.flatMap((d) => d.aliases.map((alias): [string, BuiltinName] => [alias, d.name]))),
)

/** The refusal of builtins.md §1 for a declared `svc-observability` (exit code 2). */
export const OBSERVABILITY_DECLARED_MESSAGE: string = (builtinDescriptor('svc-observability') as BuiltinDescriptor).declarationRefused!

/** The canonical built-in name for a name or alias, or undefined when it names no built-in. */
export function canonicalBuiltinName(name: string): BuiltinName | undefined {
  return builtinDescriptor(name)?.name as BuiltinName | undefined
}

/**
 * Edit distance between two strings (Levenshtein, with a swap of two neighbouring characters
 * counted as one edit, so `prot` is one edit from `port`).
 */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0
  const rows: number[][] = []
  for (let i = 0; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row[j] = j
        continue
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1)
      row[j] = d
    }
    rows.push(row)
  }
  return rows[a.length]![b.length]!
}

/**
 * The candidate closest to `input`, when close enough to be a plausible typo: at most 2 edits, and
 * fewer edits than half the input's length (so short words do not match everything).
 *
 * @example closestMatch('databse', ['database', 'queue']) // 'database'
 */
export function closestMatch(input: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of candidates) {
    const d = editDistance(input.toLowerCase(), candidate.toLowerCase())
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  if (best === undefined || bestDistance > 2 || bestDistance * 2 >= Math.max(input.length, 1)) return undefined
  return best
}

/** ` (did you mean 'x'?)` or an empty string. */
export function didYouMean(input: string, candidates: Iterable<string>): string {
  const match = closestMatch(input, candidates)
  return match === undefined ? '' : ` (did you mean '${match}'?)`
}

/**
 * The settings schema of each built-in whose config.yaml `config` block seeds its settings entry,
 * from its descriptor, so that a seed such as `port: ${HTTP_PORT:3111}` expands to a number
 * (builtins.md §2.8). Built-ins without such a block (`configuration`, `svc-observability`) have
 * none.
 */
export const BUILTIN_SEED_HINTS: Readonly<Partial<Record<BuiltinName, SchemaHint>>> = Object.freeze(
  Object.fromEntries(
    (BUILTIN_DESCRIPTORS as readonly BuiltinDescriptor[])
      .filter((d) => d.settings !== null && (d.settingsSource === 'seed' || d.settingsSource === 'flags'))
      .map((d) => [d.name, d.settings as SchemaHint]),
  ),
)
