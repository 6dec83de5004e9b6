// journal-inspect: the support engineer's tool. Built in its own change.
