/**
 * `svc project init`: scaffold a project, or a worker directory, from a template (cli.md §4.1).
 */
import { join } from 'node:path'
import { Args, Flags } from '@oclif/core'
import { applyPorts, pickFreePorts } from '../../project/ports.ts'
import type { ProjectPorts } from '../../project/ports.ts'
import { SvcCommand } from '../../lib/command.ts'
import { isInteractive } from '../../lib/interactive.ts'
import {
  formatNextSteps,
  formatTemplateTable,
  initProject,
  nextSteps,
  PACKAGE_MANAGERS,
  requireTemplate,
  resolveInitRequest,
  TEMPLATES,
  terminalPrompter,
} from '../../project/index.ts'
import type { PackageManager } from '../../project/index.ts'

export default class ProjectInit extends SvcCommand {
  static override summary = 'Create a project (or a worker directory) from a template'
  static override description =
    'Creates ./NAME (or --dir) from a template, substituting the project name and svc version, writes .svc/project.ini ' +
    'and installs dependencies in each directory with a package.json. The directory must be absent or empty ' +
    '(dotfiles aside) unless --force. Without NAME or --template, asks for them in an interactive terminal.'

  static override examples = [
    '<%= config.bin %> project init my-app',
    '<%= config.bin %> project init demo --template quickstart',
    '<%= config.bin %> project init billing --template worker --dir workers/billing',
    '<%= config.bin %> project init --list-templates',
  ]

  static override args = {
    name: Args.string({ description: "Project name: lower-case letters, digits, '-' and '_' (max 64)", required: false }),
  }

  static override flags = {
    template: Flags.string({ char: 't', summary: `Template (default bare): ${TEMPLATES.map((t) => t.name).join(', ')}` }),
    dir: Flags.string({ char: 'd', summary: 'Directory to create the project in (default ./NAME)' }),
    'package-manager': Flags.string({ summary: 'Package manager for installing dependencies', options: [...PACKAGE_MANAGERS], default: 'npm' }),
    force: Flags.boolean({ summary: 'Scaffold into a directory that is not empty, replacing files of the same name' }),
    install: Flags.boolean({ summary: 'Install dependencies (--no-install skips it)', default: true, allowNo: true }),
    'list-templates': Flags.boolean({ aliases: ['list'], summary: 'List the templates and exit' }),
    yes: Flags.boolean({ char: 'y', summary: 'Do not prompt: use defaults for whatever was not given' }),
    ports: Flags.string({
      summary: 'Ports of the new project: default (49134, 3111, 3112) or auto (free ones no other svc engine uses)',
      options: ['default', 'auto'],
      default: 'default',
    }),
    json: Flags.boolean({ summary: 'Print one JSON object: {project, directory, template, files, installed, next_steps}' }),
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(ProjectInit)
    const out = (text: string) => void process.stdout.write(text)

    if (flags['list-templates']) {
      if (flags.json) out(`${JSON.stringify({ templates: TEMPLATES.map(({ name, description, kind }) => ({ name, description, kind })) })}\n`)
      else out(formatTemplateTable())
      return
    }

    const cwd = process.cwd()
    const interactive = isInteractive({
      stdinIsTTY: process.stdin.isTTY === true,
      stdoutIsTTY: process.stdout.isTTY === true,
      env: process.env,
      json: flags.json,
      yes: flags.yes,
    })
    const request = await resolveInitRequest({ name: args.name, template: flags.template, dir: flags.dir, cwd }, interactive ? terminalPrompter : undefined)

    // Ctrl-C stops the installs and removes what this run created (issue 11).
    const interrupt = new AbortController()
    const onSigint = () => interrupt.abort()
    process.on('SIGINT', onSigint)
    const result = await initProject({
      name: request.name,
      template: request.template.name,
      directory: request.directory,
      cwd,
      force: flags.force,
      install: flags.install,
      packageManager: flags['package-manager'] as PackageManager,
      cliVersion: this.config.version,
      cliRoot: this.config.root,
      renderer: flags.json ? 'silent' : process.stdout.isTTY ? 'default' : 'simple',
      signal: interrupt.signal,
    }).finally(() => process.off('SIGINT', onSigint))

    // Issue 11: ports that do not collide with other projects' engines.
    let ports: ProjectPorts | undefined
    if (flags.ports === 'auto' && request.template.kind !== 'worker') {
      ports = await pickFreePorts()
      applyPorts(join(result.directory, 'config.yaml'), ports)
    }

    if (flags.json) {
      out(`${JSON.stringify(ports === undefined ? result : { ...result, ports })}\n`)
      return
    }
    out(`\nCreated ${request.template.kind === 'worker' ? 'worker' : 'project'} ${result.project} in ${result.directory}\n`)
    if (ports !== undefined) out(`Ports: engine ${ports.engine}, http ${ports.http}, streams ${ports.stream} (config.yaml)\n`)
    out('\n')
    const steps = formatNextSteps(nextSteps(requireTemplate(result.template), result.directory, cwd))
    out(ports === undefined ? steps : steps.replaceAll(':3111/', `:${ports.http}/`))
  }
}
