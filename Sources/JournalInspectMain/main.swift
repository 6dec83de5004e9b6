print("journal-inspect: not built yet")
