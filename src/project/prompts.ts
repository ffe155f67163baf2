/**
 * The terminal {@link Prompter} of `svc project init`, with @inquirer/prompts (cli.md §6 Prompts).
 * Used only in interactive runs; every prompt has a flag equivalent (NAME, --template).
 */
import { input, select } from '@inquirer/prompts'
import { interruptible } from '../lib/interactive.ts'
import type { Prompter } from './request.ts'

/** Prompts on the terminal; Ctrl-C while a prompt is open exits 130. */
export const terminalPrompter: Prompter = {
  name: (defaultName, validate) => interruptible(input({ message: 'Project name', default: defaultName, validate })),
  template: (templates, defaultTemplate) =>
    interruptible(
      select({
        message: 'Template',
        default: defaultTemplate,
        choices: templates.map((t) => ({ name: t.name, value: t.name, description: t.description })),
      }),
    ),
}


