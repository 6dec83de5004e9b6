// The journal's storage engine: LMDB from the system (Debian's liblmdb-dev, Homebrew's lmdb).
// Only the OutboxStorage module imports this.
#include <lmdb.h>
