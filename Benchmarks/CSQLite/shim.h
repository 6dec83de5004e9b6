// SQLite, for the benchmarks' baseline only: the mutable outbox a team would otherwise build.
// Nothing shipped links it.
#include <sqlite3.h>
