/**
 * Turning `svc project init` arguments into a complete request (cli.md §4.1, §1 Interactive):
 * validate what was given, prompt for what is missing when the run is interactive, else use the
 * defaults or fail naming the missing argument.
 */
import { basename } from 'node:path'
import { usageError } from '../lib/errors.ts'
import { invalidNameMessage, isValidName, validateProjectName } from './names.ts'
import { targetDirectory } from './target.ts'
import { DEFAULT_TEMPLATE, requireTemplate, TEMPLATES } from './templates.ts'
import type { TemplateInfo } from './types.ts'


/** Asks the user for what the command line left out (see prompts.ts for the terminal one). */
export interface Prompter {
  /** Returns a name; `validate` answers true or the message to show. */
  name(defaultName: string, validate: (value: string) => true | string): Promise<string>
  /** Returns one of `templates`' names. */
  template(templates: readonly TemplateInfo[], defaultTemplate: string): Promise<string>
}

/** The arguments as given. */
export interface InitArguments {
  name?: string | undefined
  template?: string | undefined
  dir?: string | undefined
  cwd: string
}

/** A complete, validated request. */
export interface InitRequest {
  name: string
  template: TemplateInfo
  /** Absolute. */
  directory: string
}

/**
 * Completes the arguments. Given values are checked before anything is asked, so a typo fails at
 * once. `prompter` is passed only for interactive runs.
 *
 * @throws {CliError} invalid name or unknown template (exit 2); `Missing argument NAME` (exit 2)
 *   when no NAME was given and there is no prompter
 */
export async function resolveInitRequest(args: InitArguments, prompter?: Prompter): Promise<InitRequest> {
  if (args.name !== undefined) validateProjectName(args.name)
  if (args.template !== undefined) requireTemplate(args.template)

  let name = args.name
  if (name === undefined) {
    if (!prompter) throw usageError('Missing argument NAME', 'pass a project name, e.g. svc project init my-app')
    const fromDir = args.dir === undefined ? undefined : basename(targetDirectory(args.cwd, '', args.dir))
    name = await prompter.name(fromDir !== undefined && isValidName(fromDir) ? fromDir : 'my-app', (value) =>
      isValidName(value) ? true : invalidNameMessage(value),
    )
    validateProjectName(name)
  }

  const template = requireTemplate(args.template ?? (prompter ? await prompter.template(TEMPLATES, DEFAULT_TEMPLATE) : DEFAULT_TEMPLATE))
  return { name, template, directory: targetDirectory(args.cwd, name, args.dir) }
}
