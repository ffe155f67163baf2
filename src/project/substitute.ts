/**
 * Placeholder substitution in template files (cli.md §4.1): `{{project_name}}`, `{{worker_name}}`
 * and `{{svc_version}}`. Other `{{…}}` text is left alone, so templates may contain it (for
 * example GitHub Actions expressions).
 */

/** Values of the placeholders for one file. */
export interface TemplateVariables {
  project_name: string
  worker_name: string
  svc_version: string
}

const PLACEHOLDER = /\{\{(project_name|worker_name|svc_version)\}\}/g

/**
 * `text` with every placeholder replaced.
 * @example substitute('name: {{worker_name}}', vars) // 'name: math-worker'
 */
export function substitute(text: string, variables: TemplateVariables): string {
  return text.replace(PLACEHOLDER, (_, key: keyof TemplateVariables) => variables[key])
}

/**
 * `{{worker_name}}` of a file: the directory name for files under `workers/<name>/`, else the
 * project name (a `worker` template's own directory is the worker).
 */
export function workerNameFor(path: string, projectName: string): string {
  const match = /^workers\/([^/]+)\//.exec(path)
  return match ? match[1]! : projectName
}
