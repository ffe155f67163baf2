/**
 * Project scaffolding for `svc project init` (cli.md §4.1): the template catalogue, argument
 * resolution, and the init steps.
 */
export { dependencySpecifiers, SVC_PACKAGES, withDependencySpecifiers, withPackageManager } from './dependencies.ts'
export { initProject } from './init.ts'
export { installCommand, installDirectories, installFailedError, runInstall } from './install.ts'
export type { InstallOutcome } from './install.ts'
export { invalidNameMessage, isValidName, NAME_PATTERN, validateProjectName } from './names.ts'
export { formatNextSteps, nextSteps } from './next-steps.ts'
export { formatProjectIni, parseProjectIni, PROJECT_INI, projectIdentity } from './project-ini.ts'
export type { ProjectIdentity } from './project-ini.ts'
export { terminalPrompter } from './prompts.ts'
export { resolveInitRequest } from './request.ts'
export type { InitArguments, InitRequest, Prompter } from './request.ts'
export { copyTemplate, mergeLines, writeProjectIni } from './scaffold.ts'
export { substitute, workerNameFor } from './substitute.ts'
export type { TemplateVariables } from './substitute.ts'
export { checkTargetDirectory, displayDirectory, targetDirectory } from './target.ts'
export { DEFAULT_TEMPLATE, findTemplate, formatTemplateTable, requireTemplate, templateFiles, TEMPLATES, templatesDirectory } from './templates.ts'
export type { TemplateFile } from './templates.ts'
export { PACKAGE_MANAGERS } from './types.ts'
export type { InitOptions, InitResult, NextStep, PackageManager, ProgressRenderer, TemplateInfo } from './types.ts'
