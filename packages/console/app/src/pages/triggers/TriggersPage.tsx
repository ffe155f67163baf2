export function TriggersPage(_props: { triggerId?: string }) { return <p>TODO</p> }
