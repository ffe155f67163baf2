export function StreamsPage(_props: { stream?: string; group?: string }) { return <p>TODO</p> }
