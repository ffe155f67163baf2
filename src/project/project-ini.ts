/**
 * `.svc/project.ini` (cli.md §2): the project's identity in `key = value` lines: `project_id` (a
 * UUID), `project_name`, `template` and `created_with` (the CLI version).
 */
import { randomUUID } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'

/** Path of the identity file inside a project. */
export const PROJECT_INI = '.svc/project.ini'

export interface ProjectIdentity {
  project_id: string
  project_name: string
  template: string
  created_with: string
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The file text: one `key = value` line per field, in the order of cli.md §2. */
export function formatProjectIni(identity: ProjectIdentity): string {
  return (['project_id', 'project_name', 'template', 'created_with'] as const).map((key) => `${key} = ${identity[key]}\n`).join('')
}

/** `key = value` lines as a map; blank lines and `;`/`#` comments are skipped. */
export function parseProjectIni(text: string): Record<string, string> {
  const values: Record<string, string> = {}
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim()
    if (line === '' || line.startsWith(';') || line.startsWith('#') || line.startsWith('[')) continue
    const eq = line.indexOf('=')
    if (eq > 0) values[line.slice(0, eq).trim()] = line.slice(eq + 1).trim()
  }
  return values
}

/**
 * The identity to write: a new UUID, or the `project_id` of an existing file at `file`, so that
 * scaffolding again over a project keeps its identity.
 */
export function projectIdentity(file: string, fields: Omit<ProjectIdentity, 'project_id'>): ProjectIdentity {
  let projectId: string = randomUUID()
  if (existsSync(file)) {
    const previous = parseProjectIni(readFileSync(file, 'utf8')).project_id
    if (previous !== undefined && UUID.test(previous)) projectId = previous
  }
  return { project_id: projectId, ...fields }
}
