/**
 * Project and worker names (cli.md §4.1, §2.1): `[a-z0-9][a-z0-9_-]{0,63}`.
 */
import { usageError } from '../lib/errors.ts'

/** A valid project, worker or container name. */
export const NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/

/** True when `name` matches {@link NAME_PATTERN}. */
export function isValidName(name: string): boolean {
  return NAME_PATTERN.test(name)
}

/**
 * Checks a project name.
 * @throws {CliError} `Invalid project name 'X': use lower-case letters, digits, '-' and '_' (max 64)`
 *   (code `INVALID_ARGUMENT`, exit 2)
 */
export function validateProjectName(name: string): string {
  if (isValidName(name)) return name
  throw usageError(invalidNameMessage(name), 'start with a letter or digit, e.g. my-app')
}

/** The message of cli.md §4.1 for an invalid name. */
export function invalidNameMessage(name: string): string {
  return `Invalid project name '${name}': use lower-case letters, digits, '-' and '_' (max 64)`
}
