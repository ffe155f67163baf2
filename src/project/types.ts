/**
 * Types of project scaffolding (`svc project init`, cli.md §4.1): the template catalogue, what an
 * init is asked to do and what it reports.
 */

/** Package managers `--package-manager` accepts (cli.md §4.1). */
export const PACKAGE_MANAGERS = ['npm', 'pnpm', 'yarn', 'bun'] as const
export type PackageManager = (typeof PACKAGE_MANAGERS)[number]

/** A template of `templates/<name>/`. */
export interface TemplateInfo {
  /** Directory name under `templates/`, and the `--template` value. */
  name: string
  /** One line for `--list-templates` and the interactive picker. */
  description: string
  /**
   * `project`: a project directory (config.yaml, .svc/project.ini, …); `worker`: one worker
   * directory with no project files (cli.md §4.1 `worker`).
   */
  kind: 'project' | 'worker'
  /** A template whose files are copied first; this template's files then add to or replace them. */
  base?: string
  /** Next step that shows what this template does, printed after the common ones. */
  tryIt?: NextStep
  /**
   * Where in the project the browser SDK bundle (`svc-browser-sdk.js`, sdk.md §13) is copied, for
   * templates whose page loads it (vendor.ts `browserSdkBundle`).
   */
  browserSdk?: string
  /**
   * SDKs of other languages the template's workers use (issue 18), copied into the project:
   * `python` the svc-sdk and svc-helpers wheels into `vendor/python/` (a `requirements.txt` line
   * `svc-sdk` or `svc-helpers` becomes the wheel's relative path), `rust` the SDK's crates into
   * `vendor/rust/` (the template's Cargo.toml depends on them by `path =`). See vendor.ts.
   */
  sdks?: ReadonlyArray<'python' | 'rust'>
  /**
   * Folders of other templates copied too, each to its path below its template's folder
   * (`quickstart/workers/caller-worker` → `workers/caller-worker`), before this template's own files.
   */
  include?: readonly string[]
  /**
   * The folder of this template holding its language worker (`workers/math-worker`). Inside an
   * existing project (a config.yaml in a directory above the target), `svc project init` writes
   * only that folder into the target, as a worker to `svc worker add`, and the `sdks` into that
   * project's `vendor/`.
   */
  worker?: string
}

/** One line of the next-steps block: a command and an optional comment. */
export interface NextStep {
  command: string
  comment?: string
}

/** Progress display of the init steps (cli.md §6): listr2's renderer names. */
export type ProgressRenderer = 'default' | 'simple' | 'silent'

/** Everything {@link initProject} needs, already validated by {@link resolveInitRequest}. */
export interface InitOptions {
  /** Project (or worker) name, `[a-z0-9][a-z0-9_-]{0,63}`. */
  name: string
  /** A template name of the catalogue. */
  template: string
  /** Absolute target directory. */
  directory: string
  /** The user's working directory, for messages (`./my-app`) and next steps (`cd my-app`). */
  cwd: string
  /** Scaffold into a non-empty directory. */
  force: boolean
  /** Run the package manager in each directory with a package.json. */
  install: boolean
  packageManager: PackageManager
  /** Version of the running CLI: `{{svc_version}}`, `created_with`, and the `^<version>` specifier. */
  cliVersion: string
  /** Root of the CLI package (holds `templates/`; in a source checkout also `packages/`). */
  cliRoot: string
  /** How progress is shown; `silent` for --json. */
  renderer: ProgressRenderer
  /**
   * Aborted on Ctrl-C: installs are stopped, a directory the run created is removed (else it keeps
   * the marker that lets the next run complete it) and `INTERRUPTED` (exit 130) is thrown.
   */
  signal?: AbortSignal
}

/** What an init produced: the `--json` result of cli.md §4.1 (stable, additive). */
export interface InitResult {
  project: string
  /** Absolute path. */
  directory: string
  template: string
  /** Files written, relative to `directory`, `/`-separated, sorted. */
  files: string[]
  /** False with --no-install; true when every directory with a package.json was installed (or there is none). */
  installed: boolean
  /** Commands to run next, in order. */
  next_steps: string[]
}
