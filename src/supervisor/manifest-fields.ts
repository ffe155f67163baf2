/**
 * Every field `svc.worker.yaml` accepts (cli.md §2.2), as one structured description. The manifest
 * parser takes its field lists from here, and `docs/reference/svc.worker.yaml.md` is generated from
 * it, so the reference cannot drift from what the parser accepts.
 */

/** One field of the manifest, by its dotted path (`runtime.kind`). */
export interface ManifestField {
  /** Dotted path; a block (`runtime`) is listed before its fields. */
  readonly path: string
  /** Type as the reference shows it. */
  readonly type: string
  /** Default as YAML text; undefined when there is none. */
  readonly default?: string
  readonly required?: boolean
  readonly description: string
}

/** The fields of svc.worker.yaml in reference order. */
export const MANIFEST_FIELDS: readonly ManifestField[] = [
  { path: 'name', type: 'string', required: true, description: 'Worker name `[a-z0-9][a-z0-9_-]{0,63}`; the default name of its config.yaml entry or compose container.' },
  { path: 'description', type: 'string', description: 'Free text shown by `svc worker list`.' },
  { path: 'runtime', type: 'mapping', description: 'What the worker is written in; used to infer missing scripts (see below).' },
  { path: 'runtime.kind', type: 'kind', description: 'Language and tool chain of the worker.' },
  { path: 'runtime.package_manager', type: 'package manager', default: 'npm (bun for kind bun)', description: 'JavaScript kinds only; refused for python and rust.' },
  { path: 'runtime.entry', type: 'string', description: 'Entry file or module (`main.py`, `app.main`); for rust the binary to run, needed only when `Cargo.toml` has several binaries.' },
  { path: 'runtime.base_image', type: 'string', description: 'OCI image reference used as the root file system under microVM isolation only.' },
  { path: 'scripts', type: 'mapping', description: 'Shell commands run in the worker directory.' },
  { path: 'scripts.setup', type: 'string', description: 'Run once before the first install.' },
  { path: 'scripts.install', type: 'string', description: 'Installs dependencies; runs again when a dependency manifest changes (cli.md §5.3).' },
  { path: 'scripts.build', type: 'string', description: 'Compiles the worker (rust: `cargo build --release`); runs before every start that follows a change while the running process keeps serving, and a failure leaves that process running, reported with the compiler\'s first error.' },
  { path: 'scripts.start', type: 'string', required: true, description: 'Starts the worker; required unless it can be inferred from `runtime`.' },
  { path: 'env', type: 'mapping of strings', default: '{}', description: "Added to the worker's environment; numbers and booleans are taken as text; reserved names (`SVC_URL`, …) are ignored with a warning." },
  { path: 'isolation', type: '`process` or `microvm`', default: 'process', description: 'How the worker runs (cli.md §5.7); a config.yaml entry may override it.' },
  { path: 'resources', type: 'mapping', description: 'Size of the microVM.' },
  { path: 'resources.cpus', type: 'integer 1–4', default: '2', description: 'Virtual CPUs.' },
  { path: 'resources.memory_mib', type: 'integer 128–4096', default: '2048', description: 'Memory, MiB.' },
  { path: 'watch', type: 'mapping or boolean', description: '`watch: false` is short for `watch: { enabled: false }`.' },
  { path: 'watch.enabled', type: 'boolean', default: 'true', description: 'Restart the worker when its files change (cli.md §5.4).' },
  { path: 'watch.ignore', type: 'string[]', default: '[]', description: 'Glob patterns added to the default ignore list.' },
]

/** Field names directly under `block` (`''` for the top level), in reference order. */
export function manifestFieldsUnder(block: string): string[] {
  const prefix = block === '' ? '' : `${block}.`
  return MANIFEST_FIELDS.map((f) => f.path)
    .filter((p) => p.startsWith(prefix) && !p.slice(prefix.length).includes('.'))
    .map((p) => p.slice(prefix.length))
}
