/**
 * What scaffolded projects depend on (cli.md §4.1): the svc packages with `^<cli version>`, or, when
 * the CLI runs from a source checkout, `file:` references to the checkout's packages so that a new
 * project installs offline and against the code that scaffolded it.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join, sep } from 'node:path'
import { parseDocument } from 'yaml'
import type { PackageManager } from './types.ts'

/** svc packages a template may depend on, with their directory in a source checkout. */
export const SVC_PACKAGES: Readonly<Record<string, string>> = {
  'svc-sdk': 'packages/sdk',
  'svc-helpers': 'packages/helpers',
}

/**
 * The specifier of each svc package: `file:<checkout>/packages/<dir>` when `cliRoot` is a source
 * checkout holding that package (its package.json names it), else `^<version>`. A published CLI has
 * no `packages/` directory (package.json `files`), so it always gets registry specifiers.
 *
 * @example dependencySpecifiers('/usr/lib/node_modules/svc', '0.4.0') // { 'svc-sdk': '^0.4.0', … }
 */
export function dependencySpecifiers(cliRoot: string, version: string): Record<string, string> {
  const specifiers: Record<string, string> = {}
  for (const [name, directory] of Object.entries(SVC_PACKAGES)) {
    const local = join(cliRoot, directory)
    specifiers[name] = packageNameAt(local) === name ? `file:${local.split(sep).join('/')}` : `^${version}`
  }
  return specifiers
}

function packageNameAt(directory: string): string | undefined {
  const file = join(directory, 'package.json')
  if (!existsSync(file)) return undefined
  try {
    const name = (JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown }).name
    return typeof name === 'string' ? name : undefined
  } catch {
    return undefined
  }
}

const DEPENDENCY_FIELDS = ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'] as const

/**
 * A template package.json with the svc packages it lists set to `specifiers`; other dependencies
 * are untouched. Output is 2-space JSON with a final newline, as the templates are written.
 */
export function withDependencySpecifiers(packageJson: string, specifiers: Readonly<Record<string, string>>): string {
  const pkg = JSON.parse(packageJson) as Record<string, unknown>
  for (const field of DEPENDENCY_FIELDS) {
    const deps = pkg[field]
    if (typeof deps !== 'object' || deps === null) continue
    for (const name of Object.keys(deps)) {
      const specifier = specifiers[name]
      if (specifier !== undefined) (deps as Record<string, string>)[name] = specifier
    }
  }
  return `${JSON.stringify(pkg, null, 2)}\n`
}

/**
 * A template svc.worker.yaml set up for `manager`: `runtime.package_manager` of JavaScript and
 * TypeScript workers becomes `manager`, from which svc infers the install and start commands
 * (cli.md §2.2; TypeScript under bun runs `bun run <entry>`). Comments and layout are kept; npm
 * (the templates' own value) changes nothing.
 */
export function withPackageManager(manifest: string, manager: PackageManager): string {
  if (manager === 'npm') return manifest
  const doc = parseDocument(manifest)
  const kind = doc.getIn(['runtime', 'kind'])
  if (kind !== 'typescript' && kind !== 'javascript') return manifest
  doc.setIn(['runtime', 'package_manager'], manager)
  return doc.toString()
}
