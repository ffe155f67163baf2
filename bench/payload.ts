/** The benchmark payload: a JSON object of about 100 bytes. */
export const PAYLOAD = { order_id: 'ord_7f3a9c21', customer: 'cus_42', items: [3, 1, 4, 1, 5], total_cents: 12999, note: 'leave at door' }
