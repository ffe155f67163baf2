/** Descriptor of the database worker (builtins.md §10); the worker is in ./worker.ts. */
import type { BuiltinDescriptor } from '../descriptor.ts'
import { notReservedPattern } from '../shared/names.ts'

export const DATABASE_DESCRIPTOR = {
  name: 'database',
  aliases: ['db'],
  mode: 'default',
  engineName: 'database',
  title: 'Database',
  description: 'SQL access to SQLite, PostgreSQL and MySQL databases',
  spec: 'builtins.md §10',
  disabledEffect: 'its functions are unavailable',
  configurationId: 'database',
  settingsSource: 'seed',
  settings: {
    type: 'object',
    properties: {
      databases: {
        type: 'object',
        default: {},
        description: 'databases by name; names match [A-Za-z0-9_-]{1,64}, except __proto__, constructor and prototype',
        propertyNames: { pattern: notReservedPattern('^[A-Za-z0-9_-]{1,64}$') },
        additionalProperties: {
          type: 'object',
          required: ['url'],
          properties: {
            url: {
              type: 'string',
              minLength: 1,
              pattern: '^(sqlite:|postgres://|postgresql://|mysql://)',
              description: 'sqlite:<path> (relative to the project root), sqlite:///<absolute path>, sqlite::memory:, postgres://…, postgresql://…, mysql://…',
            },
            pool: {
              type: 'object',
              properties: {
                max: { type: 'integer', minimum: 1, maximum: 1000, default: 10, description: 'connections (PostgreSQL, MySQL)' },
                acquire_timeout_ms: { type: 'integer', minimum: 1, default: 5000, description: 'wait for a free connection (SQLite: lock wait)' },
                idle_timeout_ms: { type: 'integer', minimum: 0, default: 30000, description: 'idle connections are closed after this' },
              },
            },
            statement_timeout_ms: { type: 'integer', minimum: 1, default: 30000, description: 'default per-call timeout' },
            max_rows: {
              type: 'integer',
              minimum: 1,
              maximum: 10000000,
              default: 100000,
              description: 'most rows in one call\'s result (a transaction\'s statements together); more fail with QUERY_RESULT_TOO_LARGE',
            },
            max_result_bytes: {
              type: 'integer',
              minimum: 1,
              maximum: 1073741824,
              default: 33554432,
              description: 'most bytes of row JSON in one call\'s result; more fail with QUERY_RESULT_TOO_LARGE',
            },
            allow_attach: {
              type: 'boolean',
              default: false,
              description: 'SQLite only: allow ATTACH, DETACH and VACUUM INTO, which open or create files anywhere the engine may write',
            },
            tls: {
              type: 'object',
              properties: {
                mode: {
                  type: 'string',
                  enum: ['disable', 'require', 'verify-full'],
                  description: 'default require for remote hosts, disable for localhost',
                },
                ca_file: { type: 'string', minLength: 1, description: 'extra CA bundle' },
              },
            },
          },
        },
      },
    },
  },
  functions: ['database::*'],
  triggerTypes: [],
  runsIn: 'engine',
  implemented: true,
  listOrder: 6,
} as const satisfies BuiltinDescriptor
