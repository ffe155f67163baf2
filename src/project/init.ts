/**
 * `svc project init` (cli.md §4.1): check the directory, copy the template, write
 * `.svc/project.ini`, install dependencies, each step shown with listr2 (cli.md §6 Progress).
 */
import { Listr, LISTR_LOGGER_STDERR_LEVELS, ListrLogger, ListrLogLevels, PRESET_TIMER } from 'listr2'
import type { ListrTask } from 'listr2'
import { installDirectories, installFailedError, primeInstalled, recordInstall, runInstall } from './install.ts'
import type { InstallOutcome } from './install.ts'
import { nextSteps } from './next-steps.ts'
import { copyTemplate, writeProjectIni } from './scaffold.ts'
import { existsSync, mkdirSync, rmdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { CliError, ExitCode } from '../lib/errors.ts'
import { findConfigFile } from '../lib/project.ts'
import { checkTargetDirectory, displayDirectory, INIT_MARKER } from './target.ts'
import { requireTemplate } from './templates.ts'
import type { InitOptions, InitResult, TemplateInfo } from './types.ts'

interface InitContext {
  files: string[]
  /** Every install's outcome, in directory order; undefined when nothing was installed. */
  installs?: Promise<InstallOutcome[]>
}

/**
 * Scaffolds a project (or, for the `worker` template, a worker directory) as `options` says and
 * reports what it wrote. A template with a `worker` folder (`python`, `rust`) whose target lies
 * inside an existing project (a config.yaml in the target's parent or above) writes that worker
 * only, its SDKs into that project's `vendor/`, and reports it as a worker template
 * (`next_steps`: `svc worker add <dir>`). Progress goes to stdout through listr2's `options.renderer`.
 *
 * The scaffold is kept when the install fails.
 *
 * @throws {CliError} `DIRECTORY_NOT_EMPTY` / `NOT_A_DIRECTORY` (exit 1) before anything is written;
 *   `UNKNOWN_TEMPLATE` (exit 2); `INSTALL_FAILED` (exit 1) naming the first directory (in path
 *   order) whose install failed, e.g. `Project created, but installing dependencies failed in
 *   workers/caller-worker (npm exited with 1). Run npm install there.`
 */
export async function initProject(options: InitOptions): Promise<InitResult> {
  const chosen = requireTemplate(options.template)
  // A language template inside an existing project scaffolds its worker only (issue 18).
  const config = chosen.worker === undefined ? undefined : findConfigFile(dirname(options.directory))
  const workerOf = config === undefined ? undefined : { projectRoot: dirname(config) }
  const template: TemplateInfo = workerOf === undefined ? chosen : { ...chosen, kind: 'worker' }
  if (workerOf !== undefined && chosen.sdks?.includes('rust') && /^[0-9]/.test(options.name)) {
    // NAME becomes the Cargo package (and binary) name there, which cargo refuses to start with a digit.
    throw new CliError({
      code: 'INVALID_ARGUMENT',
      message: `A Rust worker's name cannot start with a digit (cargo refuses the package name '${options.name}')`,
      exitCode: ExitCode.Usage,
      hint: 'choose a NAME that starts with a letter',
    })
  }
  const shown = displayDirectory(options.directory, options.cwd)
  const manager = options.packageManager
  const signal = options.signal
  const marker = join(options.directory, ...INIT_MARKER.split('/'))
  // Ctrl-C removes a directory this run created; one that existed keeps the marker instead.
  const created = !existsSync(options.directory)

  const steps: ListrTask<InitContext>[] = [
    {
      title: `Check directory ${shown}`,
      task: () => {
        checkTargetDirectory(options.directory, options.cwd, options.force)
      },
    },
    {
      title: `Copy template ${template.name}`,
      task: (ctx, task) => {
        mkdirSync(dirname(marker), { recursive: true })
        writeFileSync(marker, `svc project init ${options.name} --template ${template.name}\n`)
        ctx.files = copyTemplate({
          name: options.name,
          template,
          directory: options.directory,
          cliRoot: options.cliRoot,
          cliVersion: options.cliVersion,
          packageManager: manager,
          ...(workerOf === undefined ? {} : { workerOf }),
        })
        task.title = `Copy template ${template.name} (${ctx.files.length} files)`
      },
    },
    {
      title: 'Write .svc/project.ini',
      enabled: template.kind === 'project',
      task: (ctx) => {
        ctx.files.push(writeProjectIni(options.directory, { project_name: options.name, template: template.name, created_with: options.cliVersion }))
      },
    },
    {
      title: `Install dependencies (${manager})`,
      skip: (ctx) => {
        if (!options.install) return '--no-install'
        if (installDirectories(ctx.files).length === 0) return 'no package.json'
        return false
      },
      task: (ctx, task) => {
        const directories = installDirectories(ctx.files)
        // All installs start at once; each directory's step shows its own.
        const installs = directories.map((directory) => runInstall(options.directory, directory, manager, signal))
        ctx.installs = Promise.all(installs)
        return task.newListr(
          directories.map((directory, i) => ({
            title: `${directory === '' ? shown : directory}: ${manager} install`,
            task: async () => {
              const outcome = await installs[i]!
              if (!outcome.ok) {
                // Let every other install finish (and show) before the failure stops the list.
                await ctx.installs
                throw new Error(outcome.reason)
              }
              // The first svc start finds the install done (no second npm install).
              await recordInstall(options.directory, directory, manager)
              // …and without a type stripper in its memory (issue 20: ~17 MiB of a trivial worker's RSS).
              await primeInstalled(options.directory, directory)
            },
          })),
          { concurrent: true },
        )
      },
    },
  ]

  const ctx: InitContext = { files: [] }
  // A Ctrl-C during an install should end svc as a signal does (exit 130), not with listr2's 127.
  const common = { ctx, registerSignalListeners: false } as const
  const tasks =
    options.renderer === 'default'
      ? new Listr<InitContext, 'default', 'simple'>(steps, {
          ...common,
          renderer: 'default',
          rendererOptions: { collapseSubtasks: false, showSkipMessage: false, timer: PRESET_TIMER },
        })
      : options.renderer === 'simple'
        ? new Listr<InitContext, 'simple', 'simple'>(steps, { ...common, renderer: 'simple', rendererOptions: { logger: new FinishedStepLogger() } })
        : new Listr<InitContext, 'silent', 'silent'>(steps, { ...common, renderer: 'silent' })

  const interrupted = () => {
    if (created) rmSync(options.directory, { recursive: true, force: true })
    return new CliError({
      code: 'INTERRUPTED',
      message: created
        ? `Interrupted; removed ${shown}`
        : `Interrupted; ${shown} is not complete: run svc project init again to complete it`,
      exitCode: ExitCode.Interrupted,
    })
  }
  try {
    await tasks.run()
  } catch (err) {
    if (signal?.aborted) throw interrupted()
    // The list stops with an install's short reason; report the failure of cli.md §4.1 instead.
    const failed = (await ctx.installs)?.find((o) => !o.ok)
    if (failed) throw installFailedError(failed, manager, template.kind === 'project' ? 'Project' : 'Worker', shown)
    throw err
  }
  const outcomes = (await ctx.installs) ?? []
  if (signal?.aborted) throw interrupted()
  // Done, or only the install failed (the scaffold is kept and a re-run completes it).
  rmSync(marker, { force: true })
  try {
    rmdirSync(dirname(marker)) // only when empty: the worker template has no .svc of its own
  } catch {
    /* .svc/project.ini is there */
  }

  return {
    project: options.name,
    directory: options.directory,
    template: template.name,
    files: [...ctx.files].sort(),
    // True when nothing is left to install (also for a template without package.json).
    installed: options.install && outcomes.every((o) => o.ok),
    next_steps: nextSteps(template, options.directory, options.cwd).map((s) => s.command),
  }
}

/**
 * listr2's simple renderer logs a line when a step starts and another when it ends; cli.md §6 wants
 * one plain line per finished step, so start lines are dropped. A failed step is logged without
 * the error text: the command prints it right after as `Error: …`.
 */
class FinishedStepLogger extends ListrLogger<ListrLogLevels> {
  constructor() {
    super({ useIcons: true, toStderr: LISTR_LOGGER_STDERR_LEVELS })
  }

  override log(level: ListrLogLevels, message: string | any[], options?: Parameters<ListrLogger['log']>[2]): void {
    if (level === ListrLogLevels.STARTED) return
    super.log(level, message, level === ListrLogLevels.FAILED ? undefined : options)
  }
}
