/**
 * Result schemas of the database worker's functions (builtins.md §10.2), registered with them and
 * reported by `engine::functions::info`. Registration-time data only.
 */
import type { FormatSchema } from 'svc-protocol'

const ROWS = { type: 'array', items: { type: 'object', description: 'column name → value (§10.3)' } } as const
const LAST_INSERT_ID = { type: ['string', 'null'], description: 'the inserted row id (SQLite, MySQL); on PostgreSQL the first column of the first RETURNING row' } as const
const COUNT = { type: 'integer', minimum: 0 } as const

/** `{affected_rows, last_insert_id, returned_rows}` of `database::execute`. */
const EXECUTE_RESULT = {
  type: 'object',
  required: ['affected_rows', 'last_insert_id', 'returned_rows'],
  properties: { affected_rows: COUNT, last_insert_id: LAST_INSERT_ID, returned_rows: { ...ROWS, description: 'rows of a RETURNING clause, else []' } },
} satisfies FormatSchema

/** Result of each function, by id. */
export const DATABASE_RESULTS: Record<string, FormatSchema> = {
  'database::query': {
    type: 'object',
    required: ['rows', 'row_count', 'columns'],
    properties: {
      rows: ROWS,
      row_count: COUNT,
      columns: {
        type: 'array',
        items: { type: 'object', required: ['name', 'type'], properties: { name: { type: 'string' }, type: { type: ['string', 'null'], description: 'driver-reported type name; null when unknown' } } },
      },
    },
  },
  'database::execute': EXECUTE_RESULT,
  'database::transaction': {
    description: 'a failed statement rolls back and is still a successful call',
    oneOf: [
      {
        type: 'object',
        required: ['committed', 'results'],
        properties: {
          committed: { const: true },
          results: {
            type: 'array',
            description: 'one per statement',
            items: { type: 'object', required: ['affected_rows', 'last_insert_id', 'rows'], properties: { affected_rows: COUNT, last_insert_id: LAST_INSERT_ID, rows: { ...ROWS, description: 'for statements that return rows, else []' } } },
          },
        },
      },
      {
        type: 'object',
        required: ['committed', 'failed_index', 'error'],
        properties: {
          committed: { const: false },
          failed_index: COUNT,
          error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, driver_code: { type: 'string' }, message: { type: 'string' } } },
        },
      },
    ],
  },
  'database::list_databases': {
    type: 'object',
    required: ['databases'],
    properties: {
      databases: {
        type: 'array',
        items: {
          type: 'object',
          required: ['name', 'driver', 'url', 'pool', 'tls_mode'],
          properties: { name: { type: 'string' }, driver: { type: 'string' }, url: { type: 'string', description: 'credentials removed' }, pool: { type: 'object' }, tls_mode: { type: 'string' } },
        },
      },
    },
  },
}
