print("outbox-bench: not built yet")
