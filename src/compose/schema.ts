/**
 * The JSON Schema (draft 2020-12) of `worker-compose.yaml` (cli.md §2.3), served by `compose::schema`
 * for editors and tools and rendered into docs/reference/worker-compose.yaml.md. The parser in
 * `file.ts` stays the authority (it also checks dependency cycles, placeholders and duplicate keys,
 * which a schema cannot express); `schema.test.ts` keeps the two in step on keys and enums.
 */
import { BUILTIN_NAMES } from '../../runtime/index.ts'
import { RESTART_POLICIES } from './file.ts'

const duration = {
  description: 'Milliseconds (5000) or a number with ms, s, m or h (500ms, 30s, 2m, 1h); placeholders allowed',
  oneOf: [
    { type: 'integer', minimum: 1 },
    { type: 'string', pattern: '^(\\$\\{.*\\}|[0-9]+(\\.[0-9]+)?\\s*(ms|s|m|h)?)$' },
  ],
}
const key = '^[a-z0-9][a-z0-9_-]{0,63}$'
const dependsOn = {
  description: 'Container keys started first; cycles and self-references are invalid',
  type: 'array',
  items: { type: 'string', pattern: key },
  uniqueItems: true,
}

const pathContainer = {
  title: 'Local worker container',
  type: 'object',
  additionalProperties: false,
  required: ['worker'],
  properties: {
    worker: { description: 'path://<dir>: a worker directory, relative to the file', type: 'string', pattern: '^path://.+' },
    depends_on: dependsOn,
    startup_timeout: { ...duration, description: 'Readiness deadline (default: the file value)' },
    working_dir: { description: 'Current directory of its commands (default: the worker directory)', type: 'string', minLength: 1 },
    environment: { description: 'Extra environment variables', type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
    env_file: {
      description: 'KEY=VALUE files read in order, relative to the file',
      oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
    },
    isolation: { description: 'Default: the manifest value, else process', enum: ['process', 'microvm'] },
    watch: { description: 'Restart on file changes', type: 'boolean', default: true },
    restart: {
      description:
        'After an unrequested exit: on-failure (default) restarts after a non-zero exit or a signal (crash policy, cli.md §5.5); always also after exit 0; never leaves it stopped or failed',
      enum: [...RESTART_POLICIES],
      default: 'on-failure',
    },
    config: { description: 'Exported as JSON in SVC_WORKER_CONFIG' },
    scripts: {
      type: 'object',
      additionalProperties: false,
      properties: {
        pre_run: { description: 'Runs before each start; must exit 0 within pre_run_timeout', type: 'string' },
        pre_run_timeout: { ...duration, description: 'Deadline of pre_run', default: '60s' },
        run: { description: "Replaces the manifest's start command", type: 'string' },
        post_run: { description: 'Runs after each stop', type: 'string' },
      },
    },
  },
}

const builtinContainer = {
  title: 'Built-in worker container',
  type: 'object',
  additionalProperties: false,
  required: ['worker'],
  properties: {
    worker: {
      description: 'builtin://<name> (aliases accepted); svc-observability and configuration are refused',
      type: 'string',
      pattern: '^builtin://.+',
      examples: BUILTIN_NAMES.map((name) => `builtin://${name}`),
    },
    depends_on: dependsOn,
    config: { description: 'Deep-merged into its settings at up (configuration::set); stored unexpanded', type: 'object' },
  },
}

/**
 * The schema object. Built once; callers must not mutate it.
 *
 * @example composeFileSchema().properties.containers // { type: 'object', … }
 */
export function composeFileSchema() {
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://svc.dev/schemas/worker-compose.json',
    title: 'worker-compose.yaml',
    description: 'A compose project of the svc compose daemon (cli.md §2.3)',
    type: 'object',
    additionalProperties: false,
    required: ['containers'],
    properties: {
      namespace: { description: "Must equal the daemon's namespace (WRONG_NAMESPACE otherwise)", type: 'string' },
      startup_timeout: { ...duration, description: 'Per container unless overridden', default: '60s' },
      stop_timeout: { ...duration, description: 'SIGTERM to SIGKILL delay', default: '10s' },
      containers: {
        description: 'Container key → container; {} is valid',
        type: 'object',
        propertyNames: { pattern: key },
        additionalProperties: {
          if: { type: 'object', properties: { worker: { type: 'string', pattern: '^builtin://' } }, required: ['worker'] },
          then: builtinContainer,
          else: pathContainer,
        },
      },
    },
  } as const
}
