export function QueuesPage(_props: { name?: string; dlq?: boolean }) { return <p>TODO</p> }
