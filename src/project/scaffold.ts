/**
 * Writing a template into the target directory (cli.md §4.1 "copy template", "write
 * .svc/project.ini").
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, posix } from 'node:path'
import { dependencySpecifiers, dependsOnAny, withDependencySpecifiers, withPackageManager } from './dependencies.ts'
import { formatProjectIni, PROJECT_INI, projectIdentity } from './project-ini.ts'
import { substitute, workerNameFor } from './substitute.ts'
import { templateFiles } from './templates.ts'
import type { PackageManager, TemplateInfo } from './types.ts'
import { browserSdkBundle, copyRustSdk, PYTHON_DISTRIBUTIONS, PYTHON_VENDOR_DIRECTORY, pythonWheels, RUST_VENDOR_DIRECTORY, rustSdkDirectory, sdkTarball, VENDOR_DIRECTORY } from './vendor.ts'

export interface CopyTemplateOptions {
  /** Project (or, for the `worker` template, worker) name. */
  name: string
  template: TemplateInfo
  /** Absolute target directory; created when missing. */
  directory: string
  cliRoot: string
  cliVersion: string
  packageManager: PackageManager
}

/**
 * Copies the template's files into `directory`: placeholders substituted, svc package specifiers
 * set in every package.json, worker manifests set to the package manager. A file already there is
 * replaced, except `.gitignore`, which gets the template's lines it lacks appended. When a
 * package.json depends on svc-sdk and the CLI has its tarball (vendor.ts), the tarball is copied to
 * `vendor/svc-sdk-<v>.tgz` and depended on by a relative `file:` path. A template with
 * `browserSdk` gets the browser SDK bundle copied there.
 *
 * @throws {CliError} `BROWSER_SDK_MISSING` when such a template's bundle is not available (vendor.ts)
 * @returns the paths written, relative to `directory`, `/`-separated, sorted
 */
export function copyTemplate(options: CopyTemplateOptions): string[] {
  const files = templateFiles(options.cliRoot, options.template)
  const needsSdk = files.some((file) => posix.basename(file.path) === 'package.json' && dependsOnAny(readFileSync(file.source, 'utf8'), ['svc-sdk']))
  const tarball = needsSdk ? sdkTarball(options.cliRoot, options.cliVersion) : undefined
  const vendored = new Set(tarball ? ['svc-sdk'] : [])
  const written: string[] = []
  if (tarball) {
    const path = posix.join(VENDOR_DIRECTORY, posix.basename(tarball))
    mkdirSync(join(options.directory, VENDOR_DIRECTORY), { recursive: true })
    copyFileSync(tarball, join(options.directory, ...path.split('/')))
    written.push(path)
  }
  // Python and Rust SDKs (issue 18): wheels and crate sources the template's workers depend on by relative path.
  const wheels = new Map<string, string>()
  if (options.template.sdks?.includes('python')) {
    pythonWheels(options.cliRoot).forEach((wheel, i) => {
      const path = posix.join(PYTHON_VENDOR_DIRECTORY, posix.basename(wheel))
      mkdirSync(join(options.directory, ...PYTHON_VENDOR_DIRECTORY.split('/')), { recursive: true })
      copyFileSync(wheel, join(options.directory, ...path.split('/')))
      wheels.set(PYTHON_DISTRIBUTIONS[i]!.name, path)
      written.push(path)
    })
  }
  if (options.template.sdks?.includes('rust')) {
    const copied = copyRustSdk(rustSdkDirectory(options.cliRoot), join(options.directory, ...RUST_VENDOR_DIRECTORY.split('/')))
    written.push(...copied.map((rel) => posix.join(RUST_VENDOR_DIRECTORY, rel)))
  }
  for (const file of files) {
    const target = join(options.directory, ...file.path.split('/'))
    mkdirSync(dirname(target), { recursive: true })
    const bytes = readFileSync(file.source)
    const mode = statSync(file.source).mode & 0o777
    if (bytes.includes(0)) {
      // Binary: copied as is.
      writeFileSync(target, bytes, { mode })
    } else {
      let text = substitute(bytes.toString('utf8'), {
        project_name: options.name,
        worker_name: workerNameFor(file.path, options.name),
        svc_version: options.cliVersion,
      })
      const base = posix.basename(file.path)
      if (base === 'package.json') text = withDependencySpecifiers(text, dependencySpecifiers(vendored, posix.dirname(file.path).replace(/^\.$/, ''), options.cliVersion))
      if (base === 'svc.worker.yaml') text = withPackageManager(text, options.packageManager)
      if (base === 'requirements.txt' && wheels.size > 0) text = withVendoredWheels(text, wheels, posix.dirname(file.path))
      if (file.path === '.gitignore' && existsSync(target)) text = mergeLines(readFileSync(target, 'utf8'), text)
      writeFileSync(target, text, { mode })
    }
    written.push(file.path)
  }
  if (options.template.browserSdk !== undefined) {
    // The page's SDK: one ES module the project serves itself (vendor.ts).
    const path = options.template.browserSdk
    const target = join(options.directory, ...path.split('/'))
    mkdirSync(dirname(target), { recursive: true })
    copyFileSync(browserSdkBundle(options.cliRoot), target)
    written.push(path)
  }
  return written.sort()
}

/**
 * A requirements.txt whose lines naming a vendored distribution alone (`svc-sdk`, `svc-helpers`)
 * name its wheel instead, by a path relative to `directory` (the worker's, where pip runs), so pip
 * installs svc's packages from the project and never looks them up in an index.
 *
 * @example withVendoredWheels('svc-sdk\n', new Map([['svc-sdk', 'vendor/python/svc_sdk-0.1.0-py3-none-any.whl']]), 'workers/math')
 * // '../../vendor/python/svc_sdk-0.1.0-py3-none-any.whl\n'
 */
export function withVendoredWheels(requirements: string, wheels: ReadonlyMap<string, string>, directory: string): string {
  return requirements
    .split('\n')
    .map((line) => {
      const wheel = wheels.get(line.trim())
      return wheel === undefined ? line : posix.relative(posix.join('/', directory), posix.join('/', wheel))
    })
    .join('\n')
}

/** `existing` followed by the lines of `added` it does not already have (blank and comment lines aside). */
export function mergeLines(existing: string, added: string): string {
  const have = new Set(existing.split(/\r?\n/).map((l) => l.trim()))
  const missing = added.split(/\r?\n/).filter((l) => l.trim() !== '' && !l.trim().startsWith('#') && !have.has(l.trim()))
  if (missing.length === 0) return existing
  const separator = existing === '' || existing.endsWith('\n') ? '' : '\n'
  return `${existing}${separator}${existing === '' ? '' : '\n'}# svc\n${missing.join('\n')}\n`
}

/**
 * Writes `.svc/project.ini` (cli.md §2), keeping the `project_id` of one already there.
 * @returns the path written, relative to `directory`
 */
export function writeProjectIni(directory: string, fields: { project_name: string; template: string; created_with: string }): string {
  const file = join(directory, ...PROJECT_INI.split('/'))
  const identity = projectIdentity(file, fields)
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, formatProjectIni(identity))
  return PROJECT_INI
}
