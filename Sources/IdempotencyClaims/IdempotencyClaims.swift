// The server half of exactly-once: idempotency claims. Built in its own change.
