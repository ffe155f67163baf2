/**
 * What scaffolded projects depend on (cli.md §4.1, issue 11): the svc packages by the project's own
 * vendored tarball (`file:<relative path>/vendor/svc-sdk-<v>.tgz`, see vendor.ts) when the CLI has
 * one, else `^<cli version>`. Never an absolute path: a project must survive being moved or cloned.
 */
import { posix } from 'node:path'
import { YamlSource } from '../../runtime/index.ts'
import type { PackageManager } from './types.ts'
import { VENDOR_DIRECTORY, vendoredFileName } from './vendor.ts'

/**
 * svc packages a template may depend on. svc-helpers and svc-protocol are bundled inside the
 * svc-sdk tarball; a template that lists them gets `^<version>`.
 */
export const SVC_PACKAGES: readonly string[] = ['svc-sdk', 'svc-helpers']

/**
 * The specifier of each svc package for a package.json in `packageDirectory` (relative to the
 * scaffold's root, `/`-separated, `''` for the root): `file:<relative path to
 * vendor/<name>-<version>.tgz>` for the packages in `vendored`, else `^<version>`.
 *
 * @example dependencySpecifiers(new Set(['svc-sdk']), 'workers/math', '0.4.0')
 * // { 'svc-sdk': 'file:../../vendor/svc-sdk-0.4.0.tgz', 'svc-helpers': '^0.4.0' }
 */
export function dependencySpecifiers(vendored: ReadonlySet<string>, packageDirectory: string, version: string): Record<string, string> {
  const specifiers: Record<string, string> = {}
  for (const name of SVC_PACKAGES) {
    if (!vendored.has(name)) {
      specifiers[name] = `^${version}`
      continue
    }
    const tarball = posix.join('/', VENDOR_DIRECTORY, vendoredFileName(name, version))
    specifiers[name] = `file:${posix.relative(posix.join('/', packageDirectory), tarball)}`
  }
  return specifiers
}

const DEPENDENCY_FIELDS = ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'] as const

/** Whether a package.json text lists one of `names` in any dependency field. */
export function dependsOnAny(packageJson: string, names: readonly string[]): boolean {
  const pkg = JSON.parse(packageJson) as Record<string, unknown>
  return DEPENDENCY_FIELDS.some((field) => {
    const deps = pkg[field]
    return typeof deps === 'object' && deps !== null && names.some((name) => name in deps)
  })
}

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
 *
 * @throws {YamlError} when the manifest is not YAML svc reads (runtime/yaml)
 */
export function withPackageManager(manifest: string, manager: PackageManager): string {
  if (manager === 'npm') return manifest
  const doc = new YamlSource(manifest, { file: 'svc.worker.yaml' }).doc
  const kind = doc.getIn(['runtime', 'kind'])
  if (kind !== 'typescript' && kind !== 'javascript') return manifest
  doc.setIn(['runtime', 'package_manager'], manager)
  return doc.toString()
}
