// A loopback HTTP test server with fault injection. Built in its own change.
