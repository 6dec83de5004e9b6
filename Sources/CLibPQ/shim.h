// PostgreSQL's client library from the system (Debian's libpq-dev, Homebrew's libpq).
// Only the PostgresClaimStore module imports this: an app that uses only Outbox never links it.
#include <libpq-fe.h>
