/** The part of `pg-cursor` (no bundled types) the PostgreSQL driver uses. */
declare module 'pg-cursor' {
  import type { CustomTypesConfig, FieldDef, Submittable } from 'pg'

  /** The statement's result so far: its columns, and command and row count once complete. */
  export interface CursorResult {
    fields: FieldDef[]
    command: string | null
    rowCount: number | null
  }

  /** A portal read `rows` at a time (extended protocol: one statement, server-bound parameters). */
  export default class Cursor implements Submittable {
    constructor(text: string, values?: readonly unknown[], config?: { rowMode?: 'array'; types?: CustomTypesConfig })
    submit(connection: unknown): void
    /** Up to `rows` more rows; fewer (or none) once the statement completed. */
    read(rows: number, callback: (error: Error | undefined, rows: unknown[][], result: CursorResult) => void): void
    /** Closes the portal; the connection is usable again afterwards. */
    close(): Promise<void>
  }
}
