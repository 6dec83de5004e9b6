print("outbox-test-server: not built yet")
