export function StatePage(_props: { scope?: string; entryKey?: string }) { return <p>TODO</p> }
