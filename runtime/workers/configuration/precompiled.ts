/**
 * Validators of the built-in workers' settings schemas compiled ahead of time, by their schema's
 * canonical JSON (`canonicalJson`). Empty in a checkout, where schema.ts compiles them at run time;
 * the packed CLI's bundle replaces this module with Ajv's standalone code for each of them
 * (`precompiledValidatorsModule` in scripts/bundle-cli.ts), so that the engine does not
 * generate and compile their code at every start (issue 20 "Engine start").
 */
import type { ValidateFunction } from 'ajv'

/** Validator of a built-in settings schema, by the schema's canonical JSON; empty in a checkout. */
export const PRECOMPILED_VALIDATORS: ReadonlyMap<string, ValidateFunction> = new Map()
