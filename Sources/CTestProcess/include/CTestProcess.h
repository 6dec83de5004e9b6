#ifndef C_TEST_PROCESS_H
#define C_TEST_PROCESS_H

/// Whether this process ignores SIGPIPE (set as it loads, see test_process.c).
int ctestprocess_ignores_broken_pipes(void);

#endif
