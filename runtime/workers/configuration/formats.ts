/**
 * Result schemas of the configuration worker's functions (builtins.md §11.2), registered with them
 * and reported by `engine::functions::info`. Registration-time data only.
 */
import type { FormatSchema } from 'svc-protocol'
import { CHANGE_RESULT, UPDATE_RESULT } from '../shared/formats.ts'

const STRING = { type: 'string' } as const

/** An entry without its value: `{id, name, description, schema, metadata?}`. */
const ENTRY_SUMMARY = {
  type: 'object',
  required: ['id', 'name', 'description', 'schema'],
  properties: { id: STRING, name: STRING, description: STRING, schema: { type: 'object', description: 'the JSON Schema its owner registered' }, metadata: { type: 'object' } },
} satisfies FormatSchema

/** Result of each function, by id. */
export const CONFIGURATION_RESULTS: Record<string, FormatSchema> = {
  'configuration::register': {
    ...ENTRY_SUMMARY,
    required: [...ENTRY_SUMMARY.required, 'value'],
    properties: { ...ENTRY_SUMMARY.properties, value: { description: 'the stored value, else initial_value (default {})' } },
  },
  'configuration::get': {
    type: 'object',
    required: ['id', 'value'],
    properties: { id: STRING, value: { description: 'expanded and validated unless raw' } },
  },
  'configuration::set': { ...CHANGE_RESULT, description: 'the stored (unexpanded) values' },
  'configuration::update': { ...UPDATE_RESULT, description: 'the stored (unexpanded) values; stored only if the result validates' },
  'configuration::list': {
    type: 'object',
    required: ['configurations'],
    properties: { configurations: { type: 'array', items: ENTRY_SUMMARY, description: 'sorted by id; values are not included' } },
  },
  'configuration::schema': ENTRY_SUMMARY,
}
