// The package's test and benchmark processes ignore SIGPIPE from the moment they load, as servers
// do: a write to a pipe or socket whose reader has gone then fails with EPIPE where the code can
// see it, instead of ending the whole test run with signal 13. Set in a constructor so that it
// holds before the first test starts, whichever test touches the harness first. Children the
// harness spawns start with every signal's default action (TestHarness's SpawnActions), so a
// test of how a child meets a broken pipe still sees the signal.
#include <signal.h>
#include "CTestProcess.h"

__attribute__((constructor)) static void ctestprocess_ignore_broken_pipes(void) {
    signal(SIGPIPE, SIG_IGN);
}

int ctestprocess_ignores_broken_pipes(void) {
    struct sigaction current;
    if (sigaction(SIGPIPE, 0, &current) != 0) return 0;
    return current.sa_handler == SIG_IGN;
}
