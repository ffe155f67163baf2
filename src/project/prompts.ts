/**
 * The terminal {@link Prompter} of `svc project init`, with @inquirer/prompts (cli.md §6 Prompts).
 * Used only in interactive runs; every prompt has a flag equivalent (NAME, --template). The prompt
 * library loads on the first prompt, not with the commands that import this module.
 */
import { interruptible } from '../lib/interactive.ts'
import type { Prompter } from './request.ts'

/** Prompts on the terminal; Ctrl-C while a prompt is open exits 130. */
export const terminalPrompter: Prompter = {
  name: async (defaultName, validate) => {
    const { input } = await import('@inquirer/prompts')
    return interruptible(input({ message: 'Project name', default: defaultName, validate }))
  },
  template: async (templates, defaultTemplate) => {
    const { select } = await import('@inquirer/prompts')
    return interruptible(
      select({
        message: 'Template',
        default: defaultTemplate,
        choices: templates.map((t) => ({ name: t.name, value: t.name, description: t.description })),
      }),
    )
  },
}


